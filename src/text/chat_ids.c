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

#include "core/grow.h"
#include "text/chat.h"

dsv4_status dsv4_chat_prompt_ids(const dsv4_tokenizer *tok, const dsv4_chat_prompt *p, int32_t **ids, size_t *n,
                                 char *err, size_t errlen)
{
    *ids = NULL;
    *n = 0;
    size_t cap = 0, len = 0;
    int32_t *out = NULL;
    if (dsv4_grow((void **)&out, &cap, 64, sizeof *out)) goto nomem;
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
            if (dsv4_grow((void **)&out, &cap, len + 1, sizeof *out)) goto nomem;
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
        if (dsv4_grow((void **)&out, &cap, len + np, sizeof *out)) {
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
