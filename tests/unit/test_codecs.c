/*
 * test_codecs.c - the number formats of the checkpoints (MODEL.md §2.5, §2.8)
 * against their definitions, computed here independently with ldexp:
 * every E4M3 byte, the whole E8M0 range, every E2M1 code, NVFP4 scale
 * composition, and the CPU linear's on-the-fly decoding of FP8 block-scaled,
 * MXFP4 and NVFP4 matrices against a dequantize-then-multiply reference,
 * reference numerics' BF16(x) in front of a BF16 weight,
 * and the compact form of FP4SIM's output (codes and a UE8M0 scale) back to
 * the same floats.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "model/quant.h"

/* E4M3 (fn): sign, 4 exponent bits (bias 7), 3 mantissa bits; exp 0 subnormal
 * m * 2^-9; S.1111.111 is NaN; no infinities. */
static double e4m3_def(uint8_t b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7) return NAN;
    double v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
    return s ? -v : v;
}

static void test_e4m3_all_bytes(void **state)
{
    int nans = 0;
    for (int b = 0; b < 256; b++) {
        double want = e4m3_def((uint8_t)b);
        float got = dsv4_e4m3_to_f32((uint8_t)b);
        if (isnan(want)) {
            assert_true(isnan(got));
            nans++;
            continue;
        }
        assert_true((double)got == want);
        /* encode(decode(b)) == the same value (rounding is the identity on the grid) */
        assert_true(dsv4_e4m3_round(got) == got);
    }
    assert_int_equal(nans, 2);
    assert_true(dsv4_e4m3_to_f32(0x7e) == 448.0f);
    assert_true(dsv4_e4m3_to_f32(0x01) == 0.001953125f);
}

static void test_e8m0_range(void **state)
{
    for (int e = 1; e < 255; e++) assert_true((double)dsv4_e8m0_to_f32((uint8_t)e) == ldexp(1.0, e - 127));
    assert_true((double)dsv4_e8m0_to_f32(0) == ldexp(1.0, -127));
    /* the power-of-two scale of an amax: smallest 2^k with amax / 2^k <= qmax */
    for (int k = -30; k < 30; k++) {
        float a = ldexpf(1.0f, k) * 448.0f;
        assert_true(dsv4_pow2_ceil_scale(a, 448.0f) == ldexpf(1.0f, k));
        assert_true(dsv4_pow2_ceil_scale(nextafterf(a, INFINITY), 448.0f) == ldexpf(1.0f, k + 1));
    }
}

/* The E4M3 rounding and code as first written, with divisions (the oracle of the multiplications that replaced
 * them: x / 2^k and x * 2^-k are both the correctly rounded x 2^-k). */
static float e4m3_round_div(float x)
{
    float a = fabsf(x);
    if (!(a == a)) return x;
    if (a >= 448.0f) return x < 0 ? -448.0f : 448.0f;
    int e;
    if (a < 0.015625f)
        e = -6;
    else
        e = (int)((dsv4_f32_bits(a) >> 23) & 0xff) - 127;
    float q = dsv4_bits_f32((uint32_t)(e - 3 + 127) << 23);
    float r = rintf(a / q) * q;
    return x < 0 ? -r : r;
}

static uint32_t bits_of(float v)
{
    return isnan(v) ? 0x7fc00000u : dsv4_f32_bits(v);
}

static void test_e4m3_code_exact(void **state)
{
    /* the reciprocal of every scale dsv4_pow2_ceil_scale returns, 2^-126 .. 2^127 */
    for (int k = -126; k <= 127; k++) assert_true((double)dsv4_pow2_recip(ldexpf(1.0f, k)) == ldexp(1.0, -k));
    /* codes at every scale: values on and between the grid's points (ties), at the edges of the normal and
     * subnormal ranges, +-0, +-Inf, NaN, and random bit patterns */
    float vals[4096];
    int nv = 0;
    const float fixed[] = {
        0.0f,          -0.0f,        INFINITY, -INFINITY,       NAN,           448.0f,         -448.0f,
        464.0f,        1e-45f,       -1e-45f,  1.17549435e-38f, 3.4028235e38f, -3.4028235e38f, 0.001953125f,
        0.0009765625f, 0.0029296875f};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) vals[nv++] = fixed[i];
    for (int b = 0; b < 256; b++) { /* every E4M3 value and the midpoints above it */
        const float g = dsv4_e4m3_to_f32((uint8_t)b);
        vals[nv++] = g;
        vals[nv++] = (g + dsv4_e4m3_to_f32((uint8_t)(b + 1 < 256 ? b + 1 : b))) * 0.5f;
    }
    uint32_t st = 12345u;
    while (nv < 4096) {
        st = st * 1664525u + 1013904223u;
        vals[nv++] = dsv4_bits_f32(st);
    }
    for (int k = -126; k <= 127; k++) {
        const float sc = ldexpf(1.0f, k);
        for (int i = 0; i < nv; i++) {
            /* values at this scale: v, and v times the scale (the codes' own range) */
            const float v[2] = {vals[i], vals[i] * sc};
            for (int j = 0; j < 2; j++) {
                const float want = e4m3_round_div(fminf(fmaxf(v[j] / sc, -448.0f), 448.0f));
                if (bits_of(dsv4_e4m3_code(v[j], sc)) != bits_of(want))
                    fail_msg("code of %a at 2^%d: %a, the division gives %a", (double)v[j], k,
                             (double)dsv4_e4m3_code(v[j], sc), (double)want);
            }
            if (bits_of(dsv4_e4m3_round(vals[i])) != bits_of(e4m3_round_div(vals[i])))
                fail_msg("round of %a: %a, the division gives %a", (double)vals[i], (double)dsv4_e4m3_round(vals[i]),
                         (double)e4m3_round_div(vals[i]));
        }
    }
}

static void test_e2m1_codes(void **state)
{
    const double table[16] = {0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6};
    for (int c = 0; c < 16; c++) {
        assert_true((double)dsv4_e2m1_to_f32((uint8_t)c) == table[c]);
        assert_true(!!signbit(dsv4_e2m1_to_f32((uint8_t)c)) == (c >= 8));
        assert_true(dsv4_e2m1_round(dsv4_e2m1_to_f32((uint8_t)c)) == dsv4_e2m1_to_f32((uint8_t)c));
    }
}

/* ---- the linear on quantized matrices ---------------------------------- */

static uint64_t rng = 7;
static uint32_t next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}
static float frand(void) { return (float)(next() % 20001) / 10000.0f - 1.0f; }

static void check_linear(dsv4_backend *be, const dsv4_w *w, const float *deq /* [out][in] */)
{
    const int out = (int)w->ne[0], in = (int)w->ne[1];
    for (int n = 1; n <= 6; n += 5) {
        float *x = malloc((size_t)n * in * sizeof(float)), *y = malloc((size_t)n * out * sizeof(float));
        for (int i = 0; i < n * in; i++) x[i] = frand();
        be->linear(be, w, x, in, n, y, out);
        for (int t = 0; t < n; t++)
            for (int o = 0; o < out; o++) {
                double ref = 0, mag = 0;
                for (int i = 0; i < in; i++) {
                    ref += (double)x[t * in + i] * deq[(size_t)o * in + i];
                    mag += fabs((double)x[t * in + i] * deq[(size_t)o * in + i]);
                }
                assert_true(fabs(y[t * out + o] - ref) <= 1e-5 * mag + 1e-30);
            }
        /* a view of some rows computes the same rows */
        dsv4_w v = dsv4_w_rows(w, 5, out - 9);
        be->linear(be, &v, x, in, n, y, out - 9);
        float *y2 = malloc((size_t)n * out * sizeof(float));
        be->linear(be, w, x, in, n, y2, out);
        for (int t = 0; t < n; t++)
            for (int o = 0; o < out - 9; o++) assert_true(y[t * (out - 9) + o] == y2[t * out + 5 + o]);
        free(x);
        free(y);
        free(y2);
    }
}

static void test_fp8_block_linear(void **state)
{
    dsv4_backend *be = dsv4_backend_cpu_create(2);
    const int out = 150, in = 200, br = 128, bc = 128; /* partial blocks in both directions */
    const int sr = (out + br - 1) / br, scn = (in + bc - 1) / bc;
    uint8_t *q = malloc((size_t)out * in), sc8[4];
    float sc32[4], *deq = malloc((size_t)out * in * sizeof(float));
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < sr * scn; i++) {
            sc8[i] = (uint8_t)(120 + next() % 10);
            sc32[i] = ldexpf(1.0f, (int)(next() % 9) - 4) * (1.0f + (float)(next() % 7) / 8.0f);
        }
        for (int o = 0; o < out; o++)
            for (int i = 0; i < in; i++) {
                uint8_t b;
                do b = (uint8_t)next(); while ((b & 0x7f) == 0x7f);
                q[(size_t)o * in + i] = b;
                int k = (o / br) * scn + i / bc;
                double s = pass == 0 ? ldexp(1.0, sc8[k] - 127) : (double)sc32[k];
                deq[(size_t)o * in + i] = (float)(e4m3_def(b) * s);
            }
        dsv4_w w = {.name = "fp8", .dtype = DSV4_DT_F8_E4M3, .fmt = DSV4_WF_FP8, .ndim = 2, .ne = {out, in},
                    .host = q, .scale = pass == 0 ? (const void *)sc8 : (const void *)sc32,
                    .scale_dtype = pass == 0 ? DSV4_DT_F8_E8M0 : DSV4_DT_F32, .scale_cols = scn, .block_rows = br,
                    .block_cols = bc};
        check_linear(be, &w, deq);
    }
    /* the NaN codes S.1111.111 decode to NaN on every path (vector and tail) */
    q[(size_t)3 * in + 17] = 0x7f;
    q[(size_t)4 * in + in - 1] = 0xff;
    dsv4_w w = {.name = "fp8", .dtype = DSV4_DT_F8_E4M3, .fmt = DSV4_WF_FP8, .ndim = 2, .ne = {out, in},
                .host = q, .scale = sc8, .scale_dtype = DSV4_DT_F8_E8M0, .scale_cols = scn, .block_rows = br,
                .block_cols = bc};
    float *x = malloc((size_t)in * sizeof(float)), *y = malloc((size_t)out * sizeof(float));
    for (int i = 0; i < in; i++) x[i] = frand();
    be->linear(be, &w, x, in, 1, y, out);
    assert_true(isnan(y[3]) && isnan(y[4]) && isfinite(y[2]) && isfinite(y[5]));
    free(x);
    free(y);
    free(q);
    free(deq);
    be->destroy(be);
}

/* Reference numerics (act_quant): the linear reads x as BF16 values - a BF16 weight multiplies BF16(x), the
 * reference's BF16 activations; an FP8 weight's activations are quantised from BF16(x), as the reference
 * quantises a BF16 tensor (forward.c leaves the rounding in front of wo_b to it: dsv4_reads_bf16) - so x and x
 * rounded first give the same bits, unlike plain numerics; a weight marked no_act_quant (wo_a) takes x itself. */
static void check_reads_bf16(dsv4_backend *be, dsv4_w *w)
{
    const int out = (int)w->ne[0], in = (int)w->ne[1], n = 5, ldx = in + 3;
    float *x = malloc((size_t)n * ldx * sizeof(float)), *xr = malloc((size_t)n * in * sizeof(float));
    for (int t = 0; t < n; t++)
        for (int i = 0; i < in; i++) {
            x[(size_t)t * ldx + i] = frand() * 1.001f + ldexpf(frand(), -12); /* not BF16 values */
            xr[(size_t)t * in + i] = dsv4_round_bf16(x[(size_t)t * ldx + i]);
        }
    float *y = malloc((size_t)n * out * sizeof(float)), *yr = malloc((size_t)n * out * sizeof(float));
    float *yp = malloc((size_t)n * out * sizeof(float));
    be->linear(be, w, x, ldx, n, yp, out); /* plain numerics: x itself */
    be->act_quant = true;
    assert_true(dsv4_reads_bf16(be, w));
    be->linear(be, w, xr, in, n, yr, out);
    be->linear(be, w, x, ldx, n, y, out);
    assert_memory_equal(y, yr, (size_t)n * out * sizeof(float));
    assert_true(memcmp(y, yp, (size_t)n * out * sizeof(float)) != 0);
    w->no_act_quant = true;
    assert_false(dsv4_reads_bf16(be, w));
    be->linear(be, w, x, ldx, n, y, out);
    assert_memory_equal(y, yp, (size_t)n * out * sizeof(float));
    w->no_act_quant = false;
    be->act_quant = false;
    assert_false(dsv4_reads_bf16(be, w));
    free(x);
    free(xr);
    free(y);
    free(yr);
    free(yp);
}

static void test_linear_reads_bf16(void **state)
{
    (void)state;
    dsv4_backend *be = dsv4_backend_cpu_create(2);
    const int out = 37, in = 300, scn = (in + 127) / 128;
    uint16_t *qb = malloc((size_t)out * in * sizeof(uint16_t));
    for (int i = 0; i < out * in; i++) qb[i] = dsv4_f32_to_bf16(frand());
    dsv4_w wb = {.name = "bf16", .dtype = DSV4_DT_BF16, .fmt = DSV4_WF_FLOAT, .ndim = 2, .ne = {out, in}, .host = qb};
    check_reads_bf16(be, &wb);
    uint8_t *q8 = malloc((size_t)out * in), sc8[3];
    for (int i = 0; i < scn; i++) sc8[i] = (uint8_t)(121 + next() % 6);
    for (int i = 0; i < out * in; i++) {
        uint8_t b;
        do b = (uint8_t)next();
        while ((b & 0x7f) == 0x7f);
        q8[i] = b;
    }
    dsv4_w w8 = {.name = "fp8",
                 .dtype = DSV4_DT_F8_E4M3,
                 .fmt = DSV4_WF_FP8,
                 .ndim = 2,
                 .ne = {out, in},
                 .host = q8,
                 .scale = sc8,
                 .scale_dtype = DSV4_DT_F8_E8M0,
                 .scale_cols = scn,
                 .block_rows = 128,
                 .block_cols = 128};
    check_reads_bf16(be, &w8);
    free(qb);
    free(q8);
    be->destroy(be);
}

static void test_fp4_linear(void **state)
{
    dsv4_backend *be = dsv4_backend_cpu_create(2);
    const int out = 37, in = 96;
    uint8_t *q = malloc((size_t)out * in / 2), *s8 = malloc((size_t)out * in / 16);
    float *deq = malloc((size_t)out * in * sizeof(float));
    for (int nv = 0; nv < 2; nv++) {
        int g = nv ? 16 : 32;
        float s2 = nv ? 0.0123f : 1.0f;
        for (int i = 0; i < out * in / g; i++) {
            uint8_t b;
            if (nv) do b = (uint8_t)(next() & 0x7f); while (b == 0x7f); /* positive E4M3 */
            else b = (uint8_t)(118 + next() % 16);
            s8[i] = b;
        }
        for (int o = 0; o < out; o++)
            for (int j = 0; j < in / 2; j++) {
                uint8_t b = (uint8_t)next();
                q[(size_t)o * in / 2 + j] = b;
                for (int h = 0; h < 2; h++) {
                    int i = 2 * j + h, code = h ? b >> 4 : b & 15; /* low nibble = even element */
                    const double tab[8] = {0, .5, 1, 1.5, 2, 3, 4, 6};
                    double v = (code & 8 ? -1 : 1) * tab[code & 7];
                    uint8_t sb = s8[(size_t)o * (in / g) + i / g];
                    double s = nv ? e4m3_def(sb) * (double)s2 : ldexp(1.0, sb - 127);
                    deq[(size_t)o * in + i] = (float)(v * s);
                }
            }
        dsv4_w w = {.name = "fp4", .dtype = nv ? DSV4_DT_U8 : DSV4_DT_I8, .fmt = nv ? DSV4_WF_NVFP4 : DSV4_WF_MXFP4,
                    .ndim = 2, .ne = {out, in}, .host = q, .scale = s8,
                    .scale_dtype = nv ? DSV4_DT_F8_E4M3 : DSV4_DT_F8_E8M0, .scale_cols = in / g, .scale2 = s2};
        check_linear(be, &w, deq);
    }
    free(q);
    free(s8);
    free(deq);
    be->destroy(be);
}

/* The compact form of FP4SIM32's output (the CPU's indexer keys in reference
 * numerics): dsv4_fp4_unpack(dsv4_fp4_pack(fp4sim(v))) is fp4sim(v) bit for
 * bit, over blocks at every scale from the clamped smallest (2^-126) to the
 * largest (2^127, whose codes of 2 and up overflow to infinity), with zeros
 * of both signs, NaN inputs (FP4SIM clamps them to -6 x scale), blocks that
 * top out at 3 (packed at half FP4SIM's scale) and short blocks. Values that
 * are not code x scale are refused. */
static void test_fp4_pack(void **state)
{
    (void)state;
    uint32_t seed = 12345;
    int n_half = 0;
    for (int trial = 0; trial < 20000; trial++) {
        const int n = trial % 7 == 0 ? 1 + trial % 31 : 32;
        float v[32], w[32];
        const int ex = trial % 300 - 150; /* the block's magnitude */
        for (int i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            const float u = (float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f;
            v[i] = ldexpf(u, ex);
            if ((seed & 0xff) == 7) v[i] = 0.0f;
            if ((seed & 0xff) == 9) v[i] = -0.0f;
            if ((seed & 0x3ff) == 11) v[i] = NAN;
        }
        if (trial % 11 == 0) /* the block's largest magnitude 3 x 2^k: FP4SIM codes of at most 3 */
            for (int i = 0; i < n; i++) v[i] = (i & 1 ? -1.5f : 3.0f) * ldexpf(1.0f, ex);
        dsv4_fp4sim(v, n, 32);
        uint8_t codes[16] = {0}, scale = 0;
        if (!dsv4_fp4_pack(v, n, codes, &scale)) {
            for (int i = 0; i < n; i++) print_message("%a ", v[i]);
            fail_msg("trial %d (n %d, magnitude 2^%d): FP4SIM's output refused", trial, n, ex);
        }
        dsv4_fp4_unpack(codes, scale, n, w);
        for (int i = 0; i < n; i++)
            if (memcmp(&v[i], &w[i], 4)) fail_msg("trial %d element %d: %a packed back as %a (scale %d)", trial, i, v[i], w[i], scale);
        if (trial % 11 == 0 && n > 1 && scale < 254) n_half++;
    }
    assert_true(n_half > 0);
    float on[2] = {0.75f, 1.0f}, back[2]; /* 3 and 4 x 0.25 */
    uint8_t c[1], sc;
    assert_true(dsv4_fp4_pack(on, 2, c, &sc));
    assert_int_equal(sc, 125);
    dsv4_fp4_unpack(c, sc, 2, back);
    assert_memory_equal(on, back, sizeof on);
    float off[2] = {1.0f, 1.1f}; /* 1.1 is not an E2M1 code times 1.1's block scale */
    assert_false(dsv4_fp4_pack(off, 2, c, &sc));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_all_bytes),   cmocka_unit_test(test_e8m0_range),
        cmocka_unit_test(test_e2m1_codes),       cmocka_unit_test(test_e4m3_code_exact),
        cmocka_unit_test(test_fp8_block_linear), cmocka_unit_test(test_fp4_linear),
        cmocka_unit_test(test_fp4_pack),         cmocka_unit_test(test_linear_reads_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
