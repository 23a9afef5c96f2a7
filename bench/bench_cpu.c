/*
 * bench_cpu.c - prefill and decode throughput of the engine on one model.
 *
 *   build/bench_cpu -m DIR [--prompt N] [--decode M] [--threads T] [--numerics plain|reference]
 *                   [--backend cpu|cuda] [--json FILE]
 *
 * Prefills N random token ids as one sequence (timed), then decodes M tokens
 * one step at a time feeding back the argmax (timed), and prints tokens/s for
 * both plus the weight bytes streamed per decode token. Results are only
 * meaningful from the same machine and build; docs/PERFORMANCE.md says which.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsv4.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    dsv4_engine_opts o;
    dsv4_engine_opts_default(&o);
    o.backend = DSV4_BACKEND_CPU;
    int N = 256, M = 64;
    const char *json = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) o.model_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--prompt")) N = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--decode")) M = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) o.n_threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--numerics")) o.numerics = strcmp(argv[i + 1], "plain") ? DSV4_NUMERICS_REFERENCE : DSV4_NUMERICS_PLAIN;
        else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
        else if (!strcmp(argv[i], "--backend")) o.backend = strcmp(argv[i + 1], "cuda") ? DSV4_BACKEND_CPU : DSV4_BACKEND_CUDA;
        else {
            fprintf(stderr, "bench_cpu: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!o.model_dir || N < 1 || M < 1) {
        fprintf(stderr, "usage: bench_cpu -m DIR [--prompt N] [--decode M] [--threads T] [--numerics plain|reference] [--json FILE]\n");
        return 2;
    }
    o.max_seqs = 1;
    o.max_ctx = N + M;
    o.pool_tokens = N + M;
    o.max_batch_tokens = N;
    char err[1024];
    dsv4_engine *e;
    if (dsv4_engine_open(&o, &e, err, sizeof err) != DSV4_OK) {
        fprintf(stderr, "bench_cpu: %s\n", err);
        return 1;
    }
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    int32_t *ids = malloc((size_t)N * sizeof(int32_t));
    uint64_t r = 42;
    for (int i = 0; i < N; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((r >> 33) % (uint64_t)info.vocab_size);
    }
    float *logits = malloc((size_t)info.vocab_size * sizeof(float));
    int seq;
    dsv4_seq_create(e, &seq, err, sizeof err);
    double t0 = now_s();
    dsv4_batch_entry b = {.seq = seq, .n_tokens = N, .tokens = ids, .logits = logits};
    if (dsv4_step(e, &b, 1, err, sizeof err) != DSV4_OK) {
        fprintf(stderr, "bench_cpu: %s\n", err);
        return 1;
    }
    double t1 = now_s();
    for (int k = 0; k < M; k++) {
        int32_t tok = 0;
        for (int v = 1; v < info.vocab_size; v++)
            if (logits[v] > logits[tok]) tok = v;
        b = (dsv4_batch_entry){.seq = seq, .n_tokens = 1, .tokens = &tok, .logits = logits};
        if (dsv4_step(e, &b, 1, err, sizeof err) != DSV4_OK) {
            fprintf(stderr, "bench_cpu: %s\n", err);
            return 1;
        }
    }
    double t2 = now_s();
    double pf = N / (t1 - t0), dc = M / (t2 - t1);
    printf("model %s  backend %s  threads %d  prefill %d tokens: %.1f tok/s (%.1f ms)  decode %d tokens: %.1f tok/s (%.2f ms/token)\n",
           o.model_dir, info.backend, o.n_threads, N, pf, (t1 - t0) * 1e3, M, dc, (t2 - t1) * 1e3 / M);
    if (json) {
        FILE *f = fopen(json, "w");
        if (f) {
            fprintf(f, "{\"model\": \"%s\", \"backend\": \"%s\", \"threads\": %d, \"prompt\": %d, \"decode\": %d, \"prefill_tok_s\": %.2f, "
                       "\"decode_tok_s\": %.2f, \"decode_ms_per_token\": %.4f}\n",
                    o.model_dir, info.backend, o.n_threads, N, M, pf, dc, (t2 - t1) * 1e3 / M);
            fclose(f);
        }
    }
    free(ids);
    free(logits);
    dsv4_engine_close(e);
    return 0;
}
