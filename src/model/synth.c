/*
 * synth.c - sparse synthetic checkpoints at open (see synth.h): the marker
 * check, the side file's list of holes turned into generators on the bound
 * weights, and the host twin of the GPU's fill kernel.
 *
 * The side file (written by mkmodel --sparse):
 *   {"format": 1, "seed": S, "holes": {NAME: {"fill": "normal"|"e4m3"|"e2m1",
 *    "std": X (normal, e4m3), "scale": SCALE_NAME, "scale_byte": B}, ...}}
 * Every hole must be a matrix the engine binds, in a format its fill makes;
 * a hole that nothing binds means the side file does not describe this
 * checkpoint, and is refused rather than left as zeros.
 */
#include "model/synth.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "model/synth_gen.h"

uint64_t dsv4_synth_key(uint64_t seed, const char *name)
{
    uint64_t h = seed ^ 0xcbf29ce484222325ull;
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    return dsv4_synth_mix(h + 0x9e3779b97f4a7c15ull);
}

float dsv4_synth_mul(double std)
{
    return (float)(std * 1.7320508075688772 / 65536.0);
}

static bool config_says_sparse(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *c = json_load_file(path, 0, NULL);
    bool yes = c && json_is_true(json_object_get(c, "dsv4_synthetic_sparse"));
    json_decref(c);
    return yes;
}

bool dsv4_synth_is_sparse(const char *dir)
{
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, DSV4_SYNTH_FILE);
    return stat(path, &sb) == 0 || config_says_sparse(dir);
}

void dsv4_synth_fill_host(const dsv4_synth *s, void *dst, uint64_t first, uint64_t n)
{
    uint8_t *out = dst;
    uint64_t b = first, end = first + n;
    while (b < end) {
        const uint64_t w = b / 8, v = dsv4_synth_word(s, w);
        const uint64_t lo = b - 8 * w, hi = end - 8 * w < 8 ? end - 8 * w : 8;
        for (uint64_t k = lo; k < hi; k++) *out++ = (uint8_t)(v >> (8 * k));
        b = 8 * w + hi;
    }
}

/* ---- attach -------------------------------------------------------------- */

typedef struct {
    const char *side; /* the side file's path, for messages */
    const dsv4_st *st;
    json_t *holes;
    uint64_t seed;
    int n;          /* holes attached */
    uint64_t bytes; /* their bytes (elements and scales) */
    char *err;
    size_t errlen;
} attach_ctx;

static dsv4_status attach_one(void *vctx, dsv4_w *w)
{
    attach_ctx *c = vctx;
    json_t *h = json_object_get(c->holes, w->name);
    if (!h) {
        /* not listed: it must be real bytes, never a hole served as zeros */
        const dsv4_st_tensor *t = dsv4_st_find(c->st, w->name);
        if (t && dsv4_st_in_hole(c->st, t)) {
            snprintf(c->err, c->errlen, "%s: %s is a hole in %s but %s does not list it", c->side, w->name,
                     dsv4_st_file_name(c->st, t->file), DSV4_SYNTH_FILE);
            return DSV4_ERR_FORMAT;
        }
        return DSV4_OK;
    }
    const char *fill = json_string_value(json_object_get(h, "fill"));
    const char *scale = json_string_value(json_object_get(h, "scale"));
    json_t *jstd = json_object_get(h, "std"), *jbyte = json_object_get(h, "scale_byte");
    const dsv4_st_tensor *t = dsv4_st_find(c->st, w->name);
    dsv4_synth s = {.scale_byte = -1};
    if (!fill) fill = "(none)";
    if (!strcmp(fill, "normal") && w->fmt == DSV4_WF_FLOAT && w->dtype == DSV4_DT_BF16)
        s.kind = DSV4_SYNTH_NORMAL_BF16;
    else if (!strcmp(fill, "e4m3") && w->fmt == DSV4_WF_FP8)
        s.kind = DSV4_SYNTH_E4M3;
    else if (!strcmp(fill, "e2m1") && (w->fmt == DSV4_WF_MXFP4 || w->fmt == DSV4_WF_NVFP4))
        s.kind = DSV4_SYNTH_E2M1;
    else {
        snprintf(c->err, c->errlen, "%s: hole %s: fill \"%s\" cannot make a %s tensor", c->side, w->name, fill,
                 dsv4_dtype_name(w->dtype));
        return DSV4_ERR_FORMAT;
    }
    if (s.kind != DSV4_SYNTH_E2M1) {
        /* std up to 64 keeps E4M3 codes (|v| <= 3.47 std) off saturation; normals any sane size */
        double std = json_is_number(jstd) ? json_number_value(jstd) : -1;
        if (!(std > 0 && std <= 64)) {
            snprintf(c->err, c->errlen, "%s: hole %s: \"std\" must be a number in (0, 64]", c->side, w->name);
            return DSV4_ERR_FORMAT;
        }
        s.mul = dsv4_synth_mul(std);
    }
    if (!t) { /* bound under this very name, so present */
        snprintf(c->err, c->errlen, "%s: hole %s: not found in the checkpoint", c->side, w->name);
        return DSV4_ERR_FORMAT;
    }
    s.elem_bytes = t->nbytes;
    const uint64_t n = (uint64_t)w->ne[0] * (uint64_t)w->ne[1];
    const uint64_t want = w->fmt == DSV4_WF_FLOAT ? 2 * n : w->fmt == DSV4_WF_FP8 ? n : n / 2;
    if (s.elem_bytes != want) {
        snprintf(c->err, c->errlen, "%s: hole %s holds %llu bytes, expected %llu", c->side, w->name,
                 (unsigned long long)s.elem_bytes, (unsigned long long)want);
        return DSV4_ERR_FORMAT;
    }
    if (!scale != (w->fmt == DSV4_WF_FLOAT)) {
        snprintf(c->err, c->errlen,
                 "%s: hole %s: a quantized hole names its scale hole (\"scale\"), a float one "
                 "does not",
                 c->side, w->name);
        return DSV4_ERR_FORMAT;
    }
    if (scale) {
        const dsv4_st_tensor *ts = dsv4_st_find(c->st, scale);
        json_int_t b = json_is_integer(jbyte) ? json_integer_value(jbyte) : -1;
        bool byte_ok = b >= 0 && b <= 255;
        if (w->scale_dtype == DSV4_DT_F8_E8M0)
            byte_ok = byte_ok && b != 255; /* 255: NaN */
        else if (w->scale_dtype == DSV4_DT_F8_E4M3)
            byte_ok = byte_ok && b != 0 && b < 0x7f; /* positive, finite */
        else
            byte_ok = false;
        if (!ts || ts->data != w->scale || !byte_ok) {
            snprintf(c->err, c->errlen,
                     "%s: hole %s: its scale hole %s is not the %s scale tensor of that weight "
                     "with a finite positive \"scale_byte\"",
                     c->side, w->name, scale, w->scale_dtype ? dsv4_dtype_name(w->scale_dtype) : "(none)");
            return DSV4_ERR_FORMAT;
        }
        s.scale_byte = (int)b;
        s.scale_bytes = ts->nbytes;
    }
    s.key = dsv4_synth_key(c->seed, w->name);
    w->synth = s;
    json_object_set_new(h, "attached", json_true());
    c->n++;
    c->bytes += s.elem_bytes + s.scale_bytes;
    return DSV4_OK;
}

dsv4_status dsv4_synth_attach(const char *dir, const dsv4_st *st, bool fill_random, dsv4_weights *w, int verbose,
                              char *err, size_t errlen)
{
    const bool sparse = dsv4_synth_is_sparse(dir);
    if (!sparse && !fill_random) return DSV4_OK;
    if (!sparse) {
        snprintf(err, errlen,
                 "--fill-random: %s is not a sparse synthetic checkpoint (made by dsv4 mkmodel --sparse); "
                 "its weights are real, leave the flag off",
                 dir);
        return DSV4_ERR_INVALID;
    }
    if (!fill_random) {
        snprintf(err, errlen,
                 "%s is a sparse synthetic checkpoint (dsv4 mkmodel --sparse): its matrices are holes "
                 "that read as zeros; open it with --fill-random to generate them at load (for benchmarks only)",
                 dir);
        return DSV4_ERR_UNSUPPORTED;
    }
    char side[4096];
    snprintf(side, sizeof side, "%s/%s", dir, DSV4_SYNTH_FILE);
    json_error_t je;
    json_t *j = json_load_file(side, 0, &je);
    if (!j) {
        snprintf(err, errlen, "%s: %s (config.json marks a sparse synthetic checkpoint, whose holes this file lists)",
                 side, je.text);
        return DSV4_ERR_FORMAT;
    }
    attach_ctx c = {.side = side, .st = st, .holes = json_object_get(j, "holes"), .err = err, .errlen = errlen};
    json_t *seed = json_object_get(j, "seed");
    dsv4_status rc = DSV4_OK;
    if (!json_is_integer(json_object_get(j, "format")) || json_integer_value(json_object_get(j, "format")) != 1 ||
        !json_is_object(c.holes) || !json_is_integer(seed)) {
        snprintf(err, errlen, "%s: expected {\"format\": 1, \"seed\": N, \"holes\": {...}}", side);
        rc = DSV4_ERR_FORMAT;
        goto done;
    }
    c.seed = (uint64_t)json_integer_value(seed);
    if ((rc = dsv4_weights_foreach(w, attach_one, &c)) != DSV4_OK) goto done;
    const char *name;
    json_t *h;
    json_object_foreach(c.holes, name, h)
    {
        if (!json_is_true(json_object_get(h, "attached"))) {
            snprintf(err, errlen,
                     "%s: %s is listed as a hole but is no weight dsv4 loads: the file does not "
                     "describe this checkpoint",
                     side, name);
            rc = DSV4_ERR_FORMAT;
            goto done;
        }
    }
    if (verbose)
        fprintf(stderr,
                "dsv4: sparse synthetic checkpoint: %d tensors (%.2f %s) generated at load (--fill-random, "
                "seed %llu)\n",
                c.n, c.bytes >= (1ull << 30) ? c.bytes / 1073741824.0 : c.bytes / 1048576.0,
                c.bytes >= (1ull << 30) ? "GiB" : "MiB", (unsigned long long)c.seed);
done:
    json_decref(j);
    return rc;
}
