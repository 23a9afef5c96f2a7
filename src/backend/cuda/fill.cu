/*
 * fill.cu - --fill-random: the holes of a sparse synthetic checkpoint
 * generated in GPU memory at load (model/synth.h), so a Flash-shaped model of
 * as many layers as fit can be benchmarked without its bytes on disk.
 *
 * One thread per 64-bit word of the tensor, grid-stride: word w is
 * dsv4_synth_word(g, w) (model/synth_gen.h), the very function the CPU
 * backend runs, so both backends hold the same bytes (test_synth compares
 * them). The kernel also checks each word it writes (no E4M3 NaN code, no
 * non-finite BF16) and counts failures; weight_load reads the count back and
 * refuses the load if it is not 0. That readback synchronises once per
 * tensor (~10 us, about 0.3 s over the 33,000 tensors of 43 Flash layers),
 * a small price next to a broken benchmark.
 */
#include "backend/cuda/fill.cuh"

#include "model/synth_gen.h"

struct synth_fill_params {
    uint8_t *__restrict__ dst; /* [nbytes], cudaMalloc'ed (256-byte aligned) */
    uint64_t nbytes;
    dsv4_synth g;      /* kind, key, mul */
    unsigned int *bad; /* += words holding a non-finite value */
};

__global__ void synth_fill_kernel(synth_fill_params p)
{
    const uint64_t n_words = (p.nbytes + 7) / 8, stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t w = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; w < n_words; w += stride) {
        const uint64_t v = dsv4_synth_word(&p.g, w);
        if (!dsv4_synth_word_ok(p.g.kind, v)) atomicAdd(p.bad, 1u);
        if (8 * w + 8 <= p.nbytes) {
            ((uint64_t *)p.dst)[w] = v;
        } else { /* the tensor's last, partial word */
            for (uint64_t b = 8 * w; b < p.nbytes; b++) p.dst[b] = (uint8_t)(v >> (8 * (b - 8 * w)));
        }
    }
}

/* The failure count lives in module memory: one per process and device, only
 * ever written by the fill kernel and reset before each fill. */
static __device__ unsigned int fill_bad;

dsv4_status cuda_weight_fill(dsv4_backend *be, dsv4_w *w, char *err, size_t errlen)
{
    cuda_impl *im = impl_of(be);
    const dsv4_synth *g = &w->synth;
    if (cuda_weight_malloc(be, &w->dev, g->elem_bytes) != cudaSuccess ||
        (g->scale_byte >= 0 && cuda_weight_malloc(be, &w->dev_scale, g->scale_bytes) != cudaSuccess)) {
        snprintf(err, errlen, "%s: out of GPU memory generating the weights (--fill-random)", w->name);
        return DSV4_ERR_NOMEM;
    }
    unsigned int *bad = NULL, h_bad = 0;
    CK(cudaGetSymbolAddress((void **)&bad, fill_bad));
    CK(cudaMemsetAsync(bad, 0, sizeof(unsigned int), im->stream));
    synth_fill_params p;
    p.dst = (uint8_t *)w->dev;
    p.nbytes = g->elem_bytes;
    p.g = *g;
    p.bad = bad;
    const uint64_t n_words = (g->elem_bytes + 7) / 8;
    const int threads = 256;
    const uint64_t want = (n_words + threads - 1) / threads;
    const int blocks = (int)(want < 8192 ? (want > 0 ? want : 1) : 8192); /* ~60 blocks per SM, then grid-stride */
    synth_fill_kernel<<<blocks, threads, 0, im->stream>>>(p);
    CK_LAUNCH();
    if (g->scale_byte >= 0) CK(cudaMemsetAsync(w->dev_scale, g->scale_byte, g->scale_bytes, im->stream));
    CK(cudaMemcpyAsync(&h_bad, bad, sizeof h_bad, cudaMemcpyDeviceToHost, im->stream));
    CK(cudaStreamSynchronize(im->stream));
    if (h_bad) {
        snprintf(err, errlen,
                 "%s: --fill-random generated %u words with a non-finite value (a bug in the "
                 "generator); refusing to serve them",
                 w->name, h_bad);
        return DSV4_ERR_STATE;
    }
    return DSV4_OK;
}
