/*
 * test_queues.c - the forward pass's use of a backend's second queue (backend.h: side / join), checked on
 * the CPU. The CPU backend has one queue; here it is wrapped in one that has two: the ops issued between
 * side(true) and side(false) run either at once, in issue order, or only at the next join, after every op
 * the main queue was given meanwhile - the two extremes of what two concurrent queues may do. Both must
 * give the CPU backend's logits bit for bit: a main-queue op that reads what the side queue writes before
 * the join, or writes what it reads (or a side op that reads what the main queue writes after the fork),
 * shows up as a difference. Every fixture, plain and reference numerics, a step of three prompts of
 * different lengths, decode steps, then a step mixing a prefill chunk with decode tokens.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dsv4.h"
#include "engine/engine.h"
#include "test_util.h"

#define MAXQ 256

typedef enum { Q_NORM_ROPE, Q_COMPRESS, Q_LINEAR, Q_LINEAR_MULTI, Q_SWIGLU, Q_KV_STORE } qkind;

/* An op held back until the join, with copies of what its arguments point to on the caller's stack. */
typedef struct {
    qkind k;
    const float *x, *w, *g;
    float *y;
    const int64_t *pos;
    const dsv4_plan *plan;
    dsv4_kv *kv;
    const dsv4_w *wt;
    const dsv4_w *ws[8];
    float *ys[8];
    int ld[8];
    int a, b, c, d, e, m;
    float eps, limit;
    unsigned rnd, rnd2;
    bool flag;
    size_t n;
    dsv4_compress_params cp;
} qop;

static struct {
    dsv4_backend wrap;
    dsv4_backend *real;
    bool defer, on_side;
    qop q[MAXQ];
    int nq;
    int forks, side_ops; /* how often the forward forked, and how many ops it put on the side queue */
} W;

static dsv4_backend *R(void)
{
    return W.real;
}

static qop *hold(qkind k)
{
    W.side_ops += W.on_side;
    if (!W.on_side || !W.defer) return NULL;
    if (W.nq == MAXQ) fail_msg("more than %d ops on the side queue before a join", MAXQ);
    qop *o = &W.q[W.nq++];
    memset(o, 0, sizeof *o);
    o->k = k;
    return o;
}

static void run(const qop *o)
{
    dsv4_backend *r = R();
    switch (o->k) {
    case Q_NORM_ROPE:
        r->norm_rope(r, o->y, o->a, o->b, o->c, o->w, o->eps, o->rnd, o->flag, o->d, o->pos, o->g, o->rnd2, o->e);
        break;
        r->rmsnorm(r, o->x, o->w, o->a, o->b, o->c, o->eps, o->y, o->rnd);
        break;
        r->rmsnorm_bf16(r, o->y, o->a, o->b);
        break;
        r->rope(r, o->y, o->a, o->b, o->c, o->d, o->e, o->pos, o->w, o->flag, o->rnd);
        break;
        r->kv_sim(r, o->y, o->a, o->b, o->c);
        break;
    case Q_COMPRESS:
        r->compress(r, &o->cp, o->plan, o->kv, o->x, o->g);
        break;
    case Q_LINEAR:
        r->linear(r, o->wt, o->x, o->a, o->b, o->y, o->c);
        break;
    case Q_LINEAR_MULTI:
        r->linear_multi(r, o->m, o->ws, o->x, o->a, o->b, o->ys, o->ld);
        break;
    case Q_SWIGLU:
        r->swiglu(r, o->x, o->g, o->n, o->limit, o->y, o->rnd);
        break;
    case Q_KV_STORE:
        r->kv_store(r, o->a, o->b, o->c, o->plan, o->kv, o->x);
        break;
    }
}

static void w_side(dsv4_backend *be, bool on)
{
    (void)be;
    if (on && !W.on_side) W.forks++;
    W.on_side = on;
}

static void w_join(dsv4_backend *be)
{
    (void)be;
    W.on_side = false;
    for (int i = 0; i < W.nq; i++) run(&W.q[i]);
    W.nq = 0;
}

static void w_norm_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int head_dim, const float *w, float eps,
                        unsigned nrnd, bool bf16, int rope_dim, const int64_t *pos, const float *freqs, unsigned rrnd,
                        int sim_nope)
{
    (void)be;
    qop *o = hold(Q_NORM_ROPE);
    if (!o) {
        R()->norm_rope(R(), x, n_tok, n_heads, head_dim, w, eps, nrnd, bf16, rope_dim, pos, freqs, rrnd, sim_nope);
        return;
    }
    o->y = x, o->a = n_tok, o->b = n_heads, o->c = head_dim, o->w = w, o->eps = eps, o->rnd = nrnd, o->flag = bf16;
    o->d = rope_dim, o->pos = pos, o->g = freqs, o->rnd2 = rrnd, o->e = sim_nope;
}

static void w_compress(dsv4_backend *be, const dsv4_compress_params *p, const dsv4_plan *plan, dsv4_kv *kv,
                       const float *a, const float *g)
{
    (void)be;
    qop *o = hold(Q_COMPRESS);
    if (!o) {
        R()->compress(R(), p, plan, kv, a, g);
        return;
    }
    o->cp = *p, o->plan = plan, o->kv = kv, o->x = a, o->g = g;
}

static void w_linear(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy)
{
    (void)be;
    qop *o = hold(Q_LINEAR);
    if (!o) {
        R()->linear(R(), w, x, ldx, n, y, ldy);
        return;
    }
    o->wt = w, o->x = x, o->a = ldx, o->b = n, o->y = y, o->c = ldy;
}

static void w_linear_multi(dsv4_backend *be, int m, const dsv4_w *const *w, const float *x, int ldx, int n,
                           float *const *y, const int *ldy)
{
    (void)be;
    qop *o = hold(Q_LINEAR_MULTI);
    if (!o) {
        R()->linear_multi(R(), m, w, x, ldx, n, y, ldy);
        return;
    }
    if (m > 8) fail_msg("linear_multi of %d weights on the side queue", m);
    o->m = m, o->x = x, o->a = ldx, o->b = n;
    for (int i = 0; i < m; i++) o->ws[i] = w[i], o->ys[i] = y[i], o->ld[i] = ldy[i];
}

static void w_swiglu(dsv4_backend *be, const float *g, const float *u, size_t n, float limit, float *m, unsigned rnd)
{
    (void)be;
    qop *o = hold(Q_SWIGLU);
    if (!o) {
        R()->swiglu(R(), g, u, n, limit, m, rnd);
        return;
    }
    o->x = g, o->g = u, o->n = n, o->limit = limit, o->y = m, o->rnd = rnd;
}

static void w_kv_store(dsv4_backend *be, int layer, int window, int head_dim, const dsv4_plan *plan, dsv4_kv *kv,
                       const float *kv_new)
{
    (void)be;
    qop *o = hold(Q_KV_STORE);
    if (!o) {
        R()->kv_store(R(), layer, window, head_dim, plan, kv, kv_new);
        return;
    }
    o->a = layer, o->b = window, o->c = head_dim, o->plan = plan, o->kv = kv, o->x = kv_new;
}

/* Any other op while the side queue is open: the wrapper does not know its buffers (extend it). */
#define GUARD(name, params, args)                                                                                      \
    static void(*real_##name) params;                                                                                  \
    static void g_##name params                                                                                        \
    {                                                                                                                  \
        if (W.on_side) fail_msg("the forward put " #name " on the side queue: test_queues.c does not defer it");       \
        real_##name args;                                                                                              \
    }
GUARD(hc_pre, (dsv4_backend * be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post, float *comb),
      (R(), p, X, n, u, post, comb))
GUARD(hc_post,
      (dsv4_backend * be, int hc, int dim, const float *o, const float *o2, const float *post, const float *comb, int n,
       float *X, unsigned rnd),
      (R(), hc, dim, o, o2, post, comb, n, X, rnd))
GUARD(attn,
      (dsv4_backend * be, const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv, const float *q,
       const float *kv_new, const int32_t *idx, const int32_t *cnt, float *out),
      (R(), p, plan, kv, q, kv_new, idx, cnt, out))
GUARD(indexer_topk,
      (dsv4_backend * be, const dsv4_indexer_params *p, const dsv4_plan *plan, const dsv4_kv *kv, const float *q,
       const float *w, int32_t *idx, int32_t *cnt),
      (R(), p, plan, kv, q, w, idx, cnt))
GUARD(moe_experts,
      (dsv4_backend * be, const dsv4_moe_params *p, const float *x, int n, const int32_t *idx, const float *wts,
       float *out),
      (R(), p, x, n, idx, wts, out))
GUARD(idx_sim, (dsv4_backend * be, float *x, int rows, int dim), (R(), x, rows, dim))
GUARD(rmsnorm,
      (dsv4_backend * be, const float *x, const float *w, int rows, int dim, int ld, float eps, float *y, unsigned rnd),
      (R(), x, w, rows, dim, ld, eps, y, rnd))
GUARD(rmsnorm_bf16, (dsv4_backend * be, float *x, int rows, int dim), (R(), x, rows, dim))
GUARD(rope,
      (dsv4_backend * be, float *x, int n_tok, int n_heads, int ld_tok, int head_dim, int rope_dim, const int64_t *pos,
       const float *freqs, bool inverse, unsigned rnd),
      (R(), x, n_tok, n_heads, ld_tok, head_dim, rope_dim, pos, freqs, inverse, rnd))
GUARD(kv_sim, (dsv4_backend * be, float *x, int rows, int ld, int nope), (R(), x, rows, ld, nope))
GUARD(round_bf16, (dsv4_backend * be, float *x, size_t n), (R(), x, n))

static void wrap(dsv4_engine *e, bool defer)
{
    memset(&W, 0, sizeof W);
    W.real = e->be;
    W.wrap = *e->be;
    W.defer = defer;
    dsv4_backend *b = &W.wrap;
    b->side = w_side;
    b->join = w_join;
    b->compress = w_compress;
    b->linear = w_linear;
    if (b->linear_multi) b->linear_multi = w_linear_multi;
    b->swiglu = w_swiglu;
    b->kv_store = w_kv_store;
    b->norm_rope = w_norm_rope;
#define HOOK(name) real_##name = W.real->name, b->name = g_##name
    HOOK(hc_pre);
    HOOK(hc_post);
    HOOK(attn);
    HOOK(indexer_topk);
    HOOK(moe_experts);
    HOOK(idx_sim);
    HOOK(round_bf16);
    HOOK(rmsnorm);
    HOOK(rmsnorm_bf16);
    HOOK(rope);
    HOOK(kv_sim);
    e->be = b;
}

static dsv4_engine *open_cpu(const char *dir, dsv4_numerics num)
{
    dsv4_engine_opts o;
    tu_engine_opts(&o, dir, DSV4_BACKEND_CPU, num);
    char err[512];
    dsv4_engine *e = NULL;
    if (dsv4_engine_open(&o, &e, err, sizeof err) != DSV4_OK) fail_msg("open %s: %s", dir, err);
    return e;
}

/* The logits of a fixed schedule: three prompts (150, 9, 90 tokens: past the top-k of the indexer's choice
 * and past a ratio-128 compressed row), 5 decode steps of the three, then a 40-token chunk of the second
 * beside decode tokens of the others; out [steps][3][V]. */
#define STEPS 7
static void schedule(dsv4_engine *e, const int32_t *ids, int n_ids, int V, float *out)
{
    char err[512];
    int sq[3];
    for (int s = 0; s < 3; s++)
        if (dsv4_seq_create(e, &sq[s], err, sizeof err) != DSV4_OK) fail_msg("seq: %s", err);
    static const int plen[3] = {150, 9, 90};
    int32_t last[3];
    for (int st = 0; st < STEPS; st++) {
        dsv4_batch_entry b[3];
        for (int s = 0; s < 3; s++) {
            const int32_t *tok = &last[s];
            int n = 1;
            if (st == 0) tok = ids + 5 * s, n = plen[s];
            if (st == STEPS - 1 && s == 1) tok = ids + 3, n = 40;
            b[s] = (dsv4_batch_entry){
                .seq = sq[s], .n_tokens = n, .tokens = tok, .logits = out + ((size_t)st * 3 + s) * V};
        }
        if (dsv4_step(e, b, 3, err, sizeof err) != DSV4_OK) fail_msg("step %d: %s", st, err);
        for (int s = 0; s < 3; s++) { /* the next token: a fixed function of the logits (their argmax) */
            const float *l = out + ((size_t)st * 3 + s) * V;
            int a = 0;
            for (int i = 1; i < V; i++)
                if (l[i] > l[a]) a = i;
            last[s] = a;
        }
    }
}

static void test_side_queue(void **state)
{
    (void)state;
    char names[64][256], root[1024];
    const char *src = getenv("DSV4_SRC");
    snprintf(root, sizeof root, "%s/tests/fixtures", src ? src : ".");
    const int nf = tu_sorted_entries(root, names, 64);
    assert_true(nf > 0);
    int checked = 0;
    for (int fi = 0; fi < nf; fi++) {
        char dir[1300];
        snprintf(dir, sizeof dir, "%.1000s/%.255s", root, names[fi]);
        int32_t ids[512];
        const int n_ids = tu_read_ids(dir, ids, 512);
        if (n_ids < 160) fail_msg("%s: %d prompt ids, the schedule needs 160", names[fi], n_ids);
        for (int num = 0; num < 2; num++) {
            const dsv4_numerics nm = num ? DSV4_NUMERICS_REFERENCE : DSV4_NUMERICS_PLAIN;
            float *ref = NULL;
            int V = 0;
            int forks = 0, side_ops = 0;
            for (int mode = 0; mode < 3; mode++) { /* the CPU as it is; side ops at once; side ops at the join */
                dsv4_engine *e = open_cpu(dir, nm);
                V = e->cfg.vocab_size;
                float *out = malloc((size_t)STEPS * 3 * V * sizeof(float));
                dsv4_backend *real = e->be;
                if (mode) wrap(e, mode == 2);
                schedule(e, ids, n_ids, V, out);
                if (mode) {
                    if (W.on_side || W.nq) fail_msg("%s: the forward left work on the side queue", names[fi]);
                    forks = W.forks, side_ops = W.side_ops;
                    e->be = real;
                }
                dsv4_engine_close(e);
                if (!mode) {
                    ref = out;
                    continue;
                }
                for (size_t i = 0; i < (size_t)STEPS * 3 * V; i++)
                    if (memcmp(&out[i], &ref[i], sizeof(float)))
                        fail_msg("%s %s, side ops %s: logit %zu (step %zu, sequence %zu) %.9g, one queue %.9g",
                                 names[fi], num ? "reference" : "plain", mode == 2 ? "at the join" : "at once", i,
                                 i / ((size_t)3 * V), i / V % 3, (double)out[i], (double)ref[i]);
                free(out);
            }
            free(ref);
            printf("%-8s %-9s %d forks, %d ops on the side queue: the same logits at once and at the join\n", names[fi],
                   num ? "reference" : "plain", forks, side_ops);
            if (!forks || !side_ops) fail_msg("%s: the forward did not use the side queue", names[fi]);
            checked++;
        }
    }
    assert_true(checked > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_side_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
