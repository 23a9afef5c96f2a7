/*
 * safetensors.h - read-only access to a checkpoint's safetensors files.
 *
 * A checkpoint is either one `model.safetensors` or a set of shards listed by
 * `model.safetensors.index.json`. Every file is mmap'ed once; each header is
 * validated in full before any tensor is handed out (JSON well formed, dtype
 * known, dtype x shape = byte size, offsets inside the data section, no two
 * tensors overlapping), and every error names the file and the tensor.
 */
#ifndef DSV4_MODEL_SAFETENSORS_H
#define DSV4_MODEL_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dsv4.h"

typedef enum {
    DSV4_DT_INVALID = 0,
    DSV4_DT_F32,
    DSV4_DT_F16,
    DSV4_DT_BF16,
    DSV4_DT_I64,
    DSV4_DT_I32,
    DSV4_DT_I8,
    DSV4_DT_U8,
    DSV4_DT_F8_E4M3,
    DSV4_DT_F8_E8M0,
    DSV4_DT_COUNT
} dsv4_dtype;

/* Bytes per element (0 for DSV4_DT_INVALID). */
size_t dsv4_dtype_size(dsv4_dtype dt);
/* Name as written in safetensors headers ("BF16", "F8_E4M3", ...). */
const char *dsv4_dtype_name(dsv4_dtype dt);
/* Parse a header dtype string; DSV4_DT_INVALID when unknown. */
dsv4_dtype dsv4_dtype_from_name(const char *name);

#define DSV4_ST_MAX_DIMS 8

typedef struct {
    const char *name;              /* owned by the store */
    dsv4_dtype dtype;
    int ndim;
    int64_t shape[DSV4_ST_MAX_DIMS];
    const void *data;              /* inside the mmap; never written */
    size_t nbytes;
    int file;                      /* index into the store's file list */
} dsv4_st_tensor;

typedef struct dsv4_st dsv4_st;

/* Open DIR: model.safetensors.index.json if present, else model.safetensors,
 * else (fallback) every *.safetensors file in DIR. */
dsv4_status dsv4_st_open(const char *dir, dsv4_st **out, char *err, size_t errlen);
void dsv4_st_close(dsv4_st *st);

/* Whether every byte of t lies in a hole of its (sparse) file: it reads as
 * zeros, and reading it through the mapping would only fault in zero pages
 * (slowly, a page at a time). False whenever unsure. */
bool dsv4_st_in_hole(const dsv4_st *st, const dsv4_st_tensor *t);

/* Look a tensor up by name; NULL if absent. */
const dsv4_st_tensor *dsv4_st_find(const dsv4_st *st, const char *name);
/* All tensors, for iteration (inspect, unused-tensor reporting). */
size_t dsv4_st_count(const dsv4_st *st);
const dsv4_st_tensor *dsv4_st_at(const dsv4_st *st, size_t i);
/* File name (base name) of file index i. */
const char *dsv4_st_file_name(const dsv4_st *st, int file);
/* Total payload bytes of all tensors. */
uint64_t dsv4_st_total_bytes(const dsv4_st *st);

#endif
