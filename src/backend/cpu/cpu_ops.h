/*
 * cpu_ops.h - single-row reference routines of the CPU backend, exposed for
 * unit tests and for other backends' tests to compare against.
 */
#ifndef DSV4_BACKEND_CPU_OPS_H
#define DSV4_BACKEND_CPU_OPS_H

#include <stdint.h>

/* Split the mix vector m [(2+hc)*hc] (already multiplied by the RMS factor)
 * into pre [hc], post [hc] and the Sinkhorn-normalised comb [hc][hc]
 * (MODEL.md §3.3). */
void dsv4_cpu_hc_split(const float *m, const float *scale, const float *base, int hc, int iters, float eps,
                       float *pre, float *post, float *comb);

/* RoPE frequencies of one set: f_i for i < rope_dim/2 (MODEL.md §3.5), as FP32
 * values computed the way the reference computes them. */
void dsv4_rope_freqs(double theta, int rope_dim, int yarn, double factor, double orig_max_pos, double beta_fast,
                     double beta_slow, float *freqs);

/* Dot product used by every CPU linear: fixed summation order. */
float dsv4_cpu_dot_f32(const float *x, const float *w, int n);

/* Select the k largest of score[0..n) (ties: lower index first); writes their
 * indices in ascending order to idx and returns k' = min(k, n). */
int dsv4_cpu_topk(const float *score, int n, int k, int32_t *idx);

#endif
