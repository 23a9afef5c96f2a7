/*
 * bench_tokenizer.c - encode and decode throughput of the tokenizer on one core.
 *
 *   build/bench_tokenizer [--tokenizer FILE] [--corpus DIR] [--mb N] [--runs R] [--json FILE]
 *
 * Protocol: the documents of DIR (default tests/text/corpus) are concatenated
 * and repeated until the text holds N MB (default 8); the text is encoded in
 * document-sized calls (as a server does, one prompt at a time) R times (default
 * 5) after one warm-up pass, and the best and median MB/s (10^6 bytes of UTF-8
 * input per second) are printed. Then two rates with an empty BPE cache:
 * "cold", one pass over the documents through a freshly opened tokenizer (R
 * times; at 22 KB it is dominated by the corpus's words of thousands of
 * letters), and "unseen words", the repeated corpus with 30 % of its ASCII
 * lower-case letters replaced at random (fixed seed) once through a fresh
 * tokenizer, so that nearly every word misses the cache: the rate for text
 * never seen before. Decoding is timed like encoding, on the ids.
 * Single-threaded by construction: one caller, no pool.
 */
#include <dirent.h>
#include <stdint.h>
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

typedef struct {
    char *text;
    size_t len;
} doc;

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int load_docs(const char *dir, doc **docs, int *n)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    char *names[256];
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d)) && k < 256) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".txt")) names[k++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)k, sizeof *names, cmp_name);
    *docs = calloc((size_t)k, sizeof **docs);
    *n = 0;
    for (int i = 0; i < k; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        free(names[i]);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        long sz = ftell(f);
        fseek(f, 0, SEEK_SET);
        doc *dd = &(*docs)[*n];
        dd->text = malloc((size_t)sz + 1);
        dd->len = fread(dd->text, 1, (size_t)sz, f);
        fclose(f);
        if (dd->len) (*n)++;
        else free(dd->text);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *tok_path = "../shared/data/deepseek-v3-tokenizer/tokenizer.json", *dir = "tests/text/corpus";
    const char *json = NULL;
    double mb = 8;
    int runs = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--tokenizer")) tok_path = argv[i + 1];
        else if (!strcmp(argv[i], "--corpus")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--mb")) mb = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
        else {
            fprintf(stderr, "usage: bench_tokenizer [--tokenizer FILE] [--corpus DIR] [--mb N] [--runs R] [--json FILE]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 100 || mb <= 0) {
        fprintf(stderr, "bench_tokenizer: --runs must be 1..100 and --mb positive\n");
        return 2;
    }
    char err[1024];
    dsv4_tokenizer *tok;
    double t0 = now_s();
    if (dsv4_tokenizer_open(tok_path, &tok, err, sizeof err) != DSV4_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", err);
        return 1;
    }
    double t_open = now_s() - t0;
    doc *docs;
    int n_docs;
    if (load_docs(dir, &docs, &n_docs) || n_docs == 0) {
        fprintf(stderr, "bench_tokenizer: no .txt documents in %s\n", dir);
        return 1;
    }
    size_t corpus_bytes = 0;
    for (int i = 0; i < n_docs; i++) corpus_bytes += docs[i].len;
    int reps = (int)(mb * 1e6 / (double)corpus_bytes) + 1;
    size_t total = corpus_bytes * (size_t)reps;

    /* cold: the corpus once through a freshly opened tokenizer (empty cache), R times */
    size_t n_tokens_corpus = 0;
    double *cold = calloc((size_t)runs, sizeof *cold);
    for (int r = 0; r < runs; r++) {
        dsv4_tokenizer *fresh;
        if (dsv4_tokenizer_open(tok_path, &fresh, err, sizeof err) != DSV4_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", err);
            return 1;
        }
        n_tokens_corpus = 0;
        t0 = now_s();
        for (int i = 0; i < n_docs; i++) {
            int32_t *ids;
            size_t n;
            if (dsv4_tokenize(fresh, docs[i].text, docs[i].len, true, &ids, &n, err, sizeof err)) {
                fprintf(stderr, "bench_tokenizer: %s\n", err);
                return 1;
            }
            n_tokens_corpus += n;
            free(ids);
        }
        cold[r] = (double)corpus_bytes / (now_s() - t0) / 1e6;
        dsv4_tokenizer_close(fresh);
    }

    /* unseen words: every repetition of the corpus with 30 % of its ASCII
     * lower-case letters replaced at random (fixed seed), through a fresh
     * tokenizer, so that nearly every word misses the BPE cache */
    double unseen;
    {
        dsv4_tokenizer *fresh;
        if (dsv4_tokenizer_open(tok_path, &fresh, err, sizeof err) != DSV4_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", err);
            return 1;
        }
        uint64_t x = 0x9E3779B97F4A7C15ull;
        char *buf = malloc(corpus_bytes);
        double busy = 0;
        for (int k = 0; k < reps; k++)
            for (int i = 0; i < n_docs; i++) {
                for (size_t j = 0; j < docs[i].len; j++) {
                    char ch = docs[i].text[j];
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    buf[j] = ch >= 'a' && ch <= 'z' && x % 10 < 3 ? (char)('a' + (x >> 32) % 26) : ch;
                }
                int32_t *ids;
                size_t n;
                t0 = now_s();
                if (dsv4_tokenize(fresh, buf, docs[i].len, true, &ids, &n, err, sizeof err)) {
                    fprintf(stderr, "bench_tokenizer: %s\n", err);
                    return 1;
                }
                busy += now_s() - t0;
                free(ids);
            }
        unseen = (double)total / busy / 1e6;
        free(buf);
        dsv4_tokenizer_close(fresh);
    }

    /* keep the ids of each document for the decode benchmark */
    int32_t **dids = calloc((size_t)n_docs, sizeof *dids);
    size_t *dn = calloc((size_t)n_docs, sizeof *dn);
    double *enc = calloc((size_t)runs, sizeof *enc), *dec = calloc((size_t)runs, sizeof *dec);
    for (int r = -1; r < runs; r++) {
        t0 = now_s();
        for (int k = 0; k < reps; k++)
            for (int i = 0; i < n_docs; i++) {
                free(dids[i]);
                if (dsv4_tokenize(tok, docs[i].text, docs[i].len, true, &dids[i], &dn[i], err, sizeof err)) {
                    fprintf(stderr, "bench_tokenizer: %s\n", err);
                    return 1;
                }
            }
        double dt = now_s() - t0;
        if (r >= 0) enc[r] = (double)total / dt / 1e6;
    }
    for (int r = -1; r < runs; r++) {
        t0 = now_s();
        for (int k = 0; k < reps; k++)
            for (int i = 0; i < n_docs; i++) {
                char *text;
                size_t len;
                if (dsv4_detokenize(tok, dids[i], dn[i], &text, &len, err, sizeof err) || len != docs[i].len) {
                    fprintf(stderr, "bench_tokenizer: decode: %s\n", err);
                    return 1;
                }
                free(text);
            }
        double dt = now_s() - t0;
        if (r >= 0) dec[r] = (double)total / dt / 1e6;
    }
    qsort(enc, (size_t)runs, sizeof *enc, cmp_dbl);
    qsort(cold, (size_t)runs, sizeof *cold, cmp_dbl);
    qsort(dec, (size_t)runs, sizeof *dec, cmp_dbl);
    printf("tokenizer %s: open %.2f s\n", tok_path, t_open);
    printf("corpus %s: %d documents, %zu bytes, %zu tokens (%.2f bytes/token), repeated to %.1f MB\n", dir, n_docs,
           corpus_bytes, n_tokens_corpus, (double)corpus_bytes / (double)n_tokens_corpus, (double)total / 1e6);
    printf("encode: best %.1f MB/s, median %.1f MB/s (%d runs)\n", enc[runs - 1], enc[runs / 2], runs);
    printf("encode, cold (fresh tokenizer, corpus once): best %.1f MB/s, median %.1f MB/s\n", cold[runs - 1],
           cold[runs / 2]);
    printf("encode, unseen words (scrambled corpus, %.1f MB, fresh tokenizer): %.1f MB/s\n", (double)total / 1e6,
           unseen);
    printf("decode: best %.1f MB/s, median %.1f MB/s\n", dec[runs - 1], dec[runs / 2]);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "bench_tokenizer: cannot write %s\n", json);
            return 1;
        }
        fprintf(f,
                "{\"bench\": \"tokenizer\", \"tokenizer\": \"%s\", \"corpus_bytes\": %zu, \"total_bytes\": %zu, "
                "\"runs\": %d, \"encode_mb_s_best\": %.2f, \"encode_mb_s_median\": %.2f, \"encode_cold_mb_s_best\": %.2f, "
                "\"encode_cold_mb_s_median\": %.2f, \"encode_unseen_mb_s\": %.2f, "
                "\"decode_mb_s_best\": %.2f, \"decode_mb_s_median\": %.2f, \"open_s\": %.3f}\n",
                tok_path, corpus_bytes, total, runs, enc[runs - 1], enc[runs / 2], cold[runs - 1], cold[runs / 2], unseen, dec[runs - 1],
                dec[runs / 2], t_open);
        fclose(f);
    }
    for (int i = 0; i < n_docs; i++) {
        free(docs[i].text);
        free(dids[i]);
    }
    free(docs);
    free(dids);
    free(dn);
    free(enc);
    free(cold);
    free(dec);
    dsv4_tokenizer_close(tok);
    return 0;
}
