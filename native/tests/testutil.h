/* Tiny test harness and a .kbin writer for the C tests (independent of the library's reader:
 * it writes the format from docs/internals.md directly). */
#ifndef PK_TESTUTIL_H
#define PK_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polykern.h"

static int t_failures, t_checks;

#define CHECK(cond)                                                               \
    do {                                                                          \
        t_checks++;                                                               \
        if (!(cond)) {                                                            \
            t_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                         \
    } while (0)

#define CHECK_MSG(cond, ...)                                                      \
    do {                                                                          \
        t_checks++;                                                               \
        if (!(cond)) {                                                            \
            t_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)

static inline int t_finish(const char *name) {
    if (t_failures) {
        fprintf(stderr, "%s: %d of %d checks FAILED\n", name, t_failures, t_checks);
        return 1;
    }
    printf("%s: all %d checks passed\n", name, t_checks);
    return 0;
}

/* ---- a growable byte buffer with the wire primitives ---- */
typedef struct tbuf {
    uint8_t *p;
    size_t n, cap;
} tbuf;

static inline void tb_raw(tbuf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = (uint8_t *)realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void tb_le(tbuf *b, uint64_t v, int bytes) {
    uint8_t t[8];
    int i;
    for (i = 0; i < bytes; i++) t[i] = (uint8_t)(v >> (8 * i));
    tb_raw(b, t, (size_t)bytes);
}
static inline void tb_u8(tbuf *b, uint64_t v) { tb_le(b, v, 1); }
static inline void tb_u16(tbuf *b, uint64_t v) { tb_le(b, v, 2); }
static inline void tb_u32(tbuf *b, uint64_t v) { tb_le(b, v, 4); }
static inline void tb_u64(tbuf *b, uint64_t v) { tb_le(b, v, 8); }
static inline void tb_bytes(tbuf *b, const void *d, size_t n) { tb_u64(b, n); tb_raw(b, d, n); }
static inline void tb_str(tbuf *b, const char *s) { tb_bytes(b, s, strlen(s)); }
static inline void tb_free(tbuf *b) { free(b->p); memset(b, 0, sizeof *b); }

/* FunctionInfo of saxpy-like kernels: (n: i32, a: f32, x: Buffer[f32], y: Buffer[f32]) */
static inline void tb_saxpy_info(tbuf *b, const char *name, const char *entry) {
    tb_str(b, name);
    tb_u64(b, 4);
    tb_str(b, "n"); tb_u8(b, 0); tb_u8(b, PK_CODE_INT); tb_u8(b, 32); tb_u16(b, 1); tb_u8(b, 0);
    tb_str(b, "a"); tb_u8(b, 0); tb_u8(b, PK_CODE_FLOAT); tb_u8(b, 32); tb_u16(b, 1); tb_u8(b, 0);
    tb_str(b, "x"); tb_u8(b, 1); tb_u8(b, PK_CODE_FLOAT); tb_u8(b, 32); tb_u16(b, 1); tb_u8(b, 1);
    tb_str(b, "y"); tb_u8(b, 1); tb_u8(b, PK_CODE_FLOAT); tb_u8(b, 32); tb_u16(b, 1); tb_u8(b, 0);
    tb_u64(b, 1); tb_str(b, "global_id.0");
    tb_u64(b, 0);
    if (entry) { tb_u64(b, 1); tb_str(b, "entry"); tb_str(b, entry); }
    else tb_u64(b, 0);
}

/* An artifact: root + one device module of `kind`/`fmt` carrying `payload`, with one kernel
 * `name` (saxpy signature). */
static inline void tb_artifact(tbuf *out, const char *kind, const char *fmt, const void *payload,
                        size_t payload_size, const char *name, const char *entry, int sources) {
    tbuf root = {0}, dev = {0};
    tb_u64(&root, 1);
    tb_str(&root, name);
    tb_saxpy_info(&root, name, NULL);
    tb_u64(&root, 1);
    tb_str(&root, kind);
    tb_str(&dev, fmt);
    tb_u64(&dev, 1);
    tb_str(&dev, name);
    tb_saxpy_info(&dev, name, entry);
    tb_bytes(&dev, payload, payload_size);

    tb_raw(out, "PKBIN\0\r\n", 8);
    tb_u32(out, 1);
    tb_u64(out, 2);
    tb_u64(out, 0); tb_u64(out, 1); tb_u64(out, 1);   /* indptr */
    tb_u64(out, 1);                                     /* child */
    tb_str(out, "root"); tb_bytes(out, root.p, root.n);
    tb_str(out, kind); tb_bytes(out, dev.p, dev.n);
    if (sources) {
        tb_u8(out, 1);
        tb_u64(out, 0);
        tb_u64(out, 1); tb_str(out, "c"); tb_str(out, "void k(void) {}\n");
    } else {
        tb_u8(out, 0);
    }
    tb_u64(out, 2);
    tb_str(out, "compiler"); tb_str(out, "polykern test");
    tb_str(out, "targets"); tb_str(out, kind);
    tb_u32(out, pk_crc32(0, out->p, out->n));
    tb_free(&root);
    tb_free(&dev);
}

/* Recompute the trailing checksum after editing an artifact in place. */
static inline void tb_fix_crc(uint8_t *p, size_t n) {
    uint32_t c;
    if (n < 4) return;
    c = pk_crc32(0, p, n - 4);
    p[n - 4] = (uint8_t)c; p[n - 3] = (uint8_t)(c >> 8);
    p[n - 2] = (uint8_t)(c >> 16); p[n - 1] = (uint8_t)(c >> 24);
}

static inline uint8_t *t_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    uint8_t *p;
    long len;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = (uint8_t *)malloc(len > 0 ? (size_t)len : 1);
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) { free(p); p = NULL; }
    fclose(f);
    *n = (size_t)len;
    return p;
}

#endif
