/*
 * test_ep.c - expert parallelism (--ep N) on the CPU through the loopback
 * communicator gives bit for bit the single rank's logits.
 *
 * For every fixture and models/tiny, plain and reference numerics, 2 and 3
 * ranks and 16 (more ranks than some fixtures have experts: ranks with no
 * experts): a prompt prefilled in two chunks then decoded token by token,
 * and three sequences of different lengths stepped together with a chunked
 * prefill beside decodes. DSV4_EP_CHECK=1 makes every read compare the
 * ranks' copies, so ranks that drift apart fail even when rank 0 is right.
 * DSV4_TEST_BACKEND=cuda runs the same with CUDA ranks, rank r on GPU r mod
 * (GPUs present), each loading its own weights and only its own experts:
 * on one GPU the ranks share it (host loopback); on two or more, --ep 2
 * puts one rank on each GPU and joins them with NCCL. Also: --ep beyond 16 ranks, and
 * --backend cuda --ep without a GPU, are refused; --profile gives the
 * collectives a row of their own; the MTP block is never loaded, by one
 * rank or several.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "dsv4.h"
#include "engine/engine.h"
#include "test_util.h"

/* DSV4_TEST_BACKEND=cuda: the ranks are CUDA backends on the GPUs present (exit 77 without one) */
static dsv4_backend_kind test_backend = DSV4_BACKEND_CPU;

static dsv4_engine *open_engine(const char *dir, int ep, dsv4_numerics num)
{
    dsv4_engine_opts o;
    tu_engine_opts(&o, dir, test_backend, num);
    o.ep = ep;
    char err[512];
    dsv4_engine *e = NULL;
    if (dsv4_engine_open(&o, &e, err, sizeof err) != DSV4_OK) fail_msg("open %s --ep %d: %s", dir, ep, err);
    return e;
}

/* The logits of a fixed workload, concatenated: [rows][V]; *rows set. */
static float *workload(dsv4_engine *e, int *rows)
{
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    const int V = info.vocab_size;
    char err[512];
    int32_t ids[300];
    uint64_t x = 12345;
    for (int i = 0; i < 300; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((x >> 33) % (uint64_t)V);
    }
    const int cap = 200;
    float *out = malloc((size_t)cap * V * sizeof(float));
    int n = 0;
    int s0, s1, s2;
    assert_int_equal(dsv4_seq_create(e, &s0, err, sizeof err), DSV4_OK);
    /* one sequence: two prefill chunks (all logits), then 12 decode steps */
    dsv4_batch_entry b = {.seq = s0, .n_tokens = 9, .tokens = ids, .all_logits = 1, .logits = out};
    assert_int_equal(dsv4_step(e, &b, 1, err, sizeof err), DSV4_OK);
    n += 9;
    b = (dsv4_batch_entry){.seq = s0, .n_tokens = 14, .tokens = ids + 9, .all_logits = 1, .logits = out + (size_t)n * V};
    assert_int_equal(dsv4_step(e, &b, 1, err, sizeof err), DSV4_OK);
    n += 14;
    for (int t = 0; t < 12; t++) {
        b = (dsv4_batch_entry){.seq = s0, .n_tokens = 1, .tokens = ids + 23 + t, .logits = out + (size_t)n * V};
        assert_int_equal(dsv4_step(e, &b, 1, err, sizeof err), DSV4_OK);
        n++;
    }
    /* three sequences: decodes of s0 beside a chunked prefill of s1 and decodes of s2 */
    assert_int_equal(dsv4_seq_create(e, &s1, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_seq_create(e, &s2, err, sizeof err), DSV4_OK);
    dsv4_batch_entry bb[3] = {
        {.seq = s2, .n_tokens = 5, .tokens = ids + 100, .logits = out + (size_t)n * V},
        {.seq = s1, .n_tokens = 40, .tokens = ids + 150, .all_logits = 1, .logits = out + (size_t)(n + 1) * V},
    };
    assert_int_equal(dsv4_step(e, bb, 2, err, sizeof err), DSV4_OK);
    n += 41;
    for (int t = 0; t < 20; t++) {
        bb[0] = (dsv4_batch_entry){.seq = s0, .n_tokens = 1, .tokens = ids + 40 + t, .logits = out + (size_t)n * V};
        bb[1] = (dsv4_batch_entry){.seq = s1, .n_tokens = 3, .tokens = ids + 200 + 3 * t,
                                   .logits = out + (size_t)(n + 1) * V};
        bb[2] = (dsv4_batch_entry){.seq = s2, .n_tokens = 1, .tokens = ids + 110 + t,
                                   .logits = out + (size_t)(n + 2) * V};
        assert_true(n + 3 <= cap);
        assert_int_equal(dsv4_step(e, bb, 3, err, sizeof err), DSV4_OK);
        n += 3;
    }
    *rows = n;
    return out;
}

static void check_dir(const char *dir)
{
    for (int numi = 0; numi < 2; numi++) {
        const dsv4_numerics num = numi ? DSV4_NUMERICS_REFERENCE : DSV4_NUMERICS_PLAIN;
        dsv4_engine *e1 = open_engine(dir, 1, num);
        dsv4_model_info info;
        dsv4_engine_info(e1, &info);
        int rows1;
        float *want = workload(e1, &rows1);
        dsv4_engine_close(e1);
        const int eps[] = {2, 3, 16};
        for (int k = 0; k < 3; k++) {
            dsv4_engine *e = open_engine(dir, eps[k], num);
            int rows;
            float *got = workload(e, &rows);
            assert_int_equal(rows, rows1);
            if (memcmp(got, want, (size_t)rows * info.vocab_size * sizeof(float))) {
                size_t i = 0;
                while (got[i] == want[i]) i++;
                fail_msg("%s %s --ep %d: logit %zu (row %zu) is %g, one rank gives %g", dir,
                         numi ? "reference" : "plain", eps[k], i, i / (size_t)info.vocab_size, got[i], want[i]);
            }
            free(got);
            dsv4_engine_close(e);
        }
        printf("%s %s: --ep 2, 3, 16 give the single rank's logits bit for bit (%d rows)\n", dir,
               numi ? "reference" : "plain", rows1);
        free(want);
    }
}

static void test_fixtures(void **state)
{
    (void)state;
    const char *src = getenv("DSV4_SRC");
    char base[1200], dir[1500];
    snprintf(base, sizeof base, "%s/tests/fixtures", src ? src : ".");
    DIR *d = opendir(base);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        snprintf(dir, sizeof dir, "%s/%s/config.json", base, de->d_name);
        FILE *f = fopen(dir, "r");
        if (!f) continue;
        fclose(f);
        snprintf(dir, sizeof dir, "%s/%s", base, de->d_name);
        check_dir(dir);
        n++;
    }
    closedir(d);
    snprintf(dir, sizeof dir, "%s/models/tiny", src ? src : ".");
    check_dir(dir);
    assert_true(n >= 5);
}

/* Options for tiny_a with `ep` ranks; dir holds the path. */
static dsv4_engine_opts tiny_a_opts(char *dir, size_t len, int ep)
{
    const char *src = getenv("DSV4_SRC");
    snprintf(dir, len, "%s/tests/fixtures/tiny_a", src ? src : ".");
    dsv4_engine_opts o;
    dsv4_engine_opts_default(&o);
    o.model_dir = dir;
    o.backend = DSV4_BACKEND_CPU;
    o.ep = ep;
    o.n_threads = 2;
    return o;
}

static void test_refusals(void **state)
{
    (void)state;
    char dir[1200];
    dsv4_engine_opts o = tiny_a_opts(dir, sizeof dir, 2);
    char err[512] = "";
    dsv4_engine *e = NULL;
    int gpus = 0;
#ifdef DSV4_HAVE_CUDA
    gpus = dsv4_cuda_device_count();
#endif
    if (!gpus) { /* --backend cuda --ep without a GPU: refused, pointing at the CPU */
        o.backend = DSV4_BACKEND_CUDA;
        assert_int_equal(dsv4_engine_open(&o, &e, err, sizeof err), DSV4_ERR_UNSUPPORTED);
        assert_non_null(strstr(err, "--backend cpu"));
    }
    o.backend = DSV4_BACKEND_CPU;
    o.ep = 17;
    assert_int_not_equal(dsv4_engine_open(&o, &e, err, sizeof err), DSV4_OK);
    assert_non_null(strstr(err, "16"));
}

/* --profile with ranks: the collectives have their own row, with time in it */
static void test_profile_comm(void **state)
{
    (void)state;
    char dir[1200], err[512];
    dsv4_engine_opts o = tiny_a_opts(dir, sizeof dir, 2);
    o.profile = 1;
    dsv4_engine *e = NULL;
    assert_int_equal(dsv4_engine_open(&o, &e, err, sizeof err), DSV4_OK);
    int s;
    assert_int_equal(dsv4_seq_create(e, &s, err, sizeof err), DSV4_OK);
    int32_t ids[6] = {5, 9, 2, 7, 1, 3};
    dsv4_batch_entry b = {.seq = s, .n_tokens = 6, .tokens = ids};
    assert_int_equal(dsv4_step(e, &b, 1, err, sizeof err), DSV4_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dsv4_profile_print(e, f, 1);
    fclose(f);
    const char *c = strstr(buf, "\"prefill\"");
    assert_non_null(c);
    c = strstr(c, "\"communication\": ");
    assert_non_null(c);
    assert_true(atof(c + strlen("\"communication\": ")) > 0);
    free(buf);
    dsv4_engine_close(e);
}

/* ---- decode graphs under expert parallelism: the protocol, on mock ranks ----
 * Each mock rank answers graph_begin / peek / drop / piece / end as the CUDA backend does (graph.cu: a key seen
 * once is captured at its second step and replayed after, until its gen moves) and logs what it runs: E / e a
 * rank's experts run directly / while capturing, c a piece closed (and launched) in a capture, l a piece launched
 * in a replay, D / U the loopback all-reduce's download / upload, s moe_sum. The experts write rank r + 1 into
 * the slots i with i % 2 == r, so the all-reduced slots (moe_sum copies them to out) are 1, 2, 1, 2, ... */
#define MK_KEYS 8
static char mk_log[4096];
typedef struct {
    int id;
    bool seen[MK_KEYS], capturing;
    int npiece[MK_KEYS], state, key, next;
    unsigned kgen[MK_KEYS], gen;
} mock_rank;

static void mk_put(char c, int id)
{
    size_t n = strlen(mk_log);
    if (n + 2 < sizeof mk_log) {
        mk_log[n] = c;
        mk_log[n + 1] = (char)('0' + id);
        mk_log[n + 2] = 0;
    }
}
static mock_rank *mk(dsv4_backend *be)
{
    return (mock_rank *)be->impl;
}
static void *mk_alloc(dsv4_backend *be, size_t bytes)
{
    (void)be;
    return calloc(1, bytes ? bytes : 1);
}
static void mk_free(dsv4_backend *be, void *p)
{
    (void)be;
    free(p);
}
static void mk_upload(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    assert_false(mk(be)->capturing); /* the all-reduce outside every graph */
    mk_put('U', mk(be)->id);
    memcpy(dst, src, bytes);
}
static void mk_download(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    assert_false(mk(be)->capturing); /* the all-reduce outside every graph */
    mk_put('D', mk(be)->id);
    memcpy(dst, src, bytes);
}
static void mk_copy(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    (void)be;
    memcpy(dst, src, bytes);
}
static void mk_experts(dsv4_backend *be, const dsv4_moe_params *p, const float *x, int n, const int32_t *idx,
                       const float *wts, float *out)
{
    (void)x, (void)idx, (void)wts, (void)out;
    mock_rank *r = mk(be);
    mk_put(r->capturing ? 'e' : 'E', r->id);
    for (size_t i = 0; i < (size_t)n * p->k * p->dim; i++) p->slot_out[i] = (int)(i % 2) == r->id ? r->id + 1.0f : 0.0f;
}
static void mk_sum(dsv4_backend *be, const float *Y, const int32_t *idx, int n, int k, int dim, float *out)
{
    (void)idx;
    mk_put('s', mk(be)->id);
    memcpy(out, Y, (size_t)n * k * dim * sizeof(float));
}
static int mk_peek(dsv4_backend *be, int key)
{
    mock_rank *r = mk(be);
    if (key < 1 || key >= MK_KEYS) return 0;
    if (r->npiece[key] && r->kgen[key] == r->gen) return 2;
    return r->seen[key] ? 1 : 0;
}
static void mk_drop(dsv4_backend *be, int key)
{
    if (key >= 1 && key < MK_KEYS) mk(be)->npiece[key] = 0;
}
static int mk_begin(dsv4_backend *be, int key)
{
    mock_rank *r = mk(be);
    r->state = 0, r->key = key, r->next = 0;
    const int a = mk_peek(be, key);
    if (a == 2 || key < 1 || key >= MK_KEYS) return r->state = a;
    r->npiece[key] = 0;
    if (!r->seen[key]) {
        r->seen[key] = true;
        return 0;
    }
    r->capturing = true;
    return r->state = 1;
}
static void mk_piece(dsv4_backend *be, int begin)
{
    mock_rank *r = mk(be);
    if (r->state == 1) {
        if (!begin && r->capturing) {
            r->capturing = false;
            r->npiece[r->key]++;
            mk_put('c', r->id);
        } else if (begin)
            r->capturing = true;
    } else if (r->state == 2 && !begin) {
        assert_true(r->next < r->npiece[r->key]);
        r->next++;
        mk_put('l', r->id);
    }
}
static void mk_end(dsv4_backend *be, int key)
{
    mock_rank *r = mk(be);
    assert_int_equal(key, r->key);
    if (r->state == 1) {
        if (r->capturing) mk_piece(be, 0);
        r->kgen[key] = r->gen;
    } else if (r->state == 2)
        while (r->next < r->npiece[key]) mk_piece(be, 0);
    r->state = 0;
}
static void mk_destroy(dsv4_backend *be)
{
    free(be->impl);
    free(be);
}
static dsv4_backend *mk_create(int id)
{
    dsv4_backend *be = calloc(1, sizeof *be);
    mock_rank *r = calloc(1, sizeof *r);
    assert_non_null(be);
    assert_non_null(r);
    r->id = id;
    be->name = "mock";
    be->impl = r;
    be->alloc = mk_alloc;
    be->free = mk_free;
    be->upload = mk_upload;
    be->download = mk_download;
    be->copy = mk_copy;
    be->moe_experts = mk_experts;
    be->moe_sum = mk_sum;
    be->graph_begin = mk_begin;
    be->graph_end = mk_end;
    be->graph_peek = mk_peek;
    be->graph_drop = mk_drop;
    be->graph_piece = mk_piece;
    be->destroy = mk_destroy;
    return be;
}

/* One step of key's graph with `cuts` MoE layers of n tokens; the answer of graph_begin. */
static int mk_step(dsv4_backend *ep, int key, int cuts, int n, float *out)
{
    static const dsv4_moe_params p = {.n_experts = 8, .k = 2, .dim = 4};
    mk_log[0] = 0;
    const int g = ep->graph_begin(ep, key);
    if (g != 2)
        for (int c = 0; c < cuts; c++) ep->moe_experts(ep, &p, NULL, n, NULL, NULL, out);
    ep->graph_end(ep, key);
    return g;
}

static void test_graph_protocol(void **state)
{
    (void)state;
    /* (the test's own DSV4_EP_GRAPHS: a run of the suite with it at 0 still checks the protocol) */
    const char *env = getenv("DSV4_EP_GRAPHS");
    char *saved = env ? strdup(env) : NULL;
    unsetenv("DSV4_EP_GRAPHS");
    dsv4_backend *ranks[2] = {mk_create(0), mk_create(1)};
    dsv4_weights w;
    memset(&w, 0, sizeof w);
    w.n_experts = 8;
    char err[256];
    dsv4_backend *ep = dsv4_backend_ep_create(ranks, 2, NULL, &w, err, sizeof err);
    assert_non_null(ep);
    assert_non_null(ep->graph_begin);
    assert_true(ranks[0]->graph_shared && ranks[1]->graph_shared);
    float *out = ep->alloc(ep, 64 * 2 * 4 * sizeof(float));
    assert_non_null(out);
    const char *cut_direct = "E0E1D0D1U0U1s0s1", *cut_capture = "e0e1c0c1D0D1U0U1s0s1", *cut_replay = "l0l1D0D1U0U1";
    char want[1024];
#define WANT3(a, tail) snprintf(want, sizeof want, "%s%s%s%s", a, a, a, tail)
    /* the first step of a key sizes (every op directly), the second is captured in pieces, the third replayed */
    assert_int_equal(mk_step(ep, 1, 3, 2, out), 0);
    WANT3(cut_direct, "");
    assert_string_equal(mk_log, want);
    memset(out, 0, 2 * 2 * 4 * sizeof(float));
    assert_int_equal(mk_step(ep, 1, 3, 2, out), 1);
    WANT3(cut_capture, "c0c1");
    assert_string_equal(mk_log, want);
    for (int i = 0; i < 2 * 2 * 4; i++) assert_true(out[i] == (float)(1 + i % 2)); /* the all-reduce's sum */
    assert_int_equal(mk(ranks[0])->npiece[1], 4);
    assert_int_equal(mk(ranks[1])->npiece[1], 4);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(mk_step(ep, 1, 3, 2, out), 2);
        WANT3(cut_replay, "l0l1");
        assert_string_equal(mk_log, want);
    }
    /* another key: sized, then captured, while key 1 stays */
    assert_int_equal(mk_step(ep, 2, 3, 1, out), 0);
    assert_int_equal(mk_step(ep, 2, 3, 1, out), 1);
    assert_int_equal(mk_step(ep, 1, 3, 2, out), 2);
    /* one rank's buffers moved (its gen): every rank captures key 1 again (rank 0's graph dropped) */
    mk(ranks[1])->gen++;
    assert_int_equal(mk_step(ep, 1, 3, 2, out), 1);
    WANT3(cut_capture, "c0c1");
    assert_string_equal(mk_log, want);
    assert_int_equal(mk_step(ep, 1, 3, 2, out), 2);
    /* the slot buffers grow (a bigger step outside any graph): every key's graph is captured again */
    mk_step(ep, 0, 1, 64, out);
    assert_int_equal(mk_step(ep, 1, 3, 2, out), 1);
    assert_int_equal(mk_step(ep, 2, 3, 1, out), 1);
    assert_int_equal(mk_step(ep, 1, 3, 2, out), 2);
    assert_int_equal(mk_step(ep, 2, 3, 1, out), 2);
    /* DSV4_EP_GRAPHS=0, or a rank without pieces: no graphs */
    ep->free(ep, out);
    ep->destroy(ep);
    ranks[0] = mk_create(0), ranks[1] = mk_create(1);
    ranks[1]->graph_piece = NULL;
    ep = dsv4_backend_ep_create(ranks, 2, NULL, &w, err, sizeof err);
    assert_non_null(ep);
    assert_null(ep->graph_begin);
    ep->destroy(ep);
    setenv("DSV4_EP_GRAPHS", "0", 1);
    ranks[0] = mk_create(0), ranks[1] = mk_create(1);
    ep = dsv4_backend_ep_create(ranks, 2, NULL, &w, err, sizeof err);
    assert_non_null(ep);
    assert_null(ep->graph_begin);
    ep->destroy(ep);
    unsetenv("DSV4_EP_GRAPHS");
    if (saved) setenv("DSV4_EP_GRAPHS", saved, 1);
    free(saved);
#undef WANT3
    printf("graphs under expert parallelism: sized, captured in pieces (the all-reduce between), replayed; "
           "recaptured when a rank's or the slots' buffers move\n");
}

/* Without --ep, the GPUs the weights need (engine.c's dsv4_ep_ranks_needed): the full Flash checkpoint (145.3 GiB,
 * 137.1 of them its 256 routed experts, `dsv4 inspect` of mkmodel --preset flash --layers 43) on H200s with
 * ~139 GiB free needs two; a model that fits takes one GPU; one that no split holds is refused. */
static void test_ep_ranks_needed(void **state)
{
    (void)state;
    const double G = 1073741824.0;
    const uint64_t total = (uint64_t)(145.301 * G), ex = (uint64_t)(137.062 * G);
    const int64_t h200 = (int64_t)(139.0 * G);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, h200, 1), 0);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, h200, 2), 2);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, h200, 8), 2);
    /* 80 GiB GPUs: 8.2 GiB dense + ceil(256 / n) of 256 experts' 137.1 + 4 GiB of reserve is 80.8 at n = 2, 58.3
     * at 3; 48 GiB ones: 46.5 at 4 */
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, (int64_t)(80.0 * G), 8), 3);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, (int64_t)(48.0 * G), 8), 4);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, (int64_t)(48.0 * G), 3), 0);
    /* fits one GPU: one, whatever the GPUs present; the reserve counts (4 GiB, or 1/32 of the free memory) */
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(20 * G), (uint64_t)(15 * G), 256, h200, 4), 1);
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(135.5 * G), (uint64_t)(120 * G), 256, h200, 2), 2);
    /* no split helps but the weights alone fit (the reserve not): one GPU, as before the rule */
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(136 * G), (uint64_t)(120 * G), 256, h200, 1), 1);
    /* the dense part alone too large: no split helps */
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(200 * G), (uint64_t)(50 * G), 256, h200, 16), 0);
    /* uneven shares: 3 ranks of 8 experts hold 3, 3 and 2 - the largest share counts */
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(100 * G), (uint64_t)(96 * G), 8, (int64_t)(44.5 * G), 4), 3);
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(100 * G), (uint64_t)(96 * G), 8, (int64_t)(43.5 * G), 4), 4);
}

/* The MTP block (tiny_b has a complete one) is bound and checked but never loaded: dsv4 does not run it, and in
 * Flash it is a whole layer of routed experts (~3.3 GB of a GPU). Its tensors have no backend copy, the decoder
 * layers' have one; the bytes it would have taken are counted apart (dsv4_weights_run_bytes). One rank and two. */
static dsv4_status no_copy(void *ctx, dsv4_w *w)
{
    if (w->vec || w->dev || w->dev_scale) fail_msg("%s was loaded (%s)", w->name, (const char *)ctx);
    return DSV4_OK;
}

static void test_mtp_not_loaded(void **state)
{
    (void)state;
    char dir[1024];
    const char *src = getenv("DSV4_SRC");
    /* tiny_b (MXFP4 experts with an MTP block), q_nvfp4 (NVFP4 experts, an MXFP4 MTP block) */
    for (int k = 0; k < 4; k++) {
        const int ep = 1 + k % 2;
        snprintf(dir, sizeof dir, "%s/tests/fixtures/%s", src ? src : ".", k < 2 ? "tiny_b" : "q_nvfp4");
        dsv4_engine *e = open_engine(dir, ep, DSV4_NUMERICS_REFERENCE);
        const dsv4_weights *w = &e->w;
        assert_true(w->mtp.present);
        assert_true(w->mtp_bytes > 0 && w->mtp_bytes < w->bytes);
        /* every stored tensor bound once: the bound bytes are the checkpoint's (NVFP4's per-tensor scales once) */
        assert_int_equal(w->bytes, dsv4_st_total_bytes(e->st));
        assert_int_equal(dsv4_weights_run_bytes(w), w->bytes - w->mtp_bytes);
        /* a layer's vectors and matrices have their copy (the CPU reads matrices where they are mapped) */
        assert_non_null(w->layers[0].attn_norm.vec);
        if (test_backend == DSV4_BACKEND_CUDA) assert_non_null(w->layers[0].wq_a.dev);
        dsv4_weights only = {.n_experts = w->n_experts, .mtp = w->mtp}; /* the MTP block alone */
        assert_int_equal(dsv4_weights_foreach(&only, no_copy, (void *)(ep == 1 ? "one rank" : "two ranks")), DSV4_OK);
        dsv4_engine_close(e);
    }
}

int main(void)
{
    const int rc = tu_test_backend(&test_backend);
    if (rc) return rc;
    setenv("DSV4_EP_CHECK", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures),        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_profile_comm),    cmocka_unit_test(test_graph_protocol),
        cmocka_unit_test(test_ep_ranks_needed), cmocka_unit_test(test_mtp_not_loaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
