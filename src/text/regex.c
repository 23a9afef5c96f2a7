/*
 * regex.c - HF/Oniguruma regex semantics on PCRE2 (see regex.h).
 *
 * The rewrite is a single left-to-right pass that knows just enough of the
 * pattern grammar to tell escapes, character classes and option groups apart;
 * everything it does not rewrite is copied byte for byte and left to PCRE2's
 * parser, so a pattern PCRE2 rejects fails with PCRE2's own message.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex.h"

#include <ctype.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/unicode_tables.h"

struct dsv4_re {
    pcre2_code *code;
    int jit;         /* JIT compiled: match with pcre2_jit_match */
    char *rewritten; /* the PCRE2 pattern */
};

struct dsv4_re_scratch {
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *stack;
};

/* ------------------------------------------------------------------------ */
/* Growable string                                                          */

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* ------------------------------------------------------------------------ */
/* Rewrite                                                                  */

/* Class contents for a property name (Oniguruma's loose matching: case, '_',
 * ' ' and '-' ignored); NULL when the table does not know it. */
static const char *uprop_class(const char *name, size_t n)
{
    char key[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof key; i++) {
        char c = name[i];
        if (c == '_' || c == ' ' || c == '-') continue;
        key[k++] = (char)tolower((unsigned char)c);
    }
    key[k] = 0;
    for (size_t r = 0; r < sizeof TEXT_UPROPS / sizeof TEXT_UPROPS[0]; r++) {
        const char *s = TEXT_UPROPS[r].names;
        while (*s) {
            const char *bar = strchr(s, '|');
            size_t len = bar ? (size_t)(bar - s) : strlen(s);
            if (len == k && !memcmp(s, key, k)) return TEXT_UPROPS[r].cls;
            s += len + (bar ? 1 : 0);
        }
    }
    return NULL;
}

/* One item of the character class being rewritten: contents that may go
 * inside [...] as they are, or the contents of a negated set (\S, \P{L}),
 * which PCRE2 cannot put inside another class without losing our tables. */
typedef struct {
    sbuf pos;          /* positive items, as class contents */
    sbuf neg[16];      /* negated sets, each as class contents */
    int n_neg;
    int negated;       /* [^...] */
} cls_state;

static int utf8_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Parse the escape at p[i] == '\\' that names a set (\s \d \w \h \p{..} and
 * their negations). Returns the bytes consumed (0 if it is no such escape),
 * the class contents in *cls and whether the set is negated. */
static size_t set_escape(const char *p, size_t len, size_t i, const char **cls, int *neg,
                         char *tmp, size_t tmplen)
{
    if (i + 1 >= len) return 0;
    char c = p[i + 1];
    *neg = isupper((unsigned char)c) ? 1 : 0;
    switch (tolower((unsigned char)c)) {
    case 's': *cls = TEXT_CLASS_SPACE; return 2;
    case 'd': *cls = TEXT_CLASS_DIGIT; return 2;
    case 'w': *cls = TEXT_CLASS_WORD; return 2;
    case 'h': *cls = "0-9a-fA-F"; return 2;
    case 'p': {
        const char *name;
        size_t n, used;
        if (i + 2 < len && p[i + 2] == '{') {
            const char *close = memchr(p + i + 3, '}', len - (i + 3));
            if (!close) return 0;
            name = p + i + 3;
            n = (size_t)(close - name);
            used = (size_t)(close - (p + i)) + 1;
        } else if (i + 2 < len && isalpha((unsigned char)p[i + 2])) {
            name = p + i + 2;
            n = 1;
            used = 3;
        } else {
            return 0;
        }
        if (n > 0 && name[0] == '^') {
            *neg = !*neg;
            name++;
            n--;
        }
        const char *t = uprop_class(name, n);
        if (!t) {
            /* Unknown to our tables: PCRE2's own property, by its own name. */
            snprintf(tmp, tmplen, "\\p{%.*s}", (int)n, name);
            t = tmp;
        }
        *cls = t;
        return used;
    }
    default: return 0;
    }
}

static void cls_finish(sbuf *out, cls_state *cs)
{
    if (cs->n_neg == 0) {
        sb_puts(out, cs->negated ? "[^" : "[");
        sb_put(out, cs->pos.p ? cs->pos.p : "", cs->pos.n);
        sb_puts(out, "]");
    } else {
        /* [a\S] = (?:[a]|[^S]);  [^a\S] = one character in neither. */
        sb_puts(out, cs->negated ? "(?:(?!" : "(?:");
        int first = 1;
        if (cs->pos.n) {
            sb_puts(out, "[");
            sb_put(out, cs->pos.p, cs->pos.n);
            sb_puts(out, "]");
            first = 0;
        }
        for (int k = 0; k < cs->n_neg; k++) {
            if (!first) sb_puts(out, "|");
            sb_puts(out, "[^");
            sb_put(out, cs->neg[k].p ? cs->neg[k].p : "", cs->neg[k].n);
            sb_puts(out, "]");
            first = 0;
        }
        sb_puts(out, cs->negated ? ")(?s:.))" : ")");
    }
    if (cs->pos.oom) out->oom = 1;
    free(cs->pos.p);
    for (int k = 0; k < cs->n_neg; k++) {
        if (cs->neg[k].oom) out->oom = 1;
        free(cs->neg[k].p);
    }
    memset(cs, 0, sizeof *cs);
}

static int rewrite(const char *p, size_t len, sbuf *out, char *err, size_t errlen)
{
    cls_state cs;
    memset(&cs, 0, sizeof cs);
    int in_class = 0;
    char tmp[96];
    for (size_t i = 0; i < len;) {
        sbuf *dst = in_class ? &cs.pos : out;
        unsigned char c = (unsigned char)p[i];
        if (c == '\\') {
            if (i + 1 >= len) {
                sb_put(dst, p + i, 1);
                i++;
                continue;
            }
            char e = p[i + 1];
            if (e == 'Q') { /* \Q...\E: literal, copied as is */
                size_t j = i + 2;
                while (j + 1 < len && !(p[j] == '\\' && p[j + 1] == 'E')) j++;
                j = j + 1 < len ? j + 2 : len;
                sb_put(dst, p + i, j - i);
                i = j;
                continue;
            }
            if (e == 'u' && i + 5 < len + 0 && isxdigit((unsigned char)p[i + 2]) &&
                isxdigit((unsigned char)p[i + 3]) && isxdigit((unsigned char)p[i + 4]) &&
                isxdigit((unsigned char)p[i + 5])) {
                sb_puts(dst, "\\x{");
                sb_put(dst, p + i + 2, 4);
                sb_puts(dst, "}");
                i += 6;
                continue;
            }
            if (e == 'c' && i + 2 < len) { /* \cX: X is data, even '[' */
                sb_put(dst, p + i, 3);
                i += 3;
                continue;
            }
            const char *set;
            int neg;
            size_t used = set_escape(p, len, i, &set, &neg, tmp, sizeof tmp);
            if (used) {
                i += used;
                if (!in_class) {
                    sb_puts(out, neg ? "[^" : "[");
                    sb_puts(out, set);
                    sb_puts(out, "]");
                } else if (!neg) {
                    sb_puts(&cs.pos, set);
                } else {
                    if (cs.n_neg == (int)(sizeof cs.neg / sizeof cs.neg[0])) {
                        snprintf(err, errlen, "too many negated sets in one character class");
                        cls_finish(out, &cs);
                        return -1;
                    }
                    sb_puts(&cs.neg[cs.n_neg++], set);
                }
                /* A '-' after an expanded set is literal, never a range. */
                if (in_class && i + 1 < len && p[i] == '-' && p[i + 1] != ']') {
                    sb_puts(&cs.pos, "\\-");
                    i++;
                }
                continue;
            }
            int n = utf8_len((unsigned char)e);
            sb_put(dst, p + i, (size_t)(1 + n) <= len - i ? (size_t)(1 + n) : len - i);
            i += (size_t)(1 + n);
            continue;
        }
        if (in_class) {
            if (c == ']') {
                in_class = 0;
                cls_finish(out, &cs);
                i++;
                continue;
            }
            if (c == '[') {
                if (i + 1 < len && p[i + 1] == ':') { /* [:alpha:] */
                    const char *end = strstr(p + i, ":]");
                    size_t j = end && (size_t)(end - p) < len ? (size_t)(end - p) + 2 : len;
                    sb_put(&cs.pos, p + i, j - i);
                    i = j;
                    continue;
                }
                snprintf(err, errlen, "nested character classes ('[' inside [...]) are not supported");
                cls_finish(out, &cs);
                return -1;
            }
            if (c == '&' && i + 1 < len && p[i + 1] == '&') {
                snprintf(err, errlen, "character class intersection ('&&') is not supported");
                cls_finish(out, &cs);
                return -1;
            }
            int n = utf8_len(c);
            sb_put(&cs.pos, p + i, (size_t)n <= len - i ? (size_t)n : len - i);
            i += (size_t)n;
            continue;
        }
        if (c == '[') {
            in_class = 1;
            i++;
            if (i < len && p[i] == '^') {
                cs.negated = 1;
                i++;
            }
            if (i < len && p[i] == ']') { /* leading ']' is literal */
                sb_puts(&cs.pos, "\\]");
                i++;
            }
            continue;
        }
        if (c == '(' && i + 2 < len && p[i + 1] == '?') {
            /* Option group (?imx-imx) or (?imx:...): Oniguruma's m is PCRE2's s. */
            size_t j = i + 2;
            while (j < len && (isalpha((unsigned char)p[j]) || p[j] == '-')) j++;
            if (j > i + 2 && j < len && (p[j] == ')' || p[j] == ':')) {
                sb_puts(out, "(?");
                for (size_t k = i + 2; k < j; k++) sb_put(out, p[k] == 'm' ? "s" : p + k, 1);
                i = j;
                continue;
            }
        }
        int n = utf8_len(c);
        sb_put(out, p + i, (size_t)n <= len - i ? (size_t)n : len - i);
        i += (size_t)n;
    }
    if (in_class) { /* unterminated: let PCRE2 report it */
        sb_puts(out, cs.negated ? "[^" : "[");
        sb_put(out, cs.pos.p ? cs.pos.p : "", cs.pos.n);
        free(cs.pos.p);
        for (int k = 0; k < cs.n_neg; k++) free(cs.neg[k].p);
    }
    if (out->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Compile and match                                                        */

dsv4_status dsv4_re_compile(const char *pattern, size_t len, int literal, dsv4_re **out, char *err,
                            size_t errlen)
{
    *out = NULL;
    sbuf b = {0};
    uint32_t opts;
    if (literal) {
        sb_put(&b, pattern, len);
        opts = PCRE2_UTF | PCRE2_LITERAL;
    } else {
        char why[160];
        if (rewrite(pattern, len, &b, why, sizeof why)) {
            snprintf(err, errlen, "regex /%.*s/: %s", (int)(len > 200 ? 200 : len), pattern, why);
            free(b.p);
            return DSV4_ERR_UNSUPPORTED;
        }
        opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE;
    }
    if (b.oom) {
        free(b.p);
        snprintf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    if (!b.p) sb_put(&b, "", 0);
    dsv4_re *re = calloc(1, sizeof *re);
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!re || !cc) {
        free(re);
        free(b.p);
        pcre2_compile_context_free(cc);
        snprintf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
    int ec;
    PCRE2_SIZE eoff;
    re->code = pcre2_compile((PCRE2_SPTR)b.p, b.n, opts, &ec, &eoff, cc);
    pcre2_compile_context_free(cc);
    if (!re->code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        snprintf(err, errlen, "regex /%.*s/: %s at offset %zu of its PCRE2 form", (int)(len > 200 ? 200 : len),
                 pattern, (char *)msg, (size_t)eoff);
        free(b.p);
        free(re);
        return DSV4_ERR_FORMAT;
    }
    re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
    re->rewritten = b.p;
    *out = re;
    return DSV4_OK;
}

void dsv4_re_free(dsv4_re *re)
{
    if (!re) return;
    pcre2_code_free(re->code);
    free(re->rewritten);
    free(re);
}

const char *dsv4_re_rewritten(const dsv4_re *re) { return re->rewritten; }

dsv4_re_scratch *dsv4_re_scratch_create(void)
{
    dsv4_re_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->md = pcre2_match_data_create(1, NULL);
    s->mctx = pcre2_match_context_create(NULL);
    /* Long whitespace runs under \s+(?!\S) backtrack deeply; the stack grows
     * on demand up to 64 MiB of address space. */
    s->stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, NULL);
    if (!s->md || !s->mctx || !s->stack) {
        dsv4_re_scratch_free(s);
        return NULL;
    }
    pcre2_jit_stack_assign(s->mctx, NULL, s->stack);
    return s;
}

void dsv4_re_scratch_free(dsv4_re_scratch *s)
{
    if (!s) return;
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mctx);
    pcre2_jit_stack_free(s->stack);
    free(s);
}

long dsv4_re_find_all(const dsv4_re *re, dsv4_re_scratch *s, const char *subject, size_t len,
                      dsv4_re_span **spans, size_t *cap, char *err, size_t errlen)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
    size_t n = 0, last_end = 0, last_match_end = 0;
    int have_last = 0;
    while (last_end <= len) {
        int rc = re->jit ? pcre2_jit_match(re->code, (PCRE2_SPTR)subject, len, last_end, 0, s->md, s->mctx)
                         : pcre2_match(re->code, (PCRE2_SPTR)subject, len, last_end, PCRE2_NO_UTF_CHECK,
                                       s->md, s->mctx);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc == PCRE2_ERROR_NOMEMORY) {
            snprintf(err, errlen, "out of memory");
            return -2;
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            snprintf(err, errlen, "regex match failed: %s", (char *)msg);
            return -1;
        }
        size_t ms = ov[0], me = ov[1];
        if (me < ms) me = ms; /* \K tricks: never a negative span */
        if (me == ms && have_last && last_match_end == me) {
            /* Oniguruma's find_iter: no empty match right after a match. */
            last_end += last_end < len ? (size_t)utf8_len((unsigned char)subject[last_end]) : 1;
            continue;
        }
        last_end = me;
        last_match_end = me;
        have_last = 1;
        if (n == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            dsv4_re_span *ns = realloc(*spans, nc * sizeof *ns);
            if (!ns) {
                snprintf(err, errlen, "out of memory");
                return -2;
            }
            *spans = ns;
            *cap = nc;
        }
        (*spans)[n].start = ms;
        (*spans)[n].end = me;
        n++;
    }
    return (long)n;
}
