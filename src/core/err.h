/*
 * err.h - filling a caller's error buffer, the one error convention of dsv4:
 * functions return a dsv4_status and write one sentence into (err, errlen).
 */
#ifndef DSV4_CORE_ERR_H
#define DSV4_CORE_ERR_H

#include <stddef.h>

/* printf into err (at most errlen bytes, NUL-terminated); nothing when err is NULL or errlen 0. */
void dsv4_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
