/*
 * tokenize.c - `dsv4 tokenize` and `dsv4 detokenize`: text <-> token ids.
 *
 *   dsv4 tokenize --tokenizer FILE [--no-special]   UTF-8 text on stdin -> "id,id,...\n"
 *   dsv4 detokenize --tokenizer FILE [--stream]     "id,id,..." on stdin -> the text, no newline added
 *
 * tokenize matches added-token strings inside the text as HF
 * `tokenizer.encode(text, add_special_tokens=False)` does (--no-special: it
 * does not). detokenize prints exactly HF's decode (invalid UTF-8 from partial
 * byte tokens becomes U+FFFD); --stream decodes one id at a time through the
 * incremental detokenizer and writes each piece as soon as it is complete.
 * FILE may also be a model folder holding tokenizer.json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

static void tok_usage(FILE *f, const char *cmd)
{
    if (!strcmp(cmd, "tokenize"))
        fprintf(f, "usage: dsv4 tokenize --tokenizer FILE|DIR [--no-special] < text\n"
                   "  prints the token ids of stdin (UTF-8) as one comma-separated line\n");
    else
        fprintf(f, "usage: dsv4 detokenize --tokenizer FILE|DIR [--stream] < ids\n"
                   "  prints the text of comma-separated token ids on stdin, with no newline added\n");
}

static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) return NULL;
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (ferror(f)) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Parse the options common to both commands and open the tokenizer. */
static int open_tokenizer(const char *C, int argc, char **argv, const char *flag, int *flag_set,
                          dsv4_tokenizer **tok)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            tok_usage(stdout, C);
            exit(0);
        }
        if (!strcmp(a, flag)) {
            *flag_set = 1;
        } else if (!strcmp(a, "--tokenizer") || !strcmp(a, "-t")) {
            if (i + 1 >= argc) return cli_fail(C, "%s needs a value", a);
            path = argv[++i];
        } else {
            return cli_fail(C, "unknown option %s (see dsv4 %s --help)", a, C);
        }
    }
    if (!path) return cli_fail(C, "--tokenizer FILE is required");
    char joined[4096];
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(joined, sizeof joined, "%s/tokenizer.json", path);
        path = joined;
    }
    char err[1024];
    if (dsv4_tokenizer_open(path, tok, err, sizeof err) != DSV4_OK) return cli_fail(C, "%s", err);
    return 0;
}

int cmd_tokenize(int argc, char **argv)
{
    const char *C = "tokenize";
    dsv4_tokenizer *tok;
    int no_special = 0;
    int rc = open_tokenizer(C, argc, argv, "--no-special", &no_special, &tok);
    if (rc) return rc;
    size_t len;
    char *text = read_all(stdin, &len);
    if (!text) {
        dsv4_tokenizer_close(tok);
        return cli_fail(C, "cannot read stdin");
    }
    int32_t *ids;
    size_t n;
    char err[1024];
    if (dsv4_tokenize(tok, text, len, !no_special, &ids, &n, err, sizeof err) != DSV4_OK) {
        rc = cli_fail(C, "stdin: %s", err);
    } else {
        for (size_t i = 0; i < n; i++) printf(i ? ",%d" : "%d", (int)ids[i]);
        putchar('\n');
        if (fflush(stdout) != 0) rc = cli_fail(C, "cannot write stdout");
        free(ids);
    }
    free(text);
    dsv4_tokenizer_close(tok);
    return rc;
}

/* "5, 17,3\n" -> ids; whitespace around ids is allowed, an empty input is no ids. */
static int parse_id_list(const char *s, int32_t **ids, size_t *n, char *err, size_t errlen)
{
    size_t cap = 256, cnt = 0;
    int32_t *out = malloc(cap * sizeof *out);
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *p = s;
#define SKIP_WS() while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++
    SKIP_WS();
    while (*p) {
        if (*p < '0' || *p > '9') {
            snprintf(err, errlen, "malformed id list: expected a token id at byte %zu, found '%.12s'", (size_t)(p - s), p);
            free(out);
            return -1;
        }
        long long v = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p++ - '0');
            if (v > 0x7fffffff) {
                snprintf(err, errlen, "malformed id list: id at byte %zu is too large", (size_t)(p - s));
                free(out);
                return -1;
            }
        }
        if (cnt == cap) {
            int32_t *no = realloc(out, (cap *= 2) * sizeof *out);
            if (!no) {
                free(out);
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            out = no;
        }
        out[cnt++] = (int32_t)v;
        SKIP_WS();
        if (*p == ',') {
            p++;
            SKIP_WS();
            if (!*p) {
                snprintf(err, errlen, "malformed id list: it ends with a comma");
                free(out);
                return -1;
            }
        } else if (*p) {
            snprintf(err, errlen, "malformed id list: expected ',' at byte %zu, found '%.12s'", (size_t)(p - s), p);
            free(out);
            return -1;
        }
    }
#undef SKIP_WS
    *ids = out;
    *n = cnt;
    return 0;
}

int cmd_detokenize(int argc, char **argv)
{
    const char *C = "detokenize";
    dsv4_tokenizer *tok;
    int stream = 0;
    int rc = open_tokenizer(C, argc, argv, "--stream", &stream, &tok);
    if (rc) return rc;
    size_t len;
    char *in = read_all(stdin, &len);
    if (!in) {
        dsv4_tokenizer_close(tok);
        return cli_fail(C, "cannot read stdin");
    }
    char err[1024];
    int32_t *ids = NULL;
    size_t n = 0;
    if (strlen(in) != len) {
        rc = cli_fail(C, "malformed id list: stdin holds a NUL byte");
    } else if (parse_id_list(in, &ids, &n, err, sizeof err)) {
        rc = cli_fail(C, "%s", err);
    } else if (!stream) {
        char *text;
        size_t tlen;
        if (dsv4_detokenize(tok, ids, n, &text, &tlen, err, sizeof err) != DSV4_OK) {
            rc = cli_fail(C, "%s", err);
        } else {
            if (fwrite(text, 1, tlen, stdout) != tlen || fflush(stdout) != 0) rc = cli_fail(C, "cannot write stdout");
            free(text);
        }
    } else {
        /* Check every id first, so that a bad one fails before any output. */
        char *text;
        size_t tlen;
        if (dsv4_detokenize(tok, ids, n, &text, &tlen, err, sizeof err) != DSV4_OK) rc = cli_fail(C, "%s", err);
        else free(text);
        dsv4_detok *d = NULL;
        if (!rc && dsv4_detok_create(tok, &d, err, sizeof err) != DSV4_OK) rc = cli_fail(C, "%s", err);
        for (size_t i = 0; i < n && !rc; i++) {
            const char *piece;
            size_t plen;
            if (dsv4_detok_push(d, ids[i], &piece, &plen, err, sizeof err) != DSV4_OK) rc = cli_fail(C, "%s", err);
            else if (fwrite(piece, 1, plen, stdout) != plen) rc = cli_fail(C, "cannot write stdout");
        }
        if (!rc) {
            const char *piece;
            size_t plen;
            dsv4_detok_flush(d, &piece, &plen);
            if (fwrite(piece, 1, plen, stdout) != plen || fflush(stdout) != 0) rc = cli_fail(C, "cannot write stdout");
        }
        dsv4_detok_free(d);
    }
    free(ids);
    free(in);
    dsv4_tokenizer_close(tok);
    return rc;
}
