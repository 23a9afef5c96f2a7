/*
 * tokenizer_impl.h - what tokenizer.c (encoding) and tokenizer_load.c (reading
 * tokenizer.json) share: the tokenizer struct and its small containers, whose
 * lookups are inline because the encoder calls them for every pair it merges.
 * Private to src/text/.
 */
#ifndef DSV4_TEXT_TOKENIZER_IMPL_H
#define DSV4_TEXT_TOKENIZER_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/regex.h"
#include "text/tokenizer.h"

#define MAX_STAGES 16 /* pre-tokenizer Split/Digits stages */

/* ------------------------------------------------------------------------ */
/* Hashing                                                                  */

static inline uint64_t hash_bytes(const void *p, size_t n)
{
    const uint8_t *s = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, s, n);
    h ^= v;
    /* murmur3's finalizer: every input bit reaches the low bits used as slots */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static inline uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* ------------------------------------------------------------------------ */
/* String -> id map (tokenizer_load.c builds it)                            */

/* Keys copied into one arena. Inserting an existing key
 * replaces its id (the last one wins, as in a JSON object or a Rust map). */
typedef struct {
    uint32_t off, len;
    int32_t id;
} smap_ent;

typedef struct {
    smap_ent *ents;
    uint32_t n, cap_ents;
    int32_t *slots; /* index into ents, -1 empty */
    uint32_t mask;
    char *arena;
    size_t arena_n, arena_cap;
} smap;

static inline int32_t *smap_find_slot(const smap *m, const char *k, size_t n)
{
    uint32_t i = (uint32_t)hash_bytes(k, n) & m->mask;
    for (;;) {
        int32_t e = m->slots[i];
        if (e < 0) return &m->slots[i];
        const smap_ent *en = &m->ents[e];
        if (en->len == n && !memcmp(m->arena + en->off, k, n)) return &m->slots[i];
        i = (i + 1) & m->mask;
    }
}

static inline int32_t smap_get(const smap *m, const char *k, size_t n)
{
    if (!m->slots) return -1;
    int32_t e = *smap_find_slot(m, k, n);
    return e < 0 ? -1 : m->ents[e].id;
}

int dsv4_smap_init(smap *m, uint32_t expect);
int dsv4_smap_put(smap *m, const char *k, size_t n, int32_t id);
void dsv4_smap_free(smap *m);

/* ------------------------------------------------------------------------ */
/* Merge map                                                                */

/* (left id, right id) -> (rank, merged id); one 16-byte slot per entry so a
 * lookup touches one cache line. */
typedef struct {
    uint64_t key; /* (a << 32 | b) + 1; 0 = empty */
    uint32_t rank;
    int32_t merged;
} merge_slot;

typedef struct {
    merge_slot *slots;
    uint64_t mask;
} merge_map;

static inline uint64_t mmap_key(int32_t a, int32_t b) { return (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1; }

static inline int mmap_get(const merge_map *m, int32_t a, int32_t b, uint32_t *rank, int32_t *merged)
{
    uint64_t k = mmap_key(a, b), i = hash_u64(k) & m->mask;
    for (;;) {
        const merge_slot *sl = &m->slots[i];
        if (sl->key == k) {
            *rank = sl->rank;
            *merged = sl->merged;
            return 1;
        }
        if (!sl->key) return 0;
        i = (i + 1) & m->mask;
    }
}

/* ------------------------------------------------------------------------ */
/* Added tokens: a byte trie, searched leftmost-longest                     */

typedef struct {
    int32_t term;      /* index into tok->added, -1 if no token ends here */
    int32_t first;     /* first child edge, -1 none */
} trie_node;

typedef struct {
    uint8_t byte;
    int32_t child, next; /* next sibling edge */
} trie_edge;

typedef struct {
    int32_t root[256]; /* child of the root per first byte, -1 none */
    trie_node *nodes;
    int n_nodes, cap_nodes;
    trie_edge *edges;
    int n_edges, cap_edges;
    int n_tokens;
} trie;

static inline int32_t trie_child(const trie *t, int32_t node, uint8_t b)
{
    for (int32_t e = t->nodes[node].first; e >= 0; e = t->edges[e].next)
        if (t->edges[e].byte == b) return t->edges[e].child;
    return -1;
}

/* The longest token starting at s[0]: its length, *value its index; 0 if none. */
static inline size_t trie_longest(const trie *t, const char *s, size_t n, int32_t *value)
{
    int32_t node = t->root[(uint8_t)s[0]];
    size_t best = 0;
    for (size_t i = 1; node >= 0; i++) {
        if (t->nodes[node].term >= 0) {
            best = i;
            *value = t->nodes[node].term;
        }
        if (i == n) break;
        node = trie_child(t, node, (uint8_t)s[i]);
    }
    return best;
}

/* ------------------------------------------------------------------------ */
/* UTF-8 and the GPT-2 byte <-> character map                               */

static inline uint32_t utf8_decode(const uint8_t *s, int *len)
{
    uint8_t c = s[0];
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    if (c < 0xE0) {
        *len = 2;
        return (uint32_t)(c & 0x1F) << 6 | (s[1] & 0x3F);
    }
    if (c < 0xF0) {
        *len = 3;
        return (uint32_t)(c & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    }
    *len = 4;
    return (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 | (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
}

static inline int utf8_encode(uint32_t cp, uint8_t *o)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

static inline void byte_level_map(uint32_t map[256])
{
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        map[b] = printable ? (uint32_t)b : (uint32_t)(256 + n++);
    }
}

/* ------------------------------------------------------------------------ */
/* The tokenizer                                                            */

typedef struct enc_ctx enc_ctx;

typedef enum {
    SPLIT_ISOLATED,
    SPLIT_REMOVED,
    SPLIT_MERGED_WITH_PREVIOUS,
    SPLIT_MERGED_WITH_NEXT,
    SPLIT_CONTIGUOUS,
} split_behavior;

typedef struct {
    dsv4_re *re;
    split_behavior behavior;
    int invert;
} split_stage;

typedef struct {
    char *content;
    uint32_t len;
    int32_t id;
    bool special, lstrip, rstrip, single_word, normalized;
} added_token;

struct dsv4_tokenizer {
    /* BPE model */
    smap vocab;               /* token string -> id */
    uint32_t vocab_entries;   /* HF's model.get_vocab_size() */
    merge_map merges;
    int32_t byte_id[256];     /* id of the single-byte token for each byte, -1 none */
    uint8_t bl_char[256][2];  /* UTF-8 of the GPT-2 byte-level character per byte */
    uint8_t bl_len[256];
    bool ignore_merges;
    int32_t unk_id;           /* -1 none */
    bool fuse_unk;

    /* added tokens (HF's added_tokens_map_r, by index) */
    added_token *added;
    int n_added;
    smap added_map;           /* content -> id */
    trie trie_raw, trie_norm; /* non-normalized / normalized contents -> index into added */
    int32_t *added_index;     /* [n_ids]: index into added, -1 if id is not an added token */
    dsv4_re *word_char;       /* one \w character (Rust regex), for single_word tokens */

    /* pre-tokenizer */
    split_stage stages[MAX_STAGES];
    int n_stages;
    bool bl_prefix_space;
    dsv4_re *bl_regex;        /* GPT-2 split when ByteLevel.use_regex, else NULL */

    /* decoding: bytes per id */
    int32_t n_ids;            /* largest id + 1 */
    uint32_t *dec_off;        /* [n_ids] */
    int32_t *dec_len;         /* [n_ids]; -1: no such token */
    uint8_t *dec_arena;

    /* the shared encoding context (BPE cache and scratch), try-locked */
    pthread_mutex_t lock;
    enc_ctx *shared;
};

/* The encoding context (scratch and BPE cache): tokenizer.c. */
enc_ctx *dsv4_tok_ctx_new(uint32_t cache_entries);
void dsv4_tok_ctx_free(enc_ctx *c);
#define DSV4_TOK_CACHE_ENTRIES (1u << 17)

#endif
