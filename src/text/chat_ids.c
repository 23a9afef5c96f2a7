/*
 * chat_ids.c - a rendered chat prompt to token ids.
 *
 * Special segments are looked up in the tokenizer's own table by their
 * content string; text segments go through BPE with special-token matching
 * off, so text a user typed can never become a control token.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/chat.h"

/* Room for need ids in *out (cap doubled as needed); -1, *out untouched, when memory runs out. */
static int ids_reserve(int32_t **out, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    int32_t *p = realloc(*out, c * sizeof *p);
    if (!p) return -1;
    *out = p;
    *cap = c;
    return 0;
}

dsv4_status dsv4_chat_prompt_ids(const dsv4_tokenizer *tok, const dsv4_chat_prompt *p, int32_t **ids, size_t *n,
                                 char *err, size_t errlen)
{
    *ids = NULL;
    *n = 0;
    size_t cap = 0, len = 0;
    int32_t *out = NULL;
    if (ids_reserve(&out, &cap, 64)) goto nomem;
    for (int i = 0; i < p->n_segs; i++) {
        const dsv4_chat_segment *s = &p->segs[i];
        const char *text = p->text + s->off;
        if (s->special) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)s->len, text);
            int32_t id = dsv4_token_id(tok, name);
            if (id < 0) {
                snprintf(err, errlen, "the tokenizer has no token \"%s\", which the V4 chat format needs", name);
                free(out);
                return DSV4_ERR_UNSUPPORTED;
            }
            if (ids_reserve(&out, &cap, len + 1)) goto nomem;
            out[len++] = id;
            continue;
        }
        int32_t *part;
        size_t np;
        dsv4_status st = dsv4_tokenize(tok, text, s->len, false, &part, &np, err, errlen);
        if (st != DSV4_OK) {
            free(out);
            return st;
        }
        if (ids_reserve(&out, &cap, len + np)) {
            free(part);
            goto nomem;
        }
        memcpy(out + len, part, np * sizeof(int32_t));
        len += np;
        free(part);
    }
    *ids = out;
    *n = len;
    return DSV4_OK;
nomem:
    free(out);
    snprintf(err, errlen, "out of memory");
    return DSV4_ERR_NOMEM;
}
