/*
 * regex.h - the tokenizer's regular expressions: HF `tokenizers` semantics on PCRE2.
 *
 * HF `tokenizers` compiles a pre-tokenizer's Split patterns with Oniguruma. We
 * compile them with PCRE2 (UTF, UCP, JIT) after rewriting the constructs whose
 * meaning differs between the two engines, so that a pattern splits text
 * exactly as HF does:
 *   - \s \S \d \D \w \W and \p{..} \P{..} become explicit classes with
 *     Oniguruma's Unicode version (PCRE2 10.42 knows Unicode 14; Oniguruma 16),
 *     from the generated unicode_tables.h; \h \H are hex digits (Oniguruma);
 *   - ^ and $ match at line boundaries (Oniguruma's Ruby-style anchors);
 *   - (?m) means "dot matches newline" (Ruby), \uHHHH is a code point.
 * Nested classes and class intersection (`[a[b]]`, `&&`), which PCRE2 cannot
 * express, are refused at compile time rather than silently misread.
 *
 * Matching follows Oniguruma's find_iter: matches left to right, each search
 * starting where the previous match ended, an empty match right after the
 * previous match skipped by one character.
 */
#ifndef DSV4_TEXT_REGEX_H
#define DSV4_TEXT_REGEX_H

#include <stddef.h>

#include "dsv4.h"

typedef struct dsv4_re dsv4_re;
typedef struct dsv4_re_scratch dsv4_re_scratch;

/* A match: [start, end) byte offsets into the subject. */
typedef struct {
    size_t start, end;
} dsv4_re_span;

/* Compile `pattern` (UTF-8, len bytes). literal != 0: match the text itself
 * (HF's Split {"String": ...}). */
dsv4_status dsv4_re_compile(const char *pattern, size_t len, int literal, dsv4_re **out, char *err,
                            size_t errlen);
void dsv4_re_free(dsv4_re *re);

/* The PCRE2 pattern a pattern was rewritten to (for error messages and tests). */
const char *dsv4_re_rewritten(const dsv4_re *re);

/* Per-thread match state (match data and JIT stack), usable with any regex. */
dsv4_re_scratch *dsv4_re_scratch_create(void);
void dsv4_re_scratch_free(dsv4_re_scratch *s);

/* All matches of re in subject[0, len) (valid UTF-8, not checked here), in
 * order, into *spans (grown with realloc; *cap is its capacity). Returns the
 * number of matches, or -1 with err filled when PCRE2 fails (stack or match
 * limits), -2 ("out of memory") when memory runs out. */
long dsv4_re_find_all(const dsv4_re *re, dsv4_re_scratch *s, const char *subject, size_t len,
                      dsv4_re_span **spans, size_t *cap, char *err, size_t errlen);

#endif
