/*
 * prefix.h - the server's prefix cache: engine snapshots (dsv4_snap_*) found
 * again by the tokens they hold.
 *
 * An entry is a snapshot plus a copy of its tokens. A request whose prompt
 * starts with an entry's tokens starts its sequence from that snapshot and
 * prefills only the rest: the same logits, bit for bit, as prefilling the
 * whole prompt (a snapshot is a prefill chunk boundary kept). Entries are
 * evicted least recently used first, when the engine's snapshot slots are
 * all taken or the scheduler needs the pages they hold. Owned by the
 * scheduler's worker thread: no locking.
 */
#ifndef DSV4_SERVER_PREFIX_H
#define DSV4_SERVER_PREFIX_H

#include <stdint.h>

#include "dsv4.h"

typedef struct srv_prefix srv_prefix;

/* NULL when the engine keeps no snapshots (dsv4_engine_opts.max_snaps 0) or out of memory. */
srv_prefix *srv_prefix_create(dsv4_engine *e);
/* Frees every entry's snapshot. */
void srv_prefix_destroy(srv_prefix *pc);

/* The longest entry whose tokens are a prefix of toks[0, n): its index (its length in *len), or -1. *common
 * (unless NULL): the longest run of tokens toks[0, n) shares with the start of any entry - where a state kept
 * would serve both (a system prompt seen twice). */
int srv_prefix_match(const srv_prefix *pc, const int32_t *toks, int64_t n, int64_t *len, int64_t *common);
/* A new sequence from entry i's snapshot (the entry counts as used now). */
dsv4_status srv_prefix_start(srv_prefix *pc, int i, int *seq, char *err, size_t errlen);

/* Keeps sequence seq's state; its first dsv4_seq_len(seq) tokens are toks. take: the sequence is freed into
 * the entry (dsv4_seq_to_snap), else copied (dsv4_snap_save: a partly filled last page takes a page from the
 * pool - only while spare_pages > 0, evicting entries to make it so where that can). An entry of the same
 * tokens is only marked used. Where no snapshot slot is free the least recently used entry goes. Returns the
 * new entry's index (with take: seq is gone), or -1 when none was made (with take: seq is still the
 * caller's). */
int srv_prefix_save(srv_prefix *pc, int seq, const int32_t *toks, int take, int64_t spare_pages);
/* Evicts entries, least recently used first, until at least one page is spare: spare_pages, the pages no
 * running request counts on now, grows by those an eviction frees. 0, or -1 where evicting every entry could
 * not make one (then none is evicted). */
int srv_prefix_spare_page(srv_prefix *pc, int64_t spare_pages);
/* Keeps the state of a request at its end, sequence seq moved into the entry: its tokens are prompt[0, n_prompt)
 * then the first of picks[0, n_picks) - as many as the sequence holds past the prompt (a pick not yet fed is
 * not in it). Returns the entry's index (seq is gone), or -1 (seq is still the caller's; nothing kept where the
 * sequence holds more picks than given, or no more than min_len tokens). */
int srv_prefix_keep_end(srv_prefix *pc, int seq, const int32_t *prompt, int64_t n_prompt, const int32_t *picks,
                        int64_t n_picks, int64_t min_len);
/* Entry i's last use (0: empty): unchanged since srv_prefix_save returned i means nobody has used it. */
uint64_t srv_prefix_stamp(const srv_prefix *pc, int i);
void srv_prefix_drop(srv_prefix *pc, int i);
/* Evicts the least recently used entry other than keep (-1: any); 0 when there is none. */
int srv_prefix_evict(srv_prefix *pc, int keep);
/* Entries held. */
int srv_prefix_count(const srv_prefix *pc);

#endif
