/*
 * tune.h - the kernel choices `dsv4 tune` measures and `dsv4 serve` loads.
 *
 * Only choices that leave every bit of every result unchanged are tuned:
 * a token's result never depends on them, so a tuning file (missing, stale
 * or from another GPU) can only cost speed. Today that is sparse attention
 * on the tensor cores (attn.cu): the rows per block of the scores kernel and
 * the layout of the weighted sum, per range of tokens in the call.
 *
 * The file (JSON):
 *   {"dsv4_tune": 1, "device": "<the backend's device string>",
 *    "attention": [{"max_tokens": 2, "score_rows": 16, "sum": "parts16"}, ...,
 *                  {"max_tokens": 0, "score_rows": 64, "sum": "walk32"}],
 *    "measured": {...}}
 * rows in increasing max_tokens, the last 0 (any number); "measured" (what
 * `dsv4 tune` timed) is not read back.
 */
#ifndef DSV4_ENGINE_TUNE_H
#define DSV4_ENGINE_TUNE_H

#include <stddef.h>

#include "dsv4.h"

/* The weighted sum's layout: a cluster of 8 row parts per (token, 16 / 32 /
 * 64 dimensions), or one block per (token, 32 / 64 / 128 dimensions) walking
 * the parts (fewer dimensions per block: more blocks; more: the weights and
 * the row list read by fewer blocks), or none: the scores, weights and sums
 * of a (token, row part) in one block, a cluster of the parts ("one"; "one8":
 * 8 heads a block), or the walking block per 64 / 128 dimensions on wgmma
 * ("wg64", "wg128"). */
enum {
    DSV4_SUM_PARTS16,
    DSV4_SUM_PARTS32,
    DSV4_SUM_PARTS64,
    DSV4_SUM_WALK32,
    DSV4_SUM_WALK64,
    DSV4_SUM_WALK128,
    DSV4_SUM_ONE,  /* no separate weighted sum: one pass over the rows (attn.cu's k_attn_one) where a part
                    * has at most 96 rows, else parts32 */
    DSV4_SUM_WG64, /* walk64 / walk128 on wgmma (BF16 rows, up to 64 heads; else the walk of that width) */
    DSV4_SUM_WG128,
    DSV4_SUM_ONE8, /* one, with 8 heads a block instead of 16 (twice the blocks, each adding the parts' sums
                    * of one head; every part size since v69, 64 rows at most in v68), the same bits */
    DSV4_SUM_COUNT
};

#define DSV4_TUNE_VERSION 1
#define DSV4_TUNE_ROWS    12

typedef struct {
    int max_tokens; /* attention calls of up to this many tokens; 0: any number (the last row) */
    int score_rows; /* the scores kernel's rows per block: 16 or 64 */
    int sum;        /* DSV4_SUM_* */
} dsv4_attn_choice;

typedef struct {
    int n;
    dsv4_attn_choice row[DSV4_TUNE_ROWS];
} dsv4_tune;

/* The built-in choices: what `dsv4 tune` measured on an H200 over the shapes a decode step meets
 * (share/tune/h200.json, bench/results/2026-12-01-s33/pvw/c4-tune/; `one` up to 2 tokens as since s29, where
 * decode agreed: batch 2 faster in 6 of 6 alternating rounds over s28 and s29, batch 1 since v47; decode with
 * the wg rows even against the walk ones, s33's c5-decode; `one8` at 1 token since v68, by decode steps:
 * bench/results/2026-12-03-s49/one8/ and one8c/, CSA's parts too since v69 (2026-12-04-s51/next/); at 2 tokens, 128
 * blocks in clusters of 8, it was slower); `one` to 3 tokens since s67 (96 blocks, one wave; dsv4 tune timed 1, 2,
 * 4, 8, ... tokens before): the attention alone 16-39 % faster than parts32 at 3 tokens, decode at batch 3 -0.6 /
 * -1.0 / -1.4 % at a 16-token / 4k / 128k context, and dsv4 tune's own table on that GPU the same
 * (bench/results/2026-12-05-s67/one34/, one3/, an H100; at 4 tokens, 128 blocks, it was slower). */
static inline void dsv4_tune_default(dsv4_tune *t)
{
    static const dsv4_attn_choice rows[] = {{1, 16, DSV4_SUM_ONE8},
                                            {3, 16, DSV4_SUM_ONE},
                                            {8, 16, DSV4_SUM_PARTS32},
                                            {32, 64, DSV4_SUM_WG64},
                                            {0, 64, DSV4_SUM_WG128}};
    t->n = (int)(sizeof rows / sizeof rows[0]);
    for (int i = 0; i < t->n; i++) t->row[i] = rows[i];
}

/* The row serving a call of n_tok tokens. */
static inline const dsv4_attn_choice *dsv4_tune_pick(const dsv4_tune *t, int n_tok)
{
    for (int i = 0; i < t->n - 1; i++)
        if (n_tok <= t->row[i].max_tokens) return &t->row[i];
    return &t->row[t->n - 1];
}

const char *dsv4_tune_sum_name(int sum); /* "parts16", ..., "walk128", "one", "wg64", "wg128" */

/* Checks a table (rows as described above): DSV4_OK or DSV4_ERR_INVALID with the reason. */
dsv4_status dsv4_tune_check(const dsv4_tune *t, char *err, size_t errlen);

/* Reads a tuning file made for `device`. DSV4_OK; DSV4_ERR_IO (cannot read), DSV4_ERR_FORMAT (malformed),
 * DSV4_ERR_UNSUPPORTED (another version or another GPU), each with the reason: the caller keeps its table. */
dsv4_status dsv4_tune_load(const char *path, const char *device, dsv4_tune *t, char *err, size_t errlen);

/* Writes t for `device`, with `measured` (may be NULL: a jansson value, borrowed) under "measured". */
struct json_t;
dsv4_status dsv4_tune_save(const char *path, const char *device, const dsv4_tune *t, struct json_t *measured,
                           char *err, size_t errlen);

#endif
