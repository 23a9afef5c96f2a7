/*
 * hc_math.h - the mixing coefficients of a hyper-connection site (MODEL.md
 * §3.3), shared by host and device code: pre, post and the Sinkhorn-normalised
 * comb from one token's mix vector. One definition keeps the CPU reference and
 * the GPU kernel the same computation.
 */
#ifndef DSV4_BACKEND_HC_MATH_H
#define DSV4_BACKEND_HC_MATH_H

#include "model/quant.h" /* DSV4_HD */

DSV4_HD float dsv4_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* m [(2+hc)*hc] is the mix vector already multiplied by the RMS factor. */
DSV4_HD void dsv4_hc_split(const float *m, const float *scale, const float *base, int hc, int iters, float eps,
                           float *pre, float *post, float *comb)
{
    for (int i = 0; i < hc; i++) {
        pre[i] = dsv4_sigmoid(m[i] * scale[0] + base[i]) + eps;
        post[i] = 2.0f * dsv4_sigmoid(m[hc + i] * scale[1] + base[hc + i]);
    }
    for (int j = 0; j < hc; j++) {
        float *row = comb + j * hc, mx = -INFINITY, s = 0;
        for (int k = 0; k < hc; k++) {
            row[k] = m[2 * hc + j * hc + k] * scale[2] + base[2 * hc + j * hc + k];
            mx = fmaxf(mx, row[k]);
        }
        for (int k = 0; k < hc; k++) s += (row[k] = expf(row[k] - mx));
        for (int k = 0; k < hc; k++) row[k] = row[k] / s + eps;
    }
    /* column normalise, then (iters - 1) x (row, column) */
    for (int it = 0; it < iters; it++) {
        if (it > 0)
            for (int j = 0; j < hc; j++) {
                float s = 0;
                for (int k = 0; k < hc; k++) s += comb[j * hc + k];
                for (int k = 0; k < hc; k++) comb[j * hc + k] /= s + eps;
            }
        for (int k = 0; k < hc; k++) {
            float s = 0;
            for (int j = 0; j < hc; j++) s += comb[j * hc + k];
            for (int j = 0; j < hc; j++) comb[j * hc + k] /= s + eps;
        }
    }
}

#endif
