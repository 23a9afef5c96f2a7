/*
 * bench.c - `dsv4 bench`: a serving load generator in the manner of
 * sglang.bench_serving.
 *
 *   dsv4 bench [--url http://127.0.0.1:30000] [--concurrency 1,8,16] [--num-prompts N]
 *              [--input-len I --output-len O | --dataset FILE] [--seed S] [--json OUT] [--api-key KEY]
 *              [--temperature T] [--top-p P] [--shared-prefix N]
 *
 * For each concurrency level it sends --num-prompts streaming requests to
 * /v1/completions, keeping exactly that many in flight (a finished request is
 * replaced at once), and measures per request the time to the first token
 * (TTFT), the time per output token after the first (TPOT = (E2E - TTFT) /
 * (tokens - 1)), the gaps between streamed chunks (ITL) and the end-to-end
 * latency; per level the request and token throughputs over the level's wall
 * time. Random prompts are exactly I token ids (drawn from --vocab-range with
 * a seeded generator) and generate exactly O tokens (ignore_eos), as
 * bench_serving's random dataset does; a --dataset is JSON Lines of
 * {"prompt": "...", "output_len": N}. Requests are greedy unless --temperature
 * T > 0 (then each has seed S + its index, so a run repeats; --top-p P with
 * it), as a chat client's sampling would be. --shared-prefix N makes the
 * first N ids the same in every random prompt (a system prompt: what a
 * prefix cache serves); the server's usage.prompt_tokens_details says how
 * many prompt tokens it did not prefill (reported as cached). One libcurl multi handle drives every
 * connection from one thread; timestamps are taken in the write callback.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "text/chat.h"

#define MAX_LEVELS 32

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    char *body;        /* the request JSON */
    int input_len;     /* prompt tokens (known for random prompts, from usage otherwise) */
} bench_prompt;

typedef struct {
    CURL *h;
    int prompt;
    double t0, t_first, t_last;
    double *itl;       /* chunk gaps */
    int n_itl, cap_itl;
    int out_tokens, in_tokens, cached_tokens;
    int chunks_with_text;
    int error;
    char errmsg[256];
    dsv4_strbuf buf;   /* SSE bytes not yet split into events */
    struct curl_slist *hdrs;
} bench_conn;

typedef struct {
    double *v;
    int n, cap;
} vec;

static void vec_push(vec *a, double x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 256;
        a->v = realloc(a->v, (size_t)a->cap * sizeof(double));
    }
    a->v[a->n++] = x;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Percentile by linear interpolation between closest ranks (numpy's default). */
static double pct(vec *a, double p)
{
    if (!a->n) return NAN;
    qsort(a->v, (size_t)a->n, sizeof(double), cmp_d);
    double r = p / 100.0 * (a->n - 1);
    int lo = (int)floor(r), hi = (int)ceil(r);
    return a->v[lo] + (a->v[hi] - a->v[lo]) * (r - lo);
}

static double mean(const vec *a)
{
    double s = 0;
    for (int i = 0; i < a->n; i++) s += a->v[i];
    return a->n ? s / a->n : NAN;
}

/* One SSE event ("data: {...}"). */
static void on_event(bench_conn *c, const char *data, size_t n)
{
    if (n == 6 && !memcmp(data, "[DONE]", 6)) return;
    json_t *j = json_loadb(data, n, JSON_ALLOW_NUL, NULL); /* a token's text may hold U+0000 */
    if (!j) return;
    json_t *err = json_object_get(j, "error");
    if (err) {
        c->error = 1;
        snprintf(c->errmsg, sizeof c->errmsg, "%s", json_string_value(json_object_get(err, "message")) ?: "error");
    }
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    const char *text = json_string_value(json_object_get(ch, "text"));
    if (!text) text = json_string_value(json_object_get(json_object_get(ch, "delta"), "content"));
    if (text && *text) {
        double t = now_s();
        if (!c->chunks_with_text) c->t_first = t;
        else {
            if (c->n_itl == c->cap_itl) {
                c->cap_itl = c->cap_itl ? c->cap_itl * 2 : 64;
                c->itl = realloc(c->itl, (size_t)c->cap_itl * sizeof(double));
            }
            c->itl[c->n_itl++] = t - c->t_last;
        }
        c->t_last = t;
        c->chunks_with_text++;
    }
    json_t *u = json_object_get(j, "usage");
    if (json_is_object(u)) {
        c->out_tokens = (int)json_integer_value(json_object_get(u, "completion_tokens"));
        c->in_tokens = (int)json_integer_value(json_object_get(u, "prompt_tokens"));
        c->cached_tokens =
            (int)json_integer_value(json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens"));
    }
    json_decref(j);
}

static size_t on_data(char *p, size_t sz, size_t n, void *user)
{
    bench_conn *c = user;
    size_t len = sz * n;
    if (dsv4_strbuf_put(&c->buf, p, len)) return 0;
    /* split complete events */
    size_t start = 0;
    for (;;) {
        char *end = c->buf.len > start ? strstr(c->buf.p + start, "\n\n") : NULL;
        if (!end) break;
        const char *line = c->buf.p + start;
        size_t ll = (size_t)(end - line);
        if (ll >= 6 && !memcmp(line, "data: ", 6)) on_event(c, line + 6, ll - 6);
        else if (ll && line[0] == '{') on_event(c, line, ll); /* a plain JSON error body */
        start = (size_t)(end - c->buf.p) + 2;
    }
    if (start) {
        memmove(c->buf.p, c->buf.p + start, c->buf.len - start);
        c->buf.len -= start;
        c->buf.p[c->buf.len] = 0;
    }
    if (c->buf.len > (1u << 20)) return 0; /* not an event stream */
    return len;
}

typedef struct {
    int concurrency, completed, failed;
    double duration;
    long long in_tokens, out_tokens, cached_tokens;
    vec ttft, tpot, itl, e2e;
    char first_error[256];
} bench_level;

static void start_conn(CURLM *m, bench_conn *c, const char *url, const bench_prompt *p, int idx, const char *auth)
{
    c->prompt = idx;
    c->t0 = now_s();
    c->t_first = c->t_last = 0;
    c->n_itl = 0;
    c->out_tokens = 0;
    c->in_tokens = p->input_len;
    c->cached_tokens = 0;
    c->chunks_with_text = 0;
    c->error = 0;
    c->errmsg[0] = 0;
    c->buf.len = 0;
    if (!c->h) c->h = curl_easy_init();
    else curl_easy_reset(c->h);
    if (!c->hdrs) {
        c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
        if (auth) c->hdrs = curl_slist_append(c->hdrs, auth);
    }
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdrs);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, p->body);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->h, CURLOPT_PRIVATE, c);
    curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
    curl_multi_add_handle(m, c->h);
}

static void run_level(const char *url, const bench_prompt *prompts, int n_prompts, int conc, const char *auth,
                      bench_level *L)
{
    memset(L, 0, sizeof *L);
    L->concurrency = conc;
    CURLM *m = curl_multi_init();
    bench_conn *conns = calloc((size_t)conc, sizeof *conns);
    int next = 0, running = 0;
    double t0 = now_s();
    for (int k = 0; k < conc && next < n_prompts; k++, next++, running++)
        start_conn(m, &conns[k], url, &prompts[next], next, auth);
    while (running > 0) {
        int still;
        curl_multi_perform(m, &still);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            bench_conn *c;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
            long code = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
            double t_end = now_s();
            int ok = msg->data.result == CURLE_OK && code == 200 && !c->error && c->chunks_with_text > 0;
            if (ok) {
                L->completed++;
                double ttft = c->t_first - c->t0, e2e = t_end - c->t0;
                vec_push(&L->ttft, ttft);
                vec_push(&L->e2e, e2e);
                int out = c->out_tokens > 0 ? c->out_tokens : c->chunks_with_text;
                if (out > 1) vec_push(&L->tpot, (e2e - ttft) / (out - 1));
                for (int i = 0; i < c->n_itl; i++) vec_push(&L->itl, c->itl[i]);
                L->out_tokens += out;
                L->in_tokens += c->in_tokens;
                L->cached_tokens += c->cached_tokens;
            } else {
                L->failed++;
                if (!L->first_error[0])
                    snprintf(L->first_error, sizeof L->first_error, "%s",
                             c->errmsg[0] ? c->errmsg
                             : msg->data.result != CURLE_OK ? curl_easy_strerror(msg->data.result)
                             : code != 200 ? "HTTP error"
                                           : "no tokens");
                if (code != 200 && code && !c->errmsg[0])
                    snprintf(L->first_error, sizeof L->first_error, "HTTP %ld: %.200s", code,
                             c->buf.p ? c->buf.p : "");
            }
            curl_multi_remove_handle(m, msg->easy_handle);
            running--;
            if (next < n_prompts) {
                start_conn(m, c, url, &prompts[next], next, auth);
                next++;
                running++;
            }
        }
        if (running > 0) curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    L->duration = now_s() - t0;
    for (int k = 0; k < conc; k++) {
        if (conns[k].h) curl_easy_cleanup(conns[k].h);
        curl_slist_free_all(conns[k].hdrs);
        free(conns[k].itl);
        dsv4_strbuf_free(&conns[k].buf);
    }
    free(conns);
    curl_multi_cleanup(m);
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static json_t *stats_json(vec *a, double scale)
{
    return json_pack("{s:f, s:f, s:f, s:f}", "mean", mean(a) * scale, "p50", pct(a, 50) * scale, "p90",
                     pct(a, 90) * scale, "p99", pct(a, 99) * scale);
}

/* A drawing request's top_p (when below 1) and seed. */
static void sampling_of(json_t *req, double temperature, double top_p, uint64_t seed)
{
    if (temperature <= 0) return;
    if (top_p < 1) json_object_set_new(req, "top_p", json_real(top_p));
    json_object_set_new(req, "seed", json_integer((json_int_t)(seed & 0x7fffffffffffffffull)));
}

static void bench_usage(FILE *f)
{
    fprintf(f, "usage: dsv4 bench [--url http://127.0.0.1:30000] [--concurrency 1,8,16] [--num-prompts N]\n"
               "                  [--input-len I --output-len O | --dataset FILE.jsonl] [--seed S] [--json OUT]\n"
               "                  [--api-key KEY] [--model NAME] [--vocab-range LO,HI] [--temperature T] [--top-p P]\n"
               "                  [--shared-prefix N]\n"
               "Streams --num-prompts requests (default 4 x the concurrency, at least 16) per concurrency level to\n"
               "/v1/completions and reports TTFT, TPOT, ITL (mean/p50/p90/p99) and throughput. Random prompts are\n"
               "I token ids (default 128) from [LO, HI) (default 20,500) generating exactly O tokens (default 64).\n"
               "Greedy unless --temperature T > 0 (each request seeded with S + its index; --top-p P beside it).\n"
               "--shared-prefix N: the first N of the I ids the same in every prompt; prompt tokens the server\n"
               "took from its prefix cache are reported as cached.\n");
}

/* A count option: an integer in [lo, 2^24]; 1 (the exit code) after one line when it is not. */
static int parse_count(const char *C, const char *opt, const char *v, long long lo, int *out)
{
    long long x;
    if (cli_parse_int(C, opt, v, lo, 1 << 24, &x)) return 1;
    *out = (int)x;
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    const char *C = "bench";
    const char *url = "http://127.0.0.1:30000", *conc_s = "1,8,16", *dataset = NULL, *json_out = NULL;
    const char *api_key = getenv("DSV4_API_KEY"), *model = NULL;
    int num_prompts = 0, in_len = 128, out_len = 64, vlo = 20, vhi = 500, shared = 0;
    double temperature = 0.0, top_p = 1.0;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            bench_usage(stdout);
            return 0;
        }
        if (!v) return cli_fail(C, "%s needs a value", a);
        i++;
        int bad = 0;
        if (!strcmp(a, "--url")) url = v;
        else if (!strcmp(a, "--concurrency")) conc_s = v;
        else if (!strcmp(a, "--num-prompts"))
            bad = parse_count(C, a, v, 0, &num_prompts);
        else if (!strcmp(a, "--input-len"))
            bad = parse_count(C, a, v, 1, &in_len);
        else if (!strcmp(a, "--output-len"))
            bad = parse_count(C, a, v, 1, &out_len);
        else if (!strcmp(a, "--shared-prefix"))
            bad = parse_count(C, a, v, 0, &shared);
        else if (!strcmp(a, "--dataset")) dataset = v;
        else if (!strcmp(a, "--seed")) {
            if (cli_parse_seed(C, a, v, &seed)) return 1;
        } else if (!strcmp(a, "--temperature")) {
            char *end;
            temperature = strtod(v, &end);
            if (*end || !(temperature >= 0 && temperature <= 2))
                return cli_fail(C, "--temperature: a number in [0, 2], not '%s'", v);
        } else if (!strcmp(a, "--top-p")) {
            char *end;
            top_p = strtod(v, &end);
            if (*end || !(top_p > 0 && top_p <= 1)) return cli_fail(C, "--top-p: a number in (0, 1], not '%s'", v);
        } else if (!strcmp(a, "--json"))
            json_out = v;
        else if (!strcmp(a, "--api-key")) api_key = v;
        else if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--vocab-range")) {
            if (sscanf(v, "%d,%d", &vlo, &vhi) != 2 || vlo < 0 || vhi <= vlo)
                return cli_fail(C, "--vocab-range: expected LO,HI with 0 <= LO < HI");
        } else {
            bench_usage(stderr);
            return cli_fail(C, "unknown option %s", a);
        }
        if (bad) return 1;
    }
    if (in_len < 1 || out_len < 1) return cli_fail(C, "--input-len and --output-len must be positive");
    if (shared > in_len) return cli_fail(C, "--shared-prefix %d: longer than --input-len %d", shared, in_len);
    if (shared && dataset) return cli_fail(C, "--shared-prefix: random prompts only, not with --dataset");
    int levels[MAX_LEVELS], n_levels = 0;
    for (const char *p = conc_s; *p;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < 1 || x > 4096 || n_levels == MAX_LEVELS)
            return cli_fail(C, "--concurrency: expected a list like 1,8,16 (each 1..4096, at most %d)", MAX_LEVELS);
        levels[n_levels++] = (int)x;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return cli_fail(C, "--concurrency: unexpected '%c'", *end);
    }
    size_t ul = strlen(url);
    while (ul > 0 && url[ul - 1] == '/') ul--;
    char endpoint[2048], auth[1024], *authp = NULL;
    snprintf(endpoint, sizeof endpoint, "%.*s/v1/completions", (int)ul, url);
    if (api_key) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", api_key);
        authp = auth;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);

    /* the model name, unless given */
    char model_buf[256] = "";
    if (!model) {
        CURL *h = curl_easy_init();
        dsv4_strbuf b = {0};
        char u[2100];
        snprintf(u, sizeof u, "%.*s/v1/models", (int)ul, url);
        struct curl_slist *hd = authp ? curl_slist_append(NULL, authp) : NULL;
        curl_easy_setopt(h, CURLOPT_URL, u);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, (curl_write_callback)NULL);
        FILE *mem = open_memstream(&b.p, &b.len);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
        CURLcode cr = curl_easy_perform(h);
        fclose(mem);
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(h);
        curl_slist_free_all(hd);
        if (cr != CURLE_OK || code != 200) {
            free(b.p);
            curl_global_cleanup();
            return cli_fail(C, "GET %s failed (%s, HTTP %ld): is the server up? (dsv4 check --url %.*s)", u,
                            curl_easy_strerror(cr), code, (int)ul, url);
        }
        json_t *j = json_loadb(b.p, b.len, 0, NULL);
        const char *id = json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0), "id"));
        snprintf(model_buf, sizeof model_buf, "%s", id ? id : "");
        json_decref(j);
        free(b.p);
        model = model_buf;
    }

    /* prompts: from the dataset, or random ids */
    bench_prompt *prompts = NULL;
    int n_prompts = 0, max_level = 0;
    for (int i = 0; i < n_levels; i++)
        if (levels[i] > max_level) max_level = levels[i];
    if (num_prompts <= 0) num_prompts = max_level * 4 > 16 ? max_level * 4 : 16;
    uint64_t rs = seed;
    if (dataset) {
        FILE *f = fopen(dataset, "r");
        if (!f) return cli_fail(C, "--dataset %s: cannot open", dataset);
        char *line = NULL;
        size_t cap = 0;
        int lineno = 0;
        while (getline(&line, &cap, f) > 0 && n_prompts < num_prompts) {
            lineno++;
            json_error_t je;
            json_t *j = json_loads(line, 0, &je);
            const char *text = json_string_value(json_object_get(j, "prompt"));
            if (!text) {
                json_decref(j);
                if (line[strspn(line, " \t\r\n")] == 0) continue;
                free(line);
                fclose(f);
                return cli_fail(C, "--dataset %s:%d: expected {\"prompt\": \"...\", \"output_len\": N}", dataset,
                                lineno);
            }
            json_t *ol = json_object_get(j, "output_len");
            int o = json_is_integer(ol) ? (int)json_integer_value(ol) : out_len;
            json_t *req = json_pack("{s:s, s:s, s:i, s:b, s:b, s:{s:b}, s:f}", "model", model, "prompt", text,
                                    "max_tokens", o, "ignore_eos", 1, "stream", 1, "stream_options", "include_usage", 1,
                                    "temperature", temperature);
            sampling_of(req, temperature, top_p, seed + (uint64_t)n_prompts);
            prompts = realloc(prompts, (size_t)(n_prompts + 1) * sizeof *prompts);
            prompts[n_prompts].body = json_dumps(req, JSON_COMPACT);
            prompts[n_prompts].input_len = 0;
            n_prompts++;
            json_decref(req);
            json_decref(j);
        }
        free(line);
        fclose(f);
        if (!n_prompts) return cli_fail(C, "--dataset %s: no prompts", dataset);
        if (n_prompts < num_prompts) {
            /* cycle through the dataset */
            prompts = realloc(prompts, (size_t)num_prompts * sizeof *prompts);
            for (int i = n_prompts; i < num_prompts; i++) {
                prompts[i].body = strdup(prompts[i % n_prompts].body);
                prompts[i].input_len = 0;
            }
            n_prompts = num_prompts;
        }
    } else {
        prompts = calloc((size_t)num_prompts, sizeof *prompts);
        uint64_t ps = rs ^ 0x5a5a5a5a5a5a5a5aull; /* the shared prefix's own stream: the same for every prompt */
        json_t *prefix = json_array();
        for (int t = 0; t < shared; t++)
            json_array_append_new(prefix, json_integer(vlo + (json_int_t)(rng_next(&ps) % (uint64_t)(vhi - vlo))));
        for (int i = 0; i < num_prompts; i++) {
            json_t *ids = json_deep_copy(prefix);
            for (int t = shared; t < in_len; t++)
                json_array_append_new(ids, json_integer(vlo + (json_int_t)(rng_next(&rs) % (uint64_t)(vhi - vlo))));
            json_t *req = json_pack("{s:s, s:o, s:i, s:b, s:b, s:{s:b}, s:f}", "model", model, "prompt", ids,
                                    "max_tokens", out_len, "ignore_eos", 1, "stream", 1, "stream_options",
                                    "include_usage", 1, "temperature", temperature);
            sampling_of(req, temperature, top_p, seed + (uint64_t)i);
            prompts[i].body = json_dumps(req, JSON_COMPACT);
            prompts[i].input_len = in_len;
            json_decref(req);
        }
        json_decref(prefix);
        n_prompts = num_prompts;
    }

    printf("dsv4 bench: %s, model %s, %d prompts per level, %s\n", endpoint, model, n_prompts,
           dataset ? dataset : "random prompts");
    if (!dataset)
        printf("            input %d tokens (%d of them shared), output %d tokens, seed %llu\n", in_len, shared,
               out_len, (unsigned long long)seed);
    if (temperature > 0) printf("            temperature %g, top_p %g\n", temperature, top_p);
    printf("\n%5s %5s %5s %8s %8s %10s %10s | %-26s | %-26s | %-26s\n", "conc", "ok", "fail", "time s", "req/s",
           "out tok/s", "in tok/s", "TTFT ms  p50 / p90 / p99", "TPOT ms  p50 / p90 / p99",
           "ITL ms  p50 / p90 / p99");
    json_t *results = json_array();
    int any_fail = 0;
    for (int li = 0; li < n_levels; li++) {
        bench_level L;
        run_level(endpoint, prompts, n_prompts, levels[li], authp, &L);
        double d = L.duration > 0 ? L.duration : 1e-9;
        printf("%5d %5d %5d %8.2f %8.2f %10.1f %10.1f | %7.1f / %7.1f / %7.1f | %7.2f / %7.2f / %7.2f | %7.2f / "
               "%7.2f / %7.2f\n",
               L.concurrency, L.completed, L.failed, L.duration, L.completed / d, L.out_tokens / d, L.in_tokens / d,
               pct(&L.ttft, 50) * 1e3, pct(&L.ttft, 90) * 1e3, pct(&L.ttft, 99) * 1e3, pct(&L.tpot, 50) * 1e3,
               pct(&L.tpot, 90) * 1e3, pct(&L.tpot, 99) * 1e3, pct(&L.itl, 50) * 1e3, pct(&L.itl, 90) * 1e3,
               pct(&L.itl, 99) * 1e3);
        fflush(stdout);
        if (L.cached_tokens)
            printf("%5s cached: %lld of %lld prompt tokens (%.1f %%) came from the server's prefix cache\n", "",
                   L.cached_tokens, L.in_tokens,
                   100.0 * (double)L.cached_tokens / (double)(L.in_tokens ? L.in_tokens : 1));
        if (L.failed) {
            any_fail = 1;
            fprintf(stderr, "dsv4 bench: %d requests failed at concurrency %d; first error: %s\n", L.failed,
                    L.concurrency, L.first_error);
        }
        json_t *r = json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:I, s:I, s:o, s:o, s:o, s:o}", "concurrency",
                              L.concurrency, "completed", L.completed, "failed", L.failed, "duration_s", L.duration,
                              "request_throughput", L.completed / d, "output_token_throughput", L.out_tokens / d,
                              "input_token_throughput", L.in_tokens / d, "total_input_tokens",
                              (json_int_t)L.in_tokens, "total_output_tokens", (json_int_t)L.out_tokens, "ttft_ms",
                              stats_json(&L.ttft, 1e3), "tpot_ms", stats_json(&L.tpot, 1e3), "itl_ms",
                              stats_json(&L.itl, 1e3), "e2e_ms", stats_json(&L.e2e, 1e3));
        json_object_set_new(r, "total_cached_tokens", json_integer((json_int_t)L.cached_tokens));
        json_array_append_new(results, r);
        free(L.ttft.v);
        free(L.tpot.v);
        free(L.itl.v);
        free(L.e2e.v);
    }
    int rc = any_fail;
    if (json_out) {
        time_t t = time(NULL);
        char date[64];
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
        dsv4_strbuf cmd = {0};
        for (int i = 0; i < argc; i++) {
            if (i) dsv4_strbuf_put(&cmd, " ", 1);
            dsv4_strbuf_put(&cmd, argv[i], strlen(argv[i]));
        }
        json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:s?, s:i, s:i, s:i, s:I, s:o}", "date", date, "command",
                                 cmd.p ? cmd.p : "bench", "url", endpoint, "model", model, "dataset", dataset,
                                 "num_prompts", n_prompts, "input_len", dataset ? 0 : in_len, "output_len", out_len,
                                 "seed", (json_int_t)seed, "results", results);
        json_object_set_new(root, "temperature", json_real(temperature));
        json_object_set_new(root, "shared_prefix", json_integer(dataset ? 0 : shared));
        json_object_set_new(root, "top_p", json_real(top_p));
        dsv4_strbuf_free(&cmd);
        if (json_dump_file(root, json_out, JSON_INDENT(2)) != 0) rc = cli_fail(C, "cannot write %s", json_out);
        else printf("\nresults written to %s\n", json_out);
        json_decref(root);
    } else {
        json_decref(results);
    }
    for (int i = 0; i < n_prompts; i++) free(prompts[i].body);
    free(prompts);
    curl_global_cleanup();
    return rc;
}
