/*
 * tokenizer_load.c - reading and validating a HF tokenizer.json into a dsv4_tokenizer.
 *
 * Everything the encoder will need is built here, once: the vocabulary and
 * merge maps, the added-token tries, the compiled pre-tokenizer stages and the
 * bytes each id decodes to. What dsv4 cannot reproduce exactly (a normalizer,
 * another model type, byte fallback, a pre-tokenizer or decoder it does not
 * know) is refused with a message naming the field, never approximated.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_util.h"
#include "text/tokenizer_impl.h"

/* ======================================================================== */
/* Containers                                                               */

int dsv4_smap_init(smap *m, uint32_t expect)
{
    memset(m, 0, sizeof *m);
    uint32_t cap = 16;
    while (cap < expect * 2) cap *= 2;
    m->slots = malloc(cap * sizeof *m->slots);
    if (!m->slots) return -1;
    memset(m->slots, 0xff, cap * sizeof *m->slots);
    m->mask = cap - 1;
    return 0;
}

void dsv4_smap_free(smap *m)
{
    free(m->ents);
    free(m->slots);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

static int smap_grow(smap *m)
{
    uint32_t cap = (m->mask + 1) * 2;
    int32_t *slots = malloc(cap * sizeof *slots);
    if (!slots) return -1;
    memset(slots, 0xff, cap * sizeof *slots);
    free(m->slots);
    m->slots = slots;
    m->mask = cap - 1;
    for (uint32_t e = 0; e < m->n; e++) *smap_find_slot(m, m->arena + m->ents[e].off, m->ents[e].len) = (int32_t)e;
    return 0;
}

int dsv4_smap_put(smap *m, const char *k, size_t n, int32_t id)
{
    int32_t *slot = smap_find_slot(m, k, n);
    if (*slot >= 0) {
        m->ents[*slot].id = id;
        return 0;
    }
    if (m->n == m->cap_ents) {
        uint32_t c = m->cap_ents ? m->cap_ents * 2 : 1024;
        smap_ent *e = realloc(m->ents, c * sizeof *e);
        if (!e) return -1;
        m->ents = e;
        m->cap_ents = c;
    }
    if (m->arena_n + n + 1 > m->arena_cap) {
        size_t c = m->arena_cap ? m->arena_cap : 65536;
        while (c < m->arena_n + n + 1) c *= 2;
        char *a = realloc(m->arena, c);
        if (!a) return -1;
        m->arena = a;
        m->arena_cap = c;
    }
    memcpy(m->arena + m->arena_n, k, n);
    m->arena[m->arena_n + n] = 0;
    m->ents[m->n] = (smap_ent){(uint32_t)m->arena_n, (uint32_t)n, id};
    m->arena_n += n + 1;
    *slot = (int32_t)m->n++;
    if (m->n * 2 > m->mask + 1) return smap_grow(m);
    return 0;
}

static int mmap_init(merge_map *m, size_t n)
{
    uint64_t cap = 16;
    while (cap < n * 2) cap *= 2;
    m->slots = calloc(cap, sizeof *m->slots);
    m->mask = cap - 1;
    return m->slots ? 0 : -1;
}

static void mmap_free(merge_map *m) { free(m->slots); }

/* A later merge of the same pair replaces the earlier (HF collects into a map). */
static void mmap_put(merge_map *m, int32_t a, int32_t b, uint32_t rank, int32_t merged)
{
    uint64_t k = mmap_key(a, b), i = hash_u64(k) & m->mask;
    while (m->slots[i].key && m->slots[i].key != k) i = (i + 1) & m->mask;
    m->slots[i] = (merge_slot){k, rank, merged};
}

static void trie_init(trie *t)
{
    memset(t, 0, sizeof *t);
    memset(t->root, 0xff, sizeof t->root);
}

static void trie_free(trie *t)
{
    free(t->nodes);
    free(t->edges);
}

static int32_t trie_new_node(trie *t)
{
    if (t->n_nodes == t->cap_nodes) {
        int c = t->cap_nodes ? t->cap_nodes * 2 : 256;
        trie_node *n = realloc(t->nodes, (size_t)c * sizeof *n);
        if (!n) return -1;
        t->nodes = n;
        t->cap_nodes = c;
    }
    t->nodes[t->n_nodes] = (trie_node){-1, -1};
    return t->n_nodes++;
}

static int trie_add(trie *t, const char *s, size_t n, int32_t value)
{
    int32_t node = t->root[(uint8_t)s[0]];
    if (node < 0) {
        if ((node = trie_new_node(t)) < 0) return -1;
        t->root[(uint8_t)s[0]] = node;
    }
    for (size_t i = 1; i < n; i++) {
        int32_t c = trie_child(t, node, (uint8_t)s[i]);
        if (c < 0) {
            if ((c = trie_new_node(t)) < 0) return -1;
            if (t->n_edges == t->cap_edges) {
                int cap = t->cap_edges ? t->cap_edges * 2 : 256;
                trie_edge *e = realloc(t->edges, (size_t)cap * sizeof *e);
                if (!e) return -1;
                t->edges = e;
                t->cap_edges = cap;
            }
            t->edges[t->n_edges] = (trie_edge){(uint8_t)s[i], c, t->nodes[node].first};
            t->nodes[node].first = t->n_edges++;
        }
        node = c;
    }
    t->nodes[node].term = value;
    t->n_tokens++;
    return 0;
}

/* ======================================================================== */
/* Loading                                                                  */

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
    char *buf; /* scratch for merged token strings; freed by the caller */
    size_t bufcap;
} load_ctx;

#define FAIL(st, ...)                                                                                   \
    do {                                                                                                \
        int o_ = snprintf(L->err, L->errlen, "%s: ", L->path);                                         \
        if (o_ >= 0 && (size_t)o_ < L->errlen) snprintf(L->err + o_, L->errlen - (size_t)o_, __VA_ARGS__); \
        return (st);                                                                                    \
    } while (0)

static const char *jtype(const json_t *j, const char *fallback)
{
    const json_t *ty = json_object_get(j, "type");
    return json_is_string(ty) ? json_string_value(ty) : fallback;
}

static int jbool(const json_t *obj, const char *key, int dflt)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static dsv4_status load_normalizer(load_ctx *L, const json_t *n)
{
    if (!n || json_is_null(n)) return DSV4_OK;
    const char *ty = jtype(n, "?");
    if (!strcmp(ty, "Sequence")) {
        const json_t *list = json_object_get(n, "normalizers");
        if (json_is_array(list) && json_array_size(list) == 0) return DSV4_OK;
        const json_t *first = json_array_get(list, 0);
        FAIL(DSV4_ERR_UNSUPPORTED,
             "normalizer Sequence holds '%s'; dsv4 supports no normalizer or an empty Sequence",
             first ? jtype(first, "?") : "?");
    }
    FAIL(DSV4_ERR_UNSUPPORTED, "normalizer '%s' is not supported (dsv4 supports no normalizer or an empty Sequence)",
         ty);
}

static dsv4_status add_stage(load_ctx *L, dsv4_tokenizer *t, const char *pat, size_t len, int literal,
                             split_behavior b, int invert)
{
    if (t->n_stages == MAX_STAGES) FAIL(DSV4_ERR_UNSUPPORTED, "pre_tokenizer has more than %d stages", MAX_STAGES);
    char e[512];
    dsv4_status st = dsv4_re_compile(pat, len, literal, &t->stages[t->n_stages].re, e, sizeof e);
    if (st != DSV4_OK) FAIL(st, "pre_tokenizer: %s", e);
    t->stages[t->n_stages].behavior = b;
    t->stages[t->n_stages].invert = invert;
    t->n_stages++;
    return DSV4_OK;
}

static dsv4_status load_pretok_one(load_ctx *L, dsv4_tokenizer *t, const json_t *p, int *seen_bl)
{
    const char *ty = jtype(p, "?");
    if (*seen_bl) FAIL(DSV4_ERR_UNSUPPORTED, "pre_tokenizer: '%s' after ByteLevel is not supported (ByteLevel must come last)", ty);
    if (!strcmp(ty, "Sequence")) {
        const json_t *list = json_object_get(p, "pretokenizers");
        if (!json_is_array(list)) FAIL(DSV4_ERR_FORMAT, "pre_tokenizer Sequence has no 'pretokenizers' list");
        size_t i;
        const json_t *q;
        json_array_foreach(list, i, q)
        {
            dsv4_status st = load_pretok_one(L, t, q, seen_bl);
            if (st) return st;
        }
        return DSV4_OK;
    }
    if (!strcmp(ty, "Split")) {
        const json_t *pat = json_object_get(p, "pattern");
        const json_t *rx = json_object_get(pat, "Regex"), *lit = json_object_get(pat, "String");
        const json_t *src = json_is_string(rx) ? rx : lit;
        if (!json_is_string(src)) FAIL(DSV4_ERR_FORMAT, "pre_tokenizer Split: pattern must be {\"Regex\": ...} or {\"String\": ...}");
        const json_t *bj = json_object_get(p, "behavior");
        const char *bs = json_is_string(bj) ? json_string_value(bj) : "";
        split_behavior b;
        if (!strcmp(bs, "Isolated")) b = SPLIT_ISOLATED;
        else if (!strcmp(bs, "Removed")) b = SPLIT_REMOVED;
        else if (!strcmp(bs, "MergedWithPrevious")) b = SPLIT_MERGED_WITH_PREVIOUS;
        else if (!strcmp(bs, "MergedWithNext")) b = SPLIT_MERGED_WITH_NEXT;
        else if (!strcmp(bs, "Contiguous")) b = SPLIT_CONTIGUOUS;
        else FAIL(DSV4_ERR_FORMAT, "pre_tokenizer Split: unknown behavior '%s'", bs);
        return add_stage(L, t, json_string_value(src), json_string_length(src), src == lit, b,
                         jbool(p, "invert", 0));
    }
    if (!strcmp(ty, "Digits")) {
        /* HF splits on char::is_numeric (Nd, Nl, No): one piece per digit, or
         * per run of digits. */
        if (jbool(p, "individual_digits", 0)) return add_stage(L, t, "\\p{N}", 5, 0, SPLIT_ISOLATED, 0);
        return add_stage(L, t, "\\p{N}+", 6, 0, SPLIT_ISOLATED, 0);
    }
    if (!strcmp(ty, "ByteLevel")) {
        *seen_bl = 1;
        t->bl_prefix_space = jbool(p, "add_prefix_space", 0);
        if (jbool(p, "use_regex", 1)) {
            static const char gpt2[] =
                "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
            char e[512];
            if (dsv4_re_compile(gpt2, sizeof gpt2 - 1, 0, &t->bl_regex, e, sizeof e))
                FAIL(DSV4_ERR_FORMAT, "ByteLevel regex: %s", e);
        }
        return DSV4_OK;
    }
    FAIL(DSV4_ERR_UNSUPPORTED, "pre_tokenizer '%s' is not supported (dsv4 supports Sequence, Split, Digits, ByteLevel)",
         ty);
}

static dsv4_status load_model(load_ctx *L, dsv4_tokenizer *t, const json_t *m)
{
    if (!json_is_object(m)) FAIL(DSV4_ERR_FORMAT, "no 'model' object");
    const char *ty = jtype(m, "BPE");
    if (strcmp(ty, "BPE")) FAIL(DSV4_ERR_UNSUPPORTED, "model type '%s' is not supported (dsv4 supports BPE)", ty);
    if (jbool(m, "byte_fallback", 0)) FAIL(DSV4_ERR_UNSUPPORTED, "model.byte_fallback = true is not supported");
    const json_t *d = json_object_get(m, "dropout");
    if (d && !json_is_null(d) && json_number_value(d) != 0.0)
        FAIL(DSV4_ERR_UNSUPPORTED, "model.dropout = %g is not supported (BPE dropout is for training)",
             json_number_value(d));
    const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(m, affix[i]);
        if (v && !json_is_null(v)) FAIL(DSV4_ERR_UNSUPPORTED, "model.%s is not supported", affix[i]);
    }
    t->ignore_merges = jbool(m, "ignore_merges", 0);
    t->fuse_unk = jbool(m, "fuse_unk", 0);

    const json_t *vocab = json_object_get(m, "vocab");
    if (!json_is_object(vocab)) FAIL(DSV4_ERR_FORMAT, "model.vocab is not an object");
    if (dsv4_smap_init(&t->vocab, (uint32_t)json_object_size(vocab))) FAIL(DSV4_ERR_NOMEM, "out of memory");
    const char *key;
    const json_t *val;
    int32_t max_id = -1;
    json_object_foreach((json_t *)vocab, key, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) > INT32_MAX - 1)
            FAIL(DSV4_ERR_FORMAT, "model.vocab['%.60s']: expected a non-negative integer id", key);
        int32_t id = (int32_t)json_integer_value(val);
        if (dsv4_smap_put(&t->vocab, key, strlen(key), id)) FAIL(DSV4_ERR_NOMEM, "out of memory");
        if (id > max_id) max_id = id;
    }
    t->vocab_entries = t->vocab.n;
    t->n_ids = max_id + 1;

    t->unk_id = -1;
    const json_t *unk = json_object_get(m, "unk_token");
    if (json_is_string(unk)) {
        t->unk_id = smap_get(&t->vocab, json_string_value(unk), json_string_length(unk));
        if (t->unk_id < 0) FAIL(DSV4_ERR_FORMAT, "model.unk_token '%.60s' is not in model.vocab", json_string_value(unk));
    }

    uint32_t map[256];
    byte_level_map(map);
    for (int b = 0; b < 256; b++) {
        t->bl_len[b] = (uint8_t)utf8_encode(map[b], t->bl_char[b]);
        t->byte_id[b] = smap_get(&t->vocab, (const char *)t->bl_char[b], t->bl_len[b]);
    }

    const json_t *merges = json_object_get(m, "merges");
    if (!json_is_array(merges)) FAIL(DSV4_ERR_FORMAT, "model.merges is not a list");
    if (mmap_init(&t->merges, json_array_size(merges))) FAIL(DSV4_ERR_NOMEM, "out of memory");
    size_t i;
    uint32_t rank = 0;
    json_array_foreach(merges, i, val)
    {
        const char *a, *b;
        size_t la, lb;
        if (json_is_string(val)) {
            /* "a b": exactly two parts around one space; "#version" lines skipped */
            const char *s = json_string_value(val);
            size_t n = json_string_length(val);
            if (n >= 8 && !memcmp(s, "#version", 8)) continue;
            const char *sp = memchr(s, ' ', n);
            if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s))) {
                FAIL(DSV4_ERR_FORMAT, "model.merges[%zu] '%.60s' is not two tokens separated by one space", i, s);
            }
            a = s;
            la = (size_t)(sp - s);
            b = sp + 1;
            lb = n - la - 1;
        } else if (json_is_array(val) && json_array_size(val) == 2 && json_is_string(json_array_get(val, 0)) &&
                   json_is_string(json_array_get(val, 1))) {
            a = json_string_value(json_array_get(val, 0));
            la = json_string_length(json_array_get(val, 0));
            b = json_string_value(json_array_get(val, 1));
            lb = json_string_length(json_array_get(val, 1));
        } else {
            FAIL(DSV4_ERR_FORMAT, "model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", i);
        }
        int32_t ia = smap_get(&t->vocab, a, la), ib = smap_get(&t->vocab, b, lb);
        if (ia < 0 || ib < 0) {
            FAIL(DSV4_ERR_FORMAT, "model.merges[%zu]: '%.*s' is not in model.vocab", i, (int)(ia < 0 ? la : lb),
                 ia < 0 ? a : b);
        }
        if (la + lb > L->bufcap) {
            size_t cap = (la + lb) * 2 + 64;
            char *nb = realloc(L->buf, cap);
            if (!nb) FAIL(DSV4_ERR_NOMEM, "out of memory");
            L->buf = nb;
            L->bufcap = cap;
        }
        char *buf = L->buf;
        memcpy(buf, a, la);
        memcpy(buf + la, b, lb);
        int32_t im = smap_get(&t->vocab, buf, la + lb);
        if (im < 0) {
            FAIL(DSV4_ERR_FORMAT, "model.merges[%zu]: the merged token '%.*s' is not in model.vocab", i,
                 (int)(la + lb), buf);
        }
        mmap_put(&t->merges, ia, ib, rank++, im);
    }
    return DSV4_OK;
}

/* HF's AddedVocabulary::add_tokens, as run by Tokenizer::from_file: the id of
 * a token is the one its content already has (added earlier or in the model
 * vocabulary), else the next free one after the model's. The "id" written in
 * the file is not consulted (HF only warns when they differ). */
static dsv4_status load_added(load_ctx *L, dsv4_tokenizer *t, const json_t *list)
{
    if (dsv4_smap_init(&t->added_map, 64)) FAIL(DSV4_ERR_NOMEM, "out of memory");
    if (list && !json_is_null(list) && !json_is_array(list)) FAIL(DSV4_ERR_FORMAT, "added_tokens is not a list");
    size_t n = json_array_size(list);
    t->added = calloc(n ? n : 1, sizeof *t->added);
    if (!t->added) FAIL(DSV4_ERR_NOMEM, "out of memory");
    int32_t next_id = (int32_t)t->vocab_entries;
    size_t i;
    const json_t *a;
    json_array_foreach(list, i, a)
    {
        const json_t *c = json_object_get(a, "content");
        if (!json_is_string(c)) FAIL(DSV4_ERR_FORMAT, "added_tokens[%zu] has no string 'content'", i);
        added_token tk = {0};
        tk.len = (uint32_t)json_string_length(c);
        if (tk.len == 0) continue;
        tk.special = jbool(a, "special", 0);
        tk.lstrip = jbool(a, "lstrip", 0);
        tk.rstrip = jbool(a, "rstrip", 0);
        tk.single_word = jbool(a, "single_word", 0);
        tk.normalized = jbool(a, "normalized", !tk.special);
        const char *s = json_string_value(c);
        int32_t id = smap_get(&t->added_map, s, tk.len);
        if (id < 0) id = smap_get(&t->vocab, s, tk.len);
        if (id < 0) id = next_id++;
        tk.id = id;
        /* same id again (content re-added): the later entry replaces it */
        int slot = -1;
        for (int k = 0; k < t->n_added; k++)
            if (t->added[k].id == id) slot = k;
        bool was_special = false;
        if (slot < 0) {
            slot = t->n_added++;
        } else {
            was_special = t->added[slot].special;
            free(t->added[slot].content);
        }
        tk.content = malloc(tk.len + 1);
        if (!tk.content) FAIL(DSV4_ERR_NOMEM, "out of memory");
        memcpy(tk.content, s, tk.len + 1);
        tk.special |= was_special; /* HF's special set only grows */
        t->added[slot] = tk;
        if (dsv4_smap_put(&t->added_map, s, tk.len, id)) FAIL(DSV4_ERR_NOMEM, "out of memory");
        if (id + 1 > t->n_ids) t->n_ids = id + 1;
    }
    trie_init(&t->trie_raw);
    trie_init(&t->trie_norm);
    int any_single_word = 0;
    for (int k = 0; k < t->n_added; k++) {
        added_token *tk = &t->added[k];
        if (trie_add(tk->normalized ? &t->trie_norm : &t->trie_raw, tk->content, tk->len, k))
            FAIL(DSV4_ERR_NOMEM, "out of memory");
        any_single_word |= tk->single_word;
    }
    if (any_single_word) {
        /* Rust regex \w: Alphabetic, marks, Nd, Pc and Join_Control */
        static const char w[] = "\\A[\\w\\x{200c}\\x{200d}]";
        char e[256];
        if (dsv4_re_compile(w, sizeof w - 1, 0, &t->word_char, e, sizeof e)) FAIL(DSV4_ERR_FORMAT, "%s", e);
    }
    return DSV4_OK;
}

/* Bytes per id, as HF's ByteLevel decoder produces them: a token whose
 * characters are all in the byte alphabet stands for those bytes; any other
 * (an added token such as "<｜User｜>") for its own UTF-8. */
static dsv4_status build_decoder(load_ctx *L, dsv4_tokenizer *t)
{
    int32_t inv[0x180]; /* byte-level character -> byte; all characters are < U+0144 */
    memset(inv, 0xff, sizeof inv);
    uint32_t map[256];
    byte_level_map(map);
    for (int b = 0; b < 256; b++) inv[map[b]] = b;

    t->dec_off = calloc((size_t)t->n_ids, sizeof *t->dec_off);
    t->dec_len = malloc((size_t)t->n_ids * sizeof *t->dec_len);
    t->added_index = malloc((size_t)t->n_ids * sizeof *t->added_index);
    size_t total = t->vocab.arena_n;
    for (int k = 0; k < t->n_added; k++) total += t->added[k].len;
    t->dec_arena = malloc(total + 1);
    if (!t->dec_off || !t->dec_len || !t->added_index || !t->dec_arena) FAIL(DSV4_ERR_NOMEM, "out of memory");
    memset(t->dec_len, 0xff, (size_t)t->n_ids * sizeof *t->dec_len);
    memset(t->added_index, 0xff, (size_t)t->n_ids * sizeof *t->added_index);
    for (int k = 0; k < t->n_added; k++) t->added_index[t->added[k].id] = k;

    size_t off = 0;
    for (uint32_t e = 0; e < t->vocab.n + (uint32_t)t->n_added; e++) {
        const char *s;
        size_t n;
        int32_t id;
        if (e < t->vocab.n) {
            id = t->vocab.ents[e].id;
            if (t->added_index[id] >= 0) continue; /* the added token's content decodes */
            s = t->vocab.arena + t->vocab.ents[e].off;
            n = t->vocab.ents[e].len;
        } else {
            const added_token *tk = &t->added[e - t->vocab.n];
            id = tk->id;
            s = tk->content;
            n = tk->len;
        }
        size_t start = off;
        int all_bytes = 1;
        for (size_t i = 0; i < n;) {
            int l;
            uint32_t cp = utf8_decode((const uint8_t *)s + i, &l);
            if (cp >= 0x180 || inv[cp] < 0) {
                all_bytes = 0;
                break;
            }
            t->dec_arena[off++] = (uint8_t)inv[cp];
            i += (size_t)l;
        }
        if (!all_bytes) {
            off = start;
            memcpy(t->dec_arena + off, s, n);
            off += n;
        }
        t->dec_off[id] = (uint32_t)start;
        t->dec_len[id] = (int32_t)(off - start);
    }
    return DSV4_OK;
}

static dsv4_status load_json(load_ctx *L, dsv4_tokenizer *t, const json_t *root)
{
    if (!json_is_object(root)) FAIL(DSV4_ERR_FORMAT, "not a JSON object");
    dsv4_status st;
    if ((st = load_normalizer(L, json_object_get(root, "normalizer")))) return st;
    const json_t *pt = json_object_get(root, "pre_tokenizer");
    if (!pt || json_is_null(pt))
        FAIL(DSV4_ERR_UNSUPPORTED, "pre_tokenizer is null; dsv4 needs a byte-level tokenizer (ByteLevel pre_tokenizer)");
    int seen_bl = 0;
    if ((st = load_pretok_one(L, t, pt, &seen_bl))) return st;
    if (!seen_bl) FAIL(DSV4_ERR_UNSUPPORTED, "pre_tokenizer has no ByteLevel stage; dsv4 needs a byte-level tokenizer");
    const json_t *dec = json_object_get(root, "decoder");
    if (!dec || json_is_null(dec) || strcmp(jtype(dec, "?"), "ByteLevel"))
        FAIL(DSV4_ERR_UNSUPPORTED, "decoder '%s' is not supported (dsv4 supports ByteLevel)",
             dec && !json_is_null(dec) ? jtype(dec, "?") : "null");
    if ((st = load_model(L, t, json_object_get(root, "model")))) return st;
    if ((st = load_added(L, t, json_object_get(root, "added_tokens")))) return st;
    return build_decoder(L, t);
}

dsv4_status dsv4_tokenizer_open(const char *path, dsv4_tokenizer **out, char *err, size_t errlen)
{
    *out = NULL;
    load_ctx Lc = {path, err, errlen, NULL, 0}, *L = &Lc;
    FILE *f = fopen(path, "rb");
    if (!f) FAIL(DSV4_ERR_IO, "cannot open");
    /* one read, then parse from memory: jansson's file reader goes byte by byte. A tokenizer.json is a few MB
     * (DeepSeek-V4's ~8); past 256 MiB something else sits there (/dev/zero never ends). A FIFO is read as it
     * comes: the server's tests write the tokenizer through one while /health answers. */
    char *text;
    size_t n;
    const dsv4_status rs = dsv4_read_all(f, (size_t)1 << 28, &text, &n);
    fclose(f);
    if (rs == DSV4_ERR_NOMEM) FAIL(DSV4_ERR_NOMEM, "out of memory");
    if (rs == DSV4_ERR_IO) FAIL(DSV4_ERR_IO, "read error");
    if (rs) FAIL(DSV4_ERR_FORMAT, "over 256 MiB: not a tokenizer.json");
    json_error_t je;
    json_t *root = json_loadb(text, n, JSON_ALLOW_NUL, &je);
    free(text);
    if (!root) FAIL(DSV4_ERR_FORMAT, "malformed JSON at line %d column %d: %s", je.line, je.column, je.text);
    dsv4_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        json_decref(root);
        FAIL(DSV4_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&t->lock, NULL);
    dsv4_status st = load_json(L, t, root);
    json_decref(root);
    free(L->buf);
    if (st == DSV4_OK && !(t->shared = dsv4_tok_ctx_new(DSV4_TOK_CACHE_ENTRIES))) {
        snprintf(err, errlen, "%s: out of memory", path);
        st = DSV4_ERR_NOMEM;
    }
    if (st != DSV4_OK) {
        dsv4_tokenizer_close(t);
        return st;
    }
    *out = t;
    return DSV4_OK;
}

void dsv4_tokenizer_close(dsv4_tokenizer *t)
{
    if (!t) return;
    dsv4_smap_free(&t->vocab);
    mmap_free(&t->merges);
    for (int k = 0; k < t->n_added; k++) free(t->added[k].content);
    free(t->added);
    dsv4_smap_free(&t->added_map);
    trie_free(&t->trie_raw);
    trie_free(&t->trie_norm);
    free(t->added_index);
    dsv4_re_free(t->word_char);
    for (int k = 0; k < t->n_stages; k++) dsv4_re_free(t->stages[k].re);
    dsv4_re_free(t->bl_regex);
    free(t->dec_off);
    free(t->dec_len);
    free(t->dec_arena);
    dsv4_tok_ctx_free(t->shared);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
