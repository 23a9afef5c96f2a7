/*
 * logits.c - `dsv4 logits`: the model's next-token logits for a token list.
 *
 *   dsv4 logits -m DIR --ids 5,17,... | @FILE [--prefill P] [--chunk C]
 *               [--numerics reference|plain] [--backend cpu|cuda] [--threads N] [--fill-random] -o FILE
 *
 * Writes T x V little-endian float32: row t = the logits after token t. The
 * first P tokens (default all) are one prefill, in chunks of C if given; the
 * rest are decoded one step each. All modes give the same logits.
 * --fill-random opens a sparse synthetic checkpoint (dsv4 mkmodel --sparse),
 * generating its matrices at load.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void logits_usage(FILE *f)
{
    fprintf(f,
            "usage: dsv4 logits [-m DIR] --ids 5,17,...|@FILE [--prefill P] [--chunk C]\n"
            "                   [--numerics reference|plain] [--backend auto|cpu|cuda] [--threads N] [--profile]\n"
            "                   [--moe-backend auto|w4a16|w4a8|w4a4] [--cuda-graphs on|off] [--ep N] [--fill-random]\n"
            "                   [--tune FILE] [--prefill-gemm ours|cublaslt] -o FILE\n");
}

int cmd_logits(int argc, char **argv)
{
    const char *C = "logits";
    dsv4_engine_opts o;
    dsv4_engine_opts_default(&o);
    o.model_dir = DSV4_DEFAULT_MODEL;
    const char *ids_arg = NULL, *out_path = NULL;
    long prefill = -1, chunk = 0;
    int eopt;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            logits_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--profile")) {
            o.profile = 1;
            continue;
        }
        if (!strcmp(a, "--fill-random")) {
            o.fill_random = 1;
            continue;
        }
        if (!v) return cli_fail(C, "%s needs a value", a);
        i++;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o.model_dir = v;
        else if (!strcmp(a, "--ids")) ids_arg = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) out_path = v;
        else if (!strcmp(a, "--prefill") || !strcmp(a, "--chunk")) {
            const bool is_chunk = !strcmp(a, "--chunk"); /* a chunk of at least one token; a prefill of 0 or more */
            long long x;
            if (cli_parse_int(C, a, v, is_chunk, 0x7fffffff, &x)) return 1;
            *(is_chunk ? &chunk : &prefill) = (long)x;
        } else if ((eopt = cli_engine_option(C, a, v, &o)) >= 0) {
            if (eopt) return 1;
        } else {
            logits_usage(stderr);
            return cli_fail(C, "unknown option %s", a);
        }
    }
    if (!ids_arg) return cli_fail(C, "--ids is required");
    if (!out_path) return cli_fail(C, "-o FILE is required");
    char err[1024];
    int32_t *ids;
    int T;
    if (cli_parse_ids(ids_arg, &ids, &T, err, sizeof err)) return cli_fail(C, "%s", err);
    if (prefill < 0 || prefill > T) prefill = T;
    if (chunk < 0) {
        free(ids);
        return cli_fail(C, "--chunk must be positive");
    }
    o.max_seqs = 1;
    o.max_ctx = T;
    o.pool_tokens = T;

    dsv4_engine *e;
    dsv4_status st = dsv4_engine_open(&o, &e, err, sizeof err);
    if (st != DSV4_OK) {
        free(ids);
        return cli_fail(C, "%s", err);
    }
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    int rc = 0;
    float *logits = malloc((size_t)T * info.vocab_size * sizeof(float));
    int seq;
    if (!logits || dsv4_seq_create(e, &seq, err, sizeof err) != DSV4_OK) {
        rc = cli_fail(C, "out of memory for %d x %d logits", T, info.vocab_size);
        goto done;
    }
    for (long t = 0; t < T;) {
        long n = t < prefill ? (chunk > 0 && chunk < prefill - t ? chunk : prefill - t) : 1;
        dsv4_batch_entry be = {.seq = seq, .n_tokens = (int)n, .tokens = ids + t, .all_logits = 1,
                               .logits = logits + (size_t)t * info.vocab_size};
        if ((st = dsv4_step(e, &be, 1, err, sizeof err)) != DSV4_OK) {
            rc = cli_fail(C, "%s", err);
            goto done;
        }
        t += n;
    }
    FILE *f = fopen(out_path, "wb");
    if (!f || fwrite(logits, sizeof(float), (size_t)T * info.vocab_size, f) != (size_t)T * info.vocab_size ||
        fclose(f) != 0) {
        rc = cli_fail(C, "%s: cannot write", out_path);
    }
    if (o.profile) dsv4_profile_print(e, stderr, 0);
done:
    free(logits);
    free(ids);
    dsv4_engine_close(e);
    return rc;
}
