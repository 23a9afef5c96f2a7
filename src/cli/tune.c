/*
 * tune.c - `dsv4 tune`: time the kernel choices that leave every result bit
 * unchanged (engine/tune.h) on the GPU present and write the fastest per
 * range of tokens as a file `dsv4 serve --tune FILE` (or DSV4_TUNE) loads.
 *
 * Today: sparse attention on the tensor cores, Flash's shape, at 1 to 256
 * tokens per call, on the layers a decode step meets at 4k, 32k and 128k
 * contexts: a CSA layer (640 rows at each: its top-512 and window, timed at
 * 4k and counted three times) and an HCA layer (160, 384 and 1,152 rows) a
 * context; per token count the choice with the least total time. (Until
 * v48 one CSA 4k + HCA 128k pair: a choice that gives way to another at HCA
 * 128k, as `one` does, could not win there, and the built-in table's 1-token
 * row came from decode instead.)
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/cli.h"

static int usage(FILE *f)
{
    fprintf(f, "usage: dsv4 tune [-o FILE] [--device N] [--reps N]\n"
               "\n"
               "Times the interchangeable kernel choices on the GPU and writes the fastest per range of tokens as\n"
               "JSON (default: dsv4-tune.json). `dsv4 serve --tune FILE` (or DSV4_TUNE=FILE) loads it; every choice\n"
               "gives the same bits, so a missing or stale file only costs speed. A file made on another GPU is\n"
               "refused with a warning. Without a file the built-in choices (measured on an H200) apply.\n"
               "\n"
               "  -o FILE      where to write (default dsv4-tune.json)\n"
               "  --device N   the GPU (default 0)\n"
               "  --reps N     timed calls per choice and shape (default 30)\n");
    return f == stdout ? 0 : 2;
}

int cmd_tune(int argc, char **argv)
{
    const char *C = "tune", *out = "dsv4-tune.json";
    long long dev = 0, reps = 30;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout);
        if (i + 1 >= argc) return cli_fail(C, "%s: needs a value (dsv4 tune --help)", a);
        const char *v = argv[++i];
        if (!strcmp(a, "-o"))
            out = v;
        else if (!strcmp(a, "--device")) {
            if (cli_parse_int(C, a, v, 0, 63, &dev)) return 1;
        } else if (!strcmp(a, "--reps")) {
            if (cli_parse_int(C, a, v, 1, 10000, &reps)) return 1;
        } else
            return cli_fail(C, "unknown option '%s' (dsv4 tune --help)", a);
    }
#ifndef DSV4_HAVE_CUDA
    (void)out;
    return cli_fail(C, "this build has no CUDA backend (no CUDA compiler at build time): nothing to tune");
#else
    if (dsv4_cuda_device_count() <= dev)
        return cli_fail(C, "no CUDA device %lld (%d present): nothing to tune", dev, dsv4_cuda_device_count());
    char err[256];
    dsv4_backend *be = dsv4_backend_cuda_create((int)dev, err, sizeof err);
    if (!be) return cli_fail(C, "%s", err);
    static const int batches[] = {1, 2, 3, 4, 8, 16, 32, 64, 128, 256}; /* 3: one pass to 96 blocks, s67 */
    const int nb = (int)(sizeof batches / sizeof batches[0]);
    static const int score_rows[2] = {16, 64};
    /* the shapes a decode step's attention meets at 4k, 32k and 128k: (CSA?, context, times counted); CSA reads
     * 640 rows at each, timed once */
    static const struct {
        bool csa;
        int64_t ctx;
        int times;
    } shapes[] = {{true, 4096, 3}, {false, 4096, 1}, {false, 32768, 1}, {false, 131072, 1}};
    const int nsh = (int)(sizeof shapes / sizeof shapes[0]);
    dsv4_tune saved;
    dsv4_cuda_tune_get(&saved);
    int best_sr[16], best_sum[16];
    /* the timings, for the file's "measured" */
    json_t *meas_rows = json_array(),
           *meas = json_pack("{s:s, s:o}", "shapes",
                             "CSA + HCA at 4k, 32k and 128k (640 + 160, 640 + 384, 640 + 1152 rows; CSA timed at "
                             "4k), 64 heads of 512, us per call summed",
                             "batches", meas_rows);
    printf("%s: sparse attention (CSA + HCA at 4k, 32k and 128k, us per call summed)\n%8s", be->device, "tokens");
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < DSV4_SUM_COUNT; k++) printf(" %11s/%-2d", dsv4_tune_sum_name(k), score_rows[s]);
    printf("   best\n");
    int rc = 0;
    for (int b = 0; b < nb; b++) {
        double best = -1;
        printf("%8d", batches[b]);
        json_t *mrow = json_pack("{s:i}", "tokens", batches[b]);
        json_array_append_new(meas_rows, mrow);
        for (int s = 0; s < 2; s++)
            for (int k = 0; k < DSV4_SUM_COUNT; k++) {
                const dsv4_tune one = {.n = 1, .row = {{0, score_rows[s], k}}};
                dsv4_cuda_tune_set(&one);
                double tot = 0;
                for (int i = 0; i < nsh && tot >= 0; i++) {
                    const double us =
                        dsv4_cuda_attn_time(be, shapes[i].csa, batches[b], shapes[i].ctx, true, (int)reps);
                    tot = us < 0 ? -1 : tot + shapes[i].times * us;
                }
                if (tot < 0) {
                    printf(" %14s", "-");
                    continue;
                }
                printf(" %14.2f", tot);
                char key[32];
                snprintf(key, sizeof key, "%s/%d", dsv4_tune_sum_name(k), score_rows[s]);
                json_object_set_new(mrow, key, json_real(tot));
                if (best < 0 || tot < best) best = tot, best_sr[b] = score_rows[s], best_sum[b] = k;
            }
        if (best < 0) {
            rc = cli_fail(C, "could not time %d tokens (GPU memory?)", batches[b]);
            break;
        }
        printf("   %s/%d\n", dsv4_tune_sum_name(best_sum[b]), best_sr[b]);
    }
    dsv4_cuda_tune_set(&saved);
    if (!rc) {
        /* neighbouring token counts with the same choice share a row; a row serves up
         * to its largest count, the last one any number */
        dsv4_tune t = {0};
        for (int b = 0; b < nb; b++) {
            if (t.n && t.row[t.n - 1].score_rows == best_sr[b] && t.row[t.n - 1].sum == best_sum[b])
                t.row[t.n - 1].max_tokens = batches[b];
            else if (t.n < DSV4_TUNE_ROWS)
                t.row[t.n++] = (dsv4_attn_choice){batches[b], best_sr[b], best_sum[b]};
            else
                t.row[t.n - 1].max_tokens = batches[b];
        }
        t.row[t.n - 1].max_tokens = 0;
        if (dsv4_tune_save(out, be->device, &t, meas, err, sizeof err) != DSV4_OK)
            rc = cli_fail(C, "%s", err);
        else {
            printf("wrote %s:", out);
            for (int i = 0; i < t.n; i++)
                printf(" %s%d tokens: %s/%d", i ? "; " : "", t.row[i].max_tokens ? t.row[i].max_tokens : -1,
                       dsv4_tune_sum_name(t.row[i].sum), t.row[i].score_rows);
            printf("  (-1: any number)\n");
        }
    }
    json_decref(meas);
    be->destroy(be);
    return rc;
#endif
}
