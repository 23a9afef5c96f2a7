/*
 * status.c - names of dsv4_status values, for messages and logs.
 *
 * The sentence in a caller's `err` buffer says what went wrong; this short name
 * says which kind of failure it was ("format error: model-00002...: ...").
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/err.h"
#include "dsv4.h"

void dsv4_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

const char *dsv4_status_str(dsv4_status st)
{
    switch (st) {
    case DSV4_OK:
        return "ok";
    case DSV4_ERR_INVALID:
        return "invalid argument";
    case DSV4_ERR_IO:
        return "I/O error";
    case DSV4_ERR_FORMAT:
        return "format error";
    case DSV4_ERR_UNSUPPORTED:
        return "unsupported";
    case DSV4_ERR_NOMEM:
        return "out of memory";
    case DSV4_ERR_STATE:
        return "invalid state";
    }
    return "unknown status";
}
