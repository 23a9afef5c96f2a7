/*
 * serve.c - `dsv4 serve`: the OpenAI-compatible server.
 *
 *   dsv4 serve [-m DIR] [--host 127.0.0.1] [--port 30000] [--max-running-requests N] [--max-queue N]
 *              [--context-length N] [--mem-fraction F] [--chunked-prefill-size N] [--backend auto|cpu|cuda]
 *              [--moe-backend auto|w4a16|w4a8|w4a4] [--api-key KEY] [--numerics reference|plain] [--threads N]
 *              [--cuda-graphs on|off] [--ep N] [--tokenizer FILE] [--fill-random]
 *              [--served-model-name NAME] [--max-body-bytes N] [--request-timeout S] [--shutdown-timeout S]
 *              [--idle-timeout S] [--overlap on|off] [--prefix-cache auto|on|off] [--prefix-cache-entries N]
 *              [--allowed-origins LIST]
 *
 * Start-up order: options, then the HTTP listener (so /health answers 503
 * while loading), the tokenizer, the engine with its KV pool, the scheduler;
 * each phase is logged with its duration and one readiness line closes the
 * start-up. SIGINT / SIGTERM start a graceful shutdown: new requests get 503,
 * requests in flight finish (up to --shutdown-timeout), then everything stops;
 * a second signal cancels what is left at once.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/scheduler.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("dsv4 serve: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void serve_usage(FILE *f)
{
    fprintf(
        f,
        "usage: dsv4 serve [-m DIR] [--host 127.0.0.1] [--port 30000] [--max-running-requests N] [--max-queue N]\n"
        "                  [--context-length N] [--mem-fraction F] [--chunked-prefill-size N]\n"
        "                  [--backend auto|cpu|cuda] [--moe-backend auto|w4a16|w4a8|w4a4] [--api-key KEY]\n"
        "                  [--numerics reference|plain] [--threads N] [--cuda-graphs on|off] [--ep N] [--tune FILE]\n"
        "                  [--served-model-name NAME] [--tokenizer FILE] [--fill-random] [--prefill-gemm "
        "ours|cublaslt]\n"
        "                  [--max-body-bytes N] [--request-timeout S] [--shutdown-timeout S] [--idle-timeout S]\n"
        "                  [--overlap on|off] [--prefix-cache auto|on|off] [--prefix-cache-entries N]\n"
        "                  [--allowed-origins LIST]\n"
        "\n"
        "Serves the OpenAI API (/v1/chat/completions, /v1/completions, /v1/models) plus /health and /metrics.\n"
        "Defaults: -m %s, 16 running requests, a queue of 256, context 4096, 2048 prefill tokens per step,\n"
        "KV pool from --mem-fraction 0.5 of the memory left after the weights and activations (the GPU's on\n"
        "the GPU; capped at what the running requests can use). --tokenizer: a tokenizer.json other than the\n"
        "model folder's; --fill-random: serve a sparse synthetic checkpoint (benchmarks); --tune: kernel choices\n"
        "from `dsv4 tune` (default $DSV4_TUNE, else built in); --overlap off: finish each step before the next\n"
        "is built (default on: the next is submitted first, following the picks on the device);\n"
        "--prefill-gemm cublaslt: FP8 linears of prefill steps through cuBLASLt (faster, other bits);\n"
        "--prefix-cache: start a prompt from the kept state of an earlier one that it begins with (auto, the\n"
        "default: on), --prefix-cache-entries states kept\n"
        "(default twice --max-running-requests); --idle-timeout: seconds a silent connection stays open (default\n"
        "60, 0: never; not while its answer is generated); --allowed-origins: comma-separated origins a browser\n"
        "page may call from (CORS; default *: any; an empty value turns CORS off). See docs/SERVER.md.\n",
        DSV4_DEFAULT_MODEL);
}


int cmd_serve(int argc, char **argv)
{
    const char *C = "serve";
    double t_start = now_s();
    dsv4_engine_opts eo;
    dsv4_engine_opts_default(&eo);
    eo.model_dir = DSV4_DEFAULT_MODEL;
    srv_http_opts ho = {
        .host = "127.0.0.1", .port = 30000, .max_body = 8u << 20, .max_connections = 512, .allowed_origins = "*"};
    long long max_running = 16, max_queue = 256, ctx = 4096, chunk = 2048, threads = 0, max_body = 8 << 20;
    double mem_fraction = 0.5, shutdown_timeout = 30, request_timeout = 0, idle_timeout = 60;
    int overlap = 1, prefix = -1; /* prefix: -1 auto, 0 off, 1 on */
    long long prefix_entries = -1;
    const char *served_name = NULL, *tokenizer = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            serve_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--fill-random")) { /* a flag: benchmarking a sparse synthetic checkpoint */
            eo.fill_random = 1;
            continue;
        }
        if (!v) return cli_fail(C, "%s needs a value (see dsv4 serve --help)", a);
        i++;
        int bad = 0;
        long long port = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) eo.model_dir = v;
        else if (!strcmp(a, "--host")) ho.host = v;
        else if (!strcmp(a, "--port")) {
            bad = cli_parse_int(C, a, v, 0, 65535, &port);
            ho.port = (int)port;
        } else if (!strcmp(a, "--max-running-requests")) bad = cli_parse_int(C, a, v, 1, 4096, &max_running);
        else if (!strcmp(a, "--max-queue")) bad = cli_parse_int(C, a, v, 0, 1 << 20, &max_queue);
        else if (!strcmp(a, "--context-length")) bad = cli_parse_int(C, a, v, 16, 1 << 24, &ctx);
        else if (!strcmp(a, "--chunked-prefill-size")) bad = cli_parse_int(C, a, v, 1, 1 << 20, &chunk);
        else if (!strcmp(a, "--mem-fraction")) bad = cli_parse_double(C, a, v, 0.01, 0.95, &mem_fraction);
        else if (!strcmp(a, "--threads")) bad = cli_parse_int(C, a, v, 0, 4096, &threads);
        else if (!strcmp(a, "--api-key")) ho.api_key = v;
        else if (!strcmp(a, "--allowed-origins"))
            ho.allowed_origins = v;
        else if (!strcmp(a, "--served-model-name")) served_name = v;
        else if (!strcmp(a, "--tokenizer")) tokenizer = v;
        else if (!strcmp(a, "--max-body-bytes")) bad = cli_parse_int(C, a, v, 1024, 1LL << 32, &max_body);
        else if (!strcmp(a, "--request-timeout")) bad = cli_parse_double(C, a, v, 0, 1e7, &request_timeout);
        else if (!strcmp(a, "--shutdown-timeout")) bad = cli_parse_double(C, a, v, 0, 1e5, &shutdown_timeout);
        else if (!strcmp(a, "--idle-timeout"))
            bad = cli_parse_double(C, a, v, 0, 1e6, &idle_timeout);
        else if (!strcmp(a, "--overlap")) {
            if (strcmp(v, "on") && strcmp(v, "off")) return cli_fail(C, "--overlap: on or off, not '%s'", v);
            overlap = !strcmp(v, "on");
        } else if (!strcmp(a, "--prefix-cache")) {
            if (strcmp(v, "auto") && strcmp(v, "on") && strcmp(v, "off"))
                return cli_fail(C, "--prefix-cache: auto, on or off, not '%s'", v);
            prefix = !strcmp(v, "auto") ? -1 : !strcmp(v, "on");
        } else if (!strcmp(a, "--prefix-cache-entries")) {
            bad = cli_parse_int(C, a, v, 1, 1 << 16, &prefix_entries);
        } else if ((bad = cli_engine_option(C, a, v, &eo)) >= 0) {
        } else {
            return cli_fail(C, "unknown option %s (see dsv4 serve --help)", a);
        }
        if (bad) return 1;
    }
    if (ho.api_key && !ho.api_key[0]) return cli_fail(C, "--api-key: must not be empty");
    ho.max_body = (size_t)max_body;
    ho.request_timeout = request_timeout;
    ho.idle_timeout = idle_timeout > 0 && idle_timeout < 1 ? 1 : (unsigned)idle_timeout; /* MHD counts seconds */
    /* Refused before the listener starts when it is certain; with --backend
     * auto the engine decides once it knows the device. */
    if (eo.moe_backend != DSV4_MOE_AUTO && eo.backend == DSV4_BACKEND_CPU)
        return cli_fail(C, "--moe-backend: the cpu backend has one MoE path; use --moe-backend auto");

    /* Signals go to sigwait below, never to a worker thread: block them before any thread starts. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[1024];
    srv_metrics *metrics = srv_metrics_create();
    if (!metrics) return cli_fail(C, "out of memory");
    double t0 = now_s();
    srv_http *http = NULL;
    if (srv_http_start(&ho, metrics, &http, err, sizeof err)) {
        srv_metrics_free(metrics);
        return cli_fail(C, "%s", err);
    }
    logf_("listening on %s:%d (health: loading) [%.3f s]", ho.host, srv_http_port(http), now_s() - t0);

    dsv4_tokenizer *tok = NULL;
    dsv4_engine *e = NULL;
    srv_sched *sched = NULL;
    int rc = 1;
    char path[4096];
    t0 = now_s();
    if (cli_open_tokenizer(C, eo.model_dir, tokenizer, &tok, path, sizeof path)) goto out;
    logf_("tokenizer %s: %d ids [%.3f s]", path, (int)dsv4_tokenizer_vocab_size(tok), now_s() - t0);

    t0 = now_s();
    eo.max_seqs = (int)max_running;
    eo.max_ctx = ctx;
    /* KV pool: a fraction of the memory left once the weights and activations are in place (the GPU's on
     * the GPU), never more than every running request at full context can use */
    eo.pool_tokens = 0;
    eo.pool_fraction = mem_fraction;
    eo.max_batch_tokens = chunk + max_running;
    eo.n_threads = (int)threads;
    eo.verbose = 1;
    /* auto: on, on every backend (the GPU's path - the same engine bookkeeping, the copies on the stream - ran on
     * an H200 in s63's pfx/: test_prefix and its memcheck, on against off through the server) */
    if (prefix == -1) prefix = 1;
    /* states kept by the prefix cache: their memory is allocated at the first one */
    eo.max_snaps = prefix == 0 ? 0 : (int)(prefix_entries > 0 ? prefix_entries : 2 * max_running);
    if (dsv4_engine_open(&eo, &e, err, sizeof err)) {
        cli_fail(C, "%s", err);
        goto out;
    }
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    logf_("engine %s: %d layers, vocabulary %d, backend %s, context %lld, KV pool %lld pages of %d tokens "
          "(%.1f KiB each, cached rows %s%s; --mem-fraction %.2f, capped at %lld running x %lld context) [%.3f s]",
          eo.model_dir, info.n_layers, info.vocab_size, info.backend, (long long)info.max_ctx,
          (long long)dsv4_pages_total(e), dsv4_page_tokens(e), (double)info.kv_page_bytes / 1024.0,
          info.kv_bf16_rows ? "BF16" : "FP32", info.kv_fp4_keys ? ", indexer keys FP4" : "", mem_fraction, max_running,
          ctx, now_s() - t0);
    if (dsv4_tokenizer_vocab_size(tok) > info.vocab_size)
        logf_("warning: the tokenizer has %d ids, the model %d: ids beyond the model are never generated",
              (int)dsv4_tokenizer_vocab_size(tok), info.vocab_size);

    /* On a GPU, one prefill of a chunk's tokens into a sequence freed after it: what a process pays once (kernels
     * and libraries loaded at their first launch, scratch grown; with --prefill-gemm cublaslt its algorithm
     * choices) is paid here, not in the first request's TTFT (PERFORMANCE v63: a 4k prefill on 8 Flash layers
     * ~6 ms slower cold, 25-60 ms with cuBLASLt). The CPU has no such costs worth a prefill. */
    if (strcmp(info.backend, "cpu")) {
        t0 = now_s();
        const int wn = (int)(chunk < ctx - 1 ? chunk : ctx - 1);
        int32_t *ids = wn >= 1 ? calloc((size_t)wn, sizeof *ids) : NULL;
        int ws = -1;
        dsv4_status st = DSV4_ERR_NOMEM;
        if (!ids)
            snprintf(err, sizeof err, "%s", wn < 1 ? "a context of one token" : "no memory");
        else if ((st = dsv4_seq_create(e, &ws, err, sizeof err)) == DSV4_OK) {
            dsv4_batch_entry we = {.seq = ws, .n_tokens = wn, .tokens = ids};
            st = dsv4_step(e, &we, 1, err, sizeof err);
            dsv4_seq_free(e, ws);
        }
        if (st == DSV4_OK)
            logf_("warm-up: a %d-token prefill [%.3f s]", wn, now_s() - t0);
        else
            logf_("warning: the warm-up prefill did not run (%s): the first request pays its one-off costs", err);
        free(ids);
    }

    const int prefix_on = prefix == 1 && info.max_snaps > 0;
    if (prefix_on)
        logf_("prefix cache: up to %d kept states of %.2f MiB each (allocated at the first), pages on demand",
              info.max_snaps, (double)info.state_slot_bytes / 1048576.0);
    else
        logf_("prefix cache: off");
    t0 = now_s();
    srv_sched_opts so = {.max_running = (int)max_running,
                         .max_queue = (int)max_queue,
                         .chunked_prefill = (int)chunk,
                         .pages_total = dsv4_pages_total(e),
                         .overlap = overlap,
                         .prefix_cache = prefix_on};
    if (srv_sched_start(e, tok, &so, metrics, &sched, err, sizeof err)) {
        cli_fail(C, "%s", err);
        goto out;
    }
    logf_("scheduler: %lld running, queue %lld, %lld prefill tokens per step, steps %s [%.3f s]", max_running,
          max_queue, chunk, overlap ? "overlapped" : "one at a time", now_s() - t0);

    const char *name = served_name;
    if (!name) {
        name = strrchr(eo.model_dir, '/');
        name = name && name[1] ? name + 1 : eo.model_dir;
    }
    srv_http_ready(http, name, tok, sched, &info);
    logf_("ready: http://%s%s%s:%d model %s, backend %s, started in %.3f s", strchr(ho.host, ':') ? "[" : "",
          ho.host, strchr(ho.host, ':') ? "]" : "", srv_http_port(http), name, info.backend, now_s() - t_start);

    int sig = 0;
    sigwait(&sigs, &sig);
    logf_("%s: shutting down (finishing %s requests in flight, up to %.0f s; signal again to cancel them)",
          sig == SIGINT ? "SIGINT" : "SIGTERM", "the", shutdown_timeout);
    srv_http_draining(http);
    srv_sched_drain(sched);
    /* wait for in-flight requests; a second signal or the timeout cancels them */
    double t_end = now_s() + shutdown_timeout, t_flush = 0;
    for (;;) {
        int running, waiting;
        srv_sched_counts(sched, &running, &waiting);
        if (running + waiting == 0) {
            /* the answers' last bytes ([DONE], the JSON body) follow the scheduler's end of each request: wait
               for them, a few seconds at most (a client that stopped reading holds its connection) */
            if (t_flush == 0) t_flush = now_s() + 5;
            if (srv_http_answering(http) == 0 || now_s() > t_flush) break;
        }
        struct timespec ts = {0, 20 * 1000000L};
        siginfo_t si;
        int got = sigtimedwait(&sigs, &si, &ts);
        if (got > 0 && running + waiting == 0) break;
        if (got > 0 || now_s() > t_end) {
            logf_("cancelling %d running and %d waiting requests", running, waiting);
            srv_sched_cancel_all(sched);
            t_end = now_s() + 3600;
        }
    }
    rc = 0;
out:
    t0 = now_s();
    srv_http_stop(http); /* joins the connection threads: every request has finished by now */
    srv_sched_stop(sched);
    dsv4_engine_close(e);
    dsv4_tokenizer_close(tok);
    srv_metrics_free(metrics);
    if (rc == 0) logf_("stopped [%.3f s]", now_s() - t0);
    return rc;
}
