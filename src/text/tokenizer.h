/*
 * tokenizer.h - the byte-level BPE tokenizer (internal view; the public API is
 * the tokenizer section of dsv4.h).
 *
 * dsv4_tokenizer reproduces HF `tokenizers` for DeepSeek's tokenizer.json
 * (MODEL.md §5.1): added tokens matched in the raw text first (leftmost-longest,
 * non-normalized ones, then normalized ones in what is left), then the
 * pre-tokenizer's stages (Split / Digits, each re-splitting every piece left by
 * the one before, then ByteLevel), then BPE merges by rank on each piece.
 * Decoding is HF's ByteLevel decoder: each token's characters mapped back to
 * bytes (a token with a character outside the byte alphabet, such as
 * "<｜User｜>", stands for its own UTF-8), then invalid UTF-8 replaced by U+FFFD.
 *
 * A tokenizer is immutable once open and may be used from several threads at
 * once; the BPE cache inside is taken with a try-lock, and a thread that finds
 * it busy works with a private one.
 */
#ifndef DSV4_TEXT_TOKENIZER_H
#define DSV4_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "dsv4.h"

/* The bytes token `id` decodes to before UTF-8 repair; NULL when no token has
 * this id. */
const uint8_t *dsv4_tok_bytes(const dsv4_tokenizer *tok, int32_t id, size_t *len);

/* Whether s[0, n) is valid UTF-8 (no surrogates, no overlongs); when not,
 * *bad is the offset of the first byte that cannot start or continue a
 * character. */
int dsv4_utf8_valid(const char *s, size_t n, size_t *bad);

#endif
