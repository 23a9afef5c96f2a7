/*
 * pool.h - a fixed thread pool for data-parallel loops.
 *
 * dsv4_pool_for(pool, n, fn, ctx) runs fn(ctx, i) for i in [0, n) spread over
 * the pool's threads and the caller, and returns when all are done. Work is
 * handed out in contiguous chunks from an atomic counter, so results never
 * depend on the number of threads: every index is computed by exactly one
 * call, and fn must write only what index i owns.
 */
#ifndef DSV4_CORE_POOL_H
#define DSV4_CORE_POOL_H

#include <stdint.h>

typedef struct dsv4_pool dsv4_pool;
typedef void (*dsv4_pool_fn)(void *ctx, int64_t i);

/* n_threads <= 0: one per online CPU. */
dsv4_pool *dsv4_pool_create(int n_threads);
void dsv4_pool_destroy(dsv4_pool *p);
int dsv4_pool_threads(const dsv4_pool *p);
void dsv4_pool_for(dsv4_pool *p, int64_t n, dsv4_pool_fn fn, void *ctx);

#endif
