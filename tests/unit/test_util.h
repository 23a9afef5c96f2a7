/*
 * test_util.h - small helpers shared by the unit tests (header only: each
 * test is its own program).
 */
#ifndef DSV4_TESTS_TEST_UTIL_H
#define DSV4_TESTS_TEST_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h" /* dsv4_cuda_device_count */
#include "dsv4.h"

/* The engine options of the tests' small engines: the checkpoint dir, backend and numerics, 2 CPU threads,
 * 4 sequences of up to 512 tokens and a pool that holds them. */
static inline void tu_engine_opts(dsv4_engine_opts *o, const char *dir, dsv4_backend_kind be, dsv4_numerics num)
{
    dsv4_engine_opts_default(o);
    o->model_dir = dir;
    o->backend = be;
    o->numerics = num;
    o->n_threads = 2;
    o->max_seqs = 4;
    o->max_ctx = 512;
    o->pool_tokens = 4 * 512;
}

/* The backend DSV4_TEST_BACKEND names for a test that runs on either: "cuda" the GPU (*kind), else the CPU
 * (*kind untouched); 77 (ctest's skipped) when it names the GPU and there is none or the build lacks the CUDA
 * backend (a line says which), else 0. */
static inline int tu_test_backend(dsv4_backend_kind *kind)
{
    const char *tb = getenv("DSV4_TEST_BACKEND");
    if (!tb || strcmp(tb, "cuda")) return 0;
#ifdef DSV4_HAVE_CUDA
    if (dsv4_cuda_device_count() <= 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    *kind = DSV4_BACKEND_CUDA;
    return 0;
#else
    printf("built without the CUDA backend: skipped\n");
    return 77;
#endif
}

/* The whole file at path, NUL-terminated (malloc'ed); *len its size when
 * len is not NULL. NULL when it cannot be read. */
static inline char *tu_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

/* tu_slurp of a path relative to the source tree ($DSV4_SRC, default "."). */
static inline char *tu_slurp_src(const char *rel, size_t *len)
{
    const char *src = getenv("DSV4_SRC");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", src ? src : ".", rel);
    return tu_slurp(path, len);
}

/* The token ids of a fixture's ids.txt (numbers separated by anything), at
 * most cap; returns how many. */
static inline int tu_read_ids(const char *dir, int32_t *ids, int cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ids.txt", dir);
    char *txt = tu_slurp(path, NULL);
    if (!txt) return 0;
    int n = 0;
    for (char *s = txt; *s && n < cap;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) {
            s++;
            continue;
        }
        ids[n++] = (int32_t)v;
        s = end;
    }
    free(txt);
    return n;
}

/* The entries of directory root not starting with '.', sorted, at most cap
 * (names[i] up to 255 characters); -1 when root cannot be opened. */
static inline int tu_sorted_entries(const char *root, char (*names)[256], int cap)
{
    DIR *d = opendir(root);
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < cap) {
        if (de->d_name[0] == '.') continue;
        snprintf(names[n++], 256, "%s", de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
    return n;
}

#endif
