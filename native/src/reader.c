/* Bounds-checked little-endian reader for the .kbin primitives (wire.py's u8..u64, str,
 * bytes, map, list). Every length is checked against the bytes that remain before it is
 * used, and no allocation is sized by a length that was not checked that way. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

size_t pk_rd_remaining(const pk_reader *r) { return r->size - r->pos; }
uint64_t pk_rd_offset(const pk_reader *r) { return r->base + (uint64_t)r->pos; }

int pk_rd_fail(pk_reader *r, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->what && r->what[0])
        return pk_fail_at(r->err, pk_rd_offset(r), "%s: %s (at offset %llu)", r->what, msg,
                          (unsigned long long)pk_rd_offset(r));
    return pk_fail_at(r->err, pk_rd_offset(r), "%s (at offset %llu)", msg,
                      (unsigned long long)pk_rd_offset(r));
}

static int need(pk_reader *r, size_t n, const char *field) {
    if (pk_rd_remaining(r) < n)
        return pk_rd_fail(r, "truncated: %s needs %zu bytes, %zu remain", field, n,
                          pk_rd_remaining(r));
    return 0;
}

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    int i;
    for (i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

int pk_rd_u8(pk_reader *r, uint8_t *v, const char *field) {
    if (need(r, 1, field)) return PK_ERR_ARTIFACT;
    *v = r->data[r->pos++];
    return 0;
}
int pk_rd_u16(pk_reader *r, uint16_t *v, const char *field) {
    if (need(r, 2, field)) return PK_ERR_ARTIFACT;
    *v = (uint16_t)le(r->data + r->pos, 2);
    r->pos += 2;
    return 0;
}
int pk_rd_u32(pk_reader *r, uint32_t *v, const char *field) {
    if (need(r, 4, field)) return PK_ERR_ARTIFACT;
    *v = (uint32_t)le(r->data + r->pos, 4);
    r->pos += 4;
    return 0;
}
int pk_rd_u64(pk_reader *r, uint64_t *v, const char *field) {
    if (need(r, 8, field)) return PK_ERR_ARTIFACT;
    *v = le(r->data + r->pos, 8);
    r->pos += 8;
    return 0;
}

int pk_rd_span(pk_reader *r, const uint8_t **p, size_t *n, const char *field) {
    uint64_t len;
    size_t at = r->pos;
    if (pk_rd_u64(r, &len, field)) return PK_ERR_ARTIFACT;
    if (len > (uint64_t)pk_rd_remaining(r)) {
        r->pos = at;
        return pk_rd_fail(r, "%s length %llu exceeds the %zu bytes that remain", field,
                          (unsigned long long)len, pk_rd_remaining(r) - 8);
    }
    *p = r->data + r->pos;
    *n = (size_t)len;
    r->pos += (size_t)len;
    return 0;
}

/* Strict UTF-8 as Python's decoder accepts it: no overlongs, no surrogates, <= U+10FFFF. */
int pk_utf8_valid(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        size_t k, len;
        uint32_t cp;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1Fu; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0Fu; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07u; }
        else return 0;
        if (n - i < len) return 0;
        for (k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0u) != 0x80u) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3Fu);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

int pk_rd_str(pk_reader *r, pk_str *s, const char *field) {
    const uint8_t *p;
    size_t n, at = r->pos;
    char *copy;
    if (pk_rd_span(r, &p, &n, field)) return PK_ERR_ARTIFACT;
    if (!pk_utf8_valid(p, n)) {
        r->pos = at;
        return pk_rd_fail(r, "%s is not valid UTF-8", field);
    }
    copy = (char *)pk_arena_alloc(r->arena, n + 1);   /* n <= remaining bytes: checked */
    if (!copy) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory reading %s", field);
    if (n) memcpy(copy, p, n);
    copy[n] = 0;
    s->ptr = copy;
    s->len = n;
    return 0;
}

int pk_rd_count(pk_reader *r, size_t min_item, size_t *n, const char *field) {
    uint64_t c;
    size_t at = r->pos;
    if (pk_rd_u64(r, &c, field)) return PK_ERR_ARTIFACT;
    if (min_item == 0) min_item = 1;
    if (c > (uint64_t)(pk_rd_remaining(r) / min_item)) {
        r->pos = at;
        return pk_rd_fail(r, "%s count %llu cannot fit in the %zu bytes that remain", field,
                          (unsigned long long)c, pk_rd_remaining(r) - 8);
    }
    *n = (size_t)c;
    return 0;
}

int pk_str_cmp(const pk_str *a, const pk_str *b) {
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->ptr, b->ptr, n) : 0;
    if (c) return c;
    return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

int pk_rd_str_map(pk_reader *r, pk_kv **out, size_t *n, const char *field) {
    size_t i, count;
    pk_kv *kv;
    char sub[96];
    if (pk_rd_count(r, 16, &count, field)) return PK_ERR_ARTIFACT;
    kv = (pk_kv *)pk_arena_array(r->arena, count, sizeof *kv);
    if (!kv && count) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory reading %s", field);
    for (i = 0; i < count; i++) {
        size_t at = r->pos;
        snprintf(sub, sizeof sub, "%s key", field);
        if (pk_rd_str(r, &kv[i].key, sub)) return PK_ERR_ARTIFACT;
        if (i && pk_str_cmp(&kv[i - 1].key, &kv[i].key) >= 0) {
            r->pos = at;
            return pk_rd_fail(r, "%s keys are not strictly sorted ('%s' after '%s')", field,
                              kv[i].key.ptr, kv[i - 1].key.ptr);
        }
        snprintf(sub, sizeof sub, "%s['%.40s']", field, kv[i].key.ptr);
        if (pk_rd_str(r, &kv[i].value, sub)) return PK_ERR_ARTIFACT;
    }
    *out = kv;
    *n = count;
    return 0;
}
