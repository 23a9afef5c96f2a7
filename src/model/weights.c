/*
 * weights.c - binds checkpoint tensors to the typed structs of weights.h.
 *
 * Every expected tensor is found by its official name, checked for shape and
 * dtype, and recorded. Small vectors (norms, HC parameters, sinks, biases,
 * compressor position biases) are converted to FP32 copies once here so the
 * ops never branch on their dtype; matrices stay in the checkpoint mmap.
 */
#include "model/weights.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/quant.h"

typedef enum {
    KIND_FLOAT,  /* BF16, F16 or F32 */
    KIND_INDEX,  /* I64 or I32 */
} want_kind;

typedef struct {
    const dsv4_st *st;
    const dsv4_quant_scheme *q;
    char *err;
    size_t errlen;
    uint64_t bytes;
    int n_fp8, n_mxfp4, n_nvfp4;
    bool missing; /* the last failure was a tensor missing from the checkpoint */
} binder;

static const char *shape_str(char *buf, size_t n, int ndim, const int64_t *ne)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "[");
    for (int i = 0; i < ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%" PRId64, i ? ", " : "", ne[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
    return buf;
}

static bool dtype_ok(dsv4_dtype dt, want_kind k)
{
    if (k == KIND_FLOAT) return dt == DSV4_DT_BF16 || dt == DSV4_DT_F16 || dt == DSV4_DT_F32;
    return dt == DSV4_DT_I64 || dt == DSV4_DT_I32;
}

static const char *kind_str(want_kind k) { return k == KIND_FLOAT ? "BF16, F16 or F32" : "I64 or I32"; }

/* Find a tensor by its official name, or by the spelling transformers'
 * save_pretrained writes: everything under "model." except head.weight,
 * embed as model.embed_tokens, hc_head_X as model.hc_head.hc_X, and the
 * attention's kv_norm as attn.norm. */
static const dsv4_st_tensor *lookup(const dsv4_st *st, const char *name)
{
    const dsv4_st_tensor *t = dsv4_st_find(st, name);
    if (t) return t;
    char alt[300];
    const char *kvn = strstr(name, ".attn.kv_norm.weight");
    if (!strcmp(name, "embed.weight")) snprintf(alt, sizeof alt, "model.embed_tokens.weight");
    else if (!strcmp(name, "head.weight")) snprintf(alt, sizeof alt, "lm_head.weight");
    else if (!strncmp(name, "hc_head_", 8)) snprintf(alt, sizeof alt, "model.hc_head.hc_%s", name + 8);
    else if (kvn) snprintf(alt, sizeof alt, "model.%.*s.attn.norm.weight", (int)(kvn - name), name);
    else snprintf(alt, sizeof alt, "model.%s", name);
    return dsv4_st_find(st, alt);
}

/* Bind `name` with expected shape (ndim 1 or 2). Absent and optional: leaves
 * *w zeroed and succeeds. */
static dsv4_status bind(binder *b, dsv4_w *w, const char *name, want_kind kind, int ndim, int64_t d0,
                        int64_t d1, bool optional)
{
    memset(w, 0, sizeof(*w));
    const dsv4_st_tensor *t = lookup(b->st, name);
    if (!t) {
        if (optional) return DSV4_OK;
        snprintf(b->err, b->errlen, "%s: tensor missing from the checkpoint (expected %s %s)", name,
                 kind_str(kind), shape_str((char[64]){0}, 64, ndim, (int64_t[]){d0, d1}));
        b->missing = true;
        return DSV4_ERR_FORMAT;
    }
    const char *file = dsv4_st_file_name(b->st, t->file);
    int64_t want[2] = {d0, d1};
    /* A [n] vector may also be stored as a 0-d scalar when n == 1. */
    bool shape_ok = t->ndim == ndim;
    for (int i = 0; shape_ok && i < ndim; i++) shape_ok = t->shape[i] == want[i];
    if (!shape_ok && ndim == 1 && d0 == 1 && t->ndim == 0) shape_ok = true;
    if (!shape_ok || !dtype_ok(t->dtype, kind)) {
        char s1[64], s2[64];
        const char *hint = "";
        if (t->dtype == DSV4_DT_F8_E4M3 || t->dtype == DSV4_DT_I8 || t->dtype == DSV4_DT_U8)
            hint = " (this tensor cannot be quantized)";
        snprintf(b->err, b->errlen, "%s: expected %s %s, found %s %s in %s%s", name, kind_str(kind),
                 shape_str(s1, sizeof s1, ndim, want), dsv4_dtype_name(t->dtype),
                 shape_str(s2, sizeof s2, t->ndim, t->shape), file, hint);
        return DSV4_ERR_FORMAT;
    }
    w->name = t->name;
    w->dtype = t->dtype;
    w->ndim = ndim;
    w->ne[0] = d0;
    w->ne[1] = ndim == 2 ? d1 : 1;
    w->host = t->data;
    b->bytes += t->nbytes;
    return DSV4_OK;
}

/* ---- quantized matrices ------------------------------------------------ */

/* A companion tensor of `base` (the weight's name without ".weight"). */
static const dsv4_st_tensor *companion(const binder *b, const char *base, const char *suffix)
{
    char n[340];
    snprintf(n, sizeof n, "%s%s", base, suffix);
    return lookup(b->st, n);
}

static dsv4_status want_shape(binder *b, const dsv4_st_tensor *t, const char *what, dsv4_dtype dt1, dsv4_dtype dt2,
                              int ndim, int64_t d0, int64_t d1)
{
    bool ok = (t->dtype == dt1 || t->dtype == dt2) && t->ndim == ndim;
    if (ok && ndim >= 1) ok = t->shape[0] == d0;
    if (ok && ndim == 2) ok = t->shape[1] == d1;
    if (ok) return DSV4_OK;
    char s1[64], s2[64];
    snprintf(b->err, b->errlen, "%s: expected %s%s%s %s for %s, found %s %s in %s", t->name, dsv4_dtype_name(dt1),
             dt2 != dt1 ? " or " : "", dt2 != dt1 ? dsv4_dtype_name(dt2) : "",
             ndim == 0 ? "[]" : shape_str(s1, sizeof s1, ndim, (int64_t[]){d0, d1}), what, dsv4_dtype_name(t->dtype),
             shape_str(s2, sizeof s2, t->ndim, t->shape), dsv4_st_file_name(b->st, t->file));
    return DSV4_ERR_FORMAT;
}

/* Every scale must be a finite positive number: a NaN or Inf scale poisons a
 * whole block and is a corrupt checkpoint, not a numerical accident. */
static dsv4_status check_scales(binder *b, const dsv4_st_tensor *t)
{
    if (dsv4_st_in_hole(b->st, t)) return DSV4_OK; /* zeros (mkmodel --sparse), which pass: skip the page faults */
    int64_t n = (int64_t)(t->nbytes / dsv4_dtype_size(t->dtype));
    for (int64_t i = 0; i < n; i++) {
        float v;
        if (t->dtype == DSV4_DT_F8_E8M0) v = ((const uint8_t *)t->data)[i] == 255 ? NAN : 1.0f;
        else if (t->dtype == DSV4_DT_F8_E4M3) v = dsv4_e4m3_to_f32(((const uint8_t *)t->data)[i]);
        else if (t->dtype == DSV4_DT_BF16) v = dsv4_bf16_to_f32(dsv4_ld_u16(t->data, i));
        else memcpy(&v, (const char *)t->data + 4 * i, 4);
        if (!isfinite(v) || v < 0) {
            snprintf(b->err, b->errlen, "%s: scale element %" PRId64 " is %s in %s; the checkpoint is corrupt", t->name,
                     i, isnan(v) ? "NaN" : isinf(v) ? "infinite" : "negative", dsv4_st_file_name(b->st, t->file));
            return DSV4_ERR_FORMAT;
        }
    }
    return DSV4_OK;
}

/* An NVFP4 per-tensor scale (.weight_scale_2, .input_scale): one F32 value ([] or [1]), finite and
 * positive. */
static dsv4_status bind_scalar_scale(binder *b, const dsv4_st_tensor *t, const char *what, float *out)
{
    bool one = t->dtype == DSV4_DT_F32 && t->nbytes == 4;
    for (int i = 0; one && i < t->ndim; i++) one = t->shape[i] == 1;
    if (!one) {
        char s2[64];
        snprintf(b->err, b->errlen, "%s: expected F32 [] (the %s), found %s %s in %s", t->name, what,
                 dsv4_dtype_name(t->dtype), shape_str(s2, sizeof s2, t->ndim, t->shape),
                 dsv4_st_file_name(b->st, t->file));
        return DSV4_ERR_FORMAT;
    }
    memcpy(out, t->data, 4);
    if (!isfinite(*out) || *out <= 0) {
        snprintf(b->err, b->errlen, "%s: the %s is %g, not a finite positive number, in %s; the checkpoint is corrupt",
                 t->name, what, *out, dsv4_st_file_name(b->st, t->file));
        return DSV4_ERR_FORMAT;
    }
    b->bytes += t->nbytes;
    return DSV4_OK;
}

static dsv4_wfmt fmt_of(dsv4_dtype dt)
{
    switch (dt) {
    case DSV4_DT_F8_E4M3: return DSV4_WF_FP8;
    case DSV4_DT_I8: return DSV4_WF_MXFP4;
    case DSV4_DT_U8: return DSV4_WF_NVFP4;
    default: return DSV4_WF_FLOAT;
    }
}

static const char *wfmt_name(dsv4_wfmt f)
{
    static const char *n[] = {"BF16/F16/F32", "FP8", "MXFP4", "NVFP4"};
    return n[f];
}

/* Bind a [out, in] matrix in any storage format (with its scales). Routed
 * experts are checked against the declared expert format. */
static dsv4_status bind_mat(binder *b, dsv4_w *w, const char *name, int64_t out, int64_t in, bool expert,
                            bool optional)
{
    memset(w, 0, sizeof(*w));
    const dsv4_st_tensor *t = lookup(b->st, name);
    if (!t || fmt_of(t->dtype) == DSV4_WF_FLOAT) return bind(b, w, name, KIND_FLOAT, 2, out, in, optional);
    const char *file = dsv4_st_file_name(b->st, t->file);
    char base[300];
    snprintf(base, sizeof base, "%s", t->name);
    char *dot = strstr(base, ".weight");
    if (dot && !dot[7]) *dot = 0;
    dsv4_wfmt f = fmt_of(t->dtype);
    if (expert && b->q && b->q->experts != DSV4_XF_UNDECLARED) {
        static const dsv4_wfmt from_decl[] = {DSV4_WF_FLOAT, DSV4_WF_FLOAT, DSV4_WF_FP8, DSV4_WF_MXFP4, DSV4_WF_NVFP4};
        if (from_decl[b->q->experts] != f) {
            snprintf(b->err, b->errlen, "%s: %s declares %s experts, but this tensor is %s (%s) in %s", name,
                     b->q->declared_by, dsv4_expert_format_name(b->q->experts), wfmt_name(f),
                     dsv4_dtype_name(t->dtype), file);
            return DSV4_ERR_FORMAT;
        }
    }
    w->name = t->name;
    w->dtype = t->dtype;
    w->fmt = f;
    w->ndim = 2;
    w->ne[0] = out;
    w->ne[1] = in;
    w->host = t->data;
    b->bytes += t->nbytes;
    const dsv4_st_tensor *sc = NULL;
    dsv4_status st;
    if (f == DSV4_WF_FP8) {
        if ((st = want_shape(b, t, "an FP8 weight", DSV4_DT_F8_E4M3, DSV4_DT_F8_E4M3, 2, out, in))) return st;
        int br = b->q ? b->q->block_rows : 128, bc = b->q ? b->q->block_cols : 128;
        sc = companion(b, base, ".scale");
        if (!sc) sc = companion(b, base, ".weight_scale_inv");
        if (!sc) {
            snprintf(b->err, b->errlen, "%s.scale: missing (the block scales of FP8 weight %s in %s)", base, name, file);
            return DSV4_ERR_FORMAT;
        }
        if ((st = want_shape(b, sc, "its FP8 block scales", DSV4_DT_F8_E8M0, DSV4_DT_F32, 2, (out + br - 1) / br,
                             (in + bc - 1) / bc)))
            return st;
        w->block_rows = br;
        w->block_cols = bc;
        w->scale_cols = (in + bc - 1) / bc;
        b->n_fp8++;
    } else {
        const dsv4_st_tensor *other;
        if (in % 2) {
            snprintf(b->err, b->errlen, "%s: an FP4 matrix needs an even number of columns, expected %" PRId64, name, in);
            return DSV4_ERR_FORMAT;
        }
        if ((st = want_shape(b, t, f == DSV4_WF_MXFP4 ? "packed MXFP4" : "packed NVFP4", t->dtype, t->dtype, 2, out,
                             in / 2)))
            return st;
        if (f == DSV4_WF_MXFP4) {
            other = companion(b, base, ".weight_scale");
            sc = companion(b, base, ".scale");
            if (!sc || in % 32) {
                snprintf(b->err, b->errlen, "%s: %s (MXFP4 weight %s in %s)", !sc ? base : name,
                         !sc ? "missing .scale" : "in-dimension not a multiple of 32", name, file);
                return DSV4_ERR_FORMAT;
            }
            if ((st = want_shape(b, sc, "its MXFP4 scales", DSV4_DT_F8_E8M0, DSV4_DT_F8_E8M0, 2, out, in / 32)))
                return st;
            w->scale_cols = in / 32;
            b->n_mxfp4++;
        } else {
            other = companion(b, base, ".scale");
            sc = companion(b, base, ".weight_scale");
            const dsv4_st_tensor *s2 = companion(b, base, ".weight_scale_2");
            const dsv4_st_tensor *is = companion(b, base, ".input_scale");
            if (!sc || !s2 || in % 16) {
                snprintf(b->err, b->errlen, "%s%s: %s (NVFP4 weight %s in %s)", base,
                         !sc ? ".weight_scale" : !s2 ? ".weight_scale_2" : "", !sc || !s2 ? "missing" : "in-dimension not a multiple of 16",
                         name, file);
                return DSV4_ERR_FORMAT;
            }
            if ((st = want_shape(b, sc, "its NVFP4 block scales", DSV4_DT_F8_E4M3, DSV4_DT_F8_E4M3, 2, out, in / 16)))
                return st;
            if ((st = bind_scalar_scale(b, s2, "NVFP4 global scale", &w->scale2))) return st;
            /* the activations' global scale of NVFP4's W4A4 path: no path here reads it (the CPU and Hopper
             * quantise activations to FP8 per 128), but it is the checkpoint's as much as the others */
            w->input_scale = 1.0f;
            if (is && (st = bind_scalar_scale(b, is, "NVFP4 input scale", &w->input_scale))) return st;
            w->aux_bytes = (uint32_t)(s2->nbytes + (is ? is->nbytes : 0)); /* b->bytes has them (bind_scalar_scale) */
            w->scale_cols = in / 16;
            b->n_nvfp4++;
        }
        if (other) {
            snprintf(b->err, b->errlen, "%s: stored in two formats (both %s and %s are present)", name, sc->name,
                     other->name);
            return DSV4_ERR_FORMAT;
        }
    }
    if ((st = check_scales(b, sc))) return st;
    w->scale = sc->data;
    w->scale_dtype = sc->dtype;
    b->bytes += sc->nbytes;
    return DSV4_OK;
}

/* Bind a small float tensor and keep an FP32 copy of it. */
static dsv4_status bind_f32(binder *b, dsv4_w *w, const char *name, int ndim, int64_t d0, int64_t d1,
                            bool optional)
{
    dsv4_status st = bind(b, w, name, KIND_FLOAT, ndim, d0, d1, optional);
    if (st != DSV4_OK || !w->name) return st;
    int64_t n = w->ne[0] * w->ne[1];
    w->f32 = malloc((size_t)n * sizeof(float));
    if (!w->f32) {
        snprintf(b->err, b->errlen, "%s: out of memory", name);
        return DSV4_ERR_NOMEM;
    }
    for (int64_t i = 0; i < n; i++) {
        switch (w->dtype) {
        case DSV4_DT_F32: memcpy(&w->f32[i], (const char *)w->host + 4 * i, 4); break;
        case DSV4_DT_BF16: w->f32[i] = dsv4_bf16_to_f32(dsv4_ld_u16(w->host, i)); break;
        default: w->f32[i] = dsv4_f16_to_f32(dsv4_ld_u16(w->host, i)); break;
        }
    }
    return DSV4_OK;
}

#define TRY(x)                                                                                                 \
    do {                                                                                                       \
        dsv4_status st_ = (x);                                                                                 \
        if (st_ != DSV4_OK) return st_;                                                                        \
    } while (0)

static dsv4_status bind_compressor(binder *b, const char *pre, dsv4_compressor_w *c, int d, int coff, int ratio,
                                   int D)
{
    char n[256];
    c->d = d;
    c->coff = coff;
    c->ratio = ratio;
    snprintf(n, sizeof n, "%sape", pre);
    TRY(bind_f32(b, &c->ape, n, 2, ratio, (int64_t)coff * d, false));
    snprintf(n, sizeof n, "%swkv.weight", pre);
    TRY(bind_mat(b, &c->wkv, n, (int64_t)coff * d, D, false, false));
    snprintf(n, sizeof n, "%swgate.weight", pre);
    TRY(bind_mat(b, &c->wgate, n, (int64_t)coff * d, D, false, false));
    snprintf(n, sizeof n, "%snorm.weight", pre);
    TRY(bind_f32(b, &c->norm, n, 1, d, 1, false));
    return DSV4_OK;
}

static dsv4_status check_tid2eid(binder *b, const dsv4_w *w, int n_experts)
{
    int64_t n = w->ne[0] * w->ne[1];
    for (int64_t i = 0; i < n; i++) {
        int64_t v = w->dtype == DSV4_DT_I64 ? dsv4_ld_i64(w->host, i) : dsv4_ld_i32(w->host, i);
        if (v < 0 || v >= n_experts) {
            snprintf(b->err, b->errlen, "%s: entry [%" PRId64 "][%" PRId64 "] = %" PRId64
                     " is not an expert id (0..%d)", w->name, i / w->ne[1], i % w->ne[1], v, n_experts - 1);
            return DSV4_ERR_FORMAT;
        }
    }
    return DSV4_OK;
}

/* Bind one decoder block under prefix `pre` ("layers.L." or "mtp.0."). */
static dsv4_status bind_layer(binder *b, const dsv4_config *c, const char *pre, dsv4_attn_kind kind, int ratio,
                              bool hash, dsv4_layer_w *L)
{
    char n[256];
    const int D = c->dim, hc = c->hc_mult;
    const int64_t mix = (int64_t)(2 + hc) * hc; /* 64 bits: an int overflows from hc_mult 46,340 */
    const int H = c->n_heads, hd = c->head_dim, E = c->n_routed_experts, I = c->moe_inter_dim;
    L->kind = kind;
    L->ratio = ratio;
    L->hash = hash;
#define NAME(fmt) (snprintf(n, sizeof n, "%s" fmt, pre), n)
    TRY(bind_f32(b, &L->hc_attn_fn, NAME("hc_attn_fn"), 2, mix, (int64_t)hc * D, false));
    TRY(bind_f32(b, &L->hc_attn_base, NAME("hc_attn_base"), 1, mix, 1, false));
    TRY(bind_f32(b, &L->hc_attn_scale, NAME("hc_attn_scale"), 1, 3, 1, false));
    TRY(bind_f32(b, &L->hc_ffn_fn, NAME("hc_ffn_fn"), 2, mix, (int64_t)hc * D, false));
    TRY(bind_f32(b, &L->hc_ffn_base, NAME("hc_ffn_base"), 1, mix, 1, false));
    TRY(bind_f32(b, &L->hc_ffn_scale, NAME("hc_ffn_scale"), 1, 3, 1, false));
    TRY(bind_f32(b, &L->attn_norm, NAME("attn_norm.weight"), 1, D, 1, false));
    TRY(bind_f32(b, &L->ffn_norm, NAME("ffn_norm.weight"), 1, D, 1, false));

    TRY(bind_mat(b, &L->wq_a, NAME("attn.wq_a.weight"), c->q_lora_rank, D, false, false));
    TRY(bind_f32(b, &L->q_norm, NAME("attn.q_norm.weight"), 1, c->q_lora_rank, 1, false));
    TRY(bind_mat(b, &L->wq_b, NAME("attn.wq_b.weight"), (int64_t)H * hd, c->q_lora_rank, false, false));
    TRY(bind_mat(b, &L->wkv, NAME("attn.wkv.weight"), hd, D, false, false));
    TRY(bind_f32(b, &L->kv_norm, NAME("attn.kv_norm.weight"), 1, hd, 1, false));
    TRY(bind_f32(b, &L->attn_sink, NAME("attn.attn_sink"), 1, H, 1, false));
    TRY(bind_mat(b, &L->wo_a, NAME("attn.wo_a.weight"), (int64_t)c->o_groups * c->o_lora_rank,
                 (int64_t)H * hd / c->o_groups, false, false));
    L->wo_a.no_act_quant = true; /* the reference dequantises wo_a to BF16 at load */
    TRY(bind_mat(b, &L->wo_b, NAME("attn.wo_b.weight"), D, (int64_t)c->o_groups * c->o_lora_rank, false, false));
    if (kind == DSV4_ATTN_CSA) {
        TRY(bind_compressor(b, NAME("attn.compressor."), &L->cmp, hd, 2, ratio, D));
        TRY(bind_compressor(b, NAME("attn.indexer.compressor."), &L->idx_cmp, c->index_head_dim, 2, ratio, D));
        TRY(bind_mat(b, &L->idx_wq_b, NAME("attn.indexer.wq_b.weight"),
                     (int64_t)c->index_n_heads * c->index_head_dim, c->q_lora_rank, false, false));
        TRY(bind_mat(b, &L->idx_weights_proj, NAME("attn.indexer.weights_proj.weight"), c->index_n_heads, D, false,
                     false));
    } else if (kind == DSV4_ATTN_HCA) {
        TRY(bind_compressor(b, NAME("attn.compressor."), &L->cmp, hd, 1, ratio, D));
    }

    TRY(bind_mat(b, &L->gate, NAME("ffn.gate.weight"), E, D, false, false));
    if (hash) {
        TRY(bind(b, &L->tid2eid, NAME("ffn.gate.tid2eid"), KIND_INDEX, 2, c->vocab_size, c->n_experts_per_tok,
                 false));
        TRY(check_tid2eid(b, &L->tid2eid, E));
    } else {
        TRY(bind_f32(b, &L->gate_bias, NAME("ffn.gate.bias"), 1, E, 1, false));
    }
    /* Required when the config declares a shared expert; used when present
     * anyway (transformers always has one, whatever n_shared_experts says). */
    bool sh_opt = c->n_shared_experts == 0;
    TRY(bind_mat(b, &L->sh_w1, NAME("ffn.shared_experts.w1.weight"), I, D, false, sh_opt));
    if (dsv4_w_present(&L->sh_w1)) {
        TRY(bind_mat(b, &L->sh_w3, NAME("ffn.shared_experts.w3.weight"), I, D, false, false));
        TRY(bind_mat(b, &L->sh_w2, NAME("ffn.shared_experts.w2.weight"), D, I, false, false));
    }
    L->exp_w1 = calloc((size_t)E, sizeof(dsv4_w));
    L->exp_w3 = calloc((size_t)E, sizeof(dsv4_w));
    L->exp_w2 = calloc((size_t)E, sizeof(dsv4_w));
    if (!L->exp_w1 || !L->exp_w2 || !L->exp_w3) {
        snprintf(b->err, b->errlen, "out of memory binding %sffn.experts", pre);
        return DSV4_ERR_NOMEM;
    }
    /* The declared expert format covers the decoder layers; the MTP block keeps
     * its own (MXFP4 in NVIDIA's NVFP4 release). */
    const bool is_routed = strncmp(pre, "mtp.", 4) != 0;
    for (int e = 0; e < E; e++) {
        snprintf(n, sizeof n, "%sffn.experts.%d.w1.weight", pre, e);
        TRY(bind_mat(b, &L->exp_w1[e], n, I, D, is_routed, false));
        snprintf(n, sizeof n, "%sffn.experts.%d.w3.weight", pre, e);
        TRY(bind_mat(b, &L->exp_w3[e], n, I, D, is_routed, false));
        snprintf(n, sizeof n, "%sffn.experts.%d.w2.weight", pre, e);
        TRY(bind_mat(b, &L->exp_w2[e], n, D, I, is_routed, false));
    }
#undef NAME
    return DSV4_OK;
}

static void free_w(dsv4_w *w)
{
    free(w->f32);
    w->f32 = NULL;
}

static void free_layer(dsv4_layer_w *L)
{
    dsv4_w *small[] = {&L->hc_attn_fn, &L->hc_attn_base, &L->hc_attn_scale, &L->hc_ffn_fn, &L->hc_ffn_base,
                       &L->hc_ffn_scale, &L->attn_norm, &L->ffn_norm, &L->q_norm, &L->kv_norm, &L->attn_sink,
                       &L->cmp.ape, &L->cmp.norm, &L->idx_cmp.ape, &L->idx_cmp.norm, &L->gate_bias};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) free_w(small[i]);
    free(L->exp_w1);
    free(L->exp_w2);
    free(L->exp_w3);
    L->exp_w1 = L->exp_w2 = L->exp_w3 = NULL;
}

/* The MTP block under "mtp.0." into m (m->present on success). */
static dsv4_status bind_mtp(binder *b, const dsv4_config *c, dsv4_mtp_w *m)
{
    const int D = c->dim, hc = c->hc_mult;
    TRY(bind_layer(b, c, "mtp.0.", DSV4_ATTN_SLIDING, 0, false, &m->block));
    TRY(bind_mat(b, &m->e_proj, "mtp.0.e_proj.weight", D, D, false, false));
    TRY(bind_mat(b, &m->h_proj, "mtp.0.h_proj.weight", D, D, false, false));
    TRY(bind_f32(b, &m->enorm, "mtp.0.enorm.weight", 1, D, 1, false));
    TRY(bind_f32(b, &m->hnorm, "mtp.0.hnorm.weight", 1, D, 1, false));
    TRY(bind_f32(b, &m->norm, "mtp.0.norm.weight", 1, D, 1, false));
    TRY(bind_f32(b, &m->hc_head_fn, "mtp.0.hc_head_fn", 2, hc, (int64_t)hc * D, false));
    TRY(bind_f32(b, &m->hc_head_base, "mtp.0.hc_head_base", 1, hc, 1, false));
    TRY(bind_f32(b, &m->hc_head_scale, "mtp.0.hc_head_scale", 1, 1, 1, false));
    m->present = true;
    return DSV4_OK;
}

static void free_mtp(dsv4_mtp_w *m)
{
    free_layer(&m->block);
    dsv4_w *x[] = {&m->enorm, &m->hnorm, &m->norm, &m->hc_head_fn, &m->hc_head_base, &m->hc_head_scale};
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) free_w(x[i]);
    memset(m, 0, sizeof(*m));
}

/* Whether the checkpoint holds any tensor of the MTP block (official or transformers' spelling). */
static bool has_mtp_tensor(const dsv4_st *st)
{
    for (size_t i = 0; i < dsv4_st_count(st); i++) {
        const char *n = dsv4_st_at(st, i)->name;
        if (!strncmp(n, "mtp.0.", 6) || !strncmp(n, "model.mtp.0.", 12)) return true;
    }
    return false;
}

dsv4_status dsv4_weights_bind(const dsv4_config *c, const dsv4_quant_scheme *q, const dsv4_st *st, dsv4_weights *w,
                              char *err, size_t errlen)
{
    memset(w, 0, sizeof(*w));
    binder b = {.st = st, .q = q, .err = err, .errlen = errlen};
    const int D = c->dim, hc = c->hc_mult;
    dsv4_status s;
#define CHECK(x)                                                                                               \
    do {                                                                                                       \
        if ((s = (x)) != DSV4_OK) goto fail;                                                                   \
    } while (0)
    CHECK(bind(&b, &w->embed, "embed.weight", KIND_FLOAT, 2, c->vocab_size, D, false));
    CHECK(bind_mat(&b, &w->head, "head.weight", c->vocab_size, D, false, false));
    CHECK(bind_f32(&b, &w->norm, "norm.weight", 1, D, 1, false));
    CHECK(bind_f32(&b, &w->hc_head_fn, "hc_head_fn", 2, hc, (int64_t)hc * D, false));
    CHECK(bind_f32(&b, &w->hc_head_base, "hc_head_base", 1, hc, 1, false));
    CHECK(bind_f32(&b, &w->hc_head_scale, "hc_head_scale", 1, 1, 1, false));
    w->n_layers = c->n_layers;
    w->layers = calloc((size_t)c->n_layers, sizeof(dsv4_layer_w));
    if (!w->layers) {
        snprintf(err, errlen, "out of memory binding %d layers", c->n_layers);
        s = DSV4_ERR_NOMEM;
        goto fail;
    }
    for (int l = 0; l < c->n_layers; l++) {
        char pre[32];
        snprintf(pre, sizeof pre, "layers.%d.", l);
        CHECK(bind_layer(&b, c, pre, c->layer_kind[l], c->layer_ratio[l], c->layer_hash[l], &w->layers[l]));
    }
    /* MTP: optional, and not run (dsv4 has no speculative decoding; transformers ignores mtp.* too).
     * Checkpoints converted for inference often drop it. A complete block is bound and checked like the
     * layers (a corrupt tensor is refused); a block with tensors missing is ignored, and mtp_ignored
     * names the first missing one for the caller's warning. */
    if (c->n_mtp_layers > 0 && has_mtp_tensor(st)) {
        const binder saved = b;
        b.missing = false;
        if ((s = bind_mtp(&b, c, &w->mtp)) == DSV4_OK)
            w->mtp_bytes = b.bytes - saved.bytes;
        else {
            if (!b.missing) goto fail;
            snprintf(w->mtp_ignored, sizeof w->mtp_ignored, "%s", err);
            free_mtp(&w->mtp);
            b = saved;
            if (errlen) err[0] = '\0';
        }
    }
#undef CHECK
    w->bytes = b.bytes;
    w->n_experts = c->n_routed_experts;
    w->n_fp8 = b.n_fp8;
    w->n_mxfp4 = b.n_mxfp4;
    w->n_nvfp4 = b.n_nvfp4;
    return DSV4_OK;
fail:
    dsv4_weights_free(w);
    return s;
}

void dsv4_weights_free(dsv4_weights *w)
{
    if (!w) return;
    free_w(&w->norm);
    free_w(&w->hc_head_fn);
    free_w(&w->hc_head_base);
    free_w(&w->hc_head_scale);
    if (w->layers)
        for (int l = 0; l < w->n_layers; l++) free_layer(&w->layers[l]);
    free(w->layers);
    w->layers = NULL;
    free_mtp(&w->mtp);
}

uint64_t dsv4_w_bytes(const dsv4_w *w)
{
    if (!w->name) return 0;
    /* NVFP4: weight_scale_2 (and input_scale where the checkpoint has one) are stored beside them */
    return dsv4_w_elem_bytes(w) + dsv4_w_scale_bytes(w) + w->aux_bytes;
}

uint64_t dsv4_layer_expert_bytes(const dsv4_layer_w *L, int E)
{
    uint64_t b = 0;
    for (int e = 0; L->exp_w1 && e < E; e++)
        b += dsv4_w_bytes(&L->exp_w1[e]) + dsv4_w_bytes(&L->exp_w2[e]) + dsv4_w_bytes(&L->exp_w3[e]);
    return b;
}

uint64_t dsv4_weights_expert_bytes(const dsv4_weights *w)
{
    uint64_t b = 0;
    for (int l = 0; l < w->n_layers; l++) b += dsv4_layer_expert_bytes(&w->layers[l], w->n_experts);
    return b;
}

const char *dsv4_w_format_str(const dsv4_w *w, char *buf, size_t n)
{
    switch (w->fmt) {
    case DSV4_WF_FP8:
        snprintf(buf, n, "FP8 E4M3 + %s %dx%d", w->scale_dtype == DSV4_DT_F32 ? "F32" : "E8M0", w->block_rows,
                 w->block_cols);
        break;
    case DSV4_WF_MXFP4: snprintf(buf, n, "MXFP4 (E2M1 + E8M0/32)"); break;
    case DSV4_WF_NVFP4: snprintf(buf, n, "NVFP4 (E2M1 + E4M3/16 + F32)"); break;
    default: snprintf(buf, n, "%s", w->name ? dsv4_dtype_name(w->dtype) : "-"); break;
    }
    return buf;
}

static dsv4_status foreach_layer(dsv4_layer_w *L, int E, dsv4_status (*fn)(void *, dsv4_w *), void *ctx)
{
    dsv4_w *ws[] = {&L->hc_attn_fn, &L->hc_attn_base, &L->hc_attn_scale, &L->hc_ffn_fn, &L->hc_ffn_base,
                    &L->hc_ffn_scale, &L->attn_norm, &L->ffn_norm, &L->wq_a, &L->q_norm, &L->wq_b, &L->wkv,
                    &L->kv_norm, &L->attn_sink, &L->wo_a, &L->wo_b, &L->cmp.ape, &L->cmp.wkv, &L->cmp.wgate,
                    &L->cmp.norm, &L->idx_cmp.ape, &L->idx_cmp.wkv, &L->idx_cmp.wgate, &L->idx_cmp.norm,
                    &L->idx_wq_b, &L->idx_weights_proj, &L->gate, &L->gate_bias, &L->tid2eid, &L->sh_w1, &L->sh_w3,
                    &L->sh_w2};
    dsv4_status st;
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
        if (ws[i]->name && (st = fn(ctx, ws[i]))) return st;
    for (int e = 0; L->exp_w1 && e < E; e++) {
        dsv4_w *x[] = {&L->exp_w1[e], &L->exp_w3[e], &L->exp_w2[e]};
        for (int i = 0; i < 3; i++)
            if (x[i]->name && (st = fn(ctx, x[i]))) return st;
    }
    return DSV4_OK;
}

static dsv4_status walk(dsv4_weights *w, bool mtp, dsv4_status (*fn)(void *ctx, dsv4_w *t), void *ctx)
{
    dsv4_w *g[] = {&w->embed, &w->head, &w->norm, &w->hc_head_fn, &w->hc_head_base, &w->hc_head_scale};
    dsv4_status st;
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        if (g[i]->name && (st = fn(ctx, g[i]))) return st;
    for (int l = 0; l < w->n_layers; l++)
        if ((st = foreach_layer(&w->layers[l], w->n_experts, fn, ctx))) return st;
    if (mtp && w->mtp.present) {
        dsv4_mtp_w *m = &w->mtp;
        if ((st = foreach_layer(&m->block, w->n_experts, fn, ctx))) return st;
        dsv4_w *x[] = {&m->e_proj, &m->h_proj, &m->enorm, &m->hnorm, &m->norm, &m->hc_head_fn, &m->hc_head_base,
                       &m->hc_head_scale};
        for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
            if (x[i]->name && (st = fn(ctx, x[i]))) return st;
    }
    return DSV4_OK;
}

dsv4_status dsv4_weights_foreach(dsv4_weights *w, dsv4_status (*fn)(void *ctx, dsv4_w *t), void *ctx)
{
    return walk(w, true, fn, ctx);
}

dsv4_status dsv4_weights_foreach_run(dsv4_weights *w, dsv4_status (*fn)(void *ctx, dsv4_w *t), void *ctx)
{
    return walk(w, false, fn, ctx);
}
