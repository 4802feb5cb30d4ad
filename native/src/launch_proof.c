/* The CPU runtimes' default safety (docs/correctness.md 5.5), in the C runtime:
 *
 * - the launch-time conditions of proven accesses (FunctionInfo attributes bounds_proof,
 *   bounds_proof_<k>, bounds_proof_at_<k>; the text format is python/polykern/runtime/launch_proof.py's),
 *   evaluated on the launch's scalars, buffer lengths, grid and block before anything runs;
 * - a kernel with checked accesses (attribute bounds_check = 1) launched with the user's arguments
 *   only: the hidden lengths buffer and error record (python/polykern/passes/bounds_check.py) are
 *   added here, and a recorded violation is a PK_ERR_LAUNCH naming the array, the index and the line.
 *
 * Arithmetic is exact in 128 bits; a term or sum past them fails the condition (refused, never wrong).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "launch_proof.h"

static const char *attr(const pk_function_info *fi, const char *key) {
    const pk_str *v = pk_kv_find(fi->attrs, fi->num_attrs, key);
    return v ? v->ptr : NULL;
}

static int arg_elem_bytes(const pk_arg_info *a) {
    int n = (a->bits + 7) / 8 * (a->lanes ? a->lanes : 1);
    return n > 0 ? n : 1;
}

/* Symbol `s` (len bytes) split: its letter, index i and (q<i>_<c>, r<i>_<c>) divisor c >= 1; 0 when malformed. */
static int parse_symbol(const char *s, size_t len, char *letter, unsigned long *i, unsigned long *c) {
    char buf[48], *end;
    if (len < 2 || len >= sizeof buf || !(s[1] >= '0' && s[1] <= '9')) return 0;
    memcpy(buf, s + 1, len - 1);
    buf[len - 1] = 0;
    *letter = s[0];
    *i = strtoul(buf, &end, 10);
    *c = 1;
    if (s[0] == 'q' || s[0] == 'r') {
        if (*end != '_' || !(end[1] >= '1' && end[1] <= '9')) return 0;
        *c = strtoul(end + 1, &end, 10);
        if (*c == 0 || (unsigned long long)*c > (unsigned long long)INT64_MAX) return 0;
    }
    return *end == 0 && strchr("aLbgqr", s[0]) != NULL;
}

/* The value of symbol `s` (a<i> L<i> b<d> g<d> q<i>_<c> r<i>_<c>, launch_proof.py); 0 when it names
 * nothing suitable (*ok = 0). */
static int64_t symbol(const pk_function_info *fi, size_t nuser, void *const *args, const uint32_t grid[3],
                      const uint32_t block[3], const char *s, size_t len, int *ok) {
    char letter;
    unsigned long i, c;
    if (!parse_symbol(s, len, &letter, &i, &c)) { *ok = 0; return 0; }
    if (letter == 'q' || letter == 'r') { /* the argument divided by c: truncated (q) or rounded down (r) */
        char base[24];
        int n = snprintf(base, sizeof base, "a%lu", i);
        int64_t a = symbol(fi, nuser, args, grid, block, base, (size_t)n, ok), d = (int64_t)c;
        if (!*ok) return 0;
        return letter == 'q' || a >= 0 || a % d == 0 ? a / d : a / d - 1;
    }
    if (s[0] == 'b' || s[0] == 'g') {
        if (i > 2) { *ok = 0; return 0; }
        return s[0] == 'b' ? block[i] : grid[i];
    }
    if (i >= nuser) { *ok = 0; return 0; }
    const pk_arg_info *a = &fi->args[i];
    if (s[0] == 'L' && a->kind == PK_ARG_BUFFER)
        return (int64_t)(pk_buffer_size((const pk_buffer *)args[i]) / (size_t)arg_elem_bytes(a));
    if (s[0] == 'a' && a->kind == PK_ARG_SCALAR && (a->code == PK_CODE_INT || a->code == PK_CODE_UINT)) {
        const unsigned char *p = (const unsigned char *)args[i];
        switch (a->bits) {
        case 8: return a->code == PK_CODE_INT ? (int64_t)*(const int8_t *)p : (int64_t)*(const uint8_t *)p;
        case 16: { int16_t v; uint16_t u; memcpy(&v, p, 2); memcpy(&u, p, 2);
                   return a->code == PK_CODE_INT ? v : (int64_t)u; }
        case 32: { int32_t v; uint32_t u; memcpy(&v, p, 4); memcpy(&u, p, 4);
                   return a->code == PK_CODE_INT ? v : (int64_t)u; }
        case 64: { int64_t v; uint64_t u; memcpy(&v, p, 8); memcpy(&u, p, 8);
                   if (a->code == PK_CODE_UINT && u > INT64_MAX) { *ok = 0; return 0; }
                   return v; }
        }
    }
    *ok = 0;
    return 0;
}

typedef __int128 pk_wide; /* exact for every coefficient the text holds (up to 2^64) and their sums */

/* A decimal integer from p (optional '-'); *end after it; 0 digits or past 2^100 -> *bad = 1. */
static pk_wide parse_wide(const char *p, const char **end, int *bad) {
    int neg = *p == '-', digits = 0;
    pk_wide v = 0;
    if (neg) p++;
    while (*p >= '0' && *p <= '9') {
        if (++digits > 30) *bad = 1;
        else v = v * 10 + (*p - '0');
        p++;
    }
    if (!digits) *bad = 1;
    *end = p;
    return neg ? -v : v;
}

/* Whether one polynomial (terms separated by ' ', up to `end`) is >= 0; -1 when malformed. */
static int poly_ok(const pk_function_info *fi, size_t nuser, void *const *args, const uint32_t grid[3],
                   const uint32_t block[3], const char *p, const char *end) {
    pk_wide total = 0;
    int overflow = 0;
    while (p < end) {
        const char *t = p, *te = memchr(p, ' ', (size_t)(end - p)), *q;
        int bad = 0;
        if (!te) te = end;
        pk_wide v = parse_wide(t, &q, &bad);
        if (bad || q > te) return -1;
        while (q < te) {
            const char *se;
            int ok = 1;
            if (*q != '*') return -1;
            q++;
            se = q;
            while (se < te && *se != '*') se++;
            int64_t x = symbol(fi, nuser, args, grid, block, q, (size_t)(se - q), &ok);
            if (!ok) return -1;
            if (__builtin_mul_overflow(v, (pk_wide)x, &v)) overflow = 1;
            q = se;
        }
        if (__builtin_add_overflow(total, v, &total)) overflow = 1;
        p = te < end ? te + 1 : end;
    }
    return overflow ? 0 : total >= 0;
}

/* Appends to buf (size n, at *at) like snprintf; output past the end is dropped. */
static void put(char *buf, size_t n, size_t *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (*at < n) {
        int w = vsnprintf(buf + *at, n - *at, fmt, ap);
        if (w > 0) *at += (size_t)w;
    }
    va_end(ap);
    if (*at > n) *at = n;
}

/* Symbol `s` in the kernel's names: h, len(src), block[0], grid[1], (w // 4), floor(w / 4). */
static void put_symbol(const pk_function_info *fi, size_t nuser, const char *s, size_t len, char *buf, size_t n,
                       size_t *at) {
    char letter;
    unsigned long i, c;
    if (!parse_symbol(s, len, &letter, &i, &c) || ((letter != 'b' && letter != 'g') && i >= nuser)) {
        put(buf, n, at, "%.*s", (int)len, s);
        return;
    }
    const char *name = letter == 'b' || letter == 'g' ? "" : fi->args[i].name.ptr;
    switch (letter) {
    case 'b': put(buf, n, at, "block[%lu]", i); break;
    case 'g': put(buf, n, at, "grid[%lu]", i); break;
    case 'L': put(buf, n, at, "len(%s)", name); break;
    case 'a': put(buf, n, at, "%s", name); break;
    case 'q': put(buf, n, at, "(%s // %lu)", name, c); break;
    default:
        if ((c & (c - 1)) == 0) put(buf, n, at, "(%s >> %d)", name, __builtin_ctzl(c));
        else put(buf, n, at, "floor(%s / %lu)", name, c);
        break;
    }
}

/* The terms of polynomial [p, end) with sign `sign` (1: positive ones, -1: negated negative ones) in the
 * kernel's names; their value in *value (exact unless *overflow). */
static void put_side(const pk_function_info *fi, size_t nuser, void *const *args, const uint32_t grid[3],
                     const uint32_t block[3], const char *p, const char *end, int sign, char *buf, size_t n,
                     size_t *at, pk_wide *value, int *overflow) {
    int first = 1;
    *value = 0;
    while (p < end) {
        const char *te = memchr(p, ' ', (size_t)(end - p)), *q;
        int bad = 0;
        if (!te) te = end;
        pk_wide v = parse_wide(p, &q, &bad) * sign;
        if (v > 0) {
            int shown = v != 1 || q == te;
            put(buf, n, at, "%s", first ? "" : " + ");
            if (shown) put(buf, n, at, "%lld%s", (long long)v, q < te ? "*" : "");
            for (const char *sy = q; sy < te;) {
                const char *se = sy + 1;
                int ok = 1;
                while (se < te && *se != '*') se++;
                if (sy > q) put(buf, n, at, "*");
                put_symbol(fi, nuser, sy + 1, (size_t)(se - sy - 1), buf, n, at);
                int64_t x = symbol(fi, nuser, args, grid, block, sy + 1, (size_t)(se - sy - 1), &ok);
                if (__builtin_mul_overflow(v, (pk_wide)x, &v)) *overflow = 1;
                sy = se;
            }
            if (__builtin_add_overflow(*value, v, value)) *overflow = 1;
            first = 0;
        }
        p = te < end ? te + 1 : end;
    }
    if (first) put(buf, n, at, "0");
}

/* The inequalities of a failed condition that fail, in the kernel's names (launch_proof.py's describe):
 * "4*h*(w // 4) <= 3 + len(src) (here 2584 > 2519); or ...". */
static void describe(const pk_function_info *fi, size_t nuser, void *const *args, const uint32_t grid[3],
                     const uint32_t block[3], const char *text, char *buf, size_t n) {
    const char *alt = text, *text_end = text + strlen(text);
    size_t at = 0;
    buf[0] = 0;
    while (alt <= text_end) {
        const char *alt_end = strstr(alt, " | ");
        int shown = 0;
        if (!alt_end) alt_end = text_end;
        if (alt != text) put(buf, n, &at, "; or ");
        if (!(alt_end - alt == 4 && memcmp(alt, "true", 4) == 0)) {
            for (const char *p = alt; p <= alt_end;) {
                const char *pe = strstr(p, " & ");
                if (!pe || pe > alt_end) pe = alt_end;
                if (poly_ok(fi, nuser, args, grid, block, p, pe) == 0) {
                    pk_wide lhs, rhs;
                    int overflow = 0;
                    put(buf, n, &at, "%s", shown++ ? " and " : "");
                    put_side(fi, nuser, args, grid, block, p, pe, -1, buf, n, &at, &lhs, &overflow);
                    put(buf, n, &at, " <= ");
                    put_side(fi, nuser, args, grid, block, p, pe, 1, buf, n, &at, &rhs, &overflow);
                    if (overflow) put(buf, n, &at, " (here past 128 bits)");
                    else put(buf, n, &at, " (here %lld > %lld)", (long long)lhs, (long long)rhs);
                }
                p = pe + 3;
            }
        }
        if (!shown) put(buf, n, &at, "(holds)");
        alt = alt_end + 3;
    }
    if (at >= n && n > 4) memcpy(buf + n - 4, "...", 4);
}

/* 1 when the condition holds, 0 when not, -1 when malformed. */
static int condition_holds(const pk_function_info *fi, size_t nuser, void *const *args, const uint32_t grid[3],
                           const uint32_t block[3], const char *text) {
    const char *alt = text, *text_end = text + strlen(text);
    int bad = 0;
    while (alt <= text_end) {
        const char *alt_end = strstr(alt, " | ");
        if (!alt_end) alt_end = text_end;
        int holds = 1;
        if (!(alt_end - alt == 4 && memcmp(alt, "true", 4) == 0)) {
            const char *p = alt;
            while (p <= alt_end && holds) {
                const char *pe = strstr(p, " & ");
                if (!pe || pe > alt_end) pe = alt_end;
                int r = poly_ok(fi, nuser, args, grid, block, p, pe);
                if (r < 0) bad = 1;
                holds = r > 0;
                p = pe + 3;
            }
        }
        if (holds && !bad) return 1;
        alt = alt_end + 3;
    }
    return bad ? -1 : 0;
}

int pk_launch_proof_check(const pk_function_info *fi, size_t nuser, void *const *args, const uint32_t grid[3],
                          const uint32_t block[3], pk_error *err) {
    const char *count = attr(fi, "bounds_proof");
    unsigned long n, k;
    char key[48];
    if (!count) return 0;
    n = strtoul(count, NULL, 10);
    for (k = 0; k < n; k++) {
        snprintf(key, sizeof key, "bounds_proof_%lu", k);
        const char *text = attr(fi, key);
        snprintf(key, sizeof key, "bounds_proof_at_%lu", k);
        const char *where = attr(fi, key);
        int r = text && where ? condition_holds(fi, nuser, args, grid, block, text) : -1;
        if (r < 0)
            return pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': malformed launch-proof attribute %s", fi->name.ptr,
                           key);
        if (!r) {
            char why[1024];
            describe(fi, nuser, args, grid, block, text, why, sizeof why);
            return pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': possible out-of-bounds access to %s (grid %u %u %u, "
                           "block %u %u %u); nothing ran (docs/correctness.md 5.5; bounds_check=True checks each "
                           "access as it runs). Its launch-time bounds condition fails: %s",
                           fi->name.ptr, where, grid[0], grid[1], grid[2], block[0], block[1], block[2], why);
        }
    }
    return 0;
}

int pk_bounds_hidden_args(const pk_function_info *fi, size_t nargs) {
    const char *on = attr(fi, "bounds_check"), *nu = attr(fi, "bounds_user_args");
    return on && strcmp(on, "1") == 0 && nu && strtoul(nu, NULL, 10) == nargs && nargs < fi->num_args;
}

/* The access table entry bounds_at_<id>: JSON ["array","op",...,"file",line,col,"source"]; the
 * message quotes it as stored. */
int pk_bounds_launch(pk_kernel *k, size_t nargs, void *const *args, const uint32_t grid[3],
                     const uint32_t block[3], pk_error *err) {
    const pk_function_info *fi = pk_kernel_info(k);
    pk_program *prog = pk_kernel_program(k);
    const char *lens_attr = attr(fi, "bounds_lengths"), *bits_attr = attr(fi, "bounds_index_bits");
    size_t total = fi->num_args, i, nlens = 0;
    int bits = bits_attr ? atoi(bits_attr) : 0, rc;
    void **all = NULL;
    pk_buffer *lens = NULL, *rec = NULL;
    unsigned char *host = NULL;
    int32_t record[4] = {0, 0, 0, 0};
    if (!lens_attr || (bits != 32 && bits != 64))
        return pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': malformed bounds-check attributes", fi->name.ptr);
    for (const char *p = lens_attr; *p; p++) nlens += *p == ',';
    nlens += *lens_attr ? 1 : 0;
    if (nargs + (nlens ? 1 : 0) + 1 != total)
        return pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': its hidden bounds-check parameters do not match its "
                       "arguments", fi->name.ptr);
    if (!(all = calloc(total, sizeof *all)) || !(host = calloc(nlens ? nlens : 1, 8))) {
        rc = pk_fail(err, PK_ERR_NOMEM, "out of memory");
        goto out;
    }
    memcpy(all, args, nargs * sizeof *all);
    if (nlens) {
        const char *p = lens_attr;
        for (i = 0; i < nlens; i++) {
            char *e;
            unsigned long a = strtoul(p, &e, 10);
            if (a >= nargs || fi->args[a].kind != PK_ARG_BUFFER || !args[a]) {
                rc = pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': malformed bounds_lengths", fi->name.ptr);
                goto out;
            }
            uint64_t n = pk_buffer_size((const pk_buffer *)args[a]) / (size_t)arg_elem_bytes(&fi->args[a]);
            if (bits == 32) {
                uint32_t v = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
                memcpy(host + 4 * i, &v, 4);
            } else {
                memcpy(host + 8 * i, &n, 8);
            }
            p = *e == ',' ? e + 1 : e;
        }
        if (!(lens = pk_buffer_alloc(prog, nlens * (size_t)(bits / 8), err))) { rc = err ? err->status : 1; goto out; }
        if ((rc = pk_buffer_write(lens, 0, host, nlens * (size_t)(bits / 8), err))) goto out;
        all[nargs] = lens;
    }
    if (!(rec = pk_buffer_alloc(prog, sizeof record, err))) { rc = err ? err->status : 1; goto out; }
    if ((rc = pk_buffer_write(rec, 0, record, sizeof record, err))) goto out;
    all[total - 1] = rec;
    if ((rc = pk_kernel_launch(k, total, all, grid, block, err))) goto out;
    if ((rc = pk_buffer_read(rec, 0, record, sizeof record, err))) goto out;
    if (record[0]) {
        char key[48];
        uint64_t bits_v = (uint64_t)(uint32_t)record[1] | ((uint64_t)(uint32_t)record[2] << 32);
        snprintf(key, sizeof key, "bounds_at_%ld", (long)record[0] - 1);
        const char *at = attr(fi, key);
        rc = pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': out-of-bounds access (index bits 0x%llx) at %s (the first "
                     "violation of this launch; checked access)", fi->name.ptr, (unsigned long long)bits_v,
                     at ? at : "an unknown access");
    }
out:
    pk_buffer_free(lens);
    pk_buffer_free(rec);
    free(host);
    free(all);
    return rc;
}
