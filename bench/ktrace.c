/* ktrace: every kernel's start and end on the GPU, graph nodes included, for any CUDA program of ours,
 * without touching it. A CUPTI injection library: the driver loads it at cuInit when
 *
 *     CUDA_INJECTION64_PATH=/path/libktrace.so KTRACE_OUT=trace.csv ./bench_cpu ...
 *
 * is set, it turns on CUPTI's concurrent-kernel activity records (they do not serialise kernels, and each
 * node of a replayed graph gets one) and at exit writes one CSV line a kernel:
 *
 *     start_ns,end_ns,stream,graph_id,graph_node_id,correlation,grid_x*y*z,block_x*y*z,mangled_name
 *
 * `correlation` is the launch API call's: one value a graph replay, which is how bench/ktrace.py cuts the
 * trace into steps and computes what each kernel adds to the step — what `ncu` (each kernel alone) cannot
 * show with PDL overlapping launches. Tracing every node costs the host time at each graph launch (and so
 * the gaps between replays); KTRACE_MODE=graph records each replay as one line instead (name "(graph)",
 * CUPTI's graph-level trace, cheap), beside the kernels and copies outside graphs ("(memcpy KIND BYTES)"),
 * which is what a step is made of between two replays; KTRACE_MODE=api adds the host's runtime
 * calls ("(api NAME)": CUPTI's timestamps share one time base; each traced call costs the host microseconds).
 * Built only with the CUDA backend where the toolkit has CUPTI; a bench tool, never linked into dsv4. */
#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_BUF (8u << 20)

typedef struct {
    uint64_t start, end;
    uint32_t stream, graph_id, corr;
    uint64_t node;
    int32_t grid[3], block[3];
    char name[120];
} kt_rec;

static kt_rec *kt_recs;
static size_t kt_n, kt_cap;
static int kt_dropped;

static void kt_check(CUptiResult r, const char *what)
{
    if (r == CUPTI_SUCCESS) return;
    const char *s = NULL;
    cuptiGetResultString(r, &s);
    fprintf(stderr, "ktrace: %s: %s\n", what, s ? s : "?");
}

static void CUPTIAPI kt_buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, KT_BUF);
    *size = *buf ? KT_BUF : 0;
    *max_records = 0;
}

static kt_rec *kt_new(void)
{
    if (kt_n == kt_cap) {
        size_t cap = kt_cap ? 2 * kt_cap : 1 << 16;
        kt_rec *r = realloc(kt_recs, cap * sizeof *r);
        if (!r) {
            kt_dropped++;
            return NULL;
        }
        kt_recs = r, kt_cap = cap;
    }
    kt_rec *r = &kt_recs[kt_n++];
    memset(r, 0, sizeof *r);
    return r;
}

static void kt_keep(const CUpti_ActivityKernel10 *k)
{
    kt_rec *r = kt_new();
    if (!r) return;
    r->start = k->start, r->end = k->end;
    r->stream = k->streamId, r->graph_id = k->graphId, r->corr = k->correlationId, r->node = k->graphNodeId;
    r->grid[0] = k->gridX, r->grid[1] = k->gridY, r->grid[2] = k->gridZ;
    r->block[0] = k->blockX, r->block[1] = k->blockY, r->block[2] = k->blockZ;
    snprintf(r->name, sizeof r->name, "%s", k->name ? k->name : "?");
}

static void kt_keep_graph(const CUpti_ActivityGraphTrace2 *g)
{
    kt_rec *r = kt_new();
    if (!r) return;
    r->start = g->start, r->end = g->end, r->stream = g->streamId, r->graph_id = g->graphId, r->corr = g->correlationId;
    snprintf(r->name, sizeof r->name, "(graph)");
}

static void kt_keep_copy(const CUpti_ActivityMemcpy6 *m)
{
    static const char *kinds[] = {"?", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
    kt_rec *r = kt_new();
    if (!r) return;
    r->start = m->start, r->end = m->end, r->stream = m->streamId, r->graph_id = m->graphId, r->corr = m->correlationId;
    r->node = m->graphNodeId;
    snprintf(r->name, sizeof r->name, "(memcpy %s %llu)", m->copyKind < 11 ? kinds[m->copyKind] : "?",
             (unsigned long long)m->bytes);
}

static void kt_keep_api(const CUpti_ActivityAPI *a)
{
    const char *nm = NULL;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &nm) != CUPTI_SUCCESS || !nm) nm = "?";
    kt_rec *r = kt_new();
    if (!r) return;
    r->start = a->start, r->end = a->end, r->corr = a->correlationId;
    snprintf(r->name, sizeof r->name, "(api %s)", nm);
}

static void CUPTIAPI kt_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *a = NULL;
    while (cuptiActivityGetNextRecord(buf, valid, &a) == CUPTI_SUCCESS)
        if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || a->kind == CUPTI_ACTIVITY_KIND_KERNEL)
            kt_keep((const CUpti_ActivityKernel10 *)a);
        else if (a->kind == CUPTI_ACTIVITY_KIND_GRAPH_TRACE) kt_keep_graph((const CUpti_ActivityGraphTrace2 *)a);
        else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY) kt_keep_copy((const CUpti_ActivityMemcpy6 *)a);
        else if (a->kind == CUPTI_ACTIVITY_KIND_RUNTIME)
            kt_keep_api((const CUpti_ActivityAPI *)a);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) kt_dropped += (int)dropped;
    free(buf);
}

static void kt_write(void)
{
    kt_check(cuptiActivityFlushAll(1), "flush");
    const char *path = getenv("KTRACE_OUT");
    FILE *f = path ? fopen(path, "w") : stderr;
    if (!f) {
        fprintf(stderr, "ktrace: cannot write %s\n", path);
        return;
    }
    fprintf(f, "start_ns,end_ns,stream,graph_id,graph_node_id,correlation,grid,block,name\n");
    for (size_t i = 0; i < kt_n; i++) {
        const kt_rec *r = &kt_recs[i];
        fprintf(f, "%llu,%llu,%u,%u,%llu,%u,%dx%dx%d,%dx%dx%d,%s\n", (unsigned long long)r->start,
                (unsigned long long)r->end, r->stream, r->graph_id, (unsigned long long)r->node, r->corr, r->grid[0],
                r->grid[1], r->grid[2], r->block[0], r->block[1], r->block[2], r->name);
    }
    if (f != stderr) fclose(f);
    fprintf(stderr, "ktrace: %zu kernels%s%s (%d records dropped)\n", kt_n, path ? " to " : "", path ? path : "",
            kt_dropped);
}

/* The driver calls this once, at cuInit, when CUDA_INJECTION64_PATH names this library. */
int InitializeInjection(void)
{
    kt_check(cuptiActivityRegisterCallbacks(kt_buffer_requested, kt_buffer_completed), "callbacks");
    const char *mode = getenv("KTRACE_MODE");
    const bool api = mode && !strcmp(mode, "api");
    if (api || (mode && !strcmp(mode, "graph"))) {
        kt_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE), "enable graphs");
        kt_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enable copies");
    }
    /* the host's runtime calls too (each costs a few microseconds more); not the driver's: through the
     * static runtime they show only the module loading */
    if (api) kt_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "enable runtime calls");
    kt_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernels");
    atexit(kt_write);
    return 1;
}
