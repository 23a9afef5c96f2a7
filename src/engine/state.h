/*
 * state.h - per-sequence decode state and the batch plan.
 *
 * Fixed-size state lives in one slot per sequence: for every layer the raw
 * window ring ([window][head_dim]) and the compressors' partial windows (the
 * (kv, score) rows of MODEL.md §4.1). The growing state - compressed rows and
 * indexer keys - lives in pages from one pool sized at start-up; a page covers
 * `page_tokens` positions of one sequence for every layer at once, so
 * admission control is a count of pages. Layouts are plain offsets so every
 * backend addresses the same memory the same way.
 *
 * With bf16_rows (reference numerics, where every cached row - window ring,
 * compressed rows, indexer keys - is a BF16 value, on a backend that says
 * it reads them: kv_bf16) those rows are stored as BF16, two to a float
 * slot: half the bytes, the same values. The compressors' partial windows
 * stay FP32 (they are sums in progress).
 *
 * With fp4_keys (reference numerics, where an indexer key leaves its
 * compressor as FP4SIM32 output - E2M1 codes times power-of-two scales - on a
 * backend that says it reads them: kv_fp4_keys; head width a multiple of 32)
 * a layer's indexer keys in a page are [rows][width / 2] bytes of codes (two
 * a byte, low nibble = even element) then [rows][width / 32] UE8M0 scale
 * bytes: 68 bytes for a 128-wide key against 256 as BF16 and 512 as FP32,
 * the same values (dsv4_fp4_pack / dsv4_fp4_unpack, MODEL.md §4.3).
 */
#ifndef DSV4_ENGINE_STATE_H
#define DSV4_ENGINE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "model/quant.h" /* DSV4_HD */

/* Where one layer's data sits inside a slot and inside a page (in floats). */
typedef struct {
    size_t win;        /* slot: [window][row floats] ring, row = pos % window */
    size_t cmp_kv;     /* slot: [cmp_rows][coff*head_dim] compressor kv rows */
    size_t cmp_score;  /* slot: [cmp_rows][coff*head_dim] compressor scores (incl. ape) */
    size_t idx_kv;     /* slot: [cmp_rows][2*index_head_dim] (CSA) */
    size_t idx_score;
    int cmp_rows;      /* 2*ratio (CSA: previous + current window) or ratio (HCA) */
    size_t pg_cmp;     /* page: [page_tokens/ratio][row floats of head_dim] compressed rows */
    size_t pg_idx;     /* page: [page_tokens/ratio][row floats of index_head_dim] indexer keys (CSA) */
} dsv4_layer_state;

typedef struct {
    int max_seqs;
    int64_t max_ctx;
    int page_tokens;
    int max_pages_per_seq;
    int64_t n_pages;
    bool bf16_rows;          /* cached rows as BF16 (see above) */
    bool fp4_keys;           /* indexer keys as E2M1 codes + UE8M0 scales (see above) */
    size_t slot_floats;
    size_t page_floats;
    dsv4_layer_state *layer; /* [n_layers] */
    float *slots;            /* backend memory: [max_seqs][slot_floats] */
    float *pages;            /* backend memory: [n_pages][page_floats] */
    /* host bookkeeping */
    bool *live;              /* [max_seqs] */
    int64_t *len;            /* [max_seqs] tokens absorbed */
    int32_t *page_table;     /* [max_seqs][max_pages_per_seq] */
    int *n_seq_pages;        /* [max_seqs] */
    int32_t *free_list;      /* [n_pages] stack of free page ids */
    int64_t n_free;
    uint64_t pt_version;     /* bumped whenever page_table changes (device copies follow it) */
    /* Pages are shared by reference: a page's count of the sequences and snapshots whose tables hold it
     * (page_ref), of the sequences among them (page_sref), and the sequence that took it from the free list
     * while that sequence lives (-1 after, and for a snapshot's own copy of a partly filled page). n_shared
     * counts the pages held with no live owner, n_cached those held by snapshots alone. */
    int32_t *page_ref;   /* [n_pages] */
    int32_t *page_sref;  /* [n_pages] */
    int32_t *page_owner; /* [n_pages] */
    int64_t n_shared;
    int64_t n_cached;
    /* Snapshots (prefix reuse): a sequence's slot copied as it was after its first snap_len tokens, with
     * the pages of those tokens - whole pages shared, a last partly filled one copied (it is the snapshot's
     * own: its owner is still writing the original). */
    int max_snaps;
    float *snap_slots;   /* backend memory: [max_snaps][slot_floats] */
    bool *snap_live;     /* [max_snaps] */
    int64_t *snap_len;   /* [max_snaps] */
    int32_t *snap_pages; /* [max_snaps][max_pages_per_seq] */
} dsv4_kv;

/* One sequence's part of a batch step. */
typedef struct {
    int slot;
    int64_t pos0; /* position of its first token in this step */
    int n;        /* tokens in this step */
    int t0;       /* index of its first token in the batch */
} dsv4_seg;

/* A batch step as the forward pass and the ops see it. */
typedef struct {
    int n_tok;
    int n_seg;
    const dsv4_seg *segs;    /* [n_seg] */
    const int32_t *tokens;   /* [n_tok] */
    const int64_t *pos;      /* [n_tok] absolute positions */
    const int32_t *tok_seg;  /* [n_tok] segment of each token */
    /* NULL, or [n_tok]: feed[t] >= 0 takes token t from pick feed[t] of the last sample_launch into slot
     * feed_slot (on the device; tokens[t] is a placeholder) */
    const int32_t *feed;
    int feed_slot;
} dsv4_plan;

/* Floats a cached row of width values takes, BF16 (two a float) or FP32. Host and GPU. */
DSV4_HD int dsv4_row_floats(int width, bool bf16)
{
    return bf16 ? (width + 1) / 2 : width;
}

/* The same for a dsv4_kv's rows. */
static inline size_t dsv4_kv_row_floats(const dsv4_kv *kv, int width)
{
    return (size_t)dsv4_row_floats(width, kv->bf16_rows);
}

/* Pointer to compressed row c of layer l of slot s (main rows or indexer
 * keys): width floats, or width BF16 values with bf16_rows. */
static inline float *dsv4_kv_cmp_row(const dsv4_kv *kv, int l, int slot, int64_t c, int ratio, bool indexer,
                                     int width)
{
    int64_t tok = c * ratio;
    int32_t page = kv->page_table[(size_t)slot * kv->max_pages_per_seq + tok / kv->page_tokens];
    int64_t row = (tok % kv->page_tokens) / ratio;
    size_t off = indexer ? kv->layer[l].pg_idx : kv->layer[l].pg_cmp;
    return kv->pages + (size_t)page * kv->page_floats + off + (size_t)row * dsv4_kv_row_floats(kv, width);
}

/* Floats of a page's indexer keys for one layer: rows keys of width values
 * (FP4: rounded up to 16 bytes, so what follows keeps its alignment). */
static inline size_t dsv4_kv_idx_floats(const dsv4_kv *kv, int rows, int width)
{
    if (!kv->fp4_keys) return (size_t)rows * dsv4_kv_row_floats(kv, width);
    return ((size_t)rows * (size_t)(width / 2 + width / 32) + 15) / 16 * 4;
}

/* With fp4_keys: indexer key c of slot s in pages laid out as a dsv4_kv's
 * (the layer's keys at float offset off of a page) - its width / 2 code
 * bytes (returned) and its width / 32 scale bytes (*scales). Host and GPU. */
DSV4_HD uint8_t *dsv4_idx_key_fp4(float *pages, const int32_t *page_table, int max_pages, int page_tokens,
                                  size_t page_floats, size_t off, int slot, int64_t c, int ratio, int width,
                                  uint8_t **scales)
{
    const int64_t tok = c * ratio;
    const int32_t page = page_table[(size_t)slot * max_pages + tok / page_tokens];
    const int64_t row = (tok % page_tokens) / ratio, rows = page_tokens / ratio;
    uint8_t *base = (uint8_t *)(pages + (size_t)page * page_floats + off);
    *scales = base + (size_t)rows * (size_t)(width / 2) + (size_t)row * (size_t)(width / 32);
    return base + (size_t)row * (size_t)(width / 2);
}

/* The same for layer l of a dsv4_kv. */
static inline uint8_t *dsv4_kv_idx_key(const dsv4_kv *kv, int l, int slot, int64_t c, int ratio, int width,
                                       uint8_t **scales)
{
    return dsv4_idx_key_fp4(kv->pages, kv->page_table, kv->max_pages_per_seq, kv->page_tokens, kv->page_floats,
                            kv->layer[l].pg_idx, slot, c, ratio, width, scales);
}

/* Pointer to the window ring's row for position pos of layer l of slot s. */
static inline float *dsv4_kv_win_row(const dsv4_kv *kv, int l, int slot, int64_t pos, int window, int width)
{
    return kv->slots + (size_t)slot * kv->slot_floats + kv->layer[l].win +
           (size_t)(pos % window) * dsv4_kv_row_floats(kv, width);
}

#endif
