/* Filling pk_error. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int vfail(pk_error *err, pk_status st, int has_off, uint64_t off, const char *fmt,
                 va_list ap) {
    if (err) {
        err->status = st;
        err->has_offset = has_off;
        err->offset = off;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
    }
    return (int)st;
}

int pk_fail(pk_error *err, pk_status st, const char *fmt, ...) {
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = vfail(err, st, 0, 0, fmt, ap);
    va_end(ap);
    return rc;
}

int pk_fail_at(pk_error *err, uint64_t offset, const char *fmt, ...) {
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = vfail(err, PK_ERR_ARTIFACT, 1, offset, fmt, ap);
    va_end(ap);
    return rc;
}

void pk_error_prefix(pk_error *err, const char *prefix) {
    size_t pl, ml, cap;
    if (!err) return;
    cap = sizeof err->message - 1;
    pl = strlen(prefix);
    if (pl > cap) pl = cap;
    ml = strlen(err->message);
    if (ml > cap - pl) ml = cap - pl;
    memmove(err->message + pl, err->message, ml);
    memcpy(err->message, prefix, pl);
    err->message[pl + ml] = 0;
}
