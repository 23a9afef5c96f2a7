/*
 * tokenizer.c - byte-level BPE from a HF tokenizer.json, equal to HF `tokenizers`.
 *
 * Owns encoding: added-token extraction, the pre-tokenizer stages, the
 * byte-level map and BPE merges, and the BPE cache. Reading tokenizer.json is
 * tokenizer_load.c; decoding (UTF-8 repair, streaming) is detok.c.
 *
 * Every rule here is HF's (tokenizers 0.23), written down where it is not
 * obvious: which added tokens match where (added_vocabulary.rs), how a Split
 * behaviour cuts a piece (normalizer.rs), how BPE picks the next merge
 * (word.rs). The fixtures under
 * tests/text/ are produced by HF itself and compared byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "text/tokenizer_impl.h"

/* Pieces up to this many bytes are cached (HF: 256). Longer ones are rare but
 * recur when a chat is re-sent each turn (base64, long identifiers). */
#define CACHE_MAX_PIECE 4096
#define CACHE_MAX_KEY_BYTES (16u << 20) /* the cache is cleared when it would outgrow these */
#define CACHE_MAX_IDS (4u << 20)

/* ======================================================================== */
/* UTF-8                                                                    */

int dsv4_utf8_valid(const char *str, size_t n, size_t *bad)
{
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            if (bad) *bad = i;
            return 0;
        }
        for (int k = 1; k <= need; k++) {
            if (i + (size_t)k >= n || s[i + k] < (k == 1 ? lo : 0x80) || s[i + k] > (k == 1 ? hi : 0xBF)) {
                if (bad) *bad = i + (size_t)k < n ? i + (size_t)k : i;
                return 0;
            }
        }
        i += (size_t)need + 1;
    }
    return 1;
}

/* Unicode White_Space, as Rust's regex \s (lstrip / rstrip of added tokens). */
static int is_white_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

/* ======================================================================== */
/* Encoding context: scratch and the BPE cache                              */

typedef struct {
    uint32_t pos, rank;
    int32_t merged;
    uint32_t len; /* bytes of the pair when queued */
} merge_cand;

typedef struct {
    int32_t id;
    int32_t prev, next;
    uint32_t len; /* bytes; 0 = merged away */
} bpe_sym;

typedef struct {
    uint64_t hash;
    uint32_t key_off, key_len;
    uint32_t ids_off, n_ids;
} cache_ent;

typedef struct {
    size_t start, end;
} piece;

struct enc_ctx {
    dsv4_re_scratch *re;
    dsv4_re_span *spans[MAX_STAGES + 1];
    size_t span_cap[MAX_STAGES + 1];
    piece *pieces[MAX_STAGES + 1];
    size_t piece_cap[MAX_STAGES + 1];
    char *pfx; /* " " + piece, for ByteLevel.add_prefix_space */
    size_t pfx_cap;
    uint8_t *blstr; /* byte-level string of a piece (ignore_merges lookups) */
    size_t blstr_cap;

    int32_t *out;
    size_t n_out, cap_out;
    int nomem; /* an encode failed for memory (dsv4_tokenize: DSV4_ERR_NOMEM, not a bad input) */

    bpe_sym *syms;
    size_t syms_cap;
    merge_cand *heap;
    size_t heap_cap;

    /* cache: piece bytes -> ids */
    cache_ent *ents;
    uint32_t n_ents;
    int32_t *slots;
    uint32_t slot_mask;
    char *keys;
    size_t keys_n, keys_cap;
    int32_t *ids;
    size_t ids_n, ids_cap;

    char *err;
    size_t errlen;
};

void dsv4_tok_ctx_free(enc_ctx *c)
{
    if (!c) return;
    dsv4_re_scratch_free(c->re);
    for (int i = 0; i <= MAX_STAGES; i++) {
        free(c->spans[i]);
        free(c->pieces[i]);
    }
    free(c->pfx);
    free(c->blstr);
    free(c->out);
    free(c->syms);
    free(c->heap);
    free(c->ents);
    free(c->slots);
    free(c->keys);
    free(c->ids);
    free(c);
}

enc_ctx *dsv4_tok_ctx_new(uint32_t cache_entries)
{
    enc_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->re = dsv4_re_scratch_create();
    c->slot_mask = cache_entries * 2 - 1;
    c->slots = malloc((size_t)cache_entries * 2 * sizeof *c->slots);
    c->ents = malloc((size_t)cache_entries * sizeof *c->ents);
    if (!c->re || !c->slots || !c->ents) {
        dsv4_tok_ctx_free(c);
        return NULL;
    }
    memset(c->slots, 0xff, (size_t)cache_entries * 2 * sizeof *c->slots);
    return c;
}

static void cache_clear(enc_ctx *c)
{
    memset(c->slots, 0xff, ((size_t)c->slot_mask + 1) * sizeof *c->slots);
    c->n_ents = 0;
    c->keys_n = 0;
    c->ids_n = 0;
}

static const cache_ent *cache_get(const enc_ctx *c, const char *k, size_t n, uint64_t h)
{
    uint32_t i = (uint32_t)h & c->slot_mask;
    for (;;) {
        int32_t e = c->slots[i];
        if (e < 0) return NULL;
        const cache_ent *en = &c->ents[e];
        if (en->hash == h && en->key_len == n && !memcmp(c->keys + en->key_off, k, n)) return en;
        i = (i + 1) & c->slot_mask;
    }
}

/* Caching is best effort: on any allocation failure the entry is skipped. */
static void cache_put(enc_ctx *c, const char *k, size_t n, uint64_t h, const int32_t *ids, size_t n_ids)
{
    if ((c->n_ents + 1) * 2 > c->slot_mask + 1) cache_clear(c);
    if (c->keys_n + n > c->keys_cap) {
        size_t cap = c->keys_cap ? c->keys_cap * 2 : 1 << 16;
        while (cap < c->keys_n + n) cap *= 2;
        if (cap > CACHE_MAX_KEY_BYTES) {
            cache_clear(c);
            if (n > c->keys_cap) return;
        } else {
            char *p = realloc(c->keys, cap);
            if (!p) return;
            c->keys = p;
            c->keys_cap = cap;
        }
    }
    if (c->ids_n + n_ids > c->ids_cap) {
        size_t cap = c->ids_cap ? c->ids_cap * 2 : 1 << 14;
        while (cap < c->ids_n + n_ids) cap *= 2;
        if (cap > CACHE_MAX_IDS) {
            cache_clear(c);
            if (n_ids > c->ids_cap || n > c->keys_cap) return;
        } else {
            int32_t *p = realloc(c->ids, cap * sizeof *p);
            if (!p) return;
            c->ids = p;
            c->ids_cap = cap;
        }
    }
    uint32_t i = (uint32_t)h & c->slot_mask;
    while (c->slots[i] >= 0) i = (i + 1) & c->slot_mask;
    cache_ent *e = &c->ents[c->n_ents];
    e->hash = h;
    e->key_off = (uint32_t)c->keys_n;
    e->key_len = (uint32_t)n;
    e->ids_off = (uint32_t)c->ids_n;
    e->n_ids = (uint32_t)n_ids;
    memcpy(c->keys + c->keys_n, k, n);
    if (n_ids) memcpy(c->ids + c->ids_n, ids, n_ids * sizeof *ids);
    c->keys_n += n;
    c->ids_n += n_ids;
    c->slots[i] = (int32_t)c->n_ents++;
}

/* An allocation of the encode failed: "out of memory", and -1 as every failure of the encode's steps. */
static int enc_nomem(enc_ctx *c)
{
    snprintf(c->err, c->errlen, "out of memory");
    c->nomem = 1;
    return -1;
}

static int emit(enc_ctx *c, int32_t id)
{
    if (c->n_out == c->cap_out && dsv4_grow((void **)&c->out, &c->cap_out, c->n_out + 1, sizeof *c->out)) {
        return enc_nomem(c);
    }
    c->out[c->n_out++] = id;
    return 0;
}

/* ======================================================================== */
/* BPE on one pre-token                                                     */

static inline int cand_less(const merge_cand *a, const merge_cand *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(merge_cand *h, size_t *n, merge_cand x)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&x, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static merge_cand heap_pop(merge_cand *h, size_t *n)
{
    merge_cand top = h[0], x = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const merge_cand *best = &x;
        if (l < *n && cand_less(&h[l], best)) {
            m = l;
            best = &h[l];
        }
        if (r < *n && cand_less(&h[r], best)) m = r;
        if (m == i) break;
        h[i] = h[m];
        i = m;
    }
    if (*n) h[i] = x;
    return top;
}

#define BPE_SMALL 48
#define NO_RANK UINT32_MAX

/* Short words: the same choice as the heap below (the lowest-ranked pair
 * present, leftmost on ties) found by a scan over at most BPE_SMALL symbols,
 * which beats heap upkeep for the words that make up most text. */
static int bpe_small(const dsv4_tokenizer *t, enc_ctx *c, int32_t ns)
{
    bpe_sym *sy = c->syms;
    uint32_t rank[BPE_SMALL] = {0}; /* rank of the pair (i, next(i)); NO_RANK if none */
    int32_t merged[BPE_SMALL];
    for (int32_t i = 0; i < ns; i++)
        if (i + 1 == ns || !mmap_get(&t->merges, sy[i].id, sy[i + 1].id, &rank[i], &merged[i])) rank[i] = NO_RANK;
    for (;;) {
        int32_t best = -1;
        uint32_t br = NO_RANK;
        for (int32_t i = 0; i >= 0; i = sy[i].next)
            if (rank[i] < br) {
                br = rank[i];
                best = i;
            }
        if (best < 0) break;
        bpe_sym *a = &sy[best], *b = &sy[a->next];
        a->id = merged[best];
        a->len += b->len;
        b->len = 0;
        a->next = b->next;
        if (a->next >= 0) sy[a->next].prev = best;
        if (a->next < 0 || !mmap_get(&t->merges, a->id, sy[a->next].id, &rank[best], &merged[best]))
            rank[best] = NO_RANK;
        if (a->prev >= 0 && !mmap_get(&t->merges, sy[a->prev].id, a->id, &rank[a->prev], &merged[a->prev]))
            rank[a->prev] = NO_RANK;
    }
    for (int32_t i = 0; i >= 0; i = sy[i].next)
        if (emit(c, sy[i].id)) return -1;
    return 0;
}

/* HF's Word::merge_all: repeatedly merge the adjacent pair of lowest rank,
 * leftmost first; a queued candidate is stale once the pair at its position
 * no longer merges into the same token. Appends the resulting ids. */
static int bpe_word(const dsv4_tokenizer *t, enc_ctx *c, const uint8_t *s, size_t n)
{
    if (dsv4_grow((void **)&c->syms, &c->syms_cap, n, sizeof *c->syms) ||
        dsv4_grow((void **)&c->heap, &c->heap_cap, 2 * n + 2, sizeof *c->heap)) {
        return enc_nomem(c);
    }
    bpe_sym *sy = c->syms;
    int32_t ns = 0;
    /* merge_word: bytes whose character is not in the vocabulary become the
     * unknown token (fused if fuse_unk) or are dropped when there is none. */
    int32_t unk_pending = 0;
    uint32_t unk_len = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_id[s[i]];
        if (id >= 0) {
            if (unk_pending) {
                sy[ns] = (bpe_sym){t->unk_id, ns - 1, ns + 1, unk_len};
                ns++;
                unk_pending = 0;
            }
            sy[ns] = (bpe_sym){id, ns - 1, ns + 1, 1};
            ns++;
        } else if (t->unk_id >= 0) {
            /* one byte = one character of the byte-level string */
            if (unk_pending && t->fuse_unk) {
                unk_len += 1;
            } else {
                if (unk_pending) {
                    sy[ns] = (bpe_sym){t->unk_id, ns - 1, ns + 1, unk_len};
                    ns++;
                }
                unk_pending = 1;
                unk_len = 1;
            }
        }
    }
    if (unk_pending) {
        sy[ns] = (bpe_sym){t->unk_id, ns - 1, ns + 1, unk_len};
        ns++;
    }
    if (ns == 0) return 0;
    sy[ns - 1].next = -1;
    if (ns <= BPE_SMALL) return bpe_small(t, c, ns);

    size_t nh = 0;
    merge_cand *h = c->heap;
    for (int32_t i = 0; i + 1 < ns; i++) {
        uint32_t rank;
        int32_t merged;
        if (mmap_get(&t->merges, sy[i].id, sy[i + 1].id, &rank, &merged))
            heap_push(h, &nh, (merge_cand){(uint32_t)i, rank, merged, sy[i].len + sy[i + 1].len});
    }
    while (nh) {
        merge_cand top = heap_pop(h, &nh);
        bpe_sym *a = &sy[top.pos];
        if (a->len == 0 || a->next < 0) continue;
        bpe_sym *b = &sy[a->next];
        /* HF re-checks that the pair now at pos still merges into top.merged.
         * Symbols only grow, so the pair at pos is unchanged exactly when its
         * length is: comparing lengths is the same test without a lookup. */
        if (a->len + b->len != top.len) continue;
        uint32_t rank;
        int32_t merged;
        a->id = top.merged;
        a->len += b->len;
        b->len = 0;
        a->next = b->next;
        if (a->next >= 0) sy[a->next].prev = (int32_t)top.pos;
        /* At most two new candidates per merge and one pop: the heap never
         * holds more than 2n entries. */
        if (a->prev >= 0 && mmap_get(&t->merges, sy[a->prev].id, a->id, &rank, &merged))
            heap_push(h, &nh, (merge_cand){(uint32_t)a->prev, rank, merged, sy[a->prev].len + a->len});
        if (a->next >= 0 && mmap_get(&t->merges, a->id, sy[a->next].id, &rank, &merged))
            heap_push(h, &nh, (merge_cand){top.pos, rank, merged, a->len + sy[a->next].len});
    }
    for (int32_t i = 0; i >= 0; i = sy[i].next)
        if (emit(c, sy[i].id)) return -1;
    return 0;
}

static int bpe_piece(const dsv4_tokenizer *t, enc_ctx *c, const char *s, size_t n)
{
    uint64_t h = 0;
    if (n <= CACHE_MAX_PIECE) {
        h = hash_bytes(s, n);
        const cache_ent *e = cache_get(c, s, n, h);
        if (e) {
            if (dsv4_grow((void **)&c->out, &c->cap_out, c->n_out + e->n_ids, sizeof *c->out)) {
                return enc_nomem(c);
            }
            if (e->n_ids) memcpy(c->out + c->n_out, c->ids + e->ids_off, e->n_ids * sizeof *c->out);
            c->n_out += e->n_ids;
            return 0;
        }
    }
    size_t first = c->n_out;
    int done = 0;
    if (t->ignore_merges) {
        /* A piece that is a whole vocabulary token is that token. */
        if (dsv4_grow((void **)&c->blstr, &c->blstr_cap, 2 * n, 1)) {
            return enc_nomem(c);
        }
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            uint8_t b = (uint8_t)s[i];
            memcpy(c->blstr + m, t->bl_char[b], t->bl_len[b]);
            m += t->bl_len[b];
        }
        int32_t id = smap_get(&t->vocab, (const char *)c->blstr, m);
        if (id >= 0) {
            if (emit(c, id)) return -1;
            done = 1;
        }
    }
    if (!done && bpe_word(t, c, (const uint8_t *)s, n)) return -1;
    if (n <= CACHE_MAX_PIECE) cache_put(c, s, n, h, c->out + first, c->n_out - first);
    return 0;
}

/* ======================================================================== */
/* Pre-tokenizer                                                            */

/* ByteLevel: optional leading space, optional GPT-2 split, then BPE. */
static int byte_level(const dsv4_tokenizer *t, enc_ctx *c, const char *s, size_t n)
{
    if (t->bl_prefix_space && s[0] != ' ') {
        if (dsv4_grow((void **)&c->pfx, &c->pfx_cap, n + 1, 1)) {
            return enc_nomem(c);
        }
        c->pfx[0] = ' ';
        memcpy(c->pfx + 1, s, n);
        s = c->pfx;
        n++;
    }
    if (!t->bl_regex) return bpe_piece(t, c, s, n);
    long m = dsv4_re_find_all(t->bl_regex, c->re, s, n, &c->spans[MAX_STAGES], &c->span_cap[MAX_STAGES], c->err,
                              c->errlen);
    if (m < 0) {
        c->nomem |= m == -2;
        return -1;
    }
    /* Isolated: matches and the gaps between them are all pieces. */
    const dsv4_re_span *sp = c->spans[MAX_STAGES];
    size_t prev = 0;
    for (long k = 0; k < m; k++) {
        if (sp[k].start > prev && bpe_piece(t, c, s + prev, sp[k].start - prev)) return -1;
        if (sp[k].end > sp[k].start && bpe_piece(t, c, s + sp[k].start, sp[k].end - sp[k].start)) return -1;
        prev = sp[k].end;
    }
    if (prev < n && bpe_piece(t, c, s + prev, n - prev)) return -1;
    return 0;
}

/* Stage `k` of the pre-tokenizer on one piece; the pieces it leaves go to
 * stage k + 1 (depth first, which keeps HF's order: HF runs each stage over
 * every piece, and pieces never interact). */
static int pretok(const dsv4_tokenizer *t, enc_ctx *c, int k, const char *s, size_t n)
{
    if (k == t->n_stages) return byte_level(t, c, s, n);
    const split_stage *st = &t->stages[k];
    long m = dsv4_re_find_all(st->re, c->re, s, n, &c->spans[k], &c->span_cap[k], c->err, c->errlen);
    if (m < 0) {
        c->nomem |= m == -2;
        return -1;
    }
    /* HF's Pattern::find_matches: the piece cut into (span, is_match), gaps
     * included, then the behaviour folds them (normalizer.rs, split). */
    if (dsv4_grow((void **)&c->pieces[k], &c->piece_cap[k], 2 * (size_t)m + 1, sizeof(piece))) {
        return enc_nomem(c);
    }
    piece *out = c->pieces[k];
    size_t np = 0;
    const dsv4_re_span *sp = c->spans[k];
    int prev_match = 0;
    size_t prev = 0;
    for (long j = 0; j <= m; j++) {
        /* two events per match: the gap before it (if any), then the match */
        for (int ev = 0; ev < 2; ev++) {
            size_t a, b;
            int is_match;
            if (ev == 0) {
                a = prev;
                b = j < m ? sp[j].start : n;
                if (a == b) continue; /* no gap (an empty piece: dropped) */
                is_match = 0;
            } else {
                if (j == m) break;
                a = sp[j].start;
                b = sp[j].end;
                is_match = 1;
            }
            if (st->invert) is_match = !is_match;
            switch (st->behavior) {
            case SPLIT_ISOLATED: out[np++] = (piece){a, b}; break;
            case SPLIT_REMOVED:
                if (!is_match) out[np++] = (piece){a, b};
                break;
            case SPLIT_CONTIGUOUS:
                if (is_match == prev_match && np) out[np - 1].end = b;
                else out[np++] = (piece){a, b};
                break;
            case SPLIT_MERGED_WITH_PREVIOUS:
                if (is_match && !prev_match && np) out[np - 1].end = b;
                else out[np++] = (piece){a, b};
                break;
            case SPLIT_MERGED_WITH_NEXT:
                /* folded right to left below */
                out[np].start = a;
                out[np].end = b | ((size_t)is_match << (sizeof(size_t) * 8 - 1));
                np++;
                break;
            }
            prev_match = is_match;
        }
        if (j < m) prev = sp[j].end;
    }
    if (st->behavior == SPLIT_MERGED_WITH_NEXT) {
        /* HF folds from the end: a match that follows a non-match (reading
         * backwards) is glued to the front of the piece after it. */
        const size_t flag = (size_t)1 << (sizeof(size_t) * 8 - 1);
        size_t w = np; /* output written backwards into out[w..np) */
        int prevm = 0;
        for (size_t r = np; r-- > 0;) {
            size_t a = out[r].start, b = out[r].end & ~flag;
            int is_match = (out[r].end & flag) != 0;
            if (is_match && !prevm && w < np) out[w].start = a;
            else out[--w] = (piece){a, b};
            prevm = is_match;
        }
        memmove(out, out + w, (np - w) * sizeof *out);
        np -= w;
    }
    for (size_t j = 0; j < np; j++) {
        /* re-read: deeper stages use their own buffers, but be explicit */
        piece p = c->pieces[k][j];
        if (p.end > p.start && pretok(t, c, k + 1, s + p.start, p.end - p.start)) return -1;
    }
    return 0;
}

/* ======================================================================== */
/* Added tokens (HF's AddedVocabulary::find_matches)                        */

static int is_word_char(const dsv4_tokenizer *t, enc_ctx *c, const char *s, size_t n)
{
    dsv4_re_span *sp = NULL;
    size_t cap = 0;
    char e[64];
    long m = dsv4_re_find_all(t->word_char, c->re, s, n, &sp, &cap, e, sizeof e);
    free(sp);
    return m > 0;
}

static int added_pass(const dsv4_tokenizer *t, enc_ctx *c, int level, const char *s, size_t n);

static int added_gap(const dsv4_tokenizer *t, enc_ctx *c, int level, const char *s, size_t n)
{
    if (n == 0) return 0;
    if (level == 0) return added_pass(t, c, 1, s, n);
    return pretok(t, c, 0, s, n);
}

/* level 0: tokens with normalized = false on the raw text; level 1: tokens
 * with normalized = true on each piece left (the normalizer is the identity). */
static int added_pass(const dsv4_tokenizer *t, enc_ctx *c, int level, const char *s, size_t n)
{
    const trie *tr = level == 0 ? &t->trie_raw : &t->trie_norm;
    if (tr->n_tokens == 0) return added_gap(t, c, level, s, n);
    size_t start_offset = 0;
    size_t i = 0;
    while (i < n) {
        int32_t idx;
        size_t ml = tr->root[(uint8_t)s[i]] >= 0 ? trie_longest(tr, s + i, n - i, &idx) : 0;
        if (!ml) {
            i++;
            continue;
        }
        /* The search resumes after this match whether or not it is kept. */
        size_t start = i, stop = i + ml;
        i = stop;
        const added_token *at = &t->added[idx];
        if (at->single_word) {
            int start_space = 1, stop_space = 1;
            if (start > 0) {
                size_t b = start - 1;
                while (b > 0 && ((uint8_t)s[b] & 0xC0) == 0x80) b--;
                start_space = !is_word_char(t, c, s + b, start - b);
            }
            if (stop < n) {
                int l;
                utf8_decode((const uint8_t *)s + stop, &l);
                stop_space = !is_word_char(t, c, s + stop, (size_t)l);
            }
            if (!start_space || !stop_space) continue;
        }
        if (at->lstrip) {
            size_t b = start;
            while (b > 0) {
                size_t q = b - 1;
                while (q > 0 && ((uint8_t)s[q] & 0xC0) == 0x80) q--;
                int l;
                if (!is_white_space(utf8_decode((const uint8_t *)s + q, &l))) break;
                b = q;
            }
            start = b > start_offset ? b : start_offset;
        }
        if (at->rstrip) {
            while (stop < n) {
                int l;
                if (!is_white_space(utf8_decode((const uint8_t *)s + stop, &l))) break;
                stop += (size_t)l;
            }
        }
        if (start_offset < start && added_gap(t, c, level, s + start_offset, start - start_offset)) return -1;
        if (emit(c, at->id)) return -1;
        start_offset = stop;
    }
    if (start_offset < n) return added_gap(t, c, level, s + start_offset, n - start_offset);
    return 0;
}

/* ======================================================================== */
/* Public: encode, lookups                                                  */

dsv4_status dsv4_tokenize(const dsv4_tokenizer *tok, const char *text, size_t len, bool parse_special,
                          int32_t **ids, size_t *n, char *err, size_t errlen)
{
    *ids = NULL;
    *n = 0;
    size_t bad;
    if (!dsv4_utf8_valid(text, len, &bad)) {
        snprintf(err, errlen, "text is not valid UTF-8 (byte %zu of %zu)", bad, len);
        return DSV4_ERR_INVALID;
    }
    dsv4_tokenizer *t = (dsv4_tokenizer *)tok; /* only the lock and the shared cache change */
    enc_ctx *c = NULL;
    int locked = pthread_mutex_trylock(&t->lock) == 0;
    if (locked) c = t->shared;
    else c = dsv4_tok_ctx_new(1u << 12);
    if (!c) {
        if (locked) pthread_mutex_unlock(&t->lock);
        snprintf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    c->err = err;
    c->errlen = errlen;
    c->n_out = 0;
    c->nomem = 0;
    int rc = parse_special ? added_pass(t, c, 0, text, len) : (len ? pretok(t, c, 0, text, len) : 0);
    dsv4_status st = DSV4_OK;
    if (rc == 0) {
        int32_t *o = malloc((c->n_out ? c->n_out : 1) * sizeof *o);
        if (!o) {
            snprintf(err, errlen, "out of memory");
            st = DSV4_ERR_NOMEM;
        } else {
            if (c->n_out) memcpy(o, c->out, c->n_out * sizeof *o);
            *ids = o;
            *n = c->n_out;
        }
    } else {
        st = c->nomem ? DSV4_ERR_NOMEM : DSV4_ERR_INVALID;
    }
    if (c->cap_out > (1u << 20)) { /* do not keep a huge output buffer around */
        free(c->out);
        c->out = NULL;
        c->cap_out = 0;
    }
    if (locked) pthread_mutex_unlock(&t->lock);
    else dsv4_tok_ctx_free(c);
    return st;
}

int32_t dsv4_token_id(const dsv4_tokenizer *tok, const char *content)
{
    size_t n = strlen(content);
    int32_t id = smap_get(&tok->added_map, content, n);
    return id >= 0 ? id : smap_get(&tok->vocab, content, n);
}

int32_t dsv4_tokenizer_vocab_size(const dsv4_tokenizer *tok) { return tok->n_ids; }

bool dsv4_token_is_special(const dsv4_tokenizer *tok, int32_t id)
{
    if (id < 0 || id >= tok->n_ids || tok->added_index[id] < 0) return false;
    return tok->added[tok->added_index[id]].special;
}

const uint8_t *dsv4_tok_bytes(const dsv4_tokenizer *tok, int32_t id, size_t *len)
{
    if (id < 0 || id >= tok->n_ids || tok->dec_len[id] < 0) return NULL;
    *len = (size_t)tok->dec_len[id];
    return tok->dec_arena + tok->dec_off[id];
}

