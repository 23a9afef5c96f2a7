/*
 * pool.c - the thread pool behind dsv4_pool_for (see pool.h).
 *
 * Workers sleep on a condition variable between jobs; a job is (fn, ctx, n)
 * plus an atomic cursor. The caller participates, so a pool of one thread is
 * a plain loop with no synchronisation.
 */
#include "core/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct dsv4_pool {
    int n_threads; /* including the caller */
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv_start, cv_done;
    uint64_t generation;
    int busy;      /* workers still in the current job */
    int stop;
    /* current job */
    dsv4_pool_fn fn;
    void *ctx;
    int64_t n, chunk;
    atomic_llong cursor;
};

static void pool_work(dsv4_pool *p)
{
    for (;;) {
        int64_t i0 = atomic_fetch_add(&p->cursor, p->chunk);
        if (i0 >= p->n) break;
        int64_t i1 = i0 + p->chunk < p->n ? i0 + p->chunk : p->n;
        for (int64_t i = i0; i < i1; i++) p->fn(p->ctx, i);
    }
}

static void *pool_main(void *arg)
{
    dsv4_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->cv_start, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        pool_work(p);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

dsv4_pool *dsv4_pool_create(int n_threads)
{
    if (n_threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)c : 1;
    }
    if (n_threads > 256) n_threads = 256;
    dsv4_pool *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_start, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
        if (!p->threads) { free(p); return NULL; }
        for (int i = 0; i < n_threads - 1; i++)
            if (pthread_create(&p->threads[i], NULL, pool_main, p) != 0) {
                p->n_threads = i + 1;
                break;
            }
    }
    return p;
}

void dsv4_pool_destroy(dsv4_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv_start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads - 1; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_start);
    pthread_cond_destroy(&p->cv_done);
    free(p);
}

int dsv4_pool_threads(const dsv4_pool *p) { return p ? p->n_threads : 1; }

void dsv4_pool_for(dsv4_pool *p, int64_t n, dsv4_pool_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (!p || p->n_threads == 1 || n == 1) {
        for (int64_t i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    int64_t chunk = n / ((int64_t)p->n_threads * 8);
    if (chunk < 1) chunk = 1;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->cursor, 0);
    p->busy = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->cv_start);
    pthread_mutex_unlock(&p->mu);
    pool_work(p);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0) pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
