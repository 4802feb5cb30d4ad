/* Bounds-checked little-endian reader for the .kbin primitives: u8..u64, str, bytes, map,
 * list (docs/internals.md "Byte format"). Every length is checked against the bytes that
 * remain before anything is sliced, copied or looped over, so no allocation is sized by an
 * unchecked field. Checks, their order and the offsets reported follow polykern.kbin.wire.Reader. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "kbin_tables.h"

size_t pk_rd_remaining(const pk_reader *r) { return r->end - r->pos; }

int pk_rd_fail_at(pk_reader *r, size_t offset, const char *fmt, ...) {
    char msg[440];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pk_fail_at(r->err, (uint64_t)offset, "%s (at byte offset %zu)", msg, offset);
}

static int need(pk_reader *r, size_t n, const char *what) {
    if (n > pk_rd_remaining(r))
        return pk_rd_fail_at(r, r->pos, PK_MSG_TRUNCATED, what, (unsigned long long)n,
                             (unsigned long long)pk_rd_remaining(r));
    return 0;
}

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    int i;
    for (i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

#define READ_INT(fn, type, nbytes)                                 \
    int fn(pk_reader *r, type *v, const char *what) {              \
        if (need(r, nbytes, what)) return PK_ERR_ARTIFACT;         \
        *v = (type)le(r->data + r->pos, nbytes);                   \
        r->pos += nbytes;                                          \
        return 0;                                                  \
    }
READ_INT(pk_rd_u8, uint8_t, 1)
READ_INT(pk_rd_u16, uint16_t, 2)
READ_INT(pk_rd_u32, uint32_t, 4)
READ_INT(pk_rd_u64, uint64_t, 8)

int pk_rd_flag(pk_reader *r, uint8_t *v, const char *what) {
    size_t at = r->pos;
    if (pk_rd_u8(r, v, what)) return PK_ERR_ARTIFACT;
    if (*v > 1) return pk_rd_fail_at(r, at, PK_MSG_FLAG, what, (unsigned long long)*v);
    return 0;
}

int pk_rd_length(pk_reader *r, const char *what, size_t item_size, size_t *n) {
    size_t at = r->pos;
    uint64_t c;
    char lw[200];
    snprintf(lw, sizeof lw, "length of %s", what);
    if (pk_rd_u64(r, &c, lw)) return PK_ERR_ARTIFACT;
    if (c > (uint64_t)(pk_rd_remaining(r) / item_size))   /* c * item_size > remaining */
        return pk_rd_fail_at(r, at, PK_MSG_LENGTH, what, (unsigned long long)c,
                             item_size == 1 ? "bytes" : "entries", (unsigned long long)pk_rd_remaining(r));
    *n = (size_t)c;
    return 0;
}

int pk_rd_span(pk_reader *r, const uint8_t **p, size_t *n, const char *what) {
    if (pk_rd_length(r, what, 1, n)) return PK_ERR_ARTIFACT;
    *p = r->data + r->pos;
    r->pos += *n;
    return 0;
}

size_t pk_utf8_error(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        size_t len, k;
        uint8_t lo = 0x80, hi = 0xBF;   /* allowed range of the second byte */
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;          /* no overlongs */
            if (c == 0xED) hi = 0x9F;          /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;          /* <= U+10FFFF */
        } else return i;
        for (k = 1; k < len; k++) {
            if (i + k >= n) return i;
            if (k == 1 ? (p[i + 1] < lo || p[i + 1] > hi) : (p[i + k] & 0xC0u) != 0x80u) return i;
        }
        i += len;
    }
    return (size_t)-1;
}

int pk_rd_str(pk_reader *r, pk_str *s, const char *what) {
    const uint8_t *p;
    size_t n, bad, at = r->pos + 8;
    char *copy;
    if (pk_rd_span(r, &p, &n, what)) return PK_ERR_ARTIFACT;
    bad = pk_utf8_error(p, n);
    if (bad != (size_t)-1) return pk_rd_fail_at(r, at + bad, PK_MSG_UTF8, what);
    copy = (char *)pk_arena_alloc(r->arena, n + 1);   /* n <= remaining bytes: checked */
    if (!copy) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory reading %s", what);
    if (n) memcpy(copy, p, n);
    copy[n] = 0;
    s->ptr = copy;
    s->len = n;
    return 0;
}

int pk_rd_name(pk_reader *r, pk_str *s, const char *what) {
    size_t at = r->pos;
    if (pk_rd_str(r, s, what)) return PK_ERR_ARTIFACT;
    if (!s->len) return pk_rd_fail_at(r, at, PK_MSG_EMPTY, what);
    return 0;
}

int pk_rd_list_str(pk_reader *r, pk_str **out, size_t *n, const char *what) {
    size_t i;
    pk_str *items;
    char iw[200];
    if (pk_rd_length(r, what, 8, n)) return PK_ERR_ARTIFACT;
    items = (pk_str *)pk_arena_array(r->arena, *n, sizeof *items);
    if (!items) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory reading %s", what);
    for (i = 0; i < *n; i++) {
        snprintf(iw, sizeof iw, "%s[%zu]", what, i);
        if (pk_rd_str(r, &items[i], iw)) return PK_ERR_ARTIFACT;
    }
    *out = items;
    return 0;
}

int pk_str_cmp(const pk_str *a, const pk_str *b) {
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->ptr, b->ptr, n) : 0;
    if (c) return c;
    return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

/* shared by the map readers: key (non-empty when `names`), order check; the value is read by the caller */
static int map_key(pk_reader *r, pk_str *key, const pk_str *prev, const char *what, int names) {
    size_t at = r->pos;
    char kw[200], q1[PK_QUOTE_BUF], q2[PK_QUOTE_BUF];
    snprintf(kw, sizeof kw, "key of %s", what);
    if (pk_rd_str(r, key, kw)) return PK_ERR_ARTIFACT;
    if (names && !key->len) return pk_rd_fail_at(r, at, PK_MSG_EMPTY, kw);
    if (prev && pk_str_cmp(key, prev) <= 0)
        return pk_rd_fail_at(r, at, PK_MSG_UNSORTED, what, pk_quote_str(key, q1, sizeof q1),
                             pk_quote_str(prev, q2, sizeof q2));
    return 0;
}

static int map_str(pk_reader *r, pk_kv **out, size_t *n, const char *what, int names) {
    size_t i;
    pk_kv *kv;
    char vw[200], q[PK_QUOTE_BUF];
    if (pk_rd_length(r, what, 16, n)) return PK_ERR_ARTIFACT;
    kv = (pk_kv *)pk_arena_array(r->arena, *n, sizeof *kv);
    if (!kv) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory reading %s", what);
    for (i = 0; i < *n; i++) {
        if (map_key(r, &kv[i].key, i ? &kv[i - 1].key : NULL, what, names)) return PK_ERR_ARTIFACT;
        snprintf(vw, sizeof vw, "%s[%s]", what, pk_quote_str(&kv[i].key, q, sizeof q));
        if (pk_rd_str(r, &kv[i].value, vw)) return PK_ERR_ARTIFACT;
    }
    *out = kv;
    return 0;
}

int pk_rd_map_str(pk_reader *r, pk_kv **out, size_t *n, const char *what) {
    return map_str(r, out, n, what, 0);
}

int pk_rd_map_names(pk_reader *r, pk_kv **out, size_t *n, const char *what) {
    return map_str(r, out, n, what, 1);
}

int pk_rd_map_bytes(pk_reader *r, pk_blob **out, size_t *n, const char *what) {
    size_t i;
    pk_blob *b;
    char vw[200], q[PK_QUOTE_BUF];
    if (pk_rd_length(r, what, 16, n)) return PK_ERR_ARTIFACT;
    b = (pk_blob *)pk_arena_array(r->arena, *n, sizeof *b);
    if (!b) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory reading %s", what);
    for (i = 0; i < *n; i++) {
        if (map_key(r, &b[i].name, i ? &b[i - 1].name : NULL, what, 0)) return PK_ERR_ARTIFACT;
        snprintf(vw, sizeof vw, "%s[%s]", what, pk_quote_str(&b[i].name, q, sizeof q));
        if (pk_rd_span(r, &b[i].data, &b[i].size, vw)) return PK_ERR_ARTIFACT;
    }
    *out = b;
    return 0;
}

int pk_rd_expect_end(pk_reader *r, const char *what) {
    if (r->pos != r->end)
        return pk_rd_fail_at(r, r->pos, PK_MSG_TRAILING, (unsigned long long)pk_rd_remaining(r), what);
    return 0;
}
