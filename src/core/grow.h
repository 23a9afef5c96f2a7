/*
 * grow.h - an array grown by doubling: what the tokenizer's buffers and a prompt's ids use.
 */
#ifndef DSV4_GROW_H
#define DSV4_GROW_H

#include <stddef.h>
#include <stdlib.h>

/* Room for need elements of elem bytes in *p (capacity *cap, doubled from 64 as needed); 0, or -1 with *p and *cap
 * untouched when memory runs out. */
static inline int dsv4_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

#endif
