/*
 * eval_chat.c - greedy accuracy of a chat model on a question set, by dsv4.
 *
 *   build/eval_chat -m DIR [--data FILE] [--numerics plain|reference] [--backend cpu|cuda]
 *                   [--batch B] [--max-new N] [--limit N] [--report FILE] [--json OUT]
 *
 * FILE (default DIR/eval.jsonl) holds one item per line: {"messages": [...],
 * "thinking": bool, "answer": "391"}. Each item is rendered in the V4 chat
 * format, decoded greedily by the engine (up to --max-new tokens, many
 * sequences per step) and counted right when the answer's content (after the
 * reasoning in thinking mode) equals "answer" exactly. With --report (the
 * train_report.json of tools/train_tiny.py) it also checks that dsv4 gets
 * exactly the items wrong that transformers gets wrong, with the same output.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsv4.h"
#include "text/chat.h"

typedef struct {
    int thinking;
    char *answer;
    int32_t *ids;
    size_t n_ids;
    int32_t out[64];
    int n_out;
    int seq;
    int done;
} item;

typedef struct {
    dsv4_strbuf content;
} collect;

static void on_ev(void *u, const dsv4_chat_event *ev)
{
    if (ev->kind == DSV4_CHAT_EV_CONTENT) dsv4_strbuf_put(&((collect *)u)->content, ev->text, ev->len);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *data = NULL, *report = NULL, *json_out = NULL;
    dsv4_engine_opts o;
    dsv4_engine_opts_default(&o);
    o.numerics = DSV4_NUMERICS_PLAIN;
    int B = 64, max_new = 40, limit = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-m")) dir = v;
        else if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "--report")) report = v;
        else if (!strcmp(a, "--json")) json_out = v;
        else if (!strcmp(a, "--batch")) B = atoi(v);
        else if (!strcmp(a, "--max-new")) max_new = atoi(v);
        else if (!strcmp(a, "--limit")) limit = atoi(v);
        else if (!strcmp(a, "--numerics")) o.numerics = strcmp(v, "reference") ? DSV4_NUMERICS_PLAIN : DSV4_NUMERICS_REFERENCE;
        else if (!strcmp(a, "--backend")) o.backend = strcmp(v, "cuda") ? DSV4_BACKEND_CPU : DSV4_BACKEND_CUDA;
        else {
            fprintf(stderr, "eval_chat: unknown option %s\n", a);
            return 2;
        }
    }
    if (!dir || B < 1 || max_new < 1 || max_new > 64) {
        fprintf(stderr, "usage: eval_chat -m DIR [--data FILE] [--numerics plain|reference] [--backend cpu|cuda] "
                        "[--batch B] [--max-new N<=64] [--limit N] [--report FILE] [--json OUT]\n");
        return 2;
    }
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/eval.jsonl", dir);
    if (!data) data = path;
    FILE *f = fopen(data, "r");
    if (!f) {
        fprintf(stderr, "eval_chat: %s: cannot open\n", data);
        return 1;
    }
    char tokpath[4096];
    snprintf(tokpath, sizeof tokpath, "%s/tokenizer.json", dir);
    dsv4_tokenizer *tok;
    if (dsv4_tokenizer_open(tokpath, &tok, err, sizeof err)) {
        fprintf(stderr, "eval_chat: %s\n", err);
        return 1;
    }
    int cap = 1024, n = 0;
    item *items = calloc((size_t)cap, sizeof(item));
    char *line = NULL;
    size_t lcap = 0;
    while (getline(&line, &lcap, f) > 0 && (!limit || n < limit)) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        if (!j) continue;
        if (n == cap) items = realloc(items, (size_t)(cap *= 2) * sizeof(item));
        item *it = &items[n];
        memset(it, 0, sizeof(*it));
        it->thinking = json_is_true(json_object_get(j, "thinking"));
        it->answer = strdup(json_string_value(json_object_get(j, "answer")) ? json_string_value(json_object_get(j, "answer")) : "");
        dsv4_chat_conv conv;
        dsv4_chat_opts co;
        dsv4_chat_opts_default(&co);
        co.thinking = it->thinking;
        dsv4_chat_prompt pr = {0};
        if (dsv4_chat_conv_from_json(json_object_get(j, "messages"), NULL, NULL, &conv, err, sizeof err) ||
            dsv4_chat_render(conv.messages, conv.n_messages, &co, &pr, err, sizeof err) ||
            dsv4_chat_prompt_ids(tok, &pr, &it->ids, &it->n_ids, err, sizeof err)) {
            fprintf(stderr, "eval_chat: item %d: %s\n", n, err);
            return 1;
        }
        dsv4_chat_prompt_free(&pr);
        dsv4_chat_conv_free(&conv);
        json_decref(j);
        n++;
    }
    free(line);
    fclose(f);

    o.model_dir = dir;
    o.max_seqs = B;
    o.max_ctx = 256;
    o.pool_tokens = (int64_t)B * 256;
    o.max_batch_tokens = B * 32;
    dsv4_engine *e;
    if (dsv4_engine_open(&o, &e, err, sizeof err)) {
        fprintf(stderr, "eval_chat: %s\n", err);
        return 1;
    }
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    const int V = info.vocab_size;
    float *logits = malloc((size_t)B * V * sizeof(float));
    dsv4_batch_entry *be = calloc((size_t)B, sizeof(*be));
    int *slot_item = malloc((size_t)B * sizeof(int));
    int32_t *next = malloc((size_t)B * sizeof(int32_t));
    double t0 = now_s();
    int next_item = 0, active = 0;
    for (int s = 0; s < B; s++) slot_item[s] = -1;
    while (next_item < n || active > 0) {
        int nb = 0;
        for (int s = 0; s < B; s++) {
            if (slot_item[s] < 0 && next_item < n) {
                item *it = &items[next_item];
                if (dsv4_seq_create(e, &it->seq, err, sizeof err)) break;
                slot_item[s] = next_item++;
                active++;
                be[nb] = (dsv4_batch_entry){.seq = it->seq, .n_tokens = (int)it->n_ids, .tokens = it->ids,
                                            .logits = logits + (size_t)nb * V};
                nb++;
            } else if (slot_item[s] >= 0) {
                item *it = &items[slot_item[s]];
                next[s] = it->out[it->n_out - 1];
                be[nb] = (dsv4_batch_entry){.seq = it->seq, .n_tokens = 1, .tokens = &next[s],
                                            .logits = logits + (size_t)nb * V};
                nb++;
            }
        }
        if (dsv4_step(e, be, nb, err, sizeof err)) {
            fprintf(stderr, "eval_chat: %s\n", err);
            return 1;
        }
        /* greedy; map entries back to slots in the same order */
        for (int s = 0, k = 0; s < B; s++) {
            if (slot_item[s] < 0) continue;
            item *it = &items[slot_item[s]];
            const float *lg = logits + (size_t)k++ * V;
            int32_t best = 0;
            for (int v = 1; v < V; v++)
                if (lg[v] > lg[best]) best = v;
            it->out[it->n_out++] = best;
            if (best == info.eos_id || it->n_out >= max_new) {
                it->done = 1;
                dsv4_seq_free(e, it->seq);
                slot_item[s] = -1;
                active--;
            }
        }
    }
    double secs = now_s() - t0;
    /* score */
    int right = 0, gen = 0;
    char **text_out = calloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++) {
        item *it = &items[i];
        int m = it->n_out;
        gen += m;
        int ended = m > 0 && it->out[m - 1] == info.eos_id;
        char *text;
        size_t tl;
        dsv4_detokenize(tok, it->out, (size_t)m, &text, &tl, err, sizeof err);
        text_out[i] = text;
        collect c = {0};
        dsv4_chat_parser *ps;
        dsv4_chat_parser_create(it->thinking, on_ev, &c, &ps);
        /* the parser sees the answer without its final EOS */
        char *body;
        size_t bl;
        dsv4_detokenize(tok, it->out, (size_t)(ended ? m - 1 : m), &body, &bl, err, sizeof err);
        dsv4_chat_parser_feed(ps, body, bl);
        dsv4_chat_parser_finish(ps);
        dsv4_chat_parser_free(ps);
        free(body);
        const char *content = c.content.p ? c.content.p : "";
        if (ended && !strcmp(content, it->answer)) right++;
        dsv4_strbuf_free(&c.content);
    }
    printf("%s: %d items, greedy accuracy %.4f%% (%d right), %s numerics, backend %s; %d tokens generated in "
           "%.1f s (%.0f tok/s, batch %d)\n",
           dir, n, 100.0 * right / n, right, o.numerics == DSV4_NUMERICS_PLAIN ? "plain" : "reference", info.backend,
           gen, secs, gen / secs, B);
    int rc = 0;
    if (report) {
        json_error_t je;
        json_t *r = json_load_file(report, 0, &je);
        json_t *fails = r ? json_object_get(json_object_get(r, "greedy_accuracy"), "failures") : NULL;
        if (!fails) {
            fprintf(stderr, "eval_chat: %s: no greedy_accuracy.failures\n", report);
            return 1;
        }
        int same = 0, nf = 0;
        size_t k;
        json_t *v;
        json_array_foreach(fails, k, v)
        {
            int ln = (int)json_integer_value(json_object_get(v, "line"));
            if (ln < 0 || ln >= n) continue; /* beyond --limit */
            nf++;
            /* transformers' output as text (its decode of the generated ids, EOS included) */
            const char *o2 = json_string_value(json_object_get(v, "output"));
            if (o2 && !strcmp(o2, text_out[ln])) same++;
        }
        /* dsv4's wrong items must be exactly transformers' */
        int dsv4_wrong = n - right;
        printf("transformers got %d of these wrong (%.4f%% right); dsv4 gets %d of them wrong with the same output; "
               "dsv4 wrong: %d\n",
               nf, 100.0 * (n - nf) / n, same, dsv4_wrong);
        if (same != nf || dsv4_wrong != nf) {
            printf("MISMATCH with transformers\n");
            rc = 1;
        }
        json_decref(r);
    }
    if (json_out) {
        FILE *jf = fopen(json_out, "w");
        if (jf) {
            fprintf(jf, "{\"model\": \"%s\", \"items\": %d, \"right\": %d, \"accuracy\": %.6f, \"numerics\": \"%s\", "
                        "\"backend\": \"%s\", \"generated_tokens\": %d, \"seconds\": %.2f, \"batch\": %d}\n",
                    dir, n, right, (double)right / n, o.numerics == DSV4_NUMERICS_PLAIN ? "plain" : "reference",
                    info.backend, gen, secs, B);
            fclose(jf);
        }
    }
    for (int i = 0; i < n; i++) {
        free(text_out[i]);
        free(items[i].ids);
        free(items[i].answer);
    }
    free(text_out);
    free(items);
    free(logits);
    free(be);
    free(slot_item);
    free(next);
    dsv4_engine_close(e);
    dsv4_tokenizer_close(tok);
    return rc;
}
