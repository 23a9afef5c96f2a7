/*
 * dsv4.h - the public interface of the dsv4 inference engine.
 *
 * Two handles: an immutable engine (the loaded model plus backend buffers) and
 * sequences owned by the engine's state pool, named by integer handles. The
 * engine speaks tokens: a batch step takes, for each sequence, the tokens to
 * append (one for decode, many for a prefill chunk) and returns logits.
 *
 * Every function returns a dsv4_status (0 = OK, negative = kind of failure)
 * and, where it takes `err`, fills it with one sentence a user can act on.
 */
#ifndef DSV4_H
#define DSV4_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int dsv4_status;
enum {
    DSV4_OK = 0,
    DSV4_ERR_INVALID = -1,     /* bad argument or request */
    DSV4_ERR_IO = -2,          /* file missing or unreadable */
    DSV4_ERR_FORMAT = -3,      /* malformed checkpoint or config */
    DSV4_ERR_UNSUPPORTED = -4, /* valid but not something dsv4 serves */
    DSV4_ERR_NOMEM = -5,       /* allocation or state pool exhausted */
    DSV4_ERR_STATE = -6,       /* operation not valid in the current state */
};

const char *dsv4_status_str(dsv4_status st);

typedef enum {
    DSV4_NUMERICS_REFERENCE = 0, /* BF16 activations, FP8 KV round-trip, FP4 indexer round-trip */
    DSV4_NUMERICS_PLAIN = 1,     /* FP32 activations and caches, no simulations */
} dsv4_numerics;

typedef enum {
    DSV4_BACKEND_AUTO = 0,
    DSV4_BACKEND_CPU = 1,
    DSV4_BACKEND_CUDA = 2,
} dsv4_backend_kind;

typedef struct {
    const char *model_dir;     /* checkpoint folder (config.json + safetensors) */
    dsv4_backend_kind backend; /* AUTO picks CUDA when built and present, else CPU */
    dsv4_numerics numerics;
    int n_threads;             /* CPU threads; 0 = all cores */
    int max_seqs;              /* sequences alive at once; 0 = 16 */
    int64_t max_ctx;           /* longest sequence in tokens; 0 = 4096 */
    int64_t pool_tokens;       /* KV pool capacity in tokens over all sequences; 0 = max_ctx * max_seqs / 2 */
    int64_t max_batch_tokens;  /* largest batch step in tokens; 0 = 2048 */
    int verbose;               /* log load phases to stderr */
} dsv4_engine_opts;

typedef struct dsv4_engine dsv4_engine;

void dsv4_engine_opts_default(dsv4_engine_opts *o);
dsv4_status dsv4_engine_open(const dsv4_engine_opts *o, dsv4_engine **out, char *err, size_t errlen);
void dsv4_engine_close(dsv4_engine *e);

/* Facts about the loaded model. */
typedef struct {
    int vocab_size;
    int n_layers;
    int hidden;
    int64_t max_ctx;
    int max_seqs;
    int bos_id, eos_id;
    const char *backend; /* "cpu" or "cuda" */
} dsv4_model_info;
void dsv4_engine_info(const dsv4_engine *e, dsv4_model_info *info);

/* Sequences. A new sequence is empty (position 0). */
dsv4_status dsv4_seq_create(dsv4_engine *e, int *seq, char *err, size_t errlen);
void dsv4_seq_free(dsv4_engine *e, int seq);
/* Tokens already absorbed by the sequence. */
int64_t dsv4_seq_len(const dsv4_engine *e, int seq);
/* Free KV pages (each covers dsv4_page_tokens() positions). */
int64_t dsv4_pages_free(const dsv4_engine *e);
int64_t dsv4_pages_total(const dsv4_engine *e);
int dsv4_page_tokens(const dsv4_engine *e);

/* One entry of a batch step: append n_tokens to sequence seq. */
typedef struct {
    int seq;
    int n_tokens;
    const int32_t *tokens;   /* [n_tokens] */
    int all_logits;          /* 0: logits of the last token only; 1: of every token */
    float *logits;           /* [all_logits ? n_tokens : 1][vocab], filled by the step; may be NULL */
} dsv4_batch_entry;

/* Run one forward step over several sequences at once (decode tokens of some,
 * prefill chunks of others). Each sequence may appear at most once. The result
 * for a sequence does not depend on what else is in the batch. */
dsv4_status dsv4_step(dsv4_engine *e, dsv4_batch_entry *entries, int n_entries, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
