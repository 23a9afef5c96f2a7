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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

typedef enum {
    DSV4_MOE_AUTO = 0,  /* the backend's choice */
    DSV4_MOE_W4A16 = 1, /* FP4 weights decoded in registers, high-precision activations */
    DSV4_MOE_W4A8 = 2,  /* FP4 weights as FP8, FP8 activations, FP8 tensor cores */
    DSV4_MOE_W4A4 = 3,  /* native FP4 tensor cores (Blackwell sm_100a / sm_120a) */
} dsv4_moe_backend;

typedef enum {
    DSV4_PREFILL_OURS = 0,     /* the project's kernels: a token's bits the same in every step (batch invariance) */
    DSV4_PREFILL_CUBLASLT = 1, /* CUDA, reference numerics: FP8 linears in steps of >= 128 tokens through cuBLASLt's
                                  block-scaled FP8 GEMM - faster prefill, other bits than decode's kernels */
} dsv4_prefill_gemm;

typedef struct {
    const char *model_dir;     /* checkpoint folder (config.json + safetensors) */
    dsv4_backend_kind backend; /* AUTO picks CUDA when built and present, else CPU */
    dsv4_numerics numerics;
    dsv4_moe_backend moe_backend; /* an explicit choice the backend cannot run is refused at open */
    dsv4_prefill_gemm prefill_gemm; /* --prefill-gemm; cublaslt where it cannot run is refused at open */
    int n_threads;             /* CPU threads; 0 = all cores */
    int max_seqs;              /* sequences alive at once; 0 = 16 */
    int64_t max_ctx;           /* longest sequence in tokens; 0 = 4096 */
    int64_t pool_tokens;       /* KV pool capacity in tokens over all sequences; 0 = pool_fraction's, or
                                  max_ctx * max_seqs / 2 without one */
    double pool_fraction;      /* with pool_tokens 0: this fraction of the backend's memory still free once the
                                  weights and activations are in place (the GPU's; on the CPU MemAvailable less
                                  the checkpoint), capped at max_seqs * max_ctx, at least one max_ctx */
    int64_t max_batch_tokens;  /* largest batch step in tokens; 0 = 2048 */
    int verbose;               /* log load phases to stderr */
    int profile;               /* time every op family (dsv4_profile_print) */
    int fill_random;           /* benchmarking aid (--fill-random): generate the matrices of a sparse synthetic
                                  checkpoint (dsv4 mkmodel --sparse) with random values at load instead of reading
                                  them; such a checkpoint is refused without it, any other checkpoint with it */
    int no_graphs;             /* run decode steps op by op instead of replaying CUDA graphs (--profile implies it) */
    int ep;                    /* > 1: expert parallelism over this many ranks (--ep N): the routed experts split by
                                  id, every other op replicated (CPU ranks in one process with a loopback
                                  communicator, or CUDA ranks one a GPU joined by NCCL; bit for bit the single
                                  rank's logits); 1: one rank; 0: one, or on the GPU as many as the weights need
                                  when they do not fit GPU 0 (docs/PARALLEL.md) */
    int max_snaps;             /* prefix snapshots kept at once (dsv4_snap_save); 0: none. Each holds a copy of a
                                  sequence's fixed state (dsv4_model_info.state_slot_bytes): a pool sized from free
                                  memory leaves room for them; they are allocated at the first snapshot */
    const char *tune_file;     /* CUDA: a `dsv4 tune` file of kernel choices (--tune); NULL: $DSV4_TUNE, else the
                                  built-in ones. Unreadable, stale or from another GPU: a warning, the built-in ones */
} dsv4_engine_opts;

typedef struct dsv4_engine dsv4_engine;

void dsv4_engine_opts_default(dsv4_engine_opts *o);
/* "auto", "w4a16", "w4a8", "w4a4"; parse: 0, or -1 for another string (*m untouched). */
const char *dsv4_moe_backend_name(dsv4_moe_backend m);
int dsv4_moe_backend_parse(const char *s, dsv4_moe_backend *m);
/* "ours" / "cublaslt" -> *g: 0, or -1 for anything else */
int dsv4_prefill_gemm_parse(const char *s, dsv4_prefill_gemm *g);
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
    int64_t kv_page_bytes; /* one KV page (dsv4_page_tokens() positions of one sequence, every layer) */
    int kv_bf16_rows;      /* the cached rows are stored as BF16 (reference numerics, where the backend can) */
    int kv_fp4_keys;       /* the indexer's keys are stored as E2M1 codes + UE8M0 scales (likewise) */
    int64_t state_slot_bytes; /* a sequence's fixed state: window rings and compressors' partial windows */
    int max_snaps;            /* dsv4_engine_opts.max_snaps */
} dsv4_model_info;
void dsv4_engine_info(const dsv4_engine *e, dsv4_model_info *info);

/* --profile: time per op family (attention, indexer + top-k, compressors,
 * routed experts, shared expert, dense projections, hyper-connections,
 * norms/RoPE, head, communication between ranks, other), for decode and
 * prefill steps separately, as a
 * table or (json) one JSON object. Device backends time with events. */
void dsv4_profile_print(const dsv4_engine *e, FILE *out, int json);
/* Turn the profile on or off between steps (a profiled step runs op by op,
 * without graphs); returns whether it is now on (the backend may not time). */
int dsv4_profile_enable(dsv4_engine *e, int on);

/* Sequences. A new sequence is empty (position 0). */
dsv4_status dsv4_seq_create(dsv4_engine *e, int *seq, char *err, size_t errlen);
void dsv4_seq_free(dsv4_engine *e, int seq);
/* Tokens already absorbed by the sequence. */
int64_t dsv4_seq_len(const dsv4_engine *e, int seq);
/* For benchmarks: advance the sequence by n positions without running the
 * model. The pages it takes are filled with pseudo-random BF16 values in
 * [-1, 1] (the same for the same place in any sequence; a page already
 * holding earlier positions keeps its rows), so the logits that follow are
 * meaningless; what later steps cost - attention over the window and the
 * compressed rows, the indexer over n / ratio keys choosing among distinct
 * scores - is that of a context of that length. DSV4_ERR_INVALID past the
 * context limit, DSV4_ERR_NOMEM when the pool lacks the pages. */
dsv4_status dsv4_seq_skip(dsv4_engine *e, int seq, int64_t n, char *err, size_t errlen);
/* Free KV pages (each covers dsv4_page_tokens() positions). */
int64_t dsv4_pages_free(const dsv4_engine *e);
int64_t dsv4_pages_total(const dsv4_engine *e);
int dsv4_page_tokens(const dsv4_engine *e);

/* Snapshots, for reusing a prompt's prefix: the state of a sequence after its
 * first n tokens, from which a new sequence starts as if it had absorbed those
 * n tokens itself - the same bits in every later step, as a prefill split at n
 * gives (a snapshot is a prefill chunk boundary kept). The pages of whole
 * pages of positions are shared, not copied (a page is freed when no
 * sequence or snapshot holds it); a last, partly filled page is copied. The
 * state captured is that of the steps submitted so far (device copies are
 * ordered after them): save between the step that brought the sequence to n
 * and the next step that holds it. DSV4_ERR_NOMEM when every snapshot slot is
 * taken (dsv4_engine_opts.max_snaps) or a partly filled page finds no free
 * page; DSV4_ERR_INVALID for a sequence that does not exist or is empty. */
dsv4_status dsv4_snap_save(dsv4_engine *e, int seq, int *snap, char *err, size_t errlen);
/* The same, and the sequence is freed: its pages move to the snapshot (none copied). */
dsv4_status dsv4_seq_to_snap(dsv4_engine *e, int seq, int *snap, char *err, size_t errlen);
/* A new sequence holding the snapshot's state and length (the snapshot stays). */
dsv4_status dsv4_seq_from_snap(dsv4_engine *e, int snap, int *seq, char *err, size_t errlen);
void dsv4_snap_free(dsv4_engine *e, int snap);
/* Tokens the snapshot holds; -1 for none. */
int64_t dsv4_snap_len(const dsv4_engine *e, int snap);
int dsv4_snap_max(const dsv4_engine *e);
/* Pages held only through sharing: by snapshots, or by sequences that got them from one, with the sequence
 * that filled them gone. They are not free; freeing the snapshots that hold them returns those that no live
 * sequence holds. */
int64_t dsv4_pages_shared(const dsv4_engine *e);
/* Pages held by snapshots alone (freeing every snapshot would return them). */
int64_t dsv4_pages_cached(const dsv4_engine *e);

struct dsv4_sampler;
struct dsv4_sample;

/* One entry of a batch step: append n_tokens to sequence seq. */
typedef struct {
    int seq;
    int n_tokens;
    const int32_t *tokens;   /* [n_tokens] */
    int all_logits;          /* 0: logits of the last token only; 1: of every token */
    float *logits;           /* [all_logits ? n_tokens : 1][vocab], filled by the step; may be NULL */
    /* Optional: pick the token that follows the last one with this sampler
     * (sampling section below) into *sample. On a GPU the pick is made there
     * and only the token comes back, unless the sampler needs the host
     * (penalties, logit_bias, logprobs). The step does not accept the token:
     * call dsv4_sampler_accept. */
    struct dsv4_sampler *sampler;
    struct dsv4_sample *sample;
    /* 1: the one token to append (n_tokens 1, tokens unused, may be NULL) is
     * the pick this sequence's sampler made in the step submitted just before
     * this one - which may still be in flight (dsv4_step_submit). */
    int follow;
} dsv4_batch_entry;

/* Run one forward step over several sequences at once (decode tokens of some,
 * prefill chunks of others). Each sequence may appear at most once. The result
 * for a sequence does not depend on what else is in the batch. On a GPU, steps
 * of decode tokens only (one token per entry, each with logits or a sampler)
 * replay a CUDA graph captured per batch size. DSV4_ERR_STATE: a sampler found
 * no finite logit (the step itself happened). */
dsv4_status dsv4_step(dsv4_engine *e, dsv4_batch_entry *entries, int n_entries, char *err, size_t errlen);

/* dsv4_step in two halves, so that the host prepares and launches the next
 * step while the device runs this one (overlapped decode). submit validates
 * and issues the step and returns; finish waits for the oldest submitted step
 * and writes its samples (*sample of its entries: they must stay valid until
 * then) and returns what dsv4_step would have. At most two steps are in
 * flight: submit refuses a third (DSV4_ERR_INVALID) until one is finished. A
 * step only runs ahead of the host when the device picks every sample and no
 * logits come back (on a GPU: samplers without penalties, bias or logprobs);
 * any other step runs whole inside submit (the step before it finished
 * first), and finish only reports it. Entries with follow = 1 feed the
 * previous step's picks without the host reading them:
 *
 *   submit(s0); for (;;) { submit(s1: follow); finish() -> s0's picks; ... }
 *
 * A sequence finished by its pick (a stop token, say) has run one step more
 * than it needed; free it or step it on as usual. dsv4_step refuses to run
 * while a submitted step is unfinished. */
dsv4_status dsv4_step_submit(dsv4_engine *e, dsv4_batch_entry *entries, int n_entries, char *err, size_t errlen);
dsv4_status dsv4_step_finish(dsv4_engine *e, char *err, size_t errlen);
/* Submitted steps not yet finished (0, 1 or 2). */
int dsv4_steps_in_flight(const dsv4_engine *e);

/* ---------------------------------------------------------------- sampling --
 * One sampler per request: it owns its PRNG, penalty counts and scratch (sized
 * at create; nothing is allocated per token). Order of operations on a copy of
 * the logits: repetition penalty (HF: over prompt + generated tokens, divide a
 * positive logit by it, multiply a negative one), presence and frequency
 * penalties (OpenAI: over generated tokens, minus presence if seen, minus
 * frequency x count), logit_bias (added), then temperature 0 takes the argmax
 * (lowest id on ties); otherwise divide by temperature, softmax, keep the top_k,
 * then the smallest prefix whose share of that mass reaches top_p, then drop
 * tokens below min_p x the top probability, and draw from what is left.
 * logprobs are of the model's own distribution: log-softmax of the raw logits,
 * before penalties, bias, temperature and truncation (as vLLM's default), so
 * they do not change with sampling settings. */
typedef struct {
    float temperature;          /* >= 0; 0 = greedy; default 1 */
    float top_p;                /* (0, 1]; default 1 (off) */
    int top_k;                  /* >= 0; default 0 (off) */
    float min_p;                /* [0, 1]; default 0 (off) */
    float presence_penalty;     /* [-2, 2]; default 0 */
    float frequency_penalty;    /* [-2, 2]; default 0 */
    float repetition_penalty;   /* > 0; default 1 (off) */
    uint64_t seed;              /* used when has_seed; otherwise each sampler draws its own */
    int has_seed;
    const int32_t *logit_bias_ids; /* [n_logit_bias]; copied at create */
    const float *logit_bias;       /* [n_logit_bias], each in [-100, 100] */
    int n_logit_bias;
    const int32_t *stop_ids;    /* [n_stop_ids]: generating one finishes (include EOS here); copied */
    int n_stop_ids;
    int max_tokens;             /* > 0 finishes after that many tokens; 0 = no limit */
    int32_t vocab_limit;        /* > 0: ids at or above it are never picked nor listed in logprobs
                                   (a server sets the tokenizer's size); 0 = the whole vocabulary */
    int logprobs;               /* 1: fill dsv4_sample.logprob */
    int top_logprobs;           /* 0..DSV4_MAX_TOP_LOGPROBS alternatives per token (needs logprobs) */
} dsv4_sampling_params;

#define DSV4_MAX_TOP_LOGPROBS 20

typedef struct dsv4_sample {
    int32_t token;
    float logprob;              /* of token (when logprobs) */
    int n_top;                  /* top_logprobs entries, most likely first, lowest id first on ties */
    int32_t top_ids[DSV4_MAX_TOP_LOGPROBS];
    float top_logprobs[DSV4_MAX_TOP_LOGPROBS];
} dsv4_sample;

typedef enum {
    DSV4_FINISH_NONE = 0,       /* go on */
    DSV4_FINISH_STOP = 1,       /* a stop token (or, from the stop-string matcher, a stop string) */
    DSV4_FINISH_LENGTH = 2,     /* max_tokens reached */
} dsv4_finish;

typedef struct dsv4_sampler dsv4_sampler;

void dsv4_sampling_params_default(dsv4_sampling_params *p);
/* prompt (may be NULL) feeds the repetition penalty. Out-of-range settings are refused. */
dsv4_status dsv4_sampler_create(const dsv4_sampling_params *p, int vocab_size, const int32_t *prompt, int n_prompt,
                                dsv4_sampler **out, char *err, size_t errlen);
void dsv4_sampler_free(dsv4_sampler *s);
/* Picks the next token from logits[vocab_size] (left unchanged). Does not record it: call accept. */
dsv4_status dsv4_sampler_sample(dsv4_sampler *s, const float *logits, dsv4_sample *out);
/* The logprob of `token` in logits[vocab_size] (the raw distribution, over p's vocab_limit) and p's top_logprobs
 * alternatives, as a sampler with logprobs reports them for its picks: a prompt token's, say. */
void dsv4_logprobs_of(const dsv4_sampling_params *p, int vocab_size, const float *logits, int32_t token,
                      dsv4_sample *out);
/* Records a generated token (sampled or forced) for the penalties; says whether to stop. */
dsv4_finish dsv4_sampler_accept(dsv4_sampler *s, int32_t token);
/* 1 when the sampler's draws depend on neither the tokens it accepted nor logits read on the host (no
 * penalties, logit_bias or logprobs): a step may draw for it before its last pick is accepted (a follow
 * entry of dsv4_step_submit). */
int dsv4_sampler_blind(const dsv4_sampler *s);

/* Stop strings over streamed text, matched across token boundaries: feed each
 * detokenised piece; what comes back in *out is certain to be output (it holds
 * back only a suffix that may still begin a stop string). Returns 1 once a stop
 * string is found: *out is then the text before it, and later feeds give nothing;
 * -1 when out of memory (*out is empty and the piece is lost: end the stream).
 * *out stays valid until the next call. */
typedef struct dsv4_stop_matcher dsv4_stop_matcher;
dsv4_status dsv4_stop_create(const char *const *stops, int n_stops, dsv4_stop_matcher **out, char *err,
                             size_t errlen);
void dsv4_stop_free(dsv4_stop_matcher *m);
int dsv4_stop_feed(dsv4_stop_matcher *m, const char *text, size_t n, const char **out, size_t *out_len);
/* End of the stream without a stop string: the text still held back. */
void dsv4_stop_flush(dsv4_stop_matcher *m, const char **out, size_t *out_len);

/* --------------------------------------------------------------- tokenizer --
 * DeepSeek's byte-level BPE, loaded from a HF tokenizer.json, giving exactly
 * the ids of HF `tokenizers` (tokenizer.encode(text, add_special_tokens=False))
 * and its decode. A tokenizer is immutable once open and may be shared by
 * threads. Ids are int32; strings are UTF-8 with explicit lengths. */
typedef struct dsv4_tokenizer dsv4_tokenizer;

dsv4_status dsv4_tokenizer_open(const char *path, dsv4_tokenizer **out, char *err, size_t errlen);
void dsv4_tokenizer_close(dsv4_tokenizer *tok);
/* One more than the largest id (model vocabulary and added tokens). */
int32_t dsv4_tokenizer_vocab_size(const dsv4_tokenizer *tok);
/* The id of a token by its exact content ("<｜User｜>", "</think>"), added
 * tokens first, then the model vocabulary (HF token_to_id); -1 if none. */
int32_t dsv4_token_id(const dsv4_tokenizer *tok, const char *content);
/* Whether id is an added token marked special in tokenizer.json. */
bool dsv4_token_is_special(const dsv4_tokenizer *tok, int32_t id);

/* text[0, len) -> *ids (malloc'ed, [*n], free() it; non-NULL even when *n is 0).
 * parse_special: added-token strings in the text become their ids, as HF does;
 * false: every byte of the text goes through BPE (for untrusted text that must
 * not inject control tokens). Invalid UTF-8 is refused. */
dsv4_status dsv4_tokenize(const dsv4_tokenizer *tok, const char *text, size_t len, bool parse_special, int32_t **ids,
                          size_t *n, char *err, size_t errlen);
/* ids -> *text (malloc'ed, NUL-terminated, [*len] bytes, free() it): HF's
 * decode(ids, skip_special_tokens=False), invalid UTF-8 replaced by U+FFFD.
 * An id that names no token is refused. */
dsv4_status dsv4_detokenize(const dsv4_tokenizer *tok, const int32_t *ids, size_t n, char **text, size_t *len,
                            char *err, size_t errlen);

/* Incremental detokenisation for streaming: push ids one at a time; each push
 * returns the text that is now complete (whole UTF-8 characters only, possibly
 * empty), and flush returns what is left at the end. The concatenation of all
 * returned pieces equals dsv4_detokenize of all the ids. Returned text stays
 * valid until the next call on the same detokenizer. */
typedef struct dsv4_detok dsv4_detok;
dsv4_status dsv4_detok_create(const dsv4_tokenizer *tok, dsv4_detok **out, char *err, size_t errlen);
void dsv4_detok_free(dsv4_detok *d);
dsv4_status dsv4_detok_push(dsv4_detok *d, int32_t id, const char **text, size_t *len, char *err, size_t errlen);
void dsv4_detok_flush(dsv4_detok *d, const char **text, size_t *len);
/* Forget pending bytes (a new stream). */
void dsv4_detok_reset(dsv4_detok *d);

#ifdef __cplusplus
}
#endif

#endif
