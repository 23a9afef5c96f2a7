/*
 * file_util.h - opening and reading the files a checkpoint or a command names: config.json, the index, a
 * shard, tokenizer.json, an ids file.
 *
 * A FIFO would block the open (or the read) forever and a character device such as /dev/zero never ends:
 * neither is a config.json, an index or a shard (dsv4_fopen_regular). Whole-file reads are bounded
 * (dsv4_read_all): past the bound something other than the expected file sits there.
 */
#ifndef DSV4_FILE_UTIL_H
#define DSV4_FILE_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "dsv4.h"

/* fopen(path, "rb") for a regular file only (O_NONBLOCK: a FIFO's open does not wait for a writer); NULL with
 * *why set (strerror text, "is a directory, not a file" or "not a regular file") and errno ENOENT only when
 * the path does not exist. */
FILE *dsv4_fopen_regular(const char *path, const char **why);

/* The bytes of f to its end as one buffer (NUL-terminated; *len excludes the NUL): DSV4_OK,
 * DSV4_ERR_NOMEM, DSV4_ERR_IO (a read error: errno says which) or DSV4_ERR_FORMAT (more than max bytes). */
dsv4_status dsv4_read_all(FILE *f, size_t max, char **buf, size_t *len);

#endif
