/*
 * bench_state.cu - the decode state the kernel timings (dsv4_cuda_attn_time,
 * dsv4_cuda_indexer_time: bench_kernels and dsv4 tune) run on: `batch`
 * sequences one token each at position ctx - 1, their compressed rows on
 * pages of 256 tokens handed out in order, their rows pseudo-random BF16
 * pairs (the backend's fill): distinct indexer scores, as a real context
 * gives (the top-k's radix passes depend on how the scores spread; zero rows
 * would make every candidate tie).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cuda/common.cuh"

/* FP4 indexer keys: each page's scale bytes (after its [rows][width / 2] code bytes) as dsv4_seq_skip sets
 * them (dsv4_fill_e8m0). */
__global__ void k_bench_scales(float *pages, int64_t n_pages, size_t page_floats, size_t off, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n_pages * n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int64_t p = (int64_t)(i / n);
        const size_t j = i % n;
        ((uint8_t *)(pages + (size_t)p * page_floats))[off + j] = dsv4_fill_e8m0(0x5eed0000ull + (uint64_t)p, j);
    }
}

bool bench_step_init(bench_step *b, dsv4_backend *be, int batch, int64_t ctx, int ratio, int row_floats,
                     size_t slot_floats, bool fp4_keys, bool bf16_rows)
{
    static uint64_t ptv = (uint64_t)1 << 40; /* page-table versions of their own */
    const int page_tokens = 256;
    memset(b, 0, sizeof *b);
    if (batch < 1 || batch > 4096 || ctx < ratio) return false;
    b->kv.max_seqs = batch;
    b->kv.max_ctx = ctx + 1;
    b->kv.page_tokens = page_tokens;
    b->kv.max_pages_per_seq = (int)((ctx + page_tokens) / page_tokens);
    b->kv.n_pages = (int64_t)batch * b->kv.max_pages_per_seq;
    b->kv.slot_floats = slot_floats;
    b->kv.fp4_keys = fp4_keys;
    b->kv.bf16_rows = bf16_rows;
    b->kv.page_floats = fp4_keys ? dsv4_kv_idx_floats(&b->kv, page_tokens / ratio, row_floats)
                                 : (size_t)(page_tokens / ratio) * dsv4_kv_row_floats(&b->kv, row_floats);
    b->kv.layer = &b->ls;
    b->kv.pt_version = ++ptv;
    b->segs = (dsv4_seg *)calloc((size_t)batch, sizeof *b->segs);
    b->tokens = (int32_t *)calloc((size_t)batch, 4);
    b->tok_seg = (int32_t *)calloc((size_t)batch, 4);
    b->pos = (int64_t *)calloc((size_t)batch, 8);
    b->kv.page_table = (int32_t *)malloc((size_t)b->kv.n_pages * sizeof(int32_t));
    b->kv.slots = slot_floats ? (float *)be->alloc(be, (size_t)batch * slot_floats * sizeof(float)) : NULL;
    b->kv.pages = (float *)be->alloc(be, (size_t)b->kv.n_pages * b->kv.page_floats * sizeof(float));
    if (!b->segs || !b->tokens || !b->tok_seg || !b->pos || !b->kv.page_table || (slot_floats && !b->kv.slots) ||
        !b->kv.pages) {
        bench_step_free(b, be);
        return false;
    }
    be->fill(be, b->kv.pages, (size_t)b->kv.n_pages * b->kv.page_floats, 0x5eedbe00u);
    if (fp4_keys) {
        const size_t rows = (size_t)(page_tokens / ratio);
        k_bench_scales<<<1024, 256, 0, impl_of(be)->stream>>>(b->kv.pages, b->kv.n_pages, b->kv.page_floats,
                                                                 rows * (size_t)(row_floats / 2), rows * (size_t)(row_floats / 32));
        CK_LAUNCH();
    }
    if (slot_floats) be->fill(be, b->kv.slots, (size_t)batch * slot_floats, 0x5eedbe01u);
    for (int64_t i = 0; i < b->kv.n_pages; i++) b->kv.page_table[i] = (int32_t)i;
    for (int t = 0; t < batch; t++) {
        b->segs[t] = (dsv4_seg){.slot = t, .pos0 = ctx - 1, .n = 1, .t0 = t};
        b->tok_seg[t] = t;
        b->pos[t] = ctx - 1;
    }
    b->plan = (dsv4_plan){.n_tok = batch, .n_seg = batch, .segs = b->segs, .tokens = b->tokens, .pos = b->pos,
                          .tok_seg = b->tok_seg};
    be->step_begin(be, &b->plan, &b->kv);
    return true;
}

void bench_step_free(bench_step *b, dsv4_backend *be)
{
    if (b->kv.slots) be->free(be, b->kv.slots);
    if (b->kv.pages) be->free(be, b->kv.pages);
    free(b->kv.page_table), free(b->segs), free(b->tokens), free(b->tok_seg), free(b->pos);
    memset(b, 0, sizeof *b);
}

double bench_time_calls(dsv4_backend *be, void (*call)(void *), void *ctx, int reps)
{
    cudaStream_t st = impl_of(be)->stream;
    call(ctx); /* warm-up */
    CK(cudaStreamSynchronize(st));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < reps; r++) call(ctx);
    CK(cudaStreamSynchronize(st));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) / reps;
}
