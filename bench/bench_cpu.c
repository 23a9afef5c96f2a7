/*
 * bench_cpu.c - prefill and decode throughput of the engine on one model.
 *
 *   build/bench_cpu -m DIR [--prompt N] [--decode M] [--batch B] [--threads T] [--numerics plain|reference]
 *                   [--backend cpu|cuda] [--json FILE] [--profile FILE] [--fill-random]
 *                   [--profile-steps P] [--no-graphs] [--host-argmax] [--ep N] [--context C] [--max-context X]
 *                   [--temperature T] [--top-p P] [--overlap] [--warm-prefill] [--stagger]
 *
 * --profile FILE times every op family (table on stdout, JSON in FILE): the
 * prefill, and --profile-steps P (default M) decode steps run op by op after
 * the M timed ones, which run as without --profile.
 * --fill-random opens a sparse synthetic checkpoint (dsv4 mkmodel --sparse):
 * its matrices are generated at load (on the GPU by a kernel), so a
 * Flash-shaped model of as many layers as fit needs no disk for its weights.
 *
 * Prefills N random token ids in each of B sequences in one step (timed), then
 * decodes M steps of B tokens feeding back each sequence's greedy pick (timed),
 * and prints tokens/s for both, and decode's ms a step from the third step on (the first two size the
 * scratch and capture the graph: with few steps they weigh on the mean). The pick is made by the engine's sampler (on
 * the GPU: only token ids come back); --host-argmax reads every logit back
 * and takes the argmax here instead (the path before GPU sampling).
 * --context C starts each sequence at position C - N (dsv4_seq_skip: pages
 * allocated, rows left as the pool holds them, no model run), so the prompt
 * ends at C and the decode steps pay a C-token context's attention and
 * indexer (the values are meaningless; the costs are not).
 * --stagger starts sequence b b positions later still (b < B; dsv4_seq_skip
 * again), so the sequences' compression windows complete on different steps,
 * as a server's sequences at many positions do (without it B sequences in
 * step complete theirs together: every fourth step at a CSA layer's ratio 4,
 * none within 64 steps of position 16 at an HCA layer's 128).
 * --max-context X opens the engine with a context length of X tokens (at least
 * what the run needs, the default): what a server sized for long contexts
 * decodes short ones with (the decode graphs' launch shapes follow it).
 * --temperature T (default 0: greedy) and --top-p P (default 1) sample each
 * pick as a chat request with those settings would (a random draw, seeded).
 * --warm-prefill runs the same prefill once, untimed, into sequences freed
 * before the timed one: what a process pays once (a library's kernels loaded
 * at their first launch, its algorithm choices, scratch growing) stays out of
 * the prefill's figure, as in a server that has run a prompt before.
 * --overlap submits each decode step before the previous one's picks are read
 * (dsv4_step_submit with follow entries, then dsv4_step_finish of the one
 * before): the host's turn between steps runs beside the device's work
 * (without it, dsv4_step: one step at a time). Only a backend that runs steps
 * ahead (CUDA) gives it meaning: on the CPU every step runs whole inside
 * submit, so the steady figure from the third step then misses one step.
 * --no-graphs runs decode steps op by op instead of replaying CUDA graphs. Results are only
 * meaningful from the same machine and build; docs/PERFORMANCE.md says which.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsv4.h"

/* s as a JSON string: quotes, backslashes and control characters escaped (a model path may hold any). */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

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
    int N = 256, M = 64, B = 1;
    long long C = 0; /* --context: the prompt ends at this position (dsv4_seq_skip before it) */
    long long X = 0; /* --max-context: the engine's context length, if longer than the run needs */
    const char *json = NULL, *prof_json = NULL;
    int host_argmax = 0, prof_steps = 0, overlap = 0, warm = 0, stagger = 0;
    float temperature = 0.0f, top_p = 1.0f;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--fill-random")) {
            o.fill_random = 1;
            i--; /* a flag: no value */
            continue;
        }
        if (!strcmp(argv[i], "--overlap") || !strcmp(argv[i], "--warm-prefill") || !strcmp(argv[i], "--stagger")) {
            if (!strcmp(argv[i], "--overlap"))
                overlap = 1;
            else if (!strcmp(argv[i], "--stagger"))
                stagger = 1;
            else
                warm = 1;
            i--; /* a flag: no value */
            continue;
        }
        if (!strcmp(argv[i], "--no-graphs") || !strcmp(argv[i], "--host-argmax")) {
            if (argv[i][2] == 'n') o.no_graphs = 1;
            else host_argmax = 1;
            i--;
            continue;
        }
        if (i + 1 == argc) {
            fprintf(stderr, "bench_cpu: %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "-m")) o.model_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--prompt")) N = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--context")) C = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-context"))
            X = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--decode")) M = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) B = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) o.n_threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--numerics")) o.numerics = strcmp(argv[i + 1], "plain") ? DSV4_NUMERICS_REFERENCE : DSV4_NUMERICS_PLAIN;
        else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
        else if (!strcmp(argv[i], "--profile")) prof_json = argv[i + 1];
        else if (!strcmp(argv[i], "--profile-steps")) prof_steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ep")) o.ep = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--temperature")) temperature = (float)atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--top-p")) top_p = (float)atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--moe-backend")) {
            if (dsv4_moe_backend_parse(argv[i + 1], &o.moe_backend)) {
                fprintf(stderr, "bench_cpu: --moe-backend %s: not one of auto, w4a16, w4a8, w4a4\n", argv[i + 1]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--prefill-gemm")) {
            if (dsv4_prefill_gemm_parse(argv[i + 1], &o.prefill_gemm)) {
                fprintf(stderr, "bench_cpu: --prefill-gemm %s: not one of ours, cublaslt\n", argv[i + 1]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--backend"))
            o.backend = strcmp(argv[i + 1], "cuda") ? DSV4_BACKEND_CPU : DSV4_BACKEND_CUDA;
        else {
            fprintf(stderr, "bench_cpu: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!o.model_dir || N < 1 || M < 1 || B < 1) {
        fprintf(
            stderr,
            "usage: bench_cpu -m DIR [--prompt N] [--decode M] [--batch B] [--threads T] [--numerics "
            "plain|reference] [--backend cpu|cuda] [--json FILE] [--profile FILE] [--profile-steps P] "
            "[--fill-random] [--no-graphs] [--host-argmax] [--ep N] [--context C] [--max-context X] [--warm-prefill] "
            "[--moe-backend "
            "auto|w4a16|w4a8|w4a4] [--prefill-gemm ours|cublaslt] [--temperature T] [--top-p P] [--overlap] "
            "[--stagger]\n");
        return 2;
    }
    if (C < 0 || (C > 0 && C < N)) {
        fprintf(stderr, "bench_cpu: --context %lld: at least the prompt (%d)\n", (long long)C, N);
        return 2;
    }
    const int64_t S = C > 0 ? C - N : 0; /* positions skipped before the prompt (dsv4_seq_skip) */
    const int64_t SG = stagger ? B - 1 : 0; /* --stagger: sequence b skips S + b */
    o.profile = prof_json != NULL;
    o.verbose = 1; /* load phases and their times on stderr */
    o.max_seqs = B;
    const int P = prof_json ? (prof_steps > 0 ? prof_steps : M) : 0;
    o.max_ctx = S + SG + N + M + P > X ? S + SG + N + M + P : X;
    o.pool_tokens = (int64_t)B * (S + SG + N + M + P + 1024); /* pages are whole: room for rounding up */
    o.max_batch_tokens = N * B < 4096 ? N * B : 4096;
    char err[1024];
    dsv4_engine *e;
    if (dsv4_engine_open(&o, &e, err, sizeof err) != DSV4_OK) {
        fprintf(stderr, "bench_cpu: %s\n", err);
        return 1;
    }
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    const int V = info.vocab_size;
    int32_t *ids = malloc((size_t)B * N * sizeof(int32_t)), *tok = malloc((size_t)B * sizeof(int32_t));
    int *seq = malloc((size_t)B * sizeof(int));
    dsv4_batch_entry *be = malloc((size_t)B * sizeof(*be));
    uint64_t r = 42;
    for (int i = 0; i < B * N; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((r >> 33) % (uint64_t)V);
    }
    float *logits = malloc((size_t)B * V * sizeof(float));
    /* the prompt: B sequences made (each started at S: dsv4_seq_skip) and their entries, then one step; with
     * --warm-prefill the same first into sequences freed after it, untimed and unprofiled */
    double t0 = 0;
    for (int round = warm ? 0 : 1; round < 2; round++) {
        if (round == 0 && prof_json) dsv4_profile_enable(e, 0);
        for (int b = 0; b < B; b++) {
            const int64_t sb = S + (stagger ? b : 0);
            if (dsv4_seq_create(e, &seq[b], err, sizeof err) != DSV4_OK ||
                (sb > 0 && dsv4_seq_skip(e, seq[b], sb, err, sizeof err) != DSV4_OK)) {
                fprintf(stderr, "bench_cpu: %s\n", err);
                return 1;
            }
            be[b] = (dsv4_batch_entry){
                .seq = seq[b], .n_tokens = N, .tokens = ids + (size_t)b * N, .logits = logits + (size_t)b * V};
        }
        t0 = now_s();
        if (dsv4_step(e, be, B, err, sizeof err) != DSV4_OK) {
            fprintf(stderr, "bench_cpu: %s\n", err);
            return 1;
        }
        if (round == 0) {
            for (int b = 0; b < B; b++) dsv4_seq_free(e, seq[b]);
            if (prof_json) dsv4_profile_enable(e, 1);
        }
    }
    double t1 = now_s();
    dsv4_sampling_params sp;
    dsv4_sampling_params_default(&sp);
    sp.temperature = temperature;
    sp.top_p = top_p;
    sp.seed = 1, sp.has_seed = 1; /* reproducible draws */
    dsv4_sampler **smp = calloc((size_t)B, sizeof(*smp));
    dsv4_sample *picks = calloc((size_t)B, sizeof(*picks));
    for (int b = 0; b < B; b++)
        if (dsv4_sampler_create(&sp, V, NULL, 0, &smp[b], err, sizeof err) != DSV4_OK) {
            fprintf(stderr, "bench_cpu: %s\n", err);
            return 1;
        }
    /* The timed decode runs as a user would (graphs where the backend has
     * them); with --profile, P more steps run profiled (op by op) after it. */
    if (prof_json) dsv4_profile_enable(e, 0);
    double t2 = 0, ts = 0; /* ts: the third step's start (the first two size and capture the graph) */
    /* overlapped (--overlap): step k is submitted before step k - 1's picks are read, its entries following
     * them on the device; the third step's start is when the second's picks are read (the third, submitted
     * before them, starts on the device as the second ends) */
    const int ov = overlap && !host_argmax;
    for (int k = 0; k < M + P; k++) {
        if (k == 2 && !ov) ts = now_s();
        if (k == M) {
            if (ov && dsv4_step_finish(e, err, sizeof err) != DSV4_OK) {
                fprintf(stderr, "bench_cpu: %s\n", err);
                return 1;
            }
            t2 = now_s();
            dsv4_profile_enable(e, 1);
        }
        const int ahead = ov && k < M;
        for (int b = 0; b < B; b++) {
            const float *lg = logits + (size_t)b * V;
            int32_t best = 0;
            if (host_argmax || k == 0) {
                for (int v = 1; v < V; v++)
                    if (lg[v] > lg[best]) best = v;
            } else {
                best = picks[b].token; /* (ahead: unused, the entry follows) */
            }
            tok[b] = best;
            be[b] = host_argmax ? (dsv4_batch_entry){.seq = seq[b],
                                                     .n_tokens = 1,
                                                     .tokens = &tok[b],
                                                     .logits = logits + (size_t)b * V}
                                : (dsv4_batch_entry){.seq = seq[b],
                                                     .n_tokens = 1,
                                                     .tokens = &tok[b],
                                                     .follow = ahead && k > 0,
                                                     .sampler = smp[b],
                                                     .sample = &picks[b]};
        }
        dsv4_status st;
        if (!ahead)
            st = dsv4_step(e, be, B, err, sizeof err);
        else if ((st = dsv4_step_submit(e, be, B, err, sizeof err)) == DSV4_OK && k > 0)
            st = dsv4_step_finish(e, err, sizeof err);
        if (st != DSV4_OK) {
            fprintf(stderr, "bench_cpu: %s\n", err);
            return 1;
        }
        if (k == 2 && ahead) ts = now_s();
    }
    if (!P && ov && dsv4_step_finish(e, err, sizeof err) != DSV4_OK) {
        fprintf(stderr, "bench_cpu: %s\n", err);
        return 1;
    }
    if (!P) t2 = now_s();
    const double pf_tok_s = (double)B * N / (t1 - t0), dc_tok_s = (double)B * M / (t2 - t1), step_ms = (t2 - t1) * 1e3 / M;
    const double steady_ms = M > 2 ? (t2 - ts) * 1e3 / (M - 2) : step_ms;
    char ctx[48] = "";
    if (S > 0 || SG > 0)
        snprintf(ctx, sizeof ctx, " (context %lld%s)", (long long)(S + N), SG > 0 ? ", staggered" : "");
    printf("model %s  backend %s  batch %d  prefill %d tokens each%s: %.1f tok/s (%.1f ms)  decode %d steps: %.3f "
           "ms/step, %.1f tok/s, %.3f ms/step from the third  (%s%s, %s%s)\n",
           o.model_dir, info.backend, B, N, ctx, pf_tok_s, (t1 - t0) * 1e3, M, step_ms, dc_tok_s, steady_ms,
           warm ? "a warm prefill, " : "", o.no_graphs ? "op by op" : "graphs where the backend has them",
           host_argmax ? "host argmax over read-back logits" : "engine sampler",
           overlap && !host_argmax ? ", steps overlapped" : "");
    if (json) {
        FILE *f = fopen(json, "w");
        if (f) {
            fputs("{\"model\": ", f);
            json_str(f, o.model_dir);
            fprintf(f,
                    ", \"backend\": \"%s\", \"numerics\": \"%s\", \"layers\": %d, \"threads\": %d, "
                    "\"batch\": %d, \"prompt\": %d, \"context\": %lld, \"decode\": %d, \"prefill_tok_s\": %.2f, "
                    "\"decode_tok_s\": %.2f, \"decode_ms_per_step\": %.4f, \"decode_ms_per_token\": %.4f, "
                    "\"decode_ms_per_step_from_third\": %.4f, \"graphs\": %s, \"host_argmax\": %s, \"temperature\": "
                    "%g, \"top_p\": %g, \"overlap\": %s, \"warm_prefill\": %s, \"stagger\": %s}\n",
                    info.backend, o.numerics == DSV4_NUMERICS_PLAIN ? "plain" : "reference", info.n_layers, o.n_threads,
                    B, N, (long long)(S + N), M, pf_tok_s, dc_tok_s, step_ms, step_ms / B, steady_ms,
                    o.no_graphs ? "false" : "true", host_argmax ? "true" : "false", (double)temperature, (double)top_p,
                    overlap && !host_argmax ? "true" : "false", warm ? "true" : "false", stagger ? "true" : "false");
            fclose(f);
        }
    }
    if (prof_json) {
        dsv4_profile_print(e, stdout, 0);
        FILE *f = fopen(prof_json, "w");
        if (f) {
            dsv4_profile_print(e, f, 1);
            fclose(f);
        }
    }
    free(ids);
    free(tok);
    free(seq);
    free(be);
    free(logits);
    for (int b = 0; b < B; b++) dsv4_sampler_free(smp[b]);
    free(smp);
    free(picks);
    dsv4_engine_close(e);
    return 0;
}
