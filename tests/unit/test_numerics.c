/*
 * test_numerics.c - invariants of the small numeric building blocks:
 * Sinkhorn (MODEL.md §3.3), the RoPE frequency tables (§3.5), the FP8 / FP4
 * simulations and the Hadamard transform (§3.10), top-k selection, and the
 * row parts of reference numerics' attention (backend.h).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "model/quant.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / (1 << 23))) - 1.0f;
}
static float nrand(void) { return frand() + frand() + frand(); }

static void test_sinkhorn_invariants(void **state)
{
    for (int hc = 2; hc <= 6; hc++) {
        for (int trial = 0; trial < 50; trial++) {
            int mix = (2 + hc) * hc;
            float m[mix], base[mix], scale[3] = {1.0f + frand() * 0.5f, 1.0f + frand() * 0.5f, 1.0f + frand()};
            for (int i = 0; i < mix; i++) {
                m[i] = nrand();
                base[i] = nrand();
            }
            float pre[hc], post[hc], comb[hc * hc];
            dsv4_cpu_hc_split(m, scale, base, hc, 20, 1e-6f, pre, post, comb);
            for (int i = 0; i < hc; i++) {
                assert_true(pre[i] > 1e-6f * 0.999f && pre[i] < 1.0f + 1e-6f * 1.001f);
                assert_true(post[i] > 0.0f && post[i] < 2.0f);
            }
            for (int k = 0; k < hc; k++) { /* columns are normalised last: exact to rounding */
                double s = 0;
                for (int j = 0; j < hc; j++) s += comb[j * hc + k];
                assert_true(fabs(s - 1.0) < 1e-5);
            }
            for (int j = 0; j < hc; j++) { /* rows converge */
                double s = 0;
                for (int k = 0; k < hc; k++) {
                    s += comb[j * hc + k];
                    assert_true(comb[j * hc + k] > 0);
                }
                assert_true(fabs(s - 1.0) < 5e-2); /* 20 iterations: rows converge to ~1e-2 in the worst draws */
            }
        }
    }
}

static void test_rope_tables(void **state)
{
    /* MODEL.md §3.5 test values (FP64); ours are FP32 as the reference's */
    const int idx[] = {0, 1, 15, 16, 20, 24, 25, 31};
    const double comp[] = {1.0, 6.876560219e-01, 3.635538584e-03, 2.265625000e-03,
                           2.969777783e-04, 1.953125000e-05, 5.372312671e-06, 5.680529037e-07};
    const double plain[] = {1.0, 7.498942093e-01, 1.333521432e-02, 1.000000000e-02,
                            3.162277660e-03, 1.000000000e-03, 7.498942093e-04, 1.333521432e-04};
    float fc[32], fp[32];
    dsv4_rope_freqs(160000.0, 64, 1, 16.0, 65536.0, 32.0, 1.0, fc);
    dsv4_rope_freqs(10000.0, 64, 0, 0, 0, 0, 0, fp);
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
        assert_true(fabs(fc[idx[i]] - comp[i]) <= 1e-6 * comp[i] + 1e-12);
        assert_true(fabs(fp[idx[i]] - plain[i]) <= 1e-6 * plain[i] + 1e-12);
    }
    /* below the ramp (i < 15) frequencies are untouched; above it (i >= 25) divided by 16 */
    float base[32];
    dsv4_rope_freqs(160000.0, 64, 0, 0, 0, 0, 0, base);
    for (int i = 0; i <= 15; i++) assert_true(fc[i] == base[i]);
    for (int i = 25; i < 32; i++) assert_true(fabs(fc[i] - base[i] / 16.0) <= 1e-7 * base[i]);
}

static int is_e4m3_value(float v)
{
    for (int b = 0; b < 256; b++)
        if ((b & 0x7f) != 0x7f && dsv4_e4m3_to_f32((uint8_t)b) == v) return 1;
    return 0;
}

static void test_fp8sim(void **state)
{
    float v[448 + 5], w[448 + 5];
    for (int trial = 0; trial < 20; trial++) {
        float mag = powf(2.0f, (float)(trial - 10));
        for (int i = 0; i < 453; i++) v[i] = nrand() * mag;
        v[3] = 0;
        dsv4_fp8sim(v, 453, 64);
        for (int i = 0; i < 453; i++) {
            w[i] = v[i];
            assert_true(dsv4_round_bf16(v[i]) == v[i]); /* exactly BF16 */
        }
        dsv4_fp8sim(w, 453, 64);
        for (int i = 0; i < 453; i++) assert_true(w[i] == v[i]); /* idempotent */
        /* exactly re-encodable: value / block scale is an E4M3 value */
        for (int b0 = 0; b0 < 453; b0 += 64) {
            int b1 = b0 + 64 < 453 ? b0 + 64 : 453;
            float amax = 1e-4f;
            for (int i = b0; i < b1; i++) amax = fmaxf(amax, fabsf(v[i]));
            float s = dsv4_pow2_ceil_scale(amax, 448.0f);
            for (int i = b0; i < b1; i++) assert_true(is_e4m3_value(v[i] / s));
        }
    }
    /* E4M3 rounding: ties to even, saturation */
    assert_true(dsv4_e4m3_round(1.0625f) == 1.0f);   /* halfway 1 and 1.125 -> even (1.0) */
    assert_true(dsv4_e4m3_round(1.1875f) == 1.25f);  /* halfway 1.125 and 1.25 -> even (1.25) */
    assert_true(dsv4_e4m3_round(500.0f) == 448.0f);
    assert_true(dsv4_e4m3_round(-0.0009765625f) == -0.0f || dsv4_e4m3_round(-0.0009765625f) == 0.0f);
}

static void test_fp4sim_hadamard(void **state)
{
    float v[128], w[128], h[128];
    for (int trial = 0; trial < 20; trial++) {
        for (int i = 0; i < 128; i++) v[i] = h[i] = nrand() * (float)(trial + 1);
        /* Hadamard is orthonormal and its own inverse */
        dsv4_hadamard(h, 128);
        dsv4_hadamard(h, 128);
        for (int i = 0; i < 128; i++) assert_true(fabsf(h[i] - v[i]) < 1e-4f * (float)(trial + 1));
        dsv4_hadamard(v, 128);
        dsv4_fp4sim(v, 128, 32);
        for (int i = 0; i < 128; i++) {
            w[i] = v[i];
            assert_true(dsv4_round_bf16(v[i]) == v[i]);
        }
        dsv4_fp4sim(w, 128, 32);
        for (int i = 0; i < 128; i++) assert_true(w[i] == v[i]);
        for (int b0 = 0; b0 < 128; b0 += 32) {
            float amax = 6.0f * 1.1754943508222875e-38f;
            for (int i = b0; i < b0 + 32; i++) amax = fmaxf(amax, fabsf(v[i]));
            float s = dsv4_pow2_ceil_scale(amax, 6.0f);
            for (int i = b0; i < b0 + 32; i++) {
                float q = fabsf(v[i] / s);
                int ok = 0;
                for (int c = 0; c < 8; c++) ok |= q == dsv4_e2m1_to_f32((uint8_t)c);
                assert_true(ok);
            }
        }
    }
    /* E2M1 ties to the even code */
    assert_true(dsv4_e2m1_round(0.25f) == 0.0f);
    assert_true(dsv4_e2m1_round(0.75f) == 1.0f);
    assert_true(dsv4_e2m1_round(1.25f) == 1.0f);
    assert_true(dsv4_e2m1_round(2.5f) == 2.0f);
    assert_true(dsv4_e2m1_round(5.0f) == 4.0f);
    assert_true(dsv4_e2m1_round(-7.0f) == -6.0f);
}

static void test_bf16_rounding(void **state)
{
    assert_true(dsv4_f32_to_bf16(1.0f) == 0x3f80);
    assert_true(dsv4_round_bf16(1.00390625f) == 1.0f);       /* halfway, even stays */
    assert_true(dsv4_round_bf16(1.01171875f) == 1.015625f);  /* halfway, odd rounds up */
    assert_true(isnan(dsv4_round_bf16(NAN)));
    assert_true(dsv4_f16_to_f32(0x3c00) == 1.0f);
    assert_true(dsv4_f16_to_f32(0x0001) == 5.960464477539063e-08f);
    assert_true(dsv4_e8m0_to_f32(127) == 1.0f);
    assert_true(dsv4_e8m0_to_f32(130) == 8.0f);
}

static void test_topk(void **state)
{
    float s[10] = {0.5f, 3.0f, -1.0f, 3.0f, 2.0f, 7.0f, 0.0f, 2.0f, 9.0f, 1.0f};
    int32_t idx[10];
    int k = dsv4_cpu_topk(s, 10, 4, idx);
    assert_int_equal(k, 4);
    const int32_t want[4] = {1, 3, 5, 8}; /* 9, 7, 3, 3 (ties by lower index) */
    for (int i = 0; i < 4; i++) assert_int_equal(idx[i], want[i]);
    k = dsv4_cpu_topk(s, 10, 5, idx);
    const int32_t want5[5] = {1, 3, 4, 5, 8}; /* the 2.0 tie goes to index 4 */
    for (int i = 0; i < 5; i++) assert_int_equal(idx[i], want5[i]);
    assert_int_equal(dsv4_cpu_topk(s, 3, 8, idx), 3);
}

/* The parts every reference attention path weighs alike (dsv4_attn_part_lo): they cover the rows in order from
 * 0 to nr, start at multiples of 16, hold at most nr / 8 + 16 rows each (what k_attn_one sizes a part's shared
 * memory by), and the last is never empty (rows past nr, padded to 16, are its). */
static void test_attn_parts(void **state)
{
    (void)state;
    for (int nr = 1; nr <= 20000; nr++) {
        assert_int_equal(dsv4_attn_part_lo(nr, 0), 0);
        assert_int_equal(dsv4_attn_part_lo(nr, DSV4_ATTN_PARTS), nr);
        for (int p = 0; p < DSV4_ATTN_PARTS; p++) {
            const int lo = dsv4_attn_part_lo(nr, p), hi = dsv4_attn_part_lo(nr, p + 1);
            assert_int_equal(lo % 16, 0);
            assert_true(hi >= lo);
            assert_true(hi - lo <= (nr + DSV4_ATTN_PARTS - 1) / DSV4_ATTN_PARTS + 16);
        }
        assert_true(dsv4_attn_part_lo(nr, DSV4_ATTN_PARTS - 1) < nr);
    }
    assert_int_equal(dsv4_attn_part_lo(640, 1), 80); /* CSA's 640 rows: 8 parts of 80 */
    assert_int_equal(dsv4_attn_part_lo(160, 1), 16); /* HCA at 4k: parts of 16, 16, 16, 32, 16, 16, 16, 32 */
    assert_int_equal(dsv4_attn_part_lo(20, 7), 16);  /* few rows: parts 0-5 empty, 6 holds 16, 7 the rest */
    assert_int_equal(dsv4_attn_part_lo(20, 6), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sinkhorn_invariants), cmocka_unit_test(test_rope_tables),   cmocka_unit_test(test_fp8sim),
        cmocka_unit_test(test_fp4sim_hadamard),     cmocka_unit_test(test_bf16_rounding), cmocka_unit_test(test_topk),
        cmocka_unit_test(test_attn_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
