/*
 * cli.h - shared helpers of the dsv4 subcommands.
 */
#ifndef DSV4_CLI_H
#define DSV4_CLI_H

#include <stdint.h>

#include "dsv4.h"

/* The embedded default model: ./models/tiny when it exists, else the one next
 * to the binary's source tree (build/dsv4 -> models/tiny), else the one of the
 * source tree the binary was built from. */
const char *cli_default_model(void);
#define DSV4_DEFAULT_MODEL cli_default_model()

int cmd_logits(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_mkmodel(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tune(int argc, char **argv);

/* Parse "5,17,3" or "@FILE" (a file holding such a list) into a malloc'ed array. */
int cli_parse_ids(const char *arg, int32_t **ids, int *n, char *err, size_t errlen);
/* Parse a numeric option value within [lo, hi]; on failure print one line
 * naming the option and return 1 (the exit code), else 0. */
int cli_parse_int(const char *cmd, const char *opt, const char *v, long long lo, long long hi, long long *out);
/* A seed: any unsigned 64-bit integer, in decimal. */
int cli_parse_seed(const char *cmd, const char *opt, const char *v, uint64_t *out);
int cli_parse_double(const char *cmd, const char *opt, const char *v, double lo, double hi, double *out);
/* The engine options every command shares: --numerics, --backend,
 * --moe-backend, --prefill-gemm, --ep, --cuda-graphs, --threads, --tune. Returns -1 when opt is none of them, 1 after
 * printing one line for a bad value, 0 when applied to o. */
int cli_engine_option(const char *cmd, const char *opt, const char *v, dsv4_engine_opts *o);
/* The tokenizer of a model: FILE (--tokenizer) when given, else the model folder's tokenizer.json (a folder
 * without one is told to name one with --tokenizer). Its path into path[pathlen]; on failure prints one line
 * and returns 1. */
int cli_open_tokenizer(const char *cmd, const char *model_dir, const char *file, dsv4_tokenizer **tok, char *path,
                       size_t pathlen);
/* Print "dsv4 <cmd>: <msg>" to stderr and return 1 (the exit code). */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
