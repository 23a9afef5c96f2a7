/*
 * test_gpu_vs_cpu.c - the CUDA backend against the CPU backend, end to end.
 *
 * For every model under tests/fixtures/ and models/tiny, and for both
 * numerics, the same workload runs on a CPU engine and a CUDA engine in
 * lockstep, through the public API only:
 *   batch=1        a 20-token prompt prefilled whole, then 64 greedy decode steps;
 *   batch=8        8 prompts of 1..40 tokens prefilled in one step, then 64
 *                  decode steps with all 8 sequences in every step;
 *   batch=8-mixed  8 sequences (1 to 200 prompt tokens) joining at different
 *                  steps, most prefilled in chunks (1, 13, 29, 37, 64) in the
 *                  same steps as the others decode, 64 decode steps each; the
 *                  longest reaches 264 positions, or more where a model needs
 *                  it (its prompt grows): past the sliding window, across a
 *                  page and through two windows of every compress ratio.
 * Every step asks for the logits of every token, and every row is compared.
 * Greedy decoding: each engine feeds back its own argmax (lowest id on ties).
 * Where the two argmaxes differ, both go on with the CPU's token, so that the
 * rest of the run still compares the same contexts; the disagreement counts.
 *
 * --numerics plain must agree: |cuda - cpu| <= 2e-3 for every logit and the
 * same greedy token at every step, except where the CPU's logits of the two
 * choices are within 2e-3 of each other (a tie: printed and counted, not a
 * failure). --numerics reference is measured (BF16 rounding points amplify
 * summation-order differences) and held only to the sanity bounds
 * test_golden holds it to against the oracle: mean |d| < 0.25 and >= 70 % of
 * greedy choices the same. One grep-able line per fixture, numerics and
 * workload:
 *   gpu-vs-cpu <fixture> <numerics> batch=<1|8|8-mixed> max|d|=<g> mean|d|=<g>
 *       greedy=<same>/<choices> ties=<n> rows=<logit rows compared>
 * (greedy counts the tokens fed back to the decode steps: 64 per sequence).
 *
 * Skipped (exit 77) without the CUDA backend or a usable GPU.
 * DSV4_GPU_VS_CPU_SELFTEST=1 runs the harness with a 2-thread CPU engine in
 * the CUDA engine's place (the CPU backend is exact across thread counts, so
 * every difference must be 0): it checks the harness on a machine without a
 * GPU and is registered as its own ctest.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "dsv4.h"
#include "test_util.h"
#include "model/config.h"

#define PLAIN_TOL 2e-3 /* max |d| of a logit, and the CPU gap under which differing argmaxes are a tie */
#define N_DECODE  64   /* greedy decode steps per sequence */
#define MAX_SEQS  8
#define MIN_CTX   288 /* the engines' context at least: 200 prompt + 64 decode tokens, with room */

static int run_ctx = MIN_CTX; /* the engines' context for the model under test (test_model) */

static int selftest; /* DSV4_GPU_VS_CPU_SELFTEST=1: CPU (1 thread) vs CPU (2 threads) */

/* ---- models ---------------------------------------------------------------- */

typedef struct {
    char name[300]; /* "tiny_a", "models/tiny" */
    char dir[1400];
} model;

static model models[32];
static int n_models;

static int is_model_dir(const char *dir)
{
    char p[1500];
    struct stat sb;
    snprintf(p, sizeof p, "%s/config.json", dir);
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int find_models(void)
{
    const char *src = getenv("DSV4_SRC");
    char root[1024];
    snprintf(root, sizeof root, "%s/tests/fixtures", src ? src : ".");
    char names[32][256];
    const int n = tu_sorted_entries(root, names, 31);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) {
        model *m = &models[n_models];
        snprintf(m->dir, sizeof m->dir, "%s/%.255s", root, names[i]);
        snprintf(m->name, sizeof m->name, "%.255s", names[i]);
        if (is_model_dir(m->dir)) n_models++;
    }
    model *m = &models[n_models];
    snprintf(m->dir, sizeof m->dir, "%s/models/tiny", src ? src : ".");
    snprintf(m->name, sizeof m->name, "models/tiny");
    if (is_model_dir(m->dir)) n_models++;
    return n_models > 0 ? 0 : -1;
}

static dsv4_status open_engine(const model *m, dsv4_backend_kind be, int n_threads, dsv4_numerics num,
                               dsv4_moe_backend mb, dsv4_engine **e, char *err, size_t errlen)
{
    dsv4_engine_opts o;
    dsv4_engine_opts_default(&o);
    o.model_dir = m->dir;
    o.backend = be;
    o.numerics = num;
    o.moe_backend = mb;
    o.n_threads = n_threads;
    o.max_seqs = MAX_SEQS;
    o.max_ctx = run_ctx;
    o.pool_tokens = (int64_t)run_ctx * MAX_SEQS;
    o.max_batch_tokens = 512;
    return dsv4_engine_open(&o, e, err, errlen);
}

/* The engine compared against the CPU: CUDA, or in the self-test a CPU
 * engine with a different thread count. */
static dsv4_status open_other(const model *m, dsv4_numerics num, dsv4_moe_backend mb, dsv4_engine **e, char *err,
                              size_t errlen)
{
    return selftest ? open_engine(m, DSV4_BACKEND_CPU, 2, num, mb, e, err, errlen)
                    : open_engine(m, DSV4_BACKEND_CUDA, 0, num, mb, e, err, errlen);
}

/* ---- workloads ------------------------------------------------------------- */

/* One sequence of a workload: its prompt joins at step `start`, in chunks of
 * `chunk` tokens (0 = whole), then N_DECODE greedy decode steps follow. */
typedef struct {
    int len, chunk, start;
} seq_plan;

typedef struct {
    const char *name;
    int n_seqs;
    seq_plan seqs[MAX_SEQS];
} workload;

static const workload workloads[] = {
    /* the last one's seq LONG_SEQ grows to a model's coverage_need */
    {"batch=1", 1, {{20, 0, 0}}},
    {"batch=8", 8, {{1, 0, 0}, {3, 0, 0}, {7, 0, 0}, {12, 0, 0}, {19, 0, 0}, {26, 0, 0}, {33, 0, 0}, {40, 0, 0}}},
    /* s2 prefills 200 tokens in chunks of 37 while s0 and s1 decode; s6 is
     * prefilled one token at a time; s4's chunk of 64 straddles position 128;
     * s5 joins after the others have started decoding. */
    {"batch=8-mixed",
     8,
     {{5, 0, 0}, {1, 0, 0}, {200, 37, 0}, {64, 13, 2}, {130, 64, 1}, {9, 0, 5}, {33, 1, 3}, {96, 29, 4}}},
};
#define N_WORKLOADS (int)(sizeof workloads / sizeof workloads[0])
#define LONG_SEQ    2
#define MAX_CHUNK   200 /* the largest number of tokens one sequence adds in one step */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- comparison ------------------------------------------------------------ */

typedef struct {
    double max_d, sum_d;
    long long n_vals, rows, nonfinite;
    int greedy_same, greedy_total, ties, bad_greedy; /* bad_greedy: plain mismatches that are no tie */
    int worst_seq, worst_pos, worst_id;              /* where max_d was seen */
} stats;

static int argmax(const float *x, int V)
{
    int a = 0;
    for (int v = 1; v < V; v++)
        if (x[v] > x[a]) a = v;
    return a;
}

static void compare_row(stats *st, const float *a, const float *b, int V, int seq, int pos)
{
    for (int v = 0; v < V; v++) {
        if (!isfinite(a[v]) || !isfinite(b[v])) {
            st->nonfinite++;
            continue;
        }
        double d = fabs((double)a[v] - (double)b[v]);
        st->sum_d += d;
        st->n_vals++;
        if (d > st->max_d) {
            st->max_d = d;
            st->worst_seq = seq;
            st->worst_pos = pos;
            st->worst_id = v;
        }
    }
    st->rows++;
}

/* The token both engines feed next: each picks its argmax; a disagreement
 * is counted (a tie when the CPU's logits of the two picks are within
 * PLAIN_TOL) and both go on with the CPU's pick. */
static int32_t greedy_pick(stats *st, const float *a, const float *b, int V, const char *what, int seq, int step)
{
    int ta = argmax(a, V), tb = argmax(b, V);
    st->greedy_total++;
    if (ta == tb) {
        st->greedy_same++;
        return (int32_t)ta;
    }
    double gap = (double)a[ta] - (double)a[tb];
    if (gap <= PLAIN_TOL) {
        st->ties++;
        printf("  tie: %s seq %d decode step %d: cpu argmax %d (%.6f), other argmax %d (cpu %.6f, other %.6f), "
               "cpu gap %.3g\n",
               what, seq, step, ta, a[ta], tb, a[tb], b[tb], gap);
    } else {
        st->bad_greedy++;
        printf("  MISMATCH: %s seq %d decode step %d: cpu argmax %d (%.6f), other argmax %d (cpu %.6f, other "
               "%.6f), cpu gap %.3g\n",
               what, seq, step, ta, a[ta], tb, a[tb], b[tb], gap);
    }
    return (int32_t)ta;
}

/* Run workload w on engines a (CPU) and b in lockstep; fills st. */
static void run_workload(dsv4_engine *ea, dsv4_engine *eb, const workload *w, uint64_t seed, const char *what,
                         stats *st)
{
    dsv4_model_info info;
    dsv4_engine_info(ea, &info);
    const int V = info.vocab_size;
    const int ns = w->n_seqs;
    int32_t *prompt[MAX_SEQS];
    float *la[MAX_SEQS], *lb[MAX_SEQS];
    int sa[MAX_SEQS], sb[MAX_SEQS], fed[MAX_SEQS], decoded[MAX_SEQS];
    int32_t next[MAX_SEQS];
    char err[1024];
    memset(st, 0, sizeof *st);
    for (int s = 0; s < ns; s++) {
        const seq_plan *p = &w->seqs[s];
        assert_true((p->chunk > 0 && p->chunk < p->len ? p->chunk : p->len) <= MAX_CHUNK);
        assert_true(p->len + N_DECODE <= run_ctx);
        prompt[s] = malloc((size_t)p->len * sizeof(int32_t));
        for (int t = 0; t < p->len; t++) prompt[s][t] = (int32_t)(splitmix64(&seed) % (uint64_t)V);
        la[s] = malloc((size_t)MAX_CHUNK * V * sizeof(float));
        lb[s] = malloc((size_t)MAX_CHUNK * V * sizeof(float));
        assert_non_null(prompt[s]);
        assert_non_null(la[s]);
        assert_non_null(lb[s]);
        if (dsv4_seq_create(ea, &sa[s], err, sizeof err) != DSV4_OK) fail_msg("%s: %s", what, err);
        if (dsv4_seq_create(eb, &sb[s], err, sizeof err) != DSV4_OK) fail_msg("%s: %s", what, err);
        fed[s] = decoded[s] = 0;
    }
    for (int step = 0;; step++) {
        dsv4_batch_entry ba[MAX_SEQS], bb[MAX_SEQS];
        int who[MAX_SEQS], nb = 0;
        for (int s = 0; s < ns; s++) {
            const seq_plan *p = &w->seqs[s];
            if (step < p->start || decoded[s] == N_DECODE) continue;
            int n = 1;
            const int32_t *tok = &next[s];
            if (fed[s] < p->len) {
                n = p->chunk > 0 && p->chunk < p->len - fed[s] ? p->chunk : p->len - fed[s];
                tok = prompt[s] + fed[s];
            }
            ba[nb] = (dsv4_batch_entry){.seq = sa[s], .n_tokens = n, .tokens = tok, .all_logits = 1, .logits = la[s]};
            bb[nb] = (dsv4_batch_entry){.seq = sb[s], .n_tokens = n, .tokens = tok, .all_logits = 1, .logits = lb[s]};
            who[nb++] = s;
        }
        if (!nb) break;
        if (dsv4_step(ea, ba, nb, err, sizeof err) != DSV4_OK) fail_msg("%s: cpu step %d: %s", what, step, err);
        if (dsv4_step(eb, bb, nb, err, sizeof err) != DSV4_OK) fail_msg("%s: other step %d: %s", what, step, err);
        for (int i = 0; i < nb; i++) {
            const int s = who[i], n = ba[i].n_tokens;
            const int was_decode = fed[s] >= w->seqs[s].len;
            for (int r = 0; r < n; r++) compare_row(st, la[s] + (size_t)r * V, lb[s] + (size_t)r * V, V, s, fed[s] + r);
            fed[s] += n;
            if (was_decode) decoded[s]++;
            /* the last row chooses the next decode token, unless all are done */
            if (fed[s] >= w->seqs[s].len && decoded[s] < N_DECODE)
                next[s] =
                    greedy_pick(st, la[s] + (size_t)(n - 1) * V, lb[s] + (size_t)(n - 1) * V, V, what, s, decoded[s]);
        }
    }
    for (int s = 0; s < ns; s++) {
        assert_int_equal(dsv4_seq_len(ea, sa[s]), w->seqs[s].len + N_DECODE);
        assert_int_equal(dsv4_seq_len(eb, sb[s]), w->seqs[s].len + N_DECODE);
        dsv4_seq_free(ea, sa[s]);
        dsv4_seq_free(eb, sb[s]);
        free(prompt[s]);
        free(la[s]);
        free(lb[s]);
    }
}

/* ---- the test: one per model and numerics --------------------------------- */

typedef struct {
    const model *m;
    dsv4_numerics num;
    dsv4_moe_backend mb; /* the compared engine's --moe-backend (w4a8: MXFP4 experts only, others skip) */
    char name[340];
} case_state;

static case_state cases[96];

static int64_t gcd64(int64_t a, int64_t b)
{
    return b ? gcd64(b, a % b) : a;
}

/* The positions the longest sequence must reach to cover model m: past its sliding window, two windows of its
 * largest compress ratio, and past a page (the engine's: 256 tokens, or the least common multiple of 256 and
 * every ratio). */
static int coverage_need(const model *m, const dsv4_config *cfg)
{
    int64_t page = 256, need = cfg->window + 1;
    for (int l = 0; l < cfg->n_layers; l++) {
        const int r = cfg->layer_ratio[l];
        if (r <= 0) continue;
        page = page / gcd64(page, r) * r;
        if (2 * r > need) need = 2 * r;
    }
    if (page + 1 > need) need = page + 1;
    if (need > (1 << 16)) fail_msg("%s: covering it takes %lld positions", m->name, (long long)need);
    return (int)need;
}

/* Says which compress windows and pages the workloads w cross; fails if the
 * longest sequence does not cover them (coverage_need). */
static void check_coverage(const model *m, const dsv4_config *cfg, dsv4_engine *e, const workload *w)
{
    int longest = 0;
    for (int i = 0; i < N_WORKLOADS; i++)
        for (int s = 0; s < w[i].n_seqs; s++)
            if (w[i].seqs[s].len + N_DECODE > longest) longest = w[i].seqs[s].len + N_DECODE;
    int max_ratio = 0;
    char ratios[256] = "";
    for (int l = 0; l < cfg->n_layers; l++) {
        int r = cfg->layer_ratio[l];
        if (r <= 0) continue;
        int seen = 0;
        for (int j = 0; j < l; j++) seen |= cfg->layer_ratio[j] == r;
        if (!seen) snprintf(ratios + strlen(ratios), sizeof ratios - strlen(ratios), " %d", r);
        if (r > max_ratio) max_ratio = r;
    }
    printf("  %s: window %d, compress ratios%s, pages of %d tokens; longest sequence %d tokens\n", m->name, cfg->window,
           ratios, dsv4_page_tokens(e), longest);
    assert_true(longest > cfg->window);
    assert_true(longest >= 2 * max_ratio);
    assert_true(longest > dsv4_page_tokens(e));
}

static void test_model(void **state)
{
    const case_state *cs = *state;
    const model *m = cs->m;
    const int plain = cs->num == DSV4_NUMERICS_PLAIN;
    const char *numn = plain ? "plain" : cs->mb == DSV4_MOE_W4A8 ? "reference-w4a8" : "reference";
    dsv4_engine *ea = NULL, *eb = NULL;
    char err[1024];
    /* the workloads, the long sequence grown to cover this model, and the engines' context to hold it */
    dsv4_config cfg;
    if (dsv4_config_load(m->dir, &cfg, err, sizeof err) != DSV4_OK) fail_msg("%s", err);
    workload w[N_WORKLOADS];
    memcpy(w, workloads, sizeof w);
    seq_plan *lp = &w[N_WORKLOADS - 1].seqs[LONG_SEQ];
    const int need = coverage_need(m, &cfg);
    if (lp->len + N_DECODE < need) lp->len = need - N_DECODE;
    run_ctx = lp->len + N_DECODE + 24 > MIN_CTX ? lp->len + N_DECODE + 24 : MIN_CTX;
    const dsv4_status ost = open_other(m, cs->num, cs->mb, &eb, err, sizeof err);
    if (ost == DSV4_ERR_UNSUPPORTED && cs->mb != DSV4_MOE_AUTO) { /* an explicit MoE backend refused: skip */
        printf("%s %s: %s: skipped\n", m->name, numn, err);
        skip();
    }
    if (ost != DSV4_OK) fail_msg("%s: other engine: %s", m->name, err);
    if (open_engine(m, DSV4_BACKEND_CPU, selftest ? 1 : 0, cs->num, DSV4_MOE_AUTO, &ea, err, sizeof err) != DSV4_OK)
        fail_msg("%s: cpu engine: %s", m->name, err);
    dsv4_model_info ia, ib;
    dsv4_engine_info(ea, &ia);
    dsv4_engine_info(eb, &ib);
    assert_int_equal(ia.vocab_size, ib.vocab_size);
    if (plain) check_coverage(m, &cfg, ea, w);

    stats st[N_WORKLOADS];
    for (int i = 0; i < N_WORKLOADS; i++) {
        char what[400];
        snprintf(what, sizeof what, "%s %s %s", m->name, numn, w[i].name);
        run_workload(ea, eb, &w[i], 0x5eed0000u + (uint64_t)i, what, &st[i]);
        const stats *s = &st[i];
        printf("gpu-vs-cpu %s %s %s max|d|=%.3g mean|d|=%.3g greedy=%d/%d ties=%d rows=%lld\n", m->name, numn,
               workloads[i].name, s->max_d, s->n_vals ? s->sum_d / (double)s->n_vals : 0.0, s->greedy_same,
               s->greedy_total, s->ties, s->rows);
        if ((plain && s->max_d > PLAIN_TOL) || (selftest && s->max_d > 0))
            printf("  (largest |d| at seq %d position %d token %d)\n", s->worst_seq, s->worst_pos, s->worst_id);
    }
    dsv4_engine_close(ea);
    dsv4_engine_close(eb);

    /* assert after every line is printed, so a failure still reports all */
    for (int i = 0; i < N_WORKLOADS; i++) {
        const stats *s = &st[i];
        if (s->nonfinite) fail_msg("%s %s %s: %lld non-finite logits", m->name, numn, workloads[i].name, s->nonfinite);
        assert_int_equal(s->greedy_total, workloads[i].n_seqs * N_DECODE);
        /* the CPU backend is exact across thread counts (every op reduces in
         * a fixed order), so the self-test allows no difference at all */
        if (selftest && (s->max_d != 0 || s->greedy_same != s->greedy_total))
            fail_msg("self-test %s %s %s: 1 and 2 CPU threads differ (max |d| %.3g, greedy %d/%d)", m->name, numn,
                     workloads[i].name, s->max_d, s->greedy_same, s->greedy_total);
        if (plain) {
            if (s->max_d > PLAIN_TOL)
                fail_msg("%s plain %s: max |d| %.3g > %g (seq %d position %d token %d)", m->name, workloads[i].name,
                         s->max_d, PLAIN_TOL, s->worst_seq, s->worst_pos, s->worst_id);
            if (s->bad_greedy)
                fail_msg("%s plain %s: %d greedy choices differ without a tie", m->name, workloads[i].name,
                         s->bad_greedy);
        } else {
            /* sanity bounds only, as test_golden's for reference numerics */
            assert_true(s->sum_d / (double)s->n_vals < 0.25);
            assert_true(s->greedy_same * 10 >= s->greedy_total * 7);
        }
    }
}

int main(void)
{
    const char *stv = getenv("DSV4_GPU_VS_CPU_SELFTEST");
    selftest = stv && !strcmp(stv, "1");
    setvbuf(stdout, NULL, _IOLBF, 0); /* whole lines before cmocka's messages on stderr */
    if (find_models() != 0) {
        printf("no models found under $DSV4_SRC (tests/fixtures/*, models/tiny)\n");
        return 1;
    }
    if (selftest) {
        printf("self-test: the CPU backend on 2 threads stands in for CUDA (every difference must be 0)\n");
    } else {
#ifdef DSV4_HAVE_CUDA
        if (dsv4_cuda_device_count() <= 0) {
            printf("no CUDA device: skipped\n");
            return 77;
        }
        /* a GPU this build's kernels cannot use (pre-Hopper) is a skip too */
        dsv4_engine *e = NULL;
        char err[1024];
        dsv4_status st =
            open_engine(&models[0], DSV4_BACKEND_CUDA, 0, DSV4_NUMERICS_PLAIN, DSV4_MOE_AUTO, &e, err, sizeof err);
        dsv4_engine_close(e);
        if (st == DSV4_ERR_UNSUPPORTED) {
            printf("%s: skipped\n", err);
            return 77;
        }
#else
        printf("built without the CUDA backend: skipped\n");
        return 77;
#endif
    }
    struct CMUnitTest tests[96];
    int n = 0;
    /* plain, reference, and reference with --moe-backend w4a8 (the FP8 tensor-core experts) */
    for (int i = 0; i < n_models; i++)
        for (int k = 0; k < 3; k++) {
            case_state *cs = &cases[n];
            cs->m = &models[i];
            cs->num = k == 0 ? DSV4_NUMERICS_PLAIN : DSV4_NUMERICS_REFERENCE;
            cs->mb = k == 2 ? DSV4_MOE_W4A8 : DSV4_MOE_AUTO;
            snprintf(cs->name, sizeof cs->name, "%.255s %s", models[i].name,
                     k == 0   ? "plain"
                     : k == 1 ? "reference"
                              : "reference w4a8");
            tests[n] = (struct CMUnitTest){.name = cs->name, .test_func = test_model, .initial_state = cs};
            n++;
        }
    return _cmocka_run_group_tests("test_gpu_vs_cpu", tests, (size_t)n, NULL, NULL);
}
