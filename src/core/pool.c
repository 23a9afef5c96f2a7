/*
 * pool.c - the thread pool behind dsv4_pool_for (see pool.h).
 *
 * A decode step issues hundreds of small parallel loops, so waking workers
 * through a condition variable each time would cost more than the loops.
 * Workers therefore spin on the job generation for a short while after each
 * job and only then sleep; the caller works too and spins until the others
 * finish. A pool of one thread is a plain loop with no synchronisation.
 */
#include "core/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* About a third of a millisecond of polling before a worker sleeps. Spinners
 * yield every few iterations: on a loaded machine the thread they wait for
 * may need their core. */
#define SPIN_ITERS 20000
#define YIELD_EVERY 64

static inline void spin_pause(int i)
{
    if (i % YIELD_EVERY == YIELD_EVERY - 1) sched_yield();
    else cpu_relax();
}

struct dsv4_pool {
    int n_threads; /* including the caller */
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_ullong generation;
    atomic_int busy;     /* workers still in the current job */
    atomic_int sleepers;
    atomic_int stop;
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
    unsigned long long seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN_ITERS && atomic_load(&p->generation) == seen && !atomic_load(&p->stop); i++)
            spin_pause(i);
        if (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) break;
        seen = atomic_load(&p->generation);
        pool_work(p);
        atomic_fetch_sub(&p->busy, 1);
    }
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
    pthread_cond_init(&p->cv, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
        if (!p->threads) {
            free(p);
            return NULL;
        }
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
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads - 1; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
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
    int64_t chunk = n / ((int64_t)p->n_threads * 4);
    if (chunk < 1) chunk = 1;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->cursor, 0);
    atomic_store(&p->busy, p->n_threads - 1);
    /* The generation moves under the mutex so a worker about to sleep either
     * sees it or is woken by the broadcast. */
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->generation, 1);
    if (atomic_load(&p->sleepers) > 0) pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pool_work(p);
    for (int i = 0; atomic_load(&p->busy) > 0; i++) spin_pause(i);
}
