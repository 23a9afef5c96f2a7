/*
 * main.c - the dsv4 command line: dispatches to one subcommand per file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file_util.h"
#include "cli/cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dsv4 <command> [options]\n"
            "\n"
            "commands:\n"
            "  logits    run the model over token ids and write T x V float32 logits\n"
            "  inspect   describe a checkpoint: formats, sizes, decode roofline\n"
            "  mkmodel   write a synthetic checkpoint with the real layout\n"
            "  tokenize  UTF-8 text on stdin -> comma-separated token ids (a HF tokenizer.json)\n"
            "  detokenize  comma-separated token ids on stdin -> the text\n"
            "  run       chat with a model in the terminal (one prompt with -p)\n"
            "  serve     the OpenAI-compatible server with continuous batching\n"
            "  check     wait for a server to be ready and ask it one question\n"
            "  bench     load-test a server with streaming requests (TTFT, TPOT, ITL, throughput)\n"
            "  tune      time the interchangeable GPU kernel choices and write them for serve --tune\n"
            "\n"
            "`dsv4 <command> --help` describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "logits")) return cmd_logits(argc - 1, argv + 1);
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "mkmodel")) return cmd_mkmodel(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "tokenize")) return cmd_tokenize(argc - 1, argv + 1);
    if (!strcmp(cmd, "detokenize")) return cmd_detokenize(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) return cmd_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
    fprintf(stderr, "dsv4: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dsv4 %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_open_tokenizer(const char *cmd, const char *model_dir, const char *file, dsv4_tokenizer **tok, char *path,
                       size_t pathlen)
{
    char err[1024];
    if (file)
        snprintf(path, pathlen, "%s", file);
    else
        snprintf(path, pathlen, "%s/tokenizer.json", model_dir);
    if (!dsv4_tokenizer_open(path, tok, err, sizeof err)) return 0;
    if (!file && access(path, F_OK) != 0)
        return cli_fail(cmd, "%s (the model folder has no tokenizer.json: name one with --tokenizer FILE)", err);
    return cli_fail(cmd, "%s", err);
}

static int is_model_dir(const char *d)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/config.json", d);
    return access(p, R_OK) == 0;
}

const char *cli_default_model(void)
{
    static char buf[4096];
    if (is_model_dir("models/tiny")) return "models/tiny";
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 32);
    if (n > 0) {
        buf[n] = 0;
        char *slash = strrchr(buf, '/');
        if (slash) {
            strcpy(slash, "/../models/tiny");
            if (is_model_dir(buf)) return buf;
        }
    }
#ifdef DSV4_SOURCE_DIR
    snprintf(buf, sizeof buf, "%s/models/tiny", DSV4_SOURCE_DIR);
    if (is_model_dir(buf)) return buf;
#endif
    return "models/tiny";
}

int cli_parse_int(const char *cmd, const char *opt, const char *v, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || end == v || x < lo || x > hi)
        return cli_fail(cmd, "%s: '%s' is not an integer in [%lld, %lld]", opt, v, lo, hi);
    *out = x;
    return 0;
}

int cli_parse_seed(const char *cmd, const char *opt, const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || end == v || *v == '-' || *v == '+' || *v == ' ')
        return cli_fail(cmd, "%s: '%s' is not an unsigned 64-bit integer", opt, v);
    *out = (uint64_t)x;
    return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (*end || end == v || !(d >= lo && d <= hi)) return cli_fail(cmd, "%s: '%s' is not a number in [%g, %g]", opt, v, lo, hi);
    *out = d;
    return 0;
}

int cli_engine_option(const char *cmd, const char *opt, const char *v, dsv4_engine_opts *o)
{
    if (!strcmp(opt, "--numerics")) {
        if (!strcmp(v, "reference")) o->numerics = DSV4_NUMERICS_REFERENCE;
        else if (!strcmp(v, "plain")) o->numerics = DSV4_NUMERICS_PLAIN;
        else return cli_fail(cmd, "--numerics: '%s' is not one of reference, plain", v);
        return 0;
    }
    if (!strcmp(opt, "--backend")) {
        if (!strcmp(v, "auto")) o->backend = DSV4_BACKEND_AUTO;
        else if (!strcmp(v, "cpu")) o->backend = DSV4_BACKEND_CPU;
        else if (!strcmp(v, "cuda")) o->backend = DSV4_BACKEND_CUDA;
        else return cli_fail(cmd, "--backend: '%s' is not one of auto, cpu, cuda", v);
        return 0;
    }
    if (!strcmp(opt, "--moe-backend")) {
        if (!dsv4_moe_backend_parse(v, &o->moe_backend)) return 0;
        return cli_fail(cmd, "--moe-backend: '%s' is not one of auto, w4a16, w4a8, w4a4", v);
    }
    if (!strcmp(opt, "--prefill-gemm")) {
        if (!dsv4_prefill_gemm_parse(v, &o->prefill_gemm)) return 0;
        return cli_fail(cmd, "--prefill-gemm: '%s' is not one of ours, cublaslt", v);
    }
    if (!strcmp(opt, "--ep")) {
        long long x = 0;
        if (cli_parse_int(cmd, opt, v, 1, 16, &x)) return 1;
        o->ep = (int)x;
        return 0;
    }
    if (!strcmp(opt, "--cuda-graphs")) {
        if (!strcmp(v, "on")) o->no_graphs = 0;
        else if (!strcmp(v, "off")) o->no_graphs = 1;
        else return cli_fail(cmd, "--cuda-graphs: '%s' is not one of on, off", v);
        return 0;
    }
    if (!strcmp(opt, "--tune")) {
        o->tune_file = v;
        return 0;
    }
    if (!strcmp(opt, "--threads")) {
        long long x = 0;
        if (cli_parse_int(cmd, opt, v, 0, 4096, &x)) return 1;
        o->n_threads = (int)x;
        return 0;
    }
    return -1;
}

int cli_parse_ids(const char *arg, int32_t **ids, int *n, char *err, size_t errlen)
{
    char *text = NULL;
    if (arg[0] == '@') {
        FILE *f = fopen(arg + 1, "rb");
        if (!f) {
            snprintf(err, errlen, "%s: cannot open", arg + 1);
            return -1;
        }
        /* a list of ids is text: past 64 MiB, or with a NUL byte (/dev/zero), it is not one */
        size_t len;
        const dsv4_status rs = dsv4_read_all(f, (size_t)64 << 20, &text, &len);
        fclose(f);
        if (rs || memchr(text, 0, len)) {
            snprintf(err, errlen, "%s: %s", arg + 1,
                     rs == DSV4_ERR_NOMEM ? "out of memory"
                     : rs == DSV4_ERR_IO  ? "read error (a directory?)"
                     : rs                 ? "over 64 MiB; not a list of token ids"
                                          : "holds a NUL byte; not a list of token ids");
            free(text);
            return -1;
        }
    } else {
        text = strdup(arg);
    }
    int cap = 256, cnt = 0;
    int32_t *out = malloc((size_t)cap * sizeof(int32_t));
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff) {
            snprintf(err, errlen, "token ids: expected a non-negative integer at '%.16s'", p);
            free(text);
            free(out);
            return -1;
        }
        if (cnt == cap) out = realloc(out, (size_t)(cap *= 2) * sizeof(int32_t));
        out[cnt++] = (int32_t)v;
        p = end;
        while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
        if (*p == ',') p++;
        else if (*p) {
            snprintf(err, errlen, "token ids: unexpected '%c' (expected a comma)", *p);
            free(text);
            free(out);
            return -1;
        }
    }
    free(text);
    if (cnt == 0) {
        free(out);
        snprintf(err, errlen, "token ids: the list is empty");
        return -1;
    }
    *ids = out;
    *n = cnt;
    return 0;
}
