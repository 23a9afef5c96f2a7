/*
 * detok.c - dsv4_detokenize and the streaming detokenizer (see detok.h).
 */
#include "text/detok.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer.h"

static const char REPLACEMENT[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

/* Length of the sequence a lead byte starts (0: not a lead byte), and the
 * range its second byte must fall in (the Unicode table of well-formed
 * sequences: no overlongs, no surrogates, nothing above U+10FFFF). */
static int lead(uint8_t c, uint8_t *lo, uint8_t *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) {
        if (c == 0xE0) *lo = 0xA0;
        if (c == 0xED) *hi = 0x9F;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (c == 0xF0) *lo = 0x90;
        if (c == 0xF4) *hi = 0x8F;
        return 4;
    }
    return 0;
}

size_t dsv4_utf8_repair_feed(dsv4_utf8_repair *r, const uint8_t *s, size_t n, int flush, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (r->n_pend == 0) {
            uint8_t lo, hi;
            if (c < 0x80) {
                out[o++] = (char)c;
            } else if ((r->need = lead(c, &lo, &hi)) != 0) {
                r->pend[0] = c;
                r->n_pend = 1;
            } else {
                memcpy(out + o, REPLACEMENT, 3);
                o += 3;
            }
            i++;
            continue;
        }
        uint8_t lo = 0x80, hi = 0xBF;
        if (r->n_pend == 1) lead(r->pend[0], &lo, &hi);
        if (c >= lo && c <= hi) {
            r->pend[r->n_pend++] = c;
            i++;
            if (r->n_pend == r->need) {
                memcpy(out + o, r->pend, (size_t)r->need);
                o += (size_t)r->need;
                r->n_pend = 0;
            }
        } else {
            /* The pending bytes are a maximal ill-formed subsequence; c starts
             * afresh (not consumed here). */
            memcpy(out + o, REPLACEMENT, 3);
            o += 3;
            r->n_pend = 0;
        }
    }
    if (flush && r->n_pend) {
        memcpy(out + o, REPLACEMENT, 3);
        o += 3;
        r->n_pend = 0;
    }
    return o;
}

/* ------------------------------------------------------------------------ */

struct dsv4_detok {
    const dsv4_tokenizer *tok;
    dsv4_utf8_repair r;
    char *buf;
    size_t cap;
};

static int reserve(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    char *p = realloc(*buf, c);
    if (!p) return -1;
    *buf = p;
    *cap = c;
    return 0;
}

dsv4_status dsv4_detokenize(const dsv4_tokenizer *tok, const int32_t *ids, size_t n, char **text, size_t *len,
                            char *err, size_t errlen)
{
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l;
        if (!dsv4_tok_bytes(tok, ids[i], &l)) {
            snprintf(err, errlen, "token id %d (at position %zu) is not in the vocabulary (size %d)", (int)ids[i], i,
                     (int)dsv4_tokenizer_vocab_size(tok));
            return DSV4_ERR_INVALID;
        }
        total += l;
    }
    char *out = malloc(3 * total + 4);
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    dsv4_utf8_repair r = {0};
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l;
        const uint8_t *b = dsv4_tok_bytes(tok, ids[i], &l);
        o += dsv4_utf8_repair_feed(&r, b, l, 0, out + o);
    }
    o += dsv4_utf8_repair_feed(&r, NULL, 0, 1, out + o);
    out[o] = 0;
    *text = out;
    *len = o;
    return DSV4_OK;
}

dsv4_status dsv4_detok_create(const dsv4_tokenizer *tok, dsv4_detok **out, char *err, size_t errlen)
{
    dsv4_detok *d = calloc(1, sizeof *d);
    if (!d || reserve(&d->buf, &d->cap, 256)) {
        free(d);
        snprintf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    d->tok = tok;
    *out = d;
    return DSV4_OK;
}

void dsv4_detok_free(dsv4_detok *d)
{
    if (!d) return;
    free(d->buf);
    free(d);
}

dsv4_status dsv4_detok_push(dsv4_detok *d, int32_t id, const char **text, size_t *len, char *err, size_t errlen)
{
    *text = d->buf;
    *len = 0;
    size_t l;
    const uint8_t *b = dsv4_tok_bytes(d->tok, id, &l);
    if (!b) {
        snprintf(err, errlen, "token id %d is not in the vocabulary (size %d)", (int)id,
                 (int)dsv4_tokenizer_vocab_size(d->tok));
        return DSV4_ERR_INVALID;
    }
    /* Sized once per token length; the buffer only grows for a token longer
     * than any seen before. */
    if (reserve(&d->buf, &d->cap, 3 * l + 4)) {
        snprintf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    *len = dsv4_utf8_repair_feed(&d->r, b, l, 0, d->buf);
    *text = d->buf;
    return DSV4_OK;
}

void dsv4_detok_flush(dsv4_detok *d, const char **text, size_t *len)
{
    *len = dsv4_utf8_repair_feed(&d->r, NULL, 0, 1, d->buf);
    *text = d->buf;
}

void dsv4_detok_reset(dsv4_detok *d) { d->r.n_pend = 0; }
