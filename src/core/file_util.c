/*
 * file_util.c - see file_util.h.
 */
#include "core/file_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *dsv4_fopen_regular(const char *path, const char **why)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *why = strerror(errno);
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        const int e = errno;
        *why = strerror(e);
        close(fd);
        errno = e;
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
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

dsv4_status dsv4_read_all(FILE *f, size_t max, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (!b) return DSV4_ERR_NOMEM;
        n += fread(b + n, 1, cap - 1 - n, f); /* a short count: the end, or an error */
        if (n > max) {
            free(b);
            return DSV4_ERR_FORMAT;
        }
        if (n < cap - 1) break;
        char *nb = realloc(b, cap *= 2);
        if (!nb) free(b);
        b = nb;
    }
    if (ferror(f)) {
        const int e = errno;
        free(b);
        errno = e;
        return DSV4_ERR_IO;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return DSV4_OK;
}
