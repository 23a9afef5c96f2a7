/*
 * file_util.h - open a file that must be a regular file, for the readers of checkpoint metadata.
 *
 * A FIFO would block the open (or the read) forever and a character device such as /dev/zero never ends:
 * neither is a config.json, an index, a tokenizer.json or a shard. O_NONBLOCK keeps the open of a FIFO
 * from waiting for a writer; for a regular file it changes nothing.
 */
#ifndef DSV4_FILE_UTIL_H
#define DSV4_FILE_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* fopen(path, "rb") for a regular file only; NULL with *why set (strerror text or "not a regular file"). */
static inline FILE *dsv4_fopen_regular(const char *path, const char **why)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *why = strerror(errno);
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        const int dir = S_ISDIR(sb.st_mode);
        *why = dir ? "is a directory, not a file" : "not a regular file";
        close(fd);
        errno = dir ? EISDIR : EINVAL; /* never a stale ENOENT: callers tell "absent" from "unusable" by it */
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        *why = strerror(errno);
        close(fd);
    }
    return f;
}

#endif
