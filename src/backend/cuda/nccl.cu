/*
 * nccl.cu - the all-reduce of expert parallelism across GPUs, through NCCL.
 *
 * libnccl.so.2 is opened at run time (dlopen), so one build runs on machines
 * with and without NCCL: single-GPU serving never needs it, and --ep across
 * GPUs without it falls back to the host loopback with a message. One
 * process drives every rank: ncclCommInitAll makes one communicator per
 * GPU, and each all-reduce is one NCCL group of one call per rank, enqueued
 * on that rank's stream (no host wait).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/common.cuh"

#if __has_include(<nccl.h>)
#include <nccl.h>
#define DSV4_NCCL_HEADER 1
#endif

#ifdef DSV4_NCCL_HEADER

typedef struct {
    dsv4_comm base;
    void *lib;
    int n;
    ncclComm_t comm[16];
    int dev[16];
    cudaStream_t stream[16];
    ncclResult_t (*init_all)(ncclComm_t *, int, const int *);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    ncclResult_t (*destroy)(ncclComm_t);
    const char *(*error_string)(ncclResult_t);
} nccl_comm;

static void nccl_check(nccl_comm *c, ncclResult_t r, const char *what)
{
    if (r == ncclSuccess) return;
    /* a collective that fails mid-step leaves the ranks out of step: nothing to recover */
    fprintf(stderr, "dsv4: NCCL %s failed: %s\n", what, c->error_string ? c->error_string(r) : "?");
    abort();
}

static void nccl_allreduce(dsv4_comm *base, float **buf, size_t n)
{
    nccl_comm *c = (nccl_comm *)base;
    if (!n) return;
    nccl_check(c, c->group_start(), "group start");
    for (int r = 0; r < c->n; r++) {
        CK(cudaSetDevice(c->dev[r]));
        nccl_check(c, c->all_reduce(buf[r], buf[r], n, ncclFloat32, ncclSum, c->comm[r], c->stream[r]),
                   "all-reduce");
    }
    nccl_check(c, c->group_end(), "group end");
}

static void nccl_destroy(dsv4_comm *base)
{
    nccl_comm *c = (nccl_comm *)base;
    for (int r = 0; r < c->n; r++)
        if (c->comm[r]) {
            cudaSetDevice(c->dev[r]);
            c->destroy(c->comm[r]);
        }
    if (c->lib) dlclose(c->lib);
    free(c);
}

extern "C" dsv4_comm *dsv4_nccl_create(dsv4_backend **ranks, int n_ranks, char *err, size_t errlen)
{
    if (n_ranks < 2 || n_ranks > 16) {
        snprintf(err, errlen, "NCCL over %d ranks: 2 to 16 are supported", n_ranks);
        return NULL;
    }
    for (int r = 0; r < n_ranks; r++) {
        if (strcmp(ranks[r]->name, "cuda") != 0) {
            snprintf(err, errlen, "NCCL needs CUDA ranks (rank %d is %s)", r, ranks[r]->name);
            return NULL;
        }
        for (int q = 0; q < r; q++)
            if (ranks[q]->ordinal == ranks[r]->ordinal) {
                snprintf(err, errlen, "NCCL needs one rank per GPU (ranks %d and %d share GPU %d)", q, r,
                         ranks[r]->ordinal);
                return NULL;
            }
    }
    nccl_comm *c = (nccl_comm *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!c->lib) {
        snprintf(err, errlen, "libnccl.so.2 could not be loaded (%s)", dlerror());
        free(c);
        return NULL;
    }
    ncclResult_t (*get_version)(int *) = NULL;
#define SYM(field, name)                                                                                              \
    do {                                                                                                              \
        *(void **)&c->field = dlsym(c->lib, name);                                                                    \
        if (!c->field) {                                                                                              \
            snprintf(err, errlen, "libnccl.so.2 has no %s", name);                                                   \
            dlclose(c->lib);                                                                                          \
            free(c);                                                                                                  \
            return NULL;                                                                                              \
        }                                                                                                             \
    } while (0)
    SYM(init_all, "ncclCommInitAll");
    SYM(all_reduce, "ncclAllReduce");
    SYM(group_start, "ncclGroupStart");
    SYM(group_end, "ncclGroupEnd");
    SYM(destroy, "ncclCommDestroy");
    SYM(error_string, "ncclGetErrorString");
#undef SYM
    *(void **)&get_version = dlsym(c->lib, "ncclGetVersion");
    int ver = 0;
    if (get_version) get_version(&ver);
    c->n = n_ranks;
    for (int r = 0; r < n_ranks; r++) {
        c->dev[r] = ranks[r]->ordinal;
        c->stream[r] = impl_of(ranks[r])->stream;
    }
    /* Connect every channel at init rather than at the first collective (NCCL 2.22+ connects lazily): the
     * first prefill on the H200 pair otherwise spent 1.46 s in its first all-reduce. A value the user set
     * stays. */
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);
    ncclResult_t res = c->init_all(c->comm, n_ranks, c->dev);
    if (res != ncclSuccess) {
        snprintf(err, errlen, "ncclCommInitAll over %d GPUs: %s", n_ranks, c->error_string(res));
        memset(c->comm, 0, sizeof c->comm);
        nccl_destroy(&c->base);
        return NULL;
    }
    /* ncclGetVersion: major*10000 + minor*100 + patch since 2.9 */
    snprintf(c->base.name, sizeof c->base.name, "NCCL %d.%d.%d", ver / 10000, ver / 100 % 100, ver % 100);
    c->base.allreduce = nccl_allreduce;
    c->base.destroy = nccl_destroy;
    return &c->base;
}

#else /* no nccl.h at build time */

extern "C" dsv4_comm *dsv4_nccl_create(dsv4_backend **ranks, int n_ranks, char *err, size_t errlen)
{
    (void)ranks;
    (void)n_ranks;
    snprintf(err, errlen, "this build has no NCCL support (nccl.h was not found at build time)");
    return NULL;
}

#endif
