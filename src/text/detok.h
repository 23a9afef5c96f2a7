/*
 * detok.h - ids back to text: whole and incremental (UTF-8-safe) detokenisation.
 *
 * Decoding concatenates the bytes of each token (tokenizer.c, HF's ByteLevel
 * decoder) and repairs the result the way Rust's String::from_utf8_lossy does
 * (and Python's bytes.decode("utf-8", "replace")): each maximal ill-formed
 * subsequence becomes one U+FFFD. The repair is a small state machine over at
 * most three pending bytes, so feeding the bytes in any number of pieces gives
 * the same text as feeding them at once: streaming never emits half a
 * character and never loses one.
 */
#ifndef DSV4_TEXT_DETOK_H
#define DSV4_TEXT_DETOK_H

#include <stddef.h>
#include <stdint.h>

/* Pending bytes of an incomplete, so far valid, UTF-8 sequence. */
typedef struct {
    uint8_t pend[4];
    int n_pend; /* 0..3 */
    int need;   /* total length of the pending sequence */
} dsv4_utf8_repair;

/* Repair bytes s[0, n) into out (which must hold 3 * n + 3 bytes); returns the
 * bytes written. flush: also end the stream (a pending incomplete sequence
 * becomes one U+FFFD). */
size_t dsv4_utf8_repair_feed(dsv4_utf8_repair *r, const uint8_t *s, size_t n, int flush, char *out);

#endif
