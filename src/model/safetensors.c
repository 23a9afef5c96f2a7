/*
 * safetensors.c - open a checkpoint's safetensors files and validate them.
 *
 * This file owns the mmaps of every shard and the table of tensors found in
 * them. A safetensors file is an 8-byte little-endian header length N, N bytes
 * of JSON ({name: {dtype, shape, data_offsets}}), then the data section that
 * the offsets index into. Every header is validated in full when the store is
 * opened, so later code can trust every pointer it is handed: a checkpoint that
 * would crash or silently mis-read at step 1,000 is refused here, with the file
 * and the tensor in the message.
 *
 * Lookup is a binary search over the tensors sorted by name (70k tensors: ~17
 * string compares). It is used only while binding weights at load time; the
 * forward pass never looks a name up.
 */
#define _GNU_SOURCE /* SEEK_DATA */
#include "model/safetensors.h"
#include "core/file_util.h"
#include "core/json_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Real headers are a few hundred KB (1,576 tensors in the largest Flash shard);
 * the cap only stops a corrupt length from making us parse gigabytes. */
#define ST_MAX_HEADER  (100ull * 1000 * 1000)
#define ST_INDEX_NAME  "model.safetensors.index.json"
#define ST_SINGLE_NAME "model.safetensors"

/* ------------------------------------------------------------------------ */
/* dtypes                                                                   */
/* ------------------------------------------------------------------------ */

static const struct {
    const char *name;
    size_t size;
} dtype_table[DSV4_DT_COUNT] = {
    [DSV4_DT_INVALID] = {"INVALID", 0}, [DSV4_DT_F32] = {"F32", 4}, [DSV4_DT_F16] = {"F16", 2},
    [DSV4_DT_BF16] = {"BF16", 2},       [DSV4_DT_I64] = {"I64", 8}, [DSV4_DT_I32] = {"I32", 4},
    [DSV4_DT_I8] = {"I8", 1},           [DSV4_DT_U8] = {"U8", 1},   [DSV4_DT_F8_E4M3] = {"F8_E4M3", 1},
    [DSV4_DT_F8_E8M0] = {"F8_E8M0", 1},
};

/* dtypes the safetensors format defines but dsv4 does not read: a file using
 * them is well formed, so it is refused as unsupported, not as corrupt. */
static const char *const dtype_unsupported[] = {
    "BOOL", "U16", "I16", "U32", "U64", "F64", "F8_E5M2", "F6_E2M3", "F6_E3M2", "F4", "C64",
};

size_t dsv4_dtype_size(dsv4_dtype dt)
{
    if (dt <= DSV4_DT_INVALID || dt >= DSV4_DT_COUNT) return 0;
    return dtype_table[dt].size;
}

const char *dsv4_dtype_name(dsv4_dtype dt)
{
    if (dt <= DSV4_DT_INVALID || dt >= DSV4_DT_COUNT) return "INVALID";
    return dtype_table[dt].name;
}

dsv4_dtype dsv4_dtype_from_name(const char *name)
{
    if (!name) return DSV4_DT_INVALID;
    for (int i = DSV4_DT_INVALID + 1; i < DSV4_DT_COUNT; i++)
        if (strcmp(name, dtype_table[i].name) == 0) return (dsv4_dtype)i;
    return DSV4_DT_INVALID;
}

/* ------------------------------------------------------------------------ */
/* store                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct {
    char *name;         /* base name, owned */
    const uint8_t *map; /* whole file, PROT_READ; NULL until mapped */
    size_t size;        /* bytes mapped */
    char *names;        /* arena of this file's tensor names, owned */
    int fd;             /* kept open only for a sparse file (holes to ask about); else -1 */
} st_file;

struct dsv4_st {
    st_file *files;
    int n_files, cap_files;
    dsv4_st_tensor *tensors; /* sorted by name once every file is read */
    size_t n_tensors, cap_tensors;
    uint64_t total_bytes;
};

static dsv4_status st_fail(char *err, size_t errlen, dsv4_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static dsv4_status st_fail(char *err, size_t errlen, dsv4_status st, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (a && dir[a - 1] != '/') p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

/* "[a, b, c]" into buf; never overflows, truncates with "...". */
static void format_shape(char *buf, size_t n, const int64_t *shape, int ndim)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

static void st_free_contents(dsv4_st *st)
{
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].map) munmap((void *)st->files[i].map, st->files[i].size);
        if (st->files[i].fd >= 0) close(st->files[i].fd);
        free(st->files[i].name);
        free(st->files[i].names);
    }
    free(st->files);
    free(st->tensors);
}

void dsv4_st_close(dsv4_st *st)
{
    if (!st) return;
    st_free_contents(st);
    free(st);
}

static int tensor_name_cmp(const void *a, const void *b)
{
    return strcmp(((const dsv4_st_tensor *)a)->name, ((const dsv4_st_tensor *)b)->name);
}

bool dsv4_st_in_hole(const dsv4_st *st, const dsv4_st_tensor *t)
{
    const st_file *f = &st->files[t->file];
    if (f->fd < 0 || t->nbytes == 0) return false;
    const off_t begin = (off_t)((const uint8_t *)t->data - f->map);
    const off_t data = lseek(f->fd, begin, SEEK_DATA); /* the first byte at or after begin that is not a hole */
    if (data < 0) return errno == ENXIO;               /* none: a hole up to the end of the file */
    return (uint64_t)data >= (uint64_t)begin + t->nbytes;
}

const dsv4_st_tensor *dsv4_st_find(const dsv4_st *st, const char *name)
{
    if (!st || !name || !st->n_tensors) return NULL;
    dsv4_st_tensor key = {.name = name};
    return bsearch(&key, st->tensors, st->n_tensors, sizeof *st->tensors, tensor_name_cmp);
}

size_t dsv4_st_count(const dsv4_st *st)
{
    return st ? st->n_tensors : 0;
}

const dsv4_st_tensor *dsv4_st_at(const dsv4_st *st, size_t i)
{
    if (!st || i >= st->n_tensors) return NULL;
    return &st->tensors[i];
}

const char *dsv4_st_file_name(const dsv4_st *st, int file)
{
    if (!st || file < 0 || file >= st->n_files) return NULL;
    return st->files[file].name;
}

uint64_t dsv4_st_total_bytes(const dsv4_st *st)
{
    return st ? st->total_bytes : 0;
}

/* ------------------------------------------------------------------------ */
/* one file                                                                 */
/* ------------------------------------------------------------------------ */

/* A tensor's byte range inside its file's data section, for the range checks. */
typedef struct {
    uint64_t begin, end;
    size_t tensor; /* index into st->tensors */
} st_range;

static int range_cmp(const void *a, const void *b)
{
    const st_range *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Read a JSON integer that must be >= 0. */
static bool json_get_u64(const json_t *j, uint64_t *out)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0) return false;
    *out = (uint64_t)json_integer_value(j);
    return true;
}

/* Validate one header entry and append it to st->tensors (data filled in later,
 * once the ranges are checked). */
static dsv4_status st_add_entry(dsv4_st *st, int file, const char *fname, const char *tname, const json_t *e,
                                char **arena, st_range *r, char *err, size_t errlen)
{
    if (!json_is_object(e))
        return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: tensor %s: header entry is %s, expected an object", fname,
                       tname, dsv4_json_type_name(e));

    const json_t *jd = json_object_get(e, "dtype");
    if (!json_is_string(jd))
        return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: tensor %s: \"dtype\" is %s, expected a string", fname, tname,
                       jd ? dsv4_json_type_name(jd) : "missing");
    const char *dname = json_string_value(jd);
    dsv4_dtype dt = dsv4_dtype_from_name(dname);
    if (dt == DSV4_DT_INVALID) {
        for (size_t i = 0; i < sizeof dtype_unsupported / sizeof *dtype_unsupported; i++)
            if (strcmp(dname, dtype_unsupported[i]) == 0)
                return st_fail(err, errlen, DSV4_ERR_UNSUPPORTED,
                               "%s: tensor %s: dtype %s is not one dsv4 reads (F32, F16, BF16, I64, I32, "
                               "I8, U8, F8_E4M3, F8_E8M0)",
                               fname, tname, dname);
        return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: tensor %s: unknown dtype \"%s\"", fname, tname, dname);
    }

    const json_t *js = json_object_get(e, "shape");
    if (!json_is_array(js))
        return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: tensor %s: \"shape\" is %s, expected an array", fname, tname,
                       js ? dsv4_json_type_name(js) : "missing");
    size_t ndim = json_array_size(js);
    if (ndim > DSV4_ST_MAX_DIMS)
        return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: tensor %s: shape has %zu dimensions, more than %d", fname,
                       tname, ndim, DSV4_ST_MAX_DIMS);
    int64_t shape[DSV4_ST_MAX_DIMS] = {0};
    uint64_t nbytes = dsv4_dtype_size(dt);
    bool overflow = false;
    for (size_t i = 0; i < ndim; i++) {
        uint64_t d;
        if (!json_get_u64(json_array_get(js, i), &d))
            return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: tensor %s: shape[%zu] is not a non-negative integer",
                           fname, tname, i);
        shape[i] = (int64_t)d;
        if (__builtin_mul_overflow(nbytes, d, &nbytes)) overflow = true;
    }
    char sbuf[200];
    format_shape(sbuf, sizeof sbuf, shape, (int)ndim);
    if (overflow || nbytes > SIZE_MAX)
        return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: tensor %s: %s %s is too large to address", fname, tname,
                       dname, sbuf);

    const json_t *jo = json_object_get(e, "data_offsets");
    uint64_t begin, end;
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_get_u64(json_array_get(jo, 0), &begin) ||
        !json_get_u64(json_array_get(jo, 1), &end))
        return st_fail(err, errlen, DSV4_ERR_FORMAT,
                       "%s: tensor %s: \"data_offsets\" must be [begin, end], two non-negative integers (found %s)",
                       fname, tname,
                       !jo                 ? "nothing"
                       : json_is_array(jo) ? "an array of other values"
                                           : dsv4_json_type_name(jo));
    if (begin > end)
        return st_fail(err, errlen, DSV4_ERR_FORMAT,
                       "%s: tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin", fname, tname,
                       begin, end);
    if (end - begin != nbytes)
        return st_fail(err, errlen, DSV4_ERR_FORMAT,
                       "%s: tensor %s: %s %s needs %" PRIu64 " bytes but data_offsets [%" PRIu64 ", %" PRIu64
                       "] span %" PRIu64,
                       fname, tname, dname, sbuf, nbytes, begin, end, end - begin);

    if (st->n_tensors == st->cap_tensors) {
        size_t cap = st->cap_tensors ? st->cap_tensors * 2 : 1024;
        dsv4_st_tensor *t = realloc(st->tensors, cap * sizeof *t);
        if (!t) return st_fail(err, errlen, DSV4_ERR_NOMEM, "%s: out of memory for the tensor table", fname);
        st->tensors = t;
        st->cap_tensors = cap;
    }
    size_t len = strlen(tname);
    memcpy(*arena, tname, len + 1);
    dsv4_st_tensor *t = &st->tensors[st->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = *arena;
    *arena += len + 1;
    t->dtype = dt;
    t->ndim = (int)ndim;
    memcpy(t->shape, shape, sizeof shape);
    t->nbytes = (size_t)nbytes;
    t->file = file;
    r->begin = begin;
    r->end = end;
    r->tensor = st->n_tensors;
    st->n_tensors++;
    return DSV4_OK;
}

/* Check the ranges of one file's tensors (inside the data section, no two
 * overlapping) and point each tensor at its bytes. */
static dsv4_status st_check_ranges(dsv4_st *st, const char *fname, st_range *r, size_t n, const uint8_t *data,
                                   uint64_t data_size, char *err, size_t errlen)
{
    qsort(r, n, sizeof *r, range_cmp);
    uint64_t max_end = 0;
    size_t max_owner = SIZE_MAX; /* tensor whose range reaches max_end */
    for (size_t i = 0; i < n; i++) {
        const dsv4_st_tensor *t = &st->tensors[r[i].tensor];
        if (r[i].end > data_size)
            return st_fail(err, errlen, DSV4_ERR_FORMAT,
                           "%s: tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] run past the end of the "
                           "data section (%" PRIu64 " bytes); the file may be truncated",
                           fname, t->name, r[i].begin, r[i].end, data_size);
        if (r[i].begin == r[i].end) continue; /* empty tensors occupy no bytes and cannot overlap */
        if (max_owner != SIZE_MAX && r[i].begin < max_end) {
            const dsv4_st_tensor *o = &st->tensors[max_owner];
            return st_fail(err, errlen, DSV4_ERR_FORMAT,
                           "%s: tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] overlap those of tensor %s "
                           "(ending at %" PRIu64 ")",
                           fname, t->name, r[i].begin, r[i].end, o->name, max_end);
        }
        if (r[i].end > max_end) {
            max_end = r[i].end;
            max_owner = r[i].tensor;
        }
    }
    for (size_t i = 0; i < n; i++) {
        dsv4_st_tensor *t = &st->tensors[r[i].tensor];
        t->data = data + r[i].begin;
        st->total_bytes += t->nbytes;
    }
    return DSV4_OK;
}

/* Parse and validate the header of a mapped file; appends its tensors. */
static dsv4_status st_parse_header(dsv4_st *st, int file, char *err, size_t errlen)
{
    st_file *f = &st->files[file];
    const char *fname = f->name;
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)f->map[i] << (8 * i);
    if (n > ST_MAX_HEADER)
        return st_fail(err, errlen, DSV4_ERR_FORMAT,
                       "%s: header length %" PRIu64 " is over the %llu-byte limit; the file is corrupt or not "
                       "a safetensors file",
                       fname, n, ST_MAX_HEADER);
    if (n > f->size - 8)
        return st_fail(err, errlen, DSV4_ERR_FORMAT,
                       "%s: header length %" PRIu64 " runs past the end of the file (%zu bytes); the file may be "
                       "truncated",
                       fname, n, f->size);

    json_error_t jerr;
    json_t *root = json_loadb((const char *)f->map + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: header JSON line %d column %d: %s", fname, jerr.line,
                       jerr.column, jerr.text);
    if (!json_is_object(root)) {
        dsv4_status s = st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: header is %s, expected a JSON object", fname,
                                dsv4_json_type_name(root));
        json_decref(root);
        return s;
    }

    /* One arena for all names of this file, sized before any is copied. */
    size_t arena_size = 1, count = 0;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (strcmp(key, "__metadata__") == 0) continue;
        arena_size += strlen(key) + 1;
        count++;
    }
    dsv4_status s = DSV4_OK;
    st_range *ranges = calloc(count ? count : 1, sizeof *ranges);
    f->names = malloc(arena_size);
    if (!ranges || !f->names) {
        s = st_fail(err, errlen, DSV4_ERR_NOMEM, "%s: out of memory reading the header", fname);
        goto done;
    }
    char *arena = f->names;
    size_t k = 0;
    json_object_foreach(root, key, val)
    {
        if (strcmp(key, "__metadata__") == 0) continue;
        s = st_add_entry(st, file, fname, key, val, &arena, &ranges[k], err, errlen);
        if (s) goto done;
        k++;
    }
    s = st_check_ranges(st, fname, ranges, k, f->map + 8 + n, f->size - 8 - n, err, errlen);
done:
    free(ranges);
    json_decref(root);
    return s;
}

/* Open, map and validate DIR/NAME as file number st->n_files. */
static dsv4_status st_load_file(dsv4_st *st, const char *dir, const char *name, char *err, size_t errlen)
{
    if (st->n_files == st->cap_files) {
        int cap = st->cap_files ? st->cap_files * 2 : 16;
        st_file *nf = realloc(st->files, (size_t)cap * sizeof *nf);
        if (!nf) return st_fail(err, errlen, DSV4_ERR_NOMEM, "%s: out of memory", name);
        st->files = nf;
        st->cap_files = cap;
    }
    st_file *f = &st->files[st->n_files];
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->name = strdup(name);
    if (!f->name) return st_fail(err, errlen, DSV4_ERR_NOMEM, "%s: out of memory", name);
    st->n_files++; /* from here on dsv4_st_close frees whatever this file holds */

    char *path = path_join(dir, name);
    if (!path) return st_fail(err, errlen, DSV4_ERR_NOMEM, "%s: out of memory", name);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO: refused below, not waited on */
    if (fd < 0) {
        dsv4_status s = st_fail(err, errlen, DSV4_ERR_IO, "%s: %s", path, strerror(errno));
        free(path);
        return s;
    }
    struct stat sb;
    int fs = fstat(fd, &sb);
    if (fs != 0 || !S_ISREG(sb.st_mode)) {
        dsv4_status s =
            st_fail(err, errlen, DSV4_ERR_IO, "%s: %s", path, fs != 0 ? strerror(errno) : "not a regular file");
        close(fd);
        free(path);
        return s;
    }
    free(path);
    if (sb.st_size < 8) {
        close(fd);
        return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: file is %lld bytes, too short to hold a safetensors header",
                       name, (long long)sb.st_size);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return st_fail(err, errlen, DSV4_ERR_UNSUPPORTED, "%s: file too large to map", name);
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    /* the mapping keeps the file alive; a sparse file (fewer blocks than
     * bytes) keeps its descriptor for dsv4_st_in_hole */
    if (map != MAP_FAILED && (uint64_t)sb.st_blocks * 512 < (uint64_t)sb.st_size) f->fd = fd;
    else close(fd);
    if (map == MAP_FAILED)
        return st_fail(err, errlen, DSV4_ERR_IO, "%s: mmap of %lld bytes failed: %s", name, (long long)sb.st_size,
                       strerror(map_errno));
    f->map = map;
    f->size = (size_t)sb.st_size;
    return st_parse_header(st, st->n_files - 1, err, errlen);
}

/* ------------------------------------------------------------------------ */
/* open                                                                     */
/* ------------------------------------------------------------------------ */

static int str_ptr_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One weight_map entry. */
typedef struct {
    const char *tensor, *file; /* borrowed from the index JSON */
} st_map_entry;

static int map_entry_file_cmp(const void *a, const void *b)
{
    const st_map_entry *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->tensor, y->tensor);
}

/* Sort the table by name and refuse a name stored twice. Names are unique
 * inside a header (JSON_REJECT_DUPLICATES), so an equal neighbour after sorting
 * comes from another file. */
static dsv4_status st_sort_unique(dsv4_st *st, char *err, size_t errlen)
{
    if (st->n_tensors) qsort(st->tensors, st->n_tensors, sizeof *st->tensors, tensor_name_cmp); /* NULL when none */
    for (size_t i = 1; i < st->n_tensors; i++) {
        const dsv4_st_tensor *a = &st->tensors[i - 1], *b = &st->tensors[i];
        if (strcmp(a->name, b->name) != 0) continue;
        const char *fa = st->files[a->file].name, *fb = st->files[b->file].name;
        if (strcmp(fa, fb) > 0) {
            const char *tmp = fa;
            fa = fb;
            fb = tmp;
        }
        return st_fail(err, errlen, DSV4_ERR_FORMAT, "%s: tensor %s is also stored in %s", fa, a->name, fb);
    }
    return DSV4_OK;
}

static dsv4_status read_whole_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    const char *why;
    FILE *fp = dsv4_fopen_regular(path, &why);
    if (!fp) return st_fail(err, errlen, DSV4_ERR_IO, "%s: %s", path, why);
    /* an index is a few hundred KB (Flash's ~150); 256 MiB means something else sits there */
    const dsv4_status s = dsv4_read_all(fp, (size_t)1 << 28, buf, len);
    const int e = errno;
    fclose(fp);
    if (s == DSV4_ERR_NOMEM) return st_fail(err, errlen, s, "%s: out of memory", path);
    if (s == DSV4_ERR_IO) return st_fail(err, errlen, s, "%s: read error: %s", path, strerror(e));
    if (s) return st_fail(err, errlen, s, "%s: over 256 MiB: not a safetensors index", path);
    return DSV4_OK;
}

static bool is_plain_file_name(const char *s)
{
    return *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static dsv4_status st_open_index(dsv4_st *st, const char *dir, const char *index_path, char *err, size_t errlen)
{
    char *text;
    size_t len;
    dsv4_status s = read_whole_file(index_path, &text, &len, err, errlen);
    if (s) return s;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!root)
        return st_fail(err, errlen, DSV4_ERR_FORMAT, ST_INDEX_NAME ": line %d column %d: %s", jerr.line, jerr.column,
                       jerr.text);
    st_map_entry *map = NULL;
    json_t *wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(wm)) {
        s = st_fail(err, errlen, DSV4_ERR_FORMAT, ST_INDEX_NAME ": no \"weight_map\" object");
        goto done;
    }
    size_t n = json_object_size(wm);
    if (n == 0) {
        s = st_fail(err, errlen, DSV4_ERR_FORMAT, ST_INDEX_NAME ": \"weight_map\" lists no tensors");
        goto done;
    }
    map = malloc(n * sizeof *map);
    if (!map) {
        s = st_fail(err, errlen, DSV4_ERR_NOMEM, ST_INDEX_NAME ": out of memory");
        goto done;
    }
    size_t k = 0;
    const char *key;
    json_t *val;
    json_object_foreach(wm, key, val)
    {
        if (!json_is_string(val) || !is_plain_file_name(json_string_value(val))) {
            s = st_fail(err, errlen, DSV4_ERR_FORMAT,
                        ST_INDEX_NAME ": tensor %s: weight_map value %s%s%s is not the name of a file in %s", key,
                        json_is_string(val) ? "\"" : "",
                        json_is_string(val) ? json_string_value(val) : dsv4_json_type_name(val),
                        json_is_string(val) ? "\"" : "", dir);
            goto done;
        }
        map[k].tensor = key;
        map[k].file = json_string_value(val);
        k++;
    }

    /* Files in name order, so file indices do not depend on hash order. */
    qsort(map, n, sizeof *map, map_entry_file_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(map[i].file, map[i - 1].file) == 0) continue;
        s = st_load_file(st, dir, map[i].file, err, errlen);
        if (s == DSV4_ERR_IO) {
            char why[512];
            snprintf(why, sizeof why, "%s", err ? err : "");
            s = st_fail(err, errlen, DSV4_ERR_IO, ST_INDEX_NAME " maps tensor %s to %s, which cannot be read: %s",
                        map[i].tensor, map[i].file, why);
        }
        if (s) goto done;
    }
    if ((s = st_sort_unique(st, err, errlen))) goto done;

    /* Every listed tensor must sit in the file the index names. */
    for (size_t i = 0; i < n; i++) {
        const dsv4_st_tensor *t = dsv4_st_find(st, map[i].tensor);
        if (!t) {
            s = st_fail(err, errlen, DSV4_ERR_FORMAT,
                        "%s: tensor %s is listed in " ST_INDEX_NAME " but missing from the file", map[i].file,
                        map[i].tensor);
            goto done;
        }
        const char *found = st->files[t->file].name;
        if (strcmp(found, map[i].file) != 0) {
            s = st_fail(err, errlen, DSV4_ERR_FORMAT, ST_INDEX_NAME ": tensor %s is mapped to %s but stored in %s",
                        map[i].tensor, map[i].file, found);
            goto done;
        }
    }
done:
    free(map);
    json_decref(root);
    return s;
}

static dsv4_status st_open_glob(dsv4_st *st, const char *dir, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) return st_fail(err, errlen, DSV4_ERR_IO, "%s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    dsv4_status s = DSV4_OK;
    struct dirent *de;
    const char *ext = ".safetensors";
    size_t elen = strlen(ext);
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len <= elen || strcmp(de->d_name + len - elen, ext) != 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                s = st_fail(err, errlen, DSV4_ERR_NOMEM, "%s: out of memory", dir);
                goto done;
            }
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) {
            s = st_fail(err, errlen, DSV4_ERR_NOMEM, "%s: out of memory", dir);
            goto done;
        }
        n++;
    }
    if (n == 0) {
        s = st_fail(err, errlen, DSV4_ERR_IO,
                    "%s: no " ST_INDEX_NAME ", " ST_SINGLE_NAME " or *.safetensors file in this directory", dir);
        goto done;
    }
    qsort(names, n, sizeof *names, str_ptr_cmp);
    for (size_t i = 0; i < n && !s; i++) s = st_load_file(st, dir, names[i], err, errlen);
done:
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    closedir(d);
    return s;
}

dsv4_status dsv4_st_open(const char *dir, dsv4_st **out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!out) return st_fail(err, errlen, DSV4_ERR_INVALID, "dsv4_st_open: out is NULL");
    *out = NULL;
    if (!dir || !*dir) return st_fail(err, errlen, DSV4_ERR_INVALID, "dsv4_st_open: no checkpoint directory given");

    dsv4_st *st = calloc(1, sizeof *st);
    if (!st) return st_fail(err, errlen, DSV4_ERR_NOMEM, "%s: out of memory", dir);

    dsv4_status s;
    char *index_path = path_join(dir, ST_INDEX_NAME);
    char *single_path = path_join(dir, ST_SINGLE_NAME);
    struct stat sb;
    if (!index_path || !single_path)
        s = st_fail(err, errlen, DSV4_ERR_NOMEM, "%s: out of memory", dir);
    else if (stat(index_path, &sb) == 0)
        s = st_open_index(st, dir, index_path, err, errlen);
    else if (stat(single_path, &sb) == 0)
        s = st_load_file(st, dir, ST_SINGLE_NAME, err, errlen);
    else
        s = st_open_glob(st, dir, err, errlen);
    free(index_path);
    free(single_path);
    if (!s) s = st_sort_unique(st, err, errlen); /* a no-op re-check after the index path */

    if (s) {
        dsv4_st_close(st);
        return s;
    }
    *out = st;
    return DSV4_OK;
}
