/*
 * check.c - `dsv4 check`: is a server up, and does it answer?
 *
 *   dsv4 check [--url http://127.0.0.1:30000] [--timeout S] [--api-key KEY] [--max-tokens N]
 *
 * Polls GET /health until it answers 200 (or --timeout seconds pass), then asks
 * "What is 17*23? Number only." at temperature 0 through /v1/chat/completions
 * and prints the answer and the latency. Exit status 0 when the server got
 * ready and answered, 1 otherwise (never ready, an HTTP error, a malformed
 * answer).
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "text/chat.h"

#define QUESTION "What is 17*23? Number only."

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t on_data(char *p, size_t sz, size_t n, void *user)
{
    dsv4_strbuf *b = user;
    if (b->len + sz * n > (16u << 20)) return 0; /* a check needs no more than this */
    return dsv4_strbuf_put(b, p, sz * n) ? 0 : sz * n;
}

/* One request; returns the HTTP status (0 when no connection) and the body in out. */
static long http(CURL *c, const char *url, const char *body, const char *api_key, double timeout, dsv4_strbuf *out)
{
    out->len = 0;
    struct curl_slist *h = NULL;
    char auth[1024];
    h = curl_slist_append(h, "Content-Type: application/json");
    if (api_key) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", api_key);
        h = curl_slist_append(h, auth);
    }
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    return code;
}

static void check_usage(FILE *f)
{
    fprintf(f, "usage: dsv4 check [--url http://127.0.0.1:30000] [--timeout S] [--api-key KEY] [--max-tokens N]\n"
               "Waits for GET /health to answer 200 (default timeout 300 s), asks \"" QUESTION "\" at\n"
               "temperature 0 and prints the answer and the latency. Exit 1 if never ready or on an error.\n");
}

int cmd_check(int argc, char **argv)
{
    const char *C = "check";
    const char *url = "http://127.0.0.1:30000", *api_key = getenv("DSV4_API_KEY");
    double timeout = 300;
    int max_tokens = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            check_usage(stdout);
            return 0;
        }
        if (!v) return cli_fail(C, "%s needs a value", a);
        i++;
        if (!strcmp(a, "--url")) url = v;
        else if (!strcmp(a, "--api-key")) api_key = v;
        else if (!strcmp(a, "--timeout")) {
            char *end;
            timeout = strtod(v, &end);
            if (*end || !(timeout > 0)) return cli_fail(C, "--timeout: '%s' is not a positive number of seconds", v);
        } else if (!strcmp(a, "--max-tokens")) {
            long long x;
            if (cli_parse_int(C, a, v, 1, 1 << 24, &x)) return 1;
            max_tokens = (int)x;
        } else {
            check_usage(stderr);
            return cli_fail(C, "unknown option %s", a);
        }
    }
    size_t ul = strlen(url);
    while (ul > 0 && url[ul - 1] == '/') ul--;
    char u[2048];
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) return cli_fail(C, "cannot initialise libcurl");
    CURL *c = curl_easy_init();
    dsv4_strbuf body = {0};
    int rc = 1;
    double t0 = now_s();
    long code = 0;
    snprintf(u, sizeof u, "%.*s/health", (int)ul, url);
    for (;;) {
        code = http(c, u, NULL, NULL, 5, &body);
        if (code == 200) break;
        if (now_s() - t0 > timeout) {
            if (code) cli_fail(C, "%s answered %ld for %.0f s (never ready)", u, code, timeout);
            else cli_fail(C, "no server at %.*s after %.0f s", (int)ul, url, timeout);
            goto out;
        }
        usleep(200 * 1000);
    }
    printf("ready after %.2f s\n", now_s() - t0);

    /* the served model's name */
    char model[256] = "";
    snprintf(u, sizeof u, "%.*s/v1/models", (int)ul, url);
    code = http(c, u, NULL, api_key, 30, &body);
    if (code != 200) {
        cli_fail(C, "GET /v1/models answered %ld: %.300s", code, body.p ? body.p : "");
        goto out;
    }
    json_t *j = json_loadb(body.p, body.len, 0, NULL);
    const char *id = json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0), "id"));
    if (id) snprintf(model, sizeof model, "%s", id);
    json_decref(j);

    json_t *req = json_pack("{s:s, s:[{s:s, s:s}], s:f, s:i}", "model", model, "messages", "role", "user", "content",
                            QUESTION, "temperature", 0.0, "max_tokens", max_tokens);
    char *rb = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    snprintf(u, sizeof u, "%.*s/v1/chat/completions", (int)ul, url);
    double t1 = now_s();
    code = http(c, u, rb, api_key, timeout, &body);
    double lat = now_s() - t1;
    free(rb);
    if (code != 200) {
        if (code) cli_fail(C, "POST /v1/chat/completions answered %ld: %.500s", code, body.p ? body.p : "");
        else cli_fail(C, "POST /v1/chat/completions: no answer within %.0f s", timeout);
        goto out;
    }
    j = json_loadb(body.p, body.len, JSON_ALLOW_NUL, NULL);
    json_t *choice = json_array_get(json_object_get(j, "choices"), 0);
    json_t *content = json_object_get(json_object_get(choice, "message"), "content");
    if (!json_is_string(content) && !json_is_null(content)) {
        cli_fail(C, "the answer has no choices[0].message.content: %.500s", body.p);
        json_decref(j);
        goto out;
    }
    long long toks = json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens"));
    printf("question: %s\n", QUESTION);
    printf("answer: %s\n", json_is_string(content) ? json_string_value(content) : "");
    printf("latency: %.3f s (%lld tokens, finish_reason %s, model %s)\n", lat, toks,
           json_string_value(json_object_get(choice, "finish_reason")) ?: "?", model);
    json_decref(j);
    rc = 0;
out:
    dsv4_strbuf_free(&body);
    curl_easy_cleanup(c);
    curl_global_cleanup();
    return rc;
}
