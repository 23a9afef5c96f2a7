/*
 * prefix.c - the server's prefix cache (prefix.h).
 *
 * A handful to a few hundred entries (one per engine snapshot slot), so a
 * lookup compares the prompt with each entry's tokens directly, up to the
 * first difference: an entry costs the length of what it shares with the
 * prompt, and is used only when all of its tokens match.
 */
#include "server/prefix.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int snap; /* engine snapshot, -1: the entry is empty */
    int64_t len;
    int32_t *toks; /* [len] */
    uint64_t used; /* tick of the last use */
} entry;

struct srv_prefix {
    dsv4_engine *e;
    int n; /* entries: the engine's snapshot slots */
    entry *ent;
    uint64_t tick;
};

srv_prefix *srv_prefix_create(dsv4_engine *e)
{
    const int n = dsv4_snap_max(e);
    if (n <= 0) return NULL;
    srv_prefix *pc = calloc(1, sizeof *pc);
    if (!pc || !(pc->ent = calloc((size_t)n, sizeof(entry)))) {
        free(pc);
        return NULL;
    }
    pc->e = e;
    pc->n = n;
    for (int i = 0; i < n; i++) pc->ent[i].snap = -1;
    return pc;
}

static void entry_drop(srv_prefix *pc, entry *en)
{
    dsv4_snap_free(pc->e, en->snap);
    free(en->toks);
    memset(en, 0, sizeof *en);
    en->snap = -1;
}

void srv_prefix_destroy(srv_prefix *pc)
{
    if (!pc) return;
    for (int i = 0; i < pc->n; i++)
        if (pc->ent[i].snap >= 0) entry_drop(pc, &pc->ent[i]);
    free(pc->ent);
    free(pc);
}

int srv_prefix_match(const srv_prefix *pc, const int32_t *toks, int64_t n, int64_t *len, int64_t *common)
{
    int best = -1;
    *len = 0;
    if (common) *common = 0;
    if (!pc) return -1;
    for (int i = 0; i < pc->n; i++) {
        const entry *en = &pc->ent[i];
        if (en->snap < 0) continue;
        const int64_t m = en->len < n ? en->len : n;
        int64_t k = 0;
        while (k < m && en->toks[k] == toks[k]) k++;
        if (common && k > *common) *common = k;
        if (k == en->len && en->len > *len) {
            best = i;
            *len = en->len;
        }
    }
    return best;
}

dsv4_status srv_prefix_start(srv_prefix *pc, int i, int *seq, char *err, size_t errlen)
{
    entry *en = &pc->ent[i];
    en->used = ++pc->tick;
    return dsv4_seq_from_snap(pc->e, en->snap, seq, err, errlen);
}

int srv_prefix_evict(srv_prefix *pc, int keep)
{
    int lru = -1;
    for (int i = 0; pc && i < pc->n; i++)
        if (pc->ent[i].snap >= 0 && i != keep && (lru < 0 || pc->ent[i].used < pc->ent[lru].used)) lru = i;
    if (lru < 0) return 0;
    entry_drop(pc, &pc->ent[lru]);
    return 1;
}

int srv_prefix_count(const srv_prefix *pc)
{
    int k = 0;
    for (int i = 0; pc && i < pc->n; i++) k += pc->ent[i].snap >= 0;
    return k;
}

int srv_prefix_spare_page(srv_prefix *pc, int64_t spare_pages)
{
    if (!pc) return -1;
    /* evicting every entry frees at most the pages the entries alone hold: nothing if that is too few */
    if (spare_pages + dsv4_pages_cached(pc->e) < 1) return -1;
    const int64_t shared0 = dsv4_pages_shared(pc->e); /* evicting an entry returns its pages nobody else holds */
    while (spare_pages - (dsv4_pages_shared(pc->e) - shared0) < 1)
        if (!srv_prefix_evict(pc, -1)) return -1;
    return 0;
}

int srv_prefix_save(srv_prefix *pc, int seq, const int32_t *toks, int take, int64_t spare_pages)
{
    if (!pc) return -1;
    const int64_t len = dsv4_seq_len(pc->e, seq);
    if (len <= 0) return -1;
    for (int i = 0; i < pc->n; i++) {
        entry *en = &pc->ent[i];
        if (en->snap >= 0 && en->len == len && !memcmp(en->toks, toks, (size_t)len * sizeof(int32_t))) {
            en->used = ++pc->tick; /* kept already */
            return -1;
        }
    }
    /* a copy of a partly filled page comes out of the pages no running request counts on */
    if (!take && len % dsv4_page_tokens(pc->e) && srv_prefix_spare_page(pc, spare_pages)) return -1;
    int slot = 0;
    while (slot < pc->n && pc->ent[slot].snap >= 0) slot++;
    if (slot == pc->n) {
        if (!srv_prefix_evict(pc, -1)) return -1;
        for (slot = 0; pc->ent[slot].snap >= 0; slot++) {
        }
    }
    entry *en = &pc->ent[slot];
    if (!(en->toks = malloc((size_t)len * sizeof(int32_t)))) return -1;
    memcpy(en->toks, toks, (size_t)len * sizeof(int32_t));
    char err[256];
    const dsv4_status st = take ? dsv4_seq_to_snap(pc->e, seq, &en->snap, err, sizeof err)
                                : dsv4_snap_save(pc->e, seq, &en->snap, err, sizeof err);
    if (st != DSV4_OK) {
        free(en->toks);
        memset(en, 0, sizeof *en);
        en->snap = -1;
        return -1;
    }
    en->len = len;
    en->used = ++pc->tick;
    return slot;
}

int srv_prefix_keep_end(srv_prefix *pc, int seq, const int32_t *prompt, int64_t n_prompt, const int32_t *picks,
                        int64_t n_picks, int64_t min_len)
{
    if (!pc || seq < 0) return -1;
    const int64_t len = dsv4_seq_len(pc->e, seq), out = len - n_prompt;
    if (len <= min_len || out < 0 || out > n_picks) return -1;
    int32_t *toks = malloc((size_t)len * sizeof(int32_t));
    if (!toks) return -1;
    memcpy(toks, prompt, (size_t)n_prompt * sizeof(int32_t));
    if (out) memcpy(toks + n_prompt, picks, (size_t)out * sizeof(int32_t));
    const int i = srv_prefix_save(pc, seq, toks, 1, 0);
    free(toks);
    return i;
}

uint64_t srv_prefix_stamp(const srv_prefix *pc, int i)
{
    return pc && i >= 0 && i < pc->n && pc->ent[i].snap >= 0 ? pc->ent[i].used : 0;
}

void srv_prefix_drop(srv_prefix *pc, int i)
{
    if (pc && i >= 0 && i < pc->n && pc->ent[i].snap >= 0) entry_drop(pc, &pc->ent[i]);
}
