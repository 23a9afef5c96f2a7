/*
 * mkmodel.c - `dsv4 mkmodel`: write a synthetic checkpoint with the real layout.
 *
 *   dsv4 mkmodel --preset flash|tiny [--layers N] [--experts mxfp4|nvfp4|bf16] [--seed S] [--sparse] -o DIR
 *
 * --sparse leaves every matrix a hole in the files (no disk blocks); engines
 * then need --fill-random, which generates them at load (benchmarks only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "model/mkmodel.h"

static void mk_usage(FILE *f)
{
    fprintf(f, "usage: dsv4 mkmodel --preset flash|tiny [--layers N] [--vocab V] [--experts mxfp4|nvfp4|bf16] [--seed S]\n"
               "                    [--sparse] -o DIR\n"
               "  --sparse  leave every matrix (and its scales) as a hole in the files: no disk blocks, reads as\n"
               "            zeros; dsv4 refuses such a checkpoint unless opened with --fill-random, which generates\n"
               "            the matrices at load with the same conditioning (for benchmarks only)\n");
}

int cmd_mkmodel(int argc, char **argv)
{
    const char *C = "mkmodel";
    dsv4_mkmodel_opts o = {.preset = DSV4_PRESET_TINY, .experts = DSV4_XF_MXFP4, .seed = 1};
    int have_preset = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            mk_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--sparse")) {
            o.sparse = 1;
            continue;
        }
        if (!v) return cli_fail(C, "%s needs a value", a);
        i++;
        if (!strcmp(a, "--preset")) {
            if (!strcmp(v, "flash")) o.preset = DSV4_PRESET_FLASH;
            else if (!strcmp(v, "tiny")) o.preset = DSV4_PRESET_TINY;
            else return cli_fail(C, "--preset: '%s' is not one of flash, tiny", v);
            have_preset = 1;
        } else if (!strcmp(a, "--layers")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 256) return cli_fail(C, "--layers: '%s' is not a number of layers (1..256)", v);
            o.n_layers = (int)n;
        } else if (!strcmp(a, "--vocab")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 16 || n > 1 << 22) return cli_fail(C, "--vocab: '%s' is not a vocabulary size (16..4194304)", v);
            o.vocab = (int)n;
        } else if (!strcmp(a, "--experts")) {
            if (!strcmp(v, "mxfp4")) o.experts = DSV4_XF_MXFP4;
            else if (!strcmp(v, "nvfp4")) o.experts = DSV4_XF_NVFP4;
            else if (!strcmp(v, "bf16")) o.experts = DSV4_XF_FLOAT;
            else return cli_fail(C, "--experts: '%s' is not one of mxfp4, nvfp4, bf16", v);
        } else if (!strcmp(a, "--seed")) {
            if (cli_parse_seed(C, a, v, &o.seed)) return 1;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            o.out_dir = v;
        } else {
            mk_usage(stderr);
            return cli_fail(C, "unknown option %s", a);
        }
    }
    if (!have_preset) return cli_fail(C, "--preset flash|tiny is required");
    if (!o.out_dir) return cli_fail(C, "-o DIR is required");
    o.verbose = isatty(2);
    char err[1024];
    if (dsv4_mkmodel(&o, err, sizeof err) != DSV4_OK) return cli_fail(C, "%s", err);
    return 0;
}
