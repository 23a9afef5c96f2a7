/*
 * test_alloc_wrap.h - the allocation wrappers of the tests that fail each allocation in turn (test_alloc_fail,
 * test_alloc_fail_output): the library's malloc, calloc, realloc, strdup and strndup, wrapped at link time with
 * --wrap (tests/CMakeLists.txt), fail when the count reaches fail_at. The counters are atomic: a scheduler
 * allocates on its own thread. Header only; include it once, after cmocka.h.
 */
#ifndef DSV4_TESTS_TEST_ALLOC_WRAP_H
#define DSV4_TESTS_TEST_ALLOC_WRAP_H

#include <stdatomic.h>
#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static atomic_long fail_at; /* the allocation (counted from 1) that fails; 0: none */
static atomic_long n_allocs;

/* Whether the allocation being made is the one to fail (it is counted either way while fail_at is set). */
static int failing(void)
{
    return atomic_load(&fail_at) && atomic_fetch_add(&n_allocs, 1) + 1 == fail_at;
}

void *__wrap_malloc(size_t n)
{
    return failing() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n)
{
    return failing() ? NULL : __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n)
{
    return failing() ? NULL : __real_realloc(p, n);
}
char *__wrap_strdup(const char *s)
{
    return failing() ? NULL : __real_strdup(s);
}
char *__wrap_strndup(const char *s, size_t n)
{
    return failing() ? NULL : __real_strndup(s, n);
}

/* Runs fn with allocation k failing, for k = 1, 2, ... until a run makes fewer than k allocations (none failed:
 * fn checks it got the reference result); returns how many runs had a failure. */
static long each_failure(void (*fn)(void *ctx), void *ctx)
{
    long k;
    for (k = 1; k < 1000000; k++) {
        atomic_store(&n_allocs, 0);
        atomic_store(&fail_at, k);
        fn(ctx);
        const int failed = atomic_load(&n_allocs) >= k;
        atomic_store(&fail_at, 0);
        if (!failed) return k - 1;
    }
    fail_msg("more than a million allocations");
    return k;
}

#endif
