/*
 * chat_json.c - JSON for the chat encoding: Python json.dumps emulation, and
 * OpenAI-style messages JSON -> dsv4_chat_message structs.
 *
 * The official encoder writes tool schemas, response formats and non-string
 * tool-call arguments with json.dumps(value, ensure_ascii=False) after a
 * json.loads. To reproduce its bytes we parse JSON the way Python does (a small
 * DOM: a repeated key keeps its first position and its last value; integers
 * keep their digits, so big ones survive; NaN and Infinity are accepted) and
 * write it the way Python does (", " and ": " separators, floats as repr,
 * control characters as \u00XX in lower case, everything else raw).
 *
 * The jansson side only reads requests; sub-objects that the encoder later
 * re-dumps are handed on as JSON text written with 17 significant digits, so
 * nothing is lost between the two parsers.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "text/chat.h"


/* ------------------------------------------------------------- strbuf -- */

int dsv4_strbuf_put(dsv4_strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

static int sb_puts(dsv4_strbuf *b, const char *s) { return dsv4_strbuf_put(b, s, strlen(s)); }

void dsv4_strbuf_free(dsv4_strbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ------------------------------------------------ Python-style JSON DOM -- */

enum { PJ_NULL, PJ_FALSE, PJ_TRUE, PJ_INT, PJ_FLOAT, PJ_STR, PJ_ARR, PJ_OBJ };

typedef struct {
    int type;
    size_t off, len; /* PJ_INT: normalised digits, PJ_STR: decoded bytes, both in arena */
    double d;        /* PJ_FLOAT */
    int child;       /* PJ_ARR: first element; PJ_OBJ: first key (key, value, key, value ...) */
    int next;        /* next sibling, -1 at the end */
} pj_node;

typedef struct {
    pj_node *nodes;
    int n, cap;
    dsv4_strbuf arena;
    const char *s;
    size_t pos, end;
    int depth;
    const char *why; /* first error; NULL after a failure: out of memory */
} pj_doc;

#define PJ_MAX_DEPTH 512

static void pj_free(pj_doc *d)
{
    free(d->nodes);
    dsv4_strbuf_free(&d->arena);
}

static int pj_new(pj_doc *d, int type)
{
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 64;
        pj_node *p = realloc(d->nodes, (size_t)cap * sizeof *p);
        if (!p) return -1;
        d->nodes = p;
        d->cap = cap;
    }
    pj_node *nd = &d->nodes[d->n];
    memset(nd, 0, sizeof *nd);
    nd->type = type;
    nd->child = nd->next = -1;
    return d->n++;
}

static void pj_ws(pj_doc *d)
{
    while (d->pos < d->end) {
        char c = d->s[d->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        d->pos++;
    }
}

static int pj_lit(pj_doc *d, const char *lit)
{
    size_t n = strlen(lit);
    if (d->end - d->pos >= n && memcmp(d->s + d->pos, lit, n) == 0) {
        d->pos += n;
        return 1;
    }
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int read_u4(pj_doc *d, unsigned *u)
{
    if (d->end - d->pos < 4)
        return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(d->s[d->pos + i]);
        if (h < 0)
            return -1;
        v = v * 16 + (unsigned)h;
    }
    d->pos += 4;
    *u = v;
    return 0;
}

static int put_utf8(dsv4_strbuf *b, unsigned cp)
{
    char t[4];
    size_t n;
    if (cp < 0x80) {
        t[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        t[0] = (char)(0xC0 | (cp >> 6));
        t[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        t[0] = (char)(0xE0 | (cp >> 12));
        t[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        t[0] = (char)(0xF0 | (cp >> 18));
        t[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return dsv4_strbuf_put(b, t, n);
}

/* A string body after the opening quote, decoded into the arena. Like Python's
 * strict json.loads: no raw control characters. Lone surrogates, which Python
 * would keep but UTF-8 cannot carry, are refused. */
static int pj_string(pj_doc *d, size_t *off, size_t *len)
{
    *off = d->arena.len;
    for (;;) {
        if (d->pos >= d->end) {
            d->why = "unterminated string";
            return -1;
        }
        unsigned char c = (unsigned char)d->s[d->pos];
        if (c == '"') {
            d->pos++;
            break;
        }
        if (c < 0x20) {
            d->why = "control character in string";
            return -1;
        }
        if (c != '\\') {
            size_t st = d->pos;
            while (d->pos < d->end) {
                unsigned char e = (unsigned char)d->s[d->pos];
                if (e == '"' || e == '\\' || e < 0x20)
                    break;
                d->pos++;
            }
            if (dsv4_strbuf_put(&d->arena, d->s + st, d->pos - st))
                return -1;
            continue;
        }
        d->pos++;
        if (d->pos >= d->end) {
            d->why = "unterminated string";
            return -1;
        }
        char e = d->s[d->pos++];
        char ch;
        switch (e) {
        case '"': ch = '"'; break;
        case '\\': ch = '\\'; break;
        case '/': ch = '/'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'n': ch = '\n'; break;
        case 'r': ch = '\r'; break;
        case 't': ch = '\t'; break;
        case 'u': {
            unsigned u;
            if (read_u4(d, &u)) {
                d->why = "bad \\u escape";
                return -1;
            }
            if (u >= 0xD800 && u < 0xDC00) {
                unsigned lo;
                if (d->end - d->pos >= 6 && d->s[d->pos] == '\\' && d->s[d->pos + 1] == 'u') {
                    d->pos += 2;
                    if (read_u4(d, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                        d->why = "lone surrogate in string";
                        return -1;
                    }
                    u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                } else {
                    d->why = "lone surrogate in string";
                    return -1;
                }
            } else if (u >= 0xDC00 && u <= 0xDFFF) {
                d->why = "lone surrogate in string";
                return -1;
            }
            if (put_utf8(&d->arena, u))
                return -1;
            continue;
        }
        default:
            d->why = "bad escape in string";
            return -1;
        }
        if (dsv4_strbuf_put(&d->arena, &ch, 1))
            return -1;
    }
    *len = d->arena.len - *off;
    return 0;
}

static int pj_value(pj_doc *d);

static int pj_number(pj_doc *d)
{
    size_t st = d->pos;
    int is_float = 0;
    if (d->pos < d->end && d->s[d->pos] == '-')
        d->pos++;
    if (d->pos < d->end && d->s[d->pos] == '0') {
        d->pos++;
    } else if (d->pos < d->end && d->s[d->pos] >= '1' && d->s[d->pos] <= '9') {
        while (d->pos < d->end && d->s[d->pos] >= '0' && d->s[d->pos] <= '9')
            d->pos++;
    } else {
        d->why = "bad value";
        return -1;
    }
    /* Python's NUMBER_RE: a fraction or exponent is only taken when digits follow. */
    if (d->end - d->pos >= 2 && d->s[d->pos] == '.' && d->s[d->pos + 1] >= '0' && d->s[d->pos + 1] <= '9') {
        is_float = 1;
        d->pos++;
        while (d->pos < d->end && d->s[d->pos] >= '0' && d->s[d->pos] <= '9')
            d->pos++;
    }
    if (d->pos < d->end && (d->s[d->pos] == 'e' || d->s[d->pos] == 'E')) {
        size_t q = d->pos + 1;
        if (q < d->end && (d->s[q] == '+' || d->s[q] == '-'))
            q++;
        if (q < d->end && d->s[q] >= '0' && d->s[q] <= '9') {
            is_float = 1;
            while (q < d->end && d->s[q] >= '0' && d->s[q] <= '9')
                q++;
            d->pos = q;
        }
    }
    int id = pj_new(d, is_float ? PJ_FLOAT : PJ_INT);
    if (id < 0)
        return -1;
    if (is_float) {
        char tmp[512];
        size_t n = d->pos - st;
        char *heap = NULL, *b = tmp;
        if (n >= sizeof tmp) {
            heap = malloc(n + 1);
            if (!heap)
                return -1;
            b = heap;
        }
        memcpy(b, d->s + st, n);
        b[n] = 0;
        d->nodes[id].d = strtod(b, NULL); /* overflow gives +-inf, as Python's float() */
        free(heap);
    } else {
        const char *p = d->s + st;
        size_t n = d->pos - st;
        if (n == 2 && p[0] == '-' && p[1] == '0') { /* int("-0") == 0 */
            p++;
            n--;
        }
        d->nodes[id].off = d->arena.len;
        d->nodes[id].len = n;
        if (dsv4_strbuf_put(&d->arena, p, n))
            return -1;
    }
    return id;
}

static int pj_value(pj_doc *d)
{
    pj_ws(d);
    if (d->pos >= d->end) {
        d->why = "unexpected end";
        return -1;
    }
    char c = d->s[d->pos];
    if (c == '"') {
        d->pos++;
        int id = pj_new(d, PJ_STR);
        if (id < 0)
            return -1;
        size_t off, len;
        if (pj_string(d, &off, &len))
            return -1;
        d->nodes[id].off = off;
        d->nodes[id].len = len;
        return id;
    }
    if (c == '{' || c == '[') {
        int obj = c == '{';
        if (++d->depth > PJ_MAX_DEPTH) {
            d->why = "nesting too deep";
            return -1;
        }
        d->pos++;
        int id = pj_new(d, obj ? PJ_OBJ : PJ_ARR);
        if (id < 0)
            return -1;
        int last = -1;
        pj_ws(d);
        if (d->pos < d->end && d->s[d->pos] == (obj ? '}' : ']')) {
            d->pos++;
            d->depth--;
            return id;
        }
        for (;;) {
            int k = -1;
            if (obj) {
                pj_ws(d);
                if (d->pos >= d->end || d->s[d->pos] != '"') {
                    d->why = "expected a key";
                    return -1;
                }
                k = pj_value(d);
                if (k < 0)
                    return -1;
                pj_ws(d);
                if (d->pos >= d->end || d->s[d->pos] != ':') {
                    d->why = "expected ':'";
                    return -1;
                }
                d->pos++;
            }
            int v = pj_value(d);
            if (v < 0)
                return -1;
            int first = obj ? k : v;
            if (obj)
                d->nodes[k].next = v;
            if (last < 0)
                d->nodes[id].child = first;
            else
                d->nodes[last].next = first;
            last = v;
            pj_ws(d);
            if (d->pos < d->end && d->s[d->pos] == ',') {
                d->pos++;
                continue;
            }
            if (d->pos < d->end && d->s[d->pos] == (obj ? '}' : ']')) {
                d->pos++;
                break;
            }
            d->why = obj ? "expected ',' or '}'" : "expected ',' or ']'";
            return -1;
        }
        d->depth--;
        return id;
    }
    if (pj_lit(d, "null"))
        return pj_new(d, PJ_NULL);
    if (pj_lit(d, "true"))
        return pj_new(d, PJ_TRUE);
    if (pj_lit(d, "false"))
        return pj_new(d, PJ_FALSE);
    double special;
    if (pj_lit(d, "NaN"))
        special = NAN;
    else if (pj_lit(d, "Infinity"))
        special = INFINITY;
    else if (pj_lit(d, "-Infinity"))
        special = -INFINITY;
    else
        return pj_number(d);
    int id = pj_new(d, PJ_FLOAT);
    if (id >= 0)
        d->nodes[id].d = special;
    return id;
}

/* Parses a whole document; returns the root node or -1 (d->why says why; NULL: out of memory). */
static int pj_parse(pj_doc *d, const char *s, size_t n)
{
    memset(d, 0, sizeof *d);
    d->s = s;
    d->end = n;
    int root = pj_value(d);
    if (root < 0)
        return -1;
    pj_ws(d);
    if (d->pos != d->end) {
        d->why = "extra data after the value";
        return -1;
    }
    return root;
}

/* Python repr of a finite, non-zero double: the shortest digits that read back
 * to the same value (closest to it when several do), in fixed notation for
 * decimal exponents -4..15 and as d.ddde+XX otherwise. */
static int py_float_digits(double x, char *digits, int *exp10)
{
    char buf[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        int ok = strtod(buf, NULL) == x;
        /* parse mantissa digits and exponent of buf */
        char dg[32];
        int nd = 0;
        const char *q = buf;
        if (*q == '-')
            q++;
        for (; *q && *q != 'e'; q++)
            if (*q >= '0' && *q <= '9')
                dg[nd++] = *q;
        int e = atoi(q + 1);
        if (!ok) {
            /* Next to a power of two the closest p-digit decimal may fall outside
             * the narrow side of the rounding interval while its neighbour on the
             * wide side is inside: try both neighbours. */
            for (int dir = -1; dir <= 1 && !ok; dir += 2) {
                char nb[32];
                memcpy(nb, dg, (size_t)nd);
                int ne = e, i = nd - 1;
                if (dir > 0) {
                    while (i >= 0 && nb[i] == '9')
                        nb[i--] = '0';
                    if (i < 0) {
                        nb[0] = '1';
                        ne++;
                    } else {
                        nb[i]++;
                    }
                } else {
                    while (i >= 0 && nb[i] == '0')
                        nb[i--] = '9';
                    if (i < 0 || (i == 0 && nb[0] == '1' && nd == 1))
                        continue;
                    nb[i]--;
                    if (nb[0] == '0')
                        continue;
                }
                char t[64];
                int tl = snprintf(t, sizeof t, "%s%c.", x < 0 ? "-" : "", nb[0]);
                for (int j = 1; j < nd; j++)
                    t[tl++] = nb[j];
                snprintf(t + tl, sizeof t - (size_t)tl, "e%d", ne);
                if (strtod(t, NULL) == x) {
                    memcpy(dg, nb, (size_t)nd);
                    e = ne;
                    ok = 1;
                }
            }
        }
        if (ok) {
            while (nd > 1 && dg[nd - 1] == '0')
                nd--;
            memcpy(digits, dg, (size_t)nd);
            digits[nd] = 0;
            *exp10 = e;
            return nd;
        }
    }
    /* unreachable: 17 significant digits always round-trip */
    snprintf(buf, sizeof buf, "%.16e", x);
    digits[0] = buf[x < 0 ? 1 : 0];
    digits[1] = 0;
    *exp10 = 0;
    return 1;
}

static int py_float_repr(double x, dsv4_strbuf *out)
{
    if (isnan(x))
        return sb_puts(out, "NaN");
    if (isinf(x))
        return sb_puts(out, x < 0 ? "-Infinity" : "Infinity");
    if (x == 0)
        return sb_puts(out, signbit(x) ? "-0.0" : "0.0");
    char dg[32], t[128];
    int e, nd = py_float_digits(x, dg, &e), n = 0;
    if (x < 0)
        t[n++] = '-';
    if (e < -4 || e >= 16) {
        t[n++] = dg[0];
        if (nd > 1) {
            t[n++] = '.';
            for (int i = 1; i < nd; i++)
                t[n++] = dg[i];
        }
        n += snprintf(t + n, sizeof t - (size_t)n, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (e < 0) {
        t[n++] = '0';
        t[n++] = '.';
        for (int i = 0; i < -e - 1; i++)
            t[n++] = '0';
        for (int i = 0; i < nd; i++)
            t[n++] = dg[i];
    } else {
        int ip = e + 1; /* digits before the point */
        for (int i = 0; i < ip; i++)
            t[n++] = i < nd ? dg[i] : '0';
        t[n++] = '.';
        if (nd > ip)
            for (int i = ip; i < nd; i++)
                t[n++] = dg[i];
        else
            t[n++] = '0';
    }
    return dsv4_strbuf_put(out, t, (size_t)n);
}

int dsv4_pyjson_dump_string(const char *s, size_t n, dsv4_strbuf *out)
{
    if (dsv4_strbuf_put(out, "\"", 1))
        return -1;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(u, sizeof u, "\\u%04x", c);
                esc = u;
            }
        }
        if (!esc)
            continue;
        if (dsv4_strbuf_put(out, s + run, i - run) || sb_puts(out, esc))
            return -1;
        run = i + 1;
    }
    if (dsv4_strbuf_put(out, s + run, n - run))
        return -1;
    return dsv4_strbuf_put(out, "\"", 1);
}

static int pj_key_eq(const pj_doc *d, int a, int b)
{
    const pj_node *x = &d->nodes[a], *y = &d->nodes[b];
    return x->len == y->len && memcmp(d->arena.p + x->off, d->arena.p + y->off, x->len) == 0;
}

/* The value a Python dict keeps for key node k: the last one with that key. */
static int pj_last_value(const pj_doc *d, int k)
{
    int v = d->nodes[k].next;
    for (int q = d->nodes[v].next; q >= 0; q = d->nodes[d->nodes[q].next].next)
        if (pj_key_eq(d, q, k))
            v = d->nodes[q].next;
    return v;
}

/* 1 if key node k repeats a key seen earlier in its object (first = first key). */
static int pj_key_seen(const pj_doc *d, int first, int k)
{
    for (int q = first; q != k; q = d->nodes[d->nodes[q].next].next)
        if (pj_key_eq(d, q, k))
            return 1;
    return 0;
}

static int pj_dump(const pj_doc *d, int id, dsv4_strbuf *out)
{
    const pj_node *nd = &d->nodes[id];
    switch (nd->type) {
    case PJ_NULL: return sb_puts(out, "null");
    case PJ_TRUE: return sb_puts(out, "true");
    case PJ_FALSE: return sb_puts(out, "false");
    case PJ_INT: return dsv4_strbuf_put(out, d->arena.p + nd->off, nd->len);
    case PJ_FLOAT: return py_float_repr(nd->d, out);
    case PJ_STR: return dsv4_pyjson_dump_string(d->arena.p + nd->off, nd->len, out);
    case PJ_ARR: {
        if (sb_puts(out, "["))
            return -1;
        for (int c = nd->child; c >= 0; c = d->nodes[c].next)
            if ((c != nd->child && sb_puts(out, ", ")) || pj_dump(d, c, out))
                return -1;
        return sb_puts(out, "]");
    }
    case PJ_OBJ: {
        if (sb_puts(out, "{"))
            return -1;
        int first_out = 1;
        for (int k = nd->child; k >= 0; k = d->nodes[d->nodes[k].next].next) {
            if (pj_key_seen(d, nd->child, k))
                continue;
            if ((!first_out && sb_puts(out, ", ")) || pj_dump(d, k, out) || sb_puts(out, ": ") ||
                pj_dump(d, pj_last_value(d, k), out))
                return -1;
            first_out = 0;
        }
        return sb_puts(out, "}");
    }
    }
    return -1;
}

dsv4_status dsv4_pyjson_redump(const char *json, size_t n, dsv4_strbuf *out, char *err, size_t errlen)
{
    pj_doc d;
    int root = pj_parse(&d, json, n);
    if (root < 0) {
        dsv4_status st = d.why ? DSV4_ERR_FORMAT : DSV4_ERR_NOMEM;
        if (d.why)
            dsv4_errf(err, errlen, "not valid JSON (%s at byte %zu)", d.why, d.pos);
        else
            dsv4_errf(err, errlen, "out of memory");
        pj_free(&d);
        return st;
    }
    int rc = pj_dump(&d, root, out);
    pj_free(&d);
    if (rc) {
        dsv4_errf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    return DSV4_OK;
}

int dsv4_pyjson_truthy(const char *json, size_t n)
{
    pj_doc d;
    int root = pj_parse(&d, json, n);
    int t = d.why ? -1 : -2;
    if (root >= 0) {
        const pj_node *nd = &d.nodes[root];
        switch (nd->type) {
        case PJ_NULL:
        case PJ_FALSE: t = 0; break;
        case PJ_TRUE: t = 1; break;
        case PJ_INT: t = !(nd->len == 1 && d.arena.p[nd->off] == '0'); break;
        case PJ_FLOAT: t = nd->d != 0; break;
        case PJ_STR: t = nd->len > 0; break;
        default: t = nd->child >= 0;
        }
    }
    pj_free(&d);
    return t;
}

static int pj_member(const pj_doc *d, int obj, const char *key)
{
    size_t kl = strlen(key);
    int found = -1;
    for (int k = d->nodes[obj].child; k >= 0; k = d->nodes[d->nodes[k].next].next)
        if (d->nodes[k].len == kl && memcmp(d->arena.p + d->nodes[k].off, key, kl) == 0)
            found = d->nodes[k].next; /* the last one wins, as in a Python dict */
    return found;
}

dsv4_status dsv4_pyjson_tool_schemas(const char *tools_json, dsv4_strbuf *out, char *err, size_t errlen)
{
    pj_doc d;
    int root = pj_parse(&d, tools_json, strlen(tools_json));
    dsv4_status st = DSV4_OK;
    if (root < 0 && !d.why) {
        dsv4_errf(err, errlen, "out of memory");
        st = DSV4_ERR_NOMEM;
        goto done;
    }
    if (root < 0) {
        dsv4_errf(err, errlen, "tools: not valid JSON (%s at byte %zu)", d.why, d.pos);
        st = DSV4_ERR_INVALID;
        goto done;
    }
    if (d.nodes[root].type != PJ_ARR) {
        dsv4_errf(err, errlen, "tools: expected an array of {\"type\": \"function\", \"function\": {...}}");
        st = DSV4_ERR_INVALID;
        goto done;
    }
    int i = 0;
    for (int t = d.nodes[root].child; t >= 0; t = d.nodes[t].next, i++) {
        int fn = d.nodes[t].type == PJ_OBJ ? pj_member(&d, t, "function") : -1;
        if (fn < 0) {
            dsv4_errf(err, errlen, "tools[%d]: expected an object with a \"function\" member", i);
            st = DSV4_ERR_INVALID;
            goto done;
        }
        if ((i > 0 && sb_puts(out, "\n")) || pj_dump(&d, fn, out)) {
            dsv4_errf(err, errlen, "out of memory");
            st = DSV4_ERR_NOMEM;
            goto done;
        }
    }
done:
    pj_free(&d);
    return st;
}

dsv4_status dsv4_pyjson_argument_items(const char *arguments, dsv4_pyjson_item_fn fn, void *user, char *err,
                                       size_t errlen)
{
    pj_doc d;
    size_t n = strlen(arguments);
    int root = pj_parse(&d, arguments, n);
    dsv4_status st = DSV4_OK;
    if (root < 0 && !d.why) { /* not a parse failure: the text may well be JSON */
        pj_free(&d);
        dsv4_errf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    if (root < 0) {
        /* json.loads failed: the official encoder renders {"arguments": text}. */
        pj_free(&d);
        if (fn(user, "arguments", 9, arguments, n, 1)) {
            dsv4_errf(err, errlen, "out of memory");
            return DSV4_ERR_NOMEM;
        }
        return DSV4_OK;
    }
    if (d.nodes[root].type != PJ_OBJ) {
        dsv4_errf(err, errlen, "tool call arguments must be a JSON object");
        st = DSV4_ERR_INVALID;
        goto done;
    }
    dsv4_strbuf val = {0};
    int first = d.nodes[root].child;
    for (int k = first; k >= 0; k = d.nodes[d.nodes[k].next].next) {
        if (pj_key_seen(&d, first, k))
            continue;
        int v = pj_last_value(&d, k);
        const pj_node *kn = &d.nodes[k], *vn = &d.nodes[v];
        int rc;
        if (vn->type == PJ_STR) {
            rc = fn(user, d.arena.p + kn->off, kn->len, d.arena.p + vn->off, vn->len, 1);
        } else {
            val.len = 0;
            rc = pj_dump(&d, v, &val);
            if (!rc)
                rc = fn(user, d.arena.p + kn->off, kn->len, val.p, val.len, 0);
        }
        if (rc) {
            dsv4_errf(err, errlen, "out of memory");
            st = DSV4_ERR_NOMEM;
            break;
        }
    }
    dsv4_strbuf_free(&val);
done:
    pj_free(&d);
    return st;
}

/* ------------------------------------------ OpenAI messages JSON -> structs -- */

typedef struct {
    char **strs;
    int n, cap;
    dsv4_chat_tool_call **calls;
    int n_calls, cap_calls;
} conv_storage;

static char *keep(conv_storage *s, char *p)
{
    if (!p)
        return NULL;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 32;
        char **q = realloc(s->strs, (size_t)cap * sizeof *q);
        if (!q) {
            free(p);
            return NULL;
        }
        s->strs = q;
        s->cap = cap;
    }
    s->strs[s->n++] = p;
    return p;
}

static char *keep_copy(conv_storage *s, const char *p)
{
    return keep(s, strdup(p));
}

/* JSON text of a sub-value, lossless for the Python-style re-dump. */
static char *keep_dump(conv_storage *s, const json_t *v)
{
    return keep(s, json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17)));
}

dsv4_status dsv4_chat_effort_parse(const char *s, dsv4_reasoning_effort *out, char *err, size_t errlen)
{
    if (!s || !strcmp(s, "none") || !strcmp(s, "")) {
        *out = DSV4_EFFORT_DEFAULT;
    } else if (!strcmp(s, "high") || !strcmp(s, "medium") || !strcmp(s, "low")) {
        *out = DSV4_EFFORT_HIGH;
    } else if (!strcmp(s, "max") || !strcmp(s, "xhigh")) {
        *out = DSV4_EFFORT_MAX;
    } else {
        dsv4_errf(err, errlen, "reasoning_effort: expected one of none, low, medium, high, xhigh, max; got \"%s\"", s);
        return DSV4_ERR_INVALID;
    }
    return DSV4_OK;
}

static const struct {
    const char *name;
    dsv4_chat_role role;
} role_names[] = {
    {"system", DSV4_CHAT_SYSTEM},       {"user", DSV4_CHAT_USER},
    {"assistant", DSV4_CHAT_ASSISTANT}, {"tool", DSV4_CHAT_TOOL},
    {"developer", DSV4_CHAT_DEVELOPER}, {"latest_reminder", DSV4_CHAT_LATEST_REMINDER},
};

static const char *task_names[] = {NULL, "action", "query", "authority", "domain", "title", "read_url"};

/* content: a string, null, or an array of parts. Tool results keep the official
 * encoder's own rule for part lists (text parts joined by a blank line, other parts
 * as "[Unsupported TYPE]"); other roles take text parts only, joined by "\n". */
static dsv4_status content_text(conv_storage *s, const json_t *c, int is_tool, const char *where, const char **out,
                                char *err, size_t errlen)
{
    *out = NULL;
    if (!c || json_is_null(c))
        return DSV4_OK;
    if (json_is_string(c)) {
        *out = keep_copy(s, json_string_value(c));
        return *out ? DSV4_OK : DSV4_ERR_NOMEM;
    }
    if (!json_is_array(c)) {
        dsv4_errf(err, errlen, "%s.content: expected a string, null or an array of content parts", where);
        return DSV4_ERR_INVALID;
    }
    dsv4_strbuf b = {0};
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        const char *text = json_string_value(json_object_get(part, "text"));
        if (i > 0 && sb_puts(&b, is_tool ? "\n\n" : "\n"))
            goto nomem;
        if (type && !strcmp(type, "text") && (text || is_tool)) {
            if (sb_puts(&b, text ? text : "")) /* the official b.get("text", "") */
                goto nomem;
        } else if (is_tool) {
            char u[256];
            snprintf(u, sizeof u, "[Unsupported %s]", type ? type : "None");
            if (sb_puts(&b, u))
                goto nomem;
        } else {
            dsv4_strbuf_free(&b);
            dsv4_errf(err, errlen, "%s.content[%zu]: only text parts are supported (got type \"%s\")", where, i,
                    type ? type : "?");
            return DSV4_ERR_UNSUPPORTED;
        }
    }
    if (!b.p && sb_puts(&b, ""))
        goto nomem;
    *out = keep(s, b.p);
    return *out ? DSV4_OK : DSV4_ERR_NOMEM;
nomem:
    dsv4_strbuf_free(&b);
    return DSV4_ERR_NOMEM;
}

static dsv4_status opt_string(conv_storage *s, const json_t *m, const char *key, const char *where, const char **out,
                              char *err, size_t errlen)
{
    const json_t *v = json_object_get(m, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return DSV4_OK;
    if (!json_is_string(v)) {
        dsv4_errf(err, errlen, "%s.%s: expected a string", where, key);
        return DSV4_ERR_INVALID;
    }
    *out = keep_copy(s, json_string_value(v));
    return *out ? DSV4_OK : DSV4_ERR_NOMEM;
}

static dsv4_status tool_calls_from_json(conv_storage *s, const json_t *tcs, const char *where, dsv4_chat_message *m,
                                        char *err, size_t errlen)
{
    if (!tcs || json_is_null(tcs))
        return DSV4_OK;
    if (!json_is_array(tcs)) {
        dsv4_errf(err, errlen, "%s.tool_calls: expected an array", where);
        return DSV4_ERR_INVALID;
    }
    size_t n = json_array_size(tcs);
    if (!n)
        return DSV4_OK;
    dsv4_chat_tool_call *calls = calloc(n, sizeof *calls);
    if (!calls)
        return DSV4_ERR_NOMEM;
    if (s->n_calls == s->cap_calls) {
        int cap = s->cap_calls ? s->cap_calls * 2 : 8;
        dsv4_chat_tool_call **q = realloc(s->calls, (size_t)cap * sizeof *q);
        if (!q) {
            free(calls);
            return DSV4_ERR_NOMEM;
        }
        s->calls = q;
        s->cap_calls = cap;
    }
    s->calls[s->n_calls++] = calls;
    m->tool_calls = calls;
    m->n_tool_calls = (int)n;
    for (size_t i = 0; i < n; i++) {
        const json_t *tc = json_array_get(tcs, i);
        const json_t *fn = json_object_get(tc, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        const json_t *args = json_object_get(fn, "arguments");
        if (!json_is_object(fn) || !name) {
            dsv4_errf(err, errlen, "%s.tool_calls[%zu]: expected {\"function\": {\"name\": ..., \"arguments\": ...}}",
                    where, i);
            return DSV4_ERR_INVALID;
        }
        const char *id = json_string_value(json_object_get(tc, "id"));
        if (!id || !*id)
            id = json_string_value(json_object_get(fn, "id"));
        calls[i].id = id ? keep_copy(s, id) : NULL;
        calls[i].name = keep_copy(s, name);
        if (!args || json_is_null(args))
            calls[i].arguments = keep_copy(s, "{}");
        else if (json_is_string(args))
            calls[i].arguments = keep_copy(s, json_string_value(args));
        else if (json_is_object(args))
            calls[i].arguments = keep_dump(s, args);
        else {
            dsv4_errf(err, errlen, "%s.tool_calls[%zu].function.arguments: expected a JSON string or an object", where,
                    i);
            return DSV4_ERR_INVALID;
        }
        if (!calls[i].name || !calls[i].arguments || (id && !calls[i].id))
            return DSV4_ERR_NOMEM;
    }
    return DSV4_OK;
}

static dsv4_status message_from_json(conv_storage *s, const json_t *j, int idx, dsv4_chat_message *m, char *err,
                                     size_t errlen)
{
    char where[32];
    snprintf(where, sizeof where, "messages[%d]", idx);
    memset(m, 0, sizeof *m);
    if (!json_is_object(j)) {
        dsv4_errf(err, errlen, "%s: expected an object", where);
        return DSV4_ERR_INVALID;
    }
    const char *role = json_string_value(json_object_get(j, "role"));
    if (!role) {
        dsv4_errf(err, errlen, "%s.role: missing", where);
        return DSV4_ERR_INVALID;
    }
    size_t r;
    for (r = 0; r < sizeof role_names / sizeof role_names[0]; r++)
        if (!strcmp(role, role_names[r].name))
            break;
    if (r == sizeof role_names / sizeof role_names[0]) {
        dsv4_errf(err, errlen,
                "%s.role: unknown role \"%s\" (expected system, user, assistant, tool, developer or latest_reminder)",
                where, role);
        return DSV4_ERR_INVALID;
    }
    m->role = role_names[r].role;
    dsv4_status st;
    if ((st = content_text(s, json_object_get(j, "content"), m->role == DSV4_CHAT_TOOL, where, &m->content, err,
                           errlen)))
        return st;
    const char *rkey = json_object_get(j, "reasoning_content") ? "reasoning_content" : "reasoning";
    if ((st = opt_string(s, j, rkey, where, &m->reasoning_content, err, errlen)) ||
        (st = opt_string(s, j, "tool_call_id", where, &m->tool_call_id, err, errlen)) ||
        (st = opt_string(s, j, "name", where, &m->name, err, errlen)) ||
        (st = tool_calls_from_json(s, json_object_get(j, "tool_calls"), where, m, err, errlen)))
        return st;
    const json_t *tools = json_object_get(j, "tools");
    if (tools && !json_is_null(tools)) {
        if (!json_is_array(tools)) {
            dsv4_errf(err, errlen, "%s.tools: expected an array", where);
            return DSV4_ERR_INVALID;
        }
        if (!(m->tools = keep_dump(s, tools)))
            return DSV4_ERR_NOMEM;
    }
    const json_t *rf = json_object_get(j, "response_format");
    if (rf && !json_is_null(rf) && !(m->response_format = keep_dump(s, rf)))
        return DSV4_ERR_NOMEM;
    const json_t *task = json_object_get(j, "task");
    if (task && !json_is_null(task)) {
        const char *t = json_string_value(task);
        int k;
        for (k = 1; k < (int)(sizeof task_names / sizeof task_names[0]); k++)
            if (t && !strcmp(t, task_names[k]))
                break;
        if (k == (int)(sizeof task_names / sizeof task_names[0])) {
            dsv4_errf(err, errlen, "%s.task: expected one of action, query, authority, domain, title, read_url", where);
            return DSV4_ERR_INVALID;
        }
        m->task = (dsv4_chat_task)k;
    }
    const json_t *wo = json_object_get(j, "wo_eos");
    m->wo_eos = wo && json_is_true(wo);
    return DSV4_OK;
}

void dsv4_chat_conv_free(dsv4_chat_conv *c)
{
    conv_storage *s = c->storage_;
    if (s) {
        for (int i = 0; i < s->n; i++)
            free(s->strs[i]);
        for (int i = 0; i < s->n_calls; i++)
            free(s->calls[i]);
        free(s->strs);
        free(s->calls);
        free(s);
    }
    free(c->messages);
    memset(c, 0, sizeof *c);
}

dsv4_status dsv4_chat_conv_from_json(const json_t *messages, const json_t *tools, const json_t *response_format,
                                     dsv4_chat_conv *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!json_is_array(messages)) {
        dsv4_errf(err, errlen, "messages: expected an array");
        return DSV4_ERR_INVALID;
    }
    if (tools && !json_is_null(tools) && !json_is_array(tools)) {
        dsv4_errf(err, errlen, "tools: expected an array");
        return DSV4_ERR_INVALID;
    }
    if (response_format && !json_is_null(response_format) && !json_is_object(response_format)) {
        dsv4_errf(err, errlen, "response_format: expected an object");
        return DSV4_ERR_INVALID;
    }
    int attach_tools = tools && json_array_size(tools) > 0;
    const char *rf_type = json_string_value(json_object_get(response_format, "type"));
    int attach_rf = rf_type && !strcmp(rf_type, "json_schema");
    size_t n = json_array_size(messages);
    out->storage_ = calloc(1, sizeof(conv_storage));
    out->messages = calloc(n + 1, sizeof *out->messages);
    if (!out->storage_ || !out->messages) {
        dsv4_chat_conv_free(out);
        dsv4_errf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    conv_storage *s = out->storage_;
    int k = 0;
    const char *first_role = n ? json_string_value(json_object_get(json_array_get(messages, 0), "role")) : NULL;
    if ((attach_tools || attach_rf) && !(first_role && !strcmp(first_role, "system"))) {
        out->messages[k].role = DSV4_CHAT_SYSTEM; /* empty: renders as nothing */
        out->messages[k].content = "";
        k++;
    }
    for (size_t i = 0; i < n; i++, k++) {
        dsv4_status st = message_from_json(s, json_array_get(messages, i), (int)i, &out->messages[k], err, errlen);
        if (st) {
            if (st == DSV4_ERR_NOMEM)
                dsv4_errf(err, errlen, "out of memory");
            dsv4_chat_conv_free(out);
            return st;
        }
    }
    out->n_messages = k;
    if (attach_tools && !(out->messages[0].tools = keep_dump(s, tools)))
        goto nomem;
    if (attach_rf && !(out->messages[0].response_format = keep_dump(s, response_format)))
        goto nomem;
    return DSV4_OK;
nomem:
    dsv4_chat_conv_free(out);
    dsv4_errf(err, errlen, "out of memory");
    return DSV4_ERR_NOMEM;
}
