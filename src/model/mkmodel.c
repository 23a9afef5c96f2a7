/*
 * mkmodel.c - writes synthetic DeepSeek-V4 checkpoints (see mkmodel.h).
 *
 * Each tensor is described by a spec (name, dtype, shape, how to fill it);
 * a shard's header is built from its specs, then the bytes are generated in
 * 1 MiB chunks straight to the file. Every tensor draws from its own PRNG
 * stream seeded by (seed, name), so the output does not depend on order.
 *
 * Conditioning: matrices are scaled so y = W x keeps x's magnitude
 * (std 1/sqrt(in)); quantized formats get that through their scales, with
 * codes drawn from the format's natural range. HC projections are scaled so
 * the mixing logits are O(1); norms are 1, HC biases 0, scales 1.
 *
 * --sparse: every matrix (embedding, head, projections, compressors, router,
 * experts) and its scales are left as holes (the file is extended past them
 * without writing), so they take no disk blocks and read as zeros; the
 * headers and every other tensor are byte for byte those of a normal run.
 * config.json gets "dsv4_synthetic_sparse": true and dsv4_synthetic.json lists
 * each hole with its conditioning, for the engine's --fill-random (synth.h).
 */
#include "model/mkmodel.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/quant.h"
#include "model/safetensors.h"
#include "model/synth.h"

/* ---- random numbers ------------------------------------------------------ */

typedef struct {
    uint64_t s[4];
} rng_t;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng_t *r, uint64_t seed, const char *name)
{
    uint64_t h = seed ^ 0xcbf29ce484222325ull;
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix(&h);
}

static inline uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s, res = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return res;
}

/* Standard normals and E4M3 codes by table lookup: fast enough to write a
 * Flash-sized checkpoint at disk speed, and random enough for benchmarks. */
#define TAB 65536
static float normal_tab[TAB];
static uint8_t e4m3_tab[TAB];
static const float E4M3_CODE_STD = 16.0f;
static const float E2M1_STD = 2.9261f; /* rms of the 16 E2M1 values */

static uint8_t e4m3_encode(float v)
{
    float r = dsv4_e4m3_round(fminf(fmaxf(v, -448.0f), 448.0f));
    for (int b = 0; b < 256; b++)
        if ((b & 0x7f) != 0x7f && dsv4_e4m3_to_f32((uint8_t)b) == r) return (uint8_t)b;
    return 0;
}

static void tables_init(void)
{
    static int done;
    if (done) return;
    rng_t r;
    rng_seed(&r, 1, "tables");
    for (int i = 0; i < TAB; i++) {
        double u1 = ((rng_next(&r) >> 11) + 1.0) / 9007199254740993.0, u2 = (rng_next(&r) >> 11) / 9007199254740992.0;
        normal_tab[i] = (float)(sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
    }
    for (int i = 0; i < TAB; i++) e4m3_tab[i] = e4m3_encode(normal_tab[(i * 40503u) % TAB] * E4M3_CODE_STD);
    done = 1;
}

/* ---- tensor specs -------------------------------------------------------- */

typedef enum {
    G_NORMAL,  /* a * N(0,1) + b, in dtype (BF16 or F32) */
    G_CONST,   /* a, in dtype */
    G_E4M3,    /* random E4M3 codes with std E4M3_CODE_STD */
    G_BYTES,   /* uniform random bytes (packed E2M1 pairs) */
    G_BYTE,    /* the byte a */
    G_TID2EID, /* rows of b distinct expert ids below a */
} gen_kind;

typedef struct {
    char name[208];
    dsv4_dtype dt;
    int ndim;
    int64_t shape[2];
    gen_kind g;
    double a, b;
    uint64_t off; /* in the shard's data section */
    bool mat;     /* a matrix: a hole under --sparse */
    bool hole;    /* --sparse: not written */
    int scale;    /* a quantized matrix: index of its scale tensor in the shard (before sorting); -1 none */
} tspec;

typedef struct {
    tspec *t;
    int n, cap;
} shard;

static tspec *add(shard *s, const char *name, dsv4_dtype dt, int ndim, int64_t d0, int64_t d1, gen_kind g, double a,
                  double b)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->t = realloc(s->t, (size_t)s->cap * sizeof(tspec));
        if (!s->t) abort();
    }
    tspec *t = &s->t[s->n++];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dt = dt;
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->g = g;
    t->a = a;
    t->b = b;
    t->scale = -1;
    return t;
}

static uint64_t tbytes(const tspec *t)
{
    uint64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (uint64_t)t->shape[i];
    return n * dsv4_dtype_size(t->dt);
}

static int e8m0_for(double v) { return 127 + (int)lround(log2(v)); }

/* An FP8 matrix [out, in] with UE8M0 128x128 block scales. */
static void add_fp8(shard *s, const char *base, int64_t out, int64_t in)
{
    char n[200];
    snprintf(n, sizeof n, "%s.weight", base);
    const int w = s->n;
    add(s, n, DSV4_DT_F8_E4M3, 2, out, in, G_E4M3, 0, 0);
    snprintf(n, sizeof n, "%s.scale", base);
    add(s, n, DSV4_DT_F8_E8M0, 2, (out + 127) / 128, (in + 127) / 128, G_BYTE,
        e8m0_for(1.0 / (E4M3_CODE_STD * sqrt((double)in))), 0);
    s->t[w].mat = true;
    s->t[w].scale = s->n - 1;
}

static void add_bf16_mat(shard *s, const char *base, int64_t out, int64_t in)
{
    char n[200];
    snprintf(n, sizeof n, "%s.weight", base);
    add(s, n, DSV4_DT_BF16, 2, out, in, G_NORMAL, 1.0 / sqrt((double)in), 0)->mat = true;
}

static void add_expert(shard *s, const char *base, int64_t out, int64_t in, dsv4_expert_format f)
{
    char n[200];
    if (f == DSV4_XF_FLOAT) {
        add_bf16_mat(s, base, out, in);
        return;
    }
    snprintf(n, sizeof n, "%s.weight", base);
    const int w = s->n;
    add(s, n, f == DSV4_XF_NVFP4 ? DSV4_DT_U8 : DSV4_DT_I8, 2, out, in / 2, G_BYTES, 0, 0);
    s->t[w].mat = true;
    s->t[w].scale = w + 1; /* .scale (MXFP4) or .weight_scale (NVFP4), added next */
    if (f == DSV4_XF_MXFP4) {
        snprintf(n, sizeof n, "%s.scale", base);
        add(s, n, DSV4_DT_F8_E8M0, 2, out, in / 32, G_BYTE, e8m0_for(1.0 / (E2M1_STD * sqrt((double)in))), 0);
    } else {
        snprintf(n, sizeof n, "%s.weight_scale", base);
        add(s, n, DSV4_DT_F8_E4M3, 2, out, in / 16, G_BYTE, 0x38 /* 1.0 */, 0);
        snprintf(n, sizeof n, "%s.weight_scale_2", base);
        add(s, n, DSV4_DT_F32, 0, 0, 0, G_CONST, 1.0 / (E2M1_STD * sqrt((double)in)), 0);
        snprintf(n, sizeof n, "%s.input_scale", base);
        add(s, n, DSV4_DT_F32, 0, 0, 0, G_CONST, 1.0, 0);
    }
}

/* ---- the model ------------------------------------------------------------- */

typedef struct {
    int vocab, dim, layers, heads, head_dim, rope_dim, q_lora, o_groups, o_lora, window;
    int idx_heads, idx_dim, idx_topk, experts, topk, inter, hc, hash_layers;
} shapes;

static shapes preset_shapes(dsv4_preset p, int n_layers, int vocab)
{
    shapes s;
    if (p == DSV4_PRESET_FLASH)
        s = (shapes){129280, 4096, 43, 64, 512, 64, 1024, 8, 1024, 128, 64, 128, 512, 256, 6, 2048, 4, 3};
    else
        s = (shapes){512, 128, 4, 8, 64, 16, 64, 4, 32, 32, 16, 32, 16, 16, 4, 64, 4, 3};
    if (n_layers > 0) s.layers = n_layers;
    if (vocab > 0) s.vocab = vocab;
    if (s.hash_layers > s.layers) s.hash_layers = s.layers;
    return s;
}

static int layer_ratio(int l) { return l < 2 ? 0 : (l % 2 == 0 ? 4 : 128); }

static void add_compressor(shard *s, const char *pre, int ratio, int coff, int d, int D)
{
    char n[160];
    snprintf(n, sizeof n, "%sape", pre);
    add(s, n, DSV4_DT_F32, 2, ratio, (int64_t)coff * d, G_NORMAL, 0.5, 0);
    snprintf(n, sizeof n, "%swkv", pre);
    add_bf16_mat(s, n, (int64_t)coff * d, D);
    snprintf(n, sizeof n, "%swgate", pre);
    add_bf16_mat(s, n, (int64_t)coff * d, D);
    snprintf(n, sizeof n, "%snorm.weight", pre);
    add(s, n, DSV4_DT_BF16, 1, d, 0, G_CONST, 1.0, 0);
}

static void add_layer(shard *s, const shapes *m, int l, dsv4_expert_format xf)
{
    char n[160], p[48];
    const int D = m->dim, hc = m->hc, mix = (2 + hc) * hc, r = layer_ratio(l);
    snprintf(p, sizeof p, "layers.%d.", l);
#define N(fmt) (snprintf(n, sizeof n, "%s" fmt, p), n)
    const char *hcs[2] = {"attn", "ffn"};
    for (int i = 0; i < 2; i++) {
        snprintf(n, sizeof n, "%shc_%s_fn", p, hcs[i]);
        add(s, n, DSV4_DT_F32, 2, mix, (int64_t)hc * D, G_NORMAL, 1.0 / sqrt((double)hc * D), 0);
        snprintf(n, sizeof n, "%shc_%s_base", p, hcs[i]);
        add(s, n, DSV4_DT_F32, 1, mix, 0, G_CONST, 0, 0);
        snprintf(n, sizeof n, "%shc_%s_scale", p, hcs[i]);
        add(s, n, DSV4_DT_F32, 1, 3, 0, G_CONST, 1, 0);
    }
    add(s, N("attn_norm.weight"), DSV4_DT_BF16, 1, D, 0, G_CONST, 1, 0);
    add(s, N("ffn_norm.weight"), DSV4_DT_BF16, 1, D, 0, G_CONST, 1, 0);
    add_fp8(s, N("attn.wq_a"), m->q_lora, D);
    add(s, N("attn.q_norm.weight"), DSV4_DT_BF16, 1, m->q_lora, 0, G_CONST, 1, 0);
    add_fp8(s, N("attn.wq_b"), (int64_t)m->heads * m->head_dim, m->q_lora);
    add_fp8(s, N("attn.wkv"), m->head_dim, D);
    add(s, N("attn.kv_norm.weight"), DSV4_DT_BF16, 1, m->head_dim, 0, G_CONST, 1, 0);
    add(s, N("attn.attn_sink"), DSV4_DT_F32, 1, m->heads, 0, G_NORMAL, 1, 0);
    add_fp8(s, N("attn.wo_a"), (int64_t)m->o_groups * m->o_lora, (int64_t)m->heads * m->head_dim / m->o_groups);
    add_fp8(s, N("attn.wo_b"), D, (int64_t)m->o_groups * m->o_lora);
    if (r == 4) {
        char q[96];
        snprintf(q, sizeof q, "%sattn.compressor.", p);
        add_compressor(s, q, 4, 2, m->head_dim, D);
        snprintf(q, sizeof q, "%sattn.indexer.compressor.", p);
        add_compressor(s, q, 4, 2, m->idx_dim, D);
        add_fp8(s, N("attn.indexer.wq_b"), (int64_t)m->idx_heads * m->idx_dim, m->q_lora);
        add_bf16_mat(s, N("attn.indexer.weights_proj"), m->idx_heads, D);
    } else if (r == 128) {
        char q[96];
        snprintf(q, sizeof q, "%sattn.compressor.", p);
        add_compressor(s, q, 128, 1, m->head_dim, D);
    }
    add_bf16_mat(s, N("ffn.gate"), m->experts, D);
    if (l < m->hash_layers) add(s, N("ffn.gate.tid2eid"), DSV4_DT_I64, 2, m->vocab, m->topk, G_TID2EID, m->experts, m->topk);
    else add(s, N("ffn.gate.bias"), DSV4_DT_F32, 1, m->experts, 0, G_CONST, 0, 0);
    add_fp8(s, N("ffn.shared_experts.w1"), m->inter, D);
    add_fp8(s, N("ffn.shared_experts.w3"), m->inter, D);
    add_fp8(s, N("ffn.shared_experts.w2"), D, m->inter);
    for (int e = 0; e < m->experts; e++) {
        char b[128];
        snprintf(b, sizeof b, "%sffn.experts.%d.w1", p, e);
        add_expert(s, b, m->inter, D, xf);
        snprintf(b, sizeof b, "%sffn.experts.%d.w3", p, e);
        add_expert(s, b, m->inter, D, xf);
        snprintf(b, sizeof b, "%sffn.experts.%d.w2", p, e);
        add_expert(s, b, D, m->inter, xf);
    }
#undef N
}

/* ---- writing --------------------------------------------------------------- */

static void fill(const tspec *t, rng_t *r, uint8_t *buf, uint64_t first, uint64_t nbytes, uint64_t *tid_state)
{
    size_t es = dsv4_dtype_size(t->dt);
    uint64_t i0 = first / es, n = nbytes / es;
    switch (t->g) {
    case G_NORMAL:
    case G_CONST:
        for (uint64_t i = 0; i < n; i++) {
            float v = t->g == G_CONST ? (float)t->a : (float)(t->a * normal_tab[rng_next(r) & (TAB - 1)] + t->b);
            if (t->dt == DSV4_DT_BF16) {
                uint16_t h = dsv4_f32_to_bf16(v);
                memcpy(buf + 2 * i, &h, 2);
            } else {
                memcpy(buf + 4 * i, &v, 4);
            }
        }
        break;
    case G_E4M3:
        for (uint64_t i = 0; i < n; i += 4) {
            uint64_t x = rng_next(r);
            for (uint64_t k = 0; k < 4 && i + k < n; k++) buf[i + k] = e4m3_tab[(x >> (16 * k)) & (TAB - 1)];
        }
        break;
    case G_BYTES:
        for (uint64_t i = 0; i < n; i += 8) {
            uint64_t x = rng_next(r);
            memcpy(buf + i, &x, n - i < 8 ? n - i : 8);
        }
        break;
    case G_BYTE: memset(buf, (int)t->a, n); break;
    case G_TID2EID: {
        /* rows of k distinct ids: a random rotation of a random start */
        int E = (int)t->a, k = (int)t->b;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t row = (i0 + i) / (uint64_t)k, col = (i0 + i) % (uint64_t)k;
            if (col == 0) *tid_state = rng_next(r);
            int64_t v = (int64_t)((*tid_state % (uint64_t)E + col * (1 + (*tid_state >> 32) % (uint64_t)(E / k))) %
                                  (uint64_t)E);
            (void)row;
            memcpy(buf + 8 * i, &v, 8);
        }
        break;
    }
    }
}

/* --sparse: every matrix and its scales become holes, each listed in
 * `holes` with what the engine's --fill-random needs to generate it like fill()
 * would (synth.h): the kind of values, their standard deviation, the scale
 * tensor and its one byte value. */
static void mark_holes(shard *s, json_t *holes)
{
    for (int i = 0; i < s->n; i++) {
        tspec *t = &s->t[i];
        if (!t->mat) continue;
        json_t *h;
        if (t->g == G_NORMAL && t->dt == DSV4_DT_BF16 && t->b == 0) h = json_pack("{s:s, s:f}", "fill", "normal", "std", t->a);
        else if (t->g == G_E4M3) h = json_pack("{s:s, s:f}", "fill", "e4m3", "std", (double)E4M3_CODE_STD);
        else if (t->g == G_BYTES) h = json_pack("{s:s}", "fill", "e2m1");
        else abort(); /* a matrix the generator cannot make: a bug here */
        if (t->scale >= 0) {
            tspec *sc = &s->t[t->scale];
            if (sc->g != G_BYTE) abort();
            sc->hole = true;
            json_object_set_new(h, "scale", json_string(sc->name));
            json_object_set_new(h, "scale_byte", json_integer((json_int_t)sc->a));
        }
        t->hole = true;
        json_object_set_new(holes, t->name, h);
    }
}

static dsv4_status write_shard(const char *dir, const char *fname, shard *s, uint64_t seed, json_t *wmap,
                               uint64_t *total, char *err, size_t errlen)
{
    /* Larger elements first, as the safetensors library lays tensors out:
     * every tensor then starts at a multiple of its element size. */
    tspec *sorted = malloc((size_t)s->n * sizeof(tspec));
    int m = 0;
    for (size_t es = 8; es >= 1; es /= 2)
        for (int i = 0; i < s->n; i++)
            if (dsv4_dtype_size(s->t[i].dt) == es) sorted[m++] = s->t[i];
    memcpy(s->t, sorted, (size_t)m * sizeof(tspec));
    free(sorted);
    json_t *h = json_object();
    uint64_t off = 0;
    for (int i = 0; i < s->n; i++) {
        tspec *t = &s->t[i];
        t->off = off;
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer(t->shape[d]));
        json_object_set_new(h, t->name,
                            json_pack("{s:s, s:o, s:[I,I]}", "dtype", dsv4_dtype_name(t->dt), "shape", shape,
                                      "data_offsets", (json_int_t)off, (json_int_t)(off + tbytes(t))));
        json_object_set_new(wmap, t->name, json_string(fname));
        off += tbytes(t);
    }
    json_object_set_new(h, "__metadata__", json_pack("{s:s}", "format", "pt"));
    char *hs = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    size_t hl = strlen(hs), padded = (hl + 7) / 8 * 8;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(hs);
        return DSV4_ERR_IO;
    }
    uint64_t hl64 = padded;
    bool ok = fwrite(&hl64, 8, 1, f) == 1 && fwrite(hs, 1, hl, f) == hl;
    for (size_t i = hl; ok && i < padded; i++) ok = fputc(' ', f) != EOF;
    free(hs);
    const size_t CH = 1 << 20;
    uint8_t *buf = malloc(CH);
    for (int i = 0; ok && i < s->n; i++) {
        const tspec *t = &s->t[i];
        rng_t r;
        rng_seed(&r, seed, t->name);
        uint64_t nb = tbytes(t), tid = 0;
        if (t->hole) { /* left unwritten: no disk blocks, reads as zeros */
            ok = fseeko(f, (off_t)nb, SEEK_CUR) == 0;
            continue;
        }
        for (uint64_t o = 0; ok && o < nb; o += CH) {
            uint64_t k = nb - o < CH ? nb - o : CH;
            fill(t, &r, buf, o, k, &tid);
            ok = fwrite(buf, 1, k, f) == k;
        }
    }
    free(buf);
    /* a hole at the end of the data: the file still has its full length */
    if (ok) ok = fflush(f) == 0 && ftruncate(fileno(f), (off_t)(8 + padded + off)) == 0;
    if (fclose(f) != 0) ok = false;
    if (!ok) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        return DSV4_ERR_IO;
    }
    *total += off;
    return DSV4_OK;
}

static json_t *config_json(const shapes *m, dsv4_expert_format xf, bool sparse)
{
    json_t *c = json_object();
    json_t *ratios = json_array();
    for (int l = 0; l < m->layers; l++) json_array_append_new(ratios, json_integer(layer_ratio(l)));
    json_object_set_new(c, "architectures", json_pack("[s]", "DeepseekV4ForCausalLM"));
    json_object_set_new(c, "model_type", json_string("deepseek_v4"));
#define SETI(k, v) json_object_set_new(c, k, json_integer(v))
#define SETR(k, v) json_object_set_new(c, k, json_real(v))
    SETI("vocab_size", m->vocab);
    SETI("hidden_size", m->dim);
    SETI("num_hidden_layers", m->layers);
    SETI("num_nextn_predict_layers", 0);
    SETI("num_attention_heads", m->heads);
    SETI("num_key_value_heads", 1);
    SETI("head_dim", m->head_dim);
    SETI("qk_rope_head_dim", m->rope_dim);
    SETI("q_lora_rank", m->q_lora);
    SETI("o_groups", m->o_groups);
    SETI("o_lora_rank", m->o_lora);
    SETI("sliding_window", m->window);
    json_object_set_new(c, "compress_ratios", ratios);
    SETR("compress_rope_theta", 160000.0);
    SETR("rope_theta", 10000.0);
    json_object_set_new(c, "rope_scaling", json_pack("{s:s, s:f, s:i, s:i, s:i}", "type", "yarn", "factor", 16.0,
                                                     "original_max_position_embeddings", 65536, "beta_fast", 32,
                                                     "beta_slow", 1));
    SETI("max_position_embeddings", 1048576);
    SETI("index_n_heads", m->idx_heads);
    SETI("index_head_dim", m->idx_dim);
    SETI("index_topk", m->idx_topk);
    SETI("n_routed_experts", m->experts);
    SETI("n_shared_experts", 1);
    SETI("num_experts_per_tok", m->topk);
    SETI("moe_intermediate_size", m->inter);
    json_object_set_new(c, "scoring_func", json_string("sqrtsoftplus"));
    json_object_set_new(c, "topk_method", json_string("noaux_tc"));
    json_object_set_new(c, "norm_topk_prob", json_true());
    SETR("routed_scaling_factor", 1.5);
    SETI("num_hash_layers", m->hash_layers);
    SETR("swiglu_limit", 10.0);
    SETI("hc_mult", m->hc);
    SETI("hc_sinkhorn_iters", 20);
    SETR("hc_eps", 1e-6);
    SETR("rms_norm_eps", 1e-6);
    json_object_set_new(c, "hidden_act", json_string("silu"));
    json_object_set_new(c, "attention_bias", json_false());
    json_object_set_new(c, "tie_word_embeddings", json_false());
    SETI("bos_token_id", 0);
    SETI("eos_token_id", 1);
    json_object_set_new(c, "torch_dtype", json_string("bfloat16"));
    json_t *q = json_pack("{s:s, s:s, s:s, s:s, s:[i,i]}", "quant_method", "fp8", "fmt", "e4m3", "scale_fmt", "ue8m0",
                          "activation_scheme", "dynamic", "weight_block_size", 128, 128);
    if (xf == DSV4_XF_NVFP4) {
        json_object_set_new(q, "quant_algo", json_string("MIXED_PRECISION"));
        json_object_set_new(q, "moe_quant_algo", json_string("NVFP4"));
        json_object_set_new(q, "group_size", json_integer(16));
    }
    json_object_set_new(c, "quantization_config", q);
    json_object_set_new(c, "expert_dtype", json_string(xf == DSV4_XF_FLOAT ? "bf16" : "fp4"));
    if (sparse) json_object_set_new(c, "dsv4_synthetic_sparse", json_true()); /* engines refuse it without --fill-random */
#undef SETI
#undef SETR
    return c;
}

static json_t *hf_quant_json(const shapes *m)
{
    json_t *layers = json_object();
    for (int l = 0; l < m->layers; l++) {
        char k[48];
        snprintf(k, sizeof k, "layers.%d.ffn.experts", l);
        json_object_set_new(layers, k, json_pack("{s:s, s:i}", "quant_algo", "NVFP4", "group_size", 16));
    }
    return json_pack("{s:{s:s, s:s}, s:{s:s, s:[s,s,s,s], s:o}}", "producer", "name", "modelopt", "version",
                     "dsv4-mkmodel", "quantization", "quant_algo", "MIXED_PRECISION", "exclude_modules", "*.attn.*",
                     "*.ffn.shared_experts.*", "head", "mtp.*", "quantized_layers", layers);
}

static dsv4_status dump_json(const char *dir, const char *name, json_t *j, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = json_dump_file(j, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (rc) {
        snprintf(err, errlen, "%s: cannot write", path);
        return DSV4_ERR_IO;
    }
    return DSV4_OK;
}

dsv4_status dsv4_mkmodel(const dsv4_mkmodel_opts *o, char *err, size_t errlen)
{
    if (!o->out_dir) {
        snprintf(err, errlen, "no output directory given (-o DIR)");
        return DSV4_ERR_INVALID;
    }
    if (mkdir(o->out_dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", o->out_dir, strerror(errno));
        return DSV4_ERR_IO;
    }
    /* any checkpoint: an index, a single model.safetensors, shards without an index, or only its config */
    DIR *dir = opendir(o->out_dir);
    if (!dir) {
        snprintf(err, errlen, "%s: %s", o->out_dir, strerror(errno));
        return DSV4_ERR_IO;
    }
    const char *found = NULL;
    for (struct dirent *de; !found && (de = readdir(dir)) != NULL;) {
        size_t len = strlen(de->d_name), el = strlen(".safetensors");
        if (!strcmp(de->d_name, "config.json") || !strcmp(de->d_name, "model.safetensors.index.json") ||
            (len > el && !strcmp(de->d_name + len - el, ".safetensors")))
            found = de->d_name;
    }
    if (found) {
        snprintf(err, errlen, "%s already holds a checkpoint (%s); refusing to overwrite it", o->out_dir, found);
        closedir(dir);
        return DSV4_ERR_INVALID;
    }
    closedir(dir);
    dsv4_expert_format xf = o->experts == DSV4_XF_UNDECLARED ? DSV4_XF_MXFP4 : o->experts;
    shapes m = preset_shapes(o->preset, o->n_layers, o->vocab);
    if (m.layers > 256) {
        snprintf(err, errlen, "--layers %d: at most 256", m.layers);
        return DSV4_ERR_INVALID;
    }
    tables_init();
    json_t *wmap = json_object(), *holes = o->sparse ? json_object() : NULL;
    uint64_t total = 0;
    int n_shards = m.layers + 2;
    dsv4_status st = DSV4_OK;
    for (int k = 0; k < n_shards && st == DSV4_OK; k++) {
        shard s = {0};
        if (k == 0) {
            add(&s, "embed.weight", DSV4_DT_BF16, 2, m.vocab, m.dim, G_NORMAL, 1.0, 0)->mat = true;
        } else if (k <= m.layers) {
            add_layer(&s, &m, k - 1, xf);
        } else {
            add(&s, "head.weight", DSV4_DT_BF16, 2, m.vocab, m.dim, G_NORMAL, 1.0 / sqrt((double)m.dim), 0)->mat = true;
            add(&s, "norm.weight", DSV4_DT_BF16, 1, m.dim, 0, G_CONST, 1, 0);
            add(&s, "hc_head_fn", DSV4_DT_F32, 2, m.hc, (int64_t)m.hc * m.dim, G_NORMAL,
                1.0 / sqrt((double)m.hc * m.dim), 0);
            add(&s, "hc_head_base", DSV4_DT_F32, 1, m.hc, 0, G_CONST, 0, 0);
            add(&s, "hc_head_scale", DSV4_DT_F32, 1, 1, 0, G_CONST, 1, 0);
        }
        char fname[64];
        snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", k + 1, n_shards);
        if (holes) mark_holes(&s, holes);
        st = write_shard(o->out_dir, fname, &s, o->seed, wmap, &total, err, errlen);
        free(s.t);
        if (o->verbose) fprintf(stderr, "\rdsv4 mkmodel: %d/%d shards, %.2f GiB", k + 1, n_shards, total / 1073741824.0);
    }
    if (o->verbose) fputc('\n', stderr);
    if (st != DSV4_OK) {
        json_decref(wmap);
        json_decref(holes);
        return st;
    }
    json_t *index = json_pack("{s:{s:I}, s:o}", "metadata", "total_size", (json_int_t)total, "weight_map", wmap);
    if ((st = dump_json(o->out_dir, "model.safetensors.index.json", index, err, errlen))) return st;
    if (holes) {
        json_t *side = json_pack("{s:s, s:i, s:I, s:o}", "about",
                                 "dsv4 mkmodel --sparse: the tensors below are holes in the safetensors files (they "
                                 "read as zeros); engines generate them at load with --fill-random",
                                 "format", 1, "seed", (json_int_t)o->seed, "holes", holes);
        if ((st = dump_json(o->out_dir, DSV4_SYNTH_FILE, side, err, errlen))) return st;
    }
    if ((st = dump_json(o->out_dir, "config.json", config_json(&m, xf, o->sparse), err, errlen))) return st;
    if (xf == DSV4_XF_NVFP4 && (st = dump_json(o->out_dir, "hf_quant_config.json", hf_quant_json(&m), err, errlen)))
        return st;
    return DSV4_OK;
}
