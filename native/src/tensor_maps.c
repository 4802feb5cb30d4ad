/* Hopper kernels' tensor maps, warpgroups and dynamic shared alignment (tensor_maps.h): the attribute read
 * by the rules of polykern.ir.hopper.tensor_maps_of (the JSON that function accepts, parsed here without
 * recursion: only the shape it describes is read, anything else is malformed), the launch plan and the
 * per-launch checks of backends/cuda/polykern_cuda/runtime/tensor_maps.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#define PK_TMAP_TABLES_IMPL
#include "tensor_maps.h"

#define NTYPES (sizeof pk_tmap_types / sizeof pk_tmap_types[0])
#define NSWIZZLES (sizeof pk_tmap_swizzles / sizeof pk_tmap_swizzles[0])

typedef struct {
    const char *s;
    size_t i, n;
    char *out;        /* decoded strings go here, one after the other */
} jp;

static void ws(jp *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static int eat(jp *p, char c) {
    ws(p);
    if (p->i < p->n && p->s[p->i] == c) { p->i++; return 1; }
    return 0;
}

static int hex4(jp *p, unsigned *v) {
    size_t k;
    *v = 0;
    if (p->n - p->i < 4) return 0;
    for (k = 0; k < 4; k++) {
        char c = p->s[p->i++];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d > 15) return 0;
        *v = *v << 4 | d;
    }
    return 1;
}

static size_t put_utf8(char *o, unsigned cp) {   /* lone surrogates too (they match no valid name) */
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | (cp >> 6 & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A JSON string (Python's json: control characters refused, \uXXXX surrogate pairs joined), decoded into
 * p->out; never longer than its source. */
static int string(jp *p, const char **str, size_t *len) {
    char *o = p->out;
    ws(p);
    if (p->i >= p->n || p->s[p->i] != '"') return 0;
    p->i++;
    for (;;) {
        unsigned char c;
        if (p->i >= p->n) return 0;
        c = (unsigned char)p->s[p->i++];
        if (c == '"') break;
        if (c < 0x20) return 0;
        if (c != '\\') { *o++ = (char)c; continue; }
        if (p->i >= p->n) return 0;
        c = (unsigned char)p->s[p->i++];
        switch (c) {
        case '"': case '\\': case '/': *o++ = (char)c; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (!hex4(p, &cp)) return 0;
            if (cp >= 0xD800 && cp <= 0xDBFF && p->n - p->i >= 6 && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
                size_t back = p->i;
                p->i += 2;
                if (hex4(p, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else p->i = back;   /* a lone high surrogate; what follows is read as itself */
            }
            o += put_utf8(o, cp);
            break;
        }
        default: return 0;
        }
    }
    *str = p->out;
    *len = (size_t)(o - p->out);
    p->out = o;
    return 1;
}

/* A JSON number that is an integer (no fraction or exponent: those are floats, which no field takes) in
 * [0, 2**64); -0 is 0, as Python reads it. */
static int integer(jp *p, uint64_t *v) {
    int neg = 0, any = 0;
    ws(p);
    if (p->i < p->n && p->s[p->i] == '-') { neg = 1; p->i++; }
    *v = 0;
    if (p->i < p->n && p->s[p->i] == '0') {
        p->i++;
        any = 1;
    } else {
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            unsigned d = (unsigned)(p->s[p->i++] - '0');
            if (*v > (UINT64_MAX - d) / 10) return 0;
            *v = *v * 10 + d;
            any = 1;
        }
    }
    if (!any || (neg && *v) || (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E' ||
                                                (p->s[p->i] >= '0' && p->s[p->i] <= '9'))))
        return 0;
    return 1;
}

static int pair_of_ints(jp *p, uint32_t out[2], uint64_t lo, uint64_t hi) {
    uint64_t v;
    int k;
    if (!eat(p, '[')) return 0;
    for (k = 0; k < 2; k++) {
        if ((k && !eat(p, ',')) || !integer(p, &v) || v < lo || v > hi) return 0;
        out[k] = (uint32_t)v;
    }
    return eat(p, ']');
}

static int shape(jp *p, pk_tmap *m) {
    int k;
    if (!eat(p, '[')) return 0;
    for (k = 0; k < 2; k++) {
        if (k && !eat(p, ',')) return 0;
        ws(p);
        if (p->i < p->n && p->s[p->i] == '"') {
            if (!string(p, &m->dim_name[k], &m->dim_len[k])) return 0;
        } else if (!integer(p, &m->dim[k]) || m->dim[k] < 1 || m->dim[k] > UINT32_MAX) {
            return 0;
        }
    }
    return eat(p, ']');
}

static const char *const keys[] = {"box", "buffer", "elem", "name", "shape", "swizzle"};

static int one_map(jp *p, pk_tmap *m) {
    unsigned seen = 0;
    memset(m, 0, sizeof *m);
    if (!eat(p, '{')) return 0;
    do {
        const char *k, *e;
        size_t kl, el, j, which = sizeof keys / sizeof keys[0];
        uint64_t v;
        if (!string(p, &k, &kl) || !eat(p, ':')) return 0;
        for (j = 0; j < sizeof keys / sizeof keys[0]; j++)
            if (strlen(keys[j]) == kl && memcmp(keys[j], k, kl) == 0) which = j;
        if (which == sizeof keys / sizeof keys[0] || (seen & 1u << which)) return 0;   /* unknown or twice */
        seen |= 1u << which;
        switch (which) {
        case 0: if (!pair_of_ints(p, m->box, 1, PK_TMAP_BOX_MAX)) return 0; break;
        case 1: if (!string(p, &m->buffer, &m->buffer_len)) return 0; break;
        case 2:
            if (!string(p, &e, &el)) return 0;
            for (j = 0; j < NTYPES && !(strlen(pk_tmap_types[j].name) == el && memcmp(pk_tmap_types[j].name, e, el) == 0); j++) {}
            if (j == NTYPES) return 0;
            m->elem = (unsigned)j;
            break;
        case 3: if (!string(p, &m->name, &m->name_len)) return 0; break;
        case 4: if (!shape(p, m)) return 0; break;
        default:
            if (!integer(p, &v)) return 0;
            for (j = 0; j < NSWIZZLES && pk_tmap_swizzles[j].bytes != v; j++) {}
            if (j == NSWIZZLES) return 0;
            m->swizzle = (unsigned)j;
        }
    } while (eat(p, ','));
    return eat(p, '}') && seen == (1u << (sizeof keys / sizeof keys[0])) - 1;
}

int pk_tmaps_parse(const char *text, size_t len, pk_tmap maps[PK_TMAP_MAX], size_t *n, char *strings) {
    jp p;
    size_t i, j;
    *n = 0;
    p.s = text; p.i = 0; p.n = len; p.out = strings;
    if (!eat(&p, '[')) return 1;
    if (!eat(&p, ']')) {
        do {
            if (*n == PK_TMAP_MAX || !one_map(&p, &maps[*n])) return 1;
            (*n)++;
        } while (eat(&p, ','));
        if (!eat(&p, ']')) return 1;
    }
    ws(&p);
    if (p.i != p.n) return 1;
    for (i = 0; i < *n; i++)
        for (j = 0; j < i; j++)
            if (maps[i].name_len == maps[j].name_len && memcmp(maps[i].name, maps[j].name, maps[i].name_len) == 0)
                return 1;
    return 0;
}

int pk_align_attr_ok(const pk_str *v) {
    char want[24];
    int n = snprintf(want, sizeof want, "%u", PK_SWIZZLE_ALIGN);
    return n > 0 && v->len == (size_t)n && memcmp(v->ptr, want, v->len) == 0;
}

int pk_warpgroups_attr_ok(const pk_str *v) {   /* 1 .. PK_WARPGROUPS_MAX (< 10: one digit) */
    return v->len == 1 && v->ptr[0] >= '1' && (unsigned)(v->ptr[0] - '0') <= PK_WARPGROUPS_MAX;
}

int pk_tmaps_attr_ok(const pk_str *v) {
    pk_tmap maps[PK_TMAP_MAX];
    char strings[PK_TEXT_MAX + 1];
    size_t n;
    return v->len <= PK_TEXT_MAX && pk_tmaps_parse(v->ptr, v->len, maps, &n, strings) == 0;
}

/* ------------------------------------------------------------- the launch plan */

static size_t arg_named(const pk_function_info *fi, const char *name, size_t len) {
    size_t i;
    for (i = 0; i < fi->num_args; i++)
        if (fi->args[i].name.len == len && memcmp(fi->args[i].name.ptr, name, len) == 0) return i;
    return SIZE_MAX;
}

static int int_scalar(const pk_arg_info *a) {
    return a->kind == PK_ARG_SCALAR && (a->code == PK_CODE_INT || a->code == PK_CODE_UINT) &&
           (a->bits == 8 || a->bits == 16 || a->bits == 32 || a->bits == 64);
}

int pk_hopper_plan(const pk_function_info *fi, pk_hopper **out, pk_error *err) {
    const pk_str *tm = pk_kv_find(fi->attrs, fi->num_attrs, PK_KEY_TENSOR_MAPS);
    const pk_str *wg = pk_kv_find(fi->attrs, fi->num_attrs, PK_KEY_WARPGROUPS);
    const pk_str *al = pk_kv_find(fi->attrs, fi->num_attrs, PK_KEY_DYNAMIC_ALIGN);
    pk_hopper *h;
    char q1[PK_QUOTE_BUF], q2[PK_QUOTE_BUF];
    size_t i;
    int k;
    *out = NULL;
    if (!tm && !wg && !al) return 0;
    h = (pk_hopper *)calloc(1, sizeof *h);
    if (!h || !(h->strings = (char *)malloc(tm ? tm->len + 1 : 1))) {
        free(h);
        return pk_fail(err, PK_ERR_NOMEM, "out of memory");
    }
    /* the reader checked these (function_schema); a pk_function_info built otherwise is checked again */
    if (wg && !pk_warpgroups_attr_ok(wg)) goto malformed;
    h->warpgroups = wg ? (unsigned)(wg->ptr[0] - '0') : 0;
    if (al && !pk_align_attr_ok(al)) goto malformed;
    h->dyn_slack = al ? PK_SWIZZLE_ALIGN : 0;
    if (tm && (tm->len > PK_TEXT_MAX || pk_tmaps_parse(tm->ptr, tm->len, h->maps, &h->nmaps, h->strings)))
        goto malformed;
    for (i = 0; i < h->nmaps; i++) {
        const pk_tmap *m = &h->maps[i];
        size_t b = arg_named(fi, m->buffer, m->buffer_len);
        if (b == SIZE_MAX || fi->args[b].kind != PK_ARG_BUFFER) {
            pk_fail(err, PK_ERR_ARTIFACT, "kernel '%s': tensor map %s views %s, which is not a Buffer parameter of "
                    "the kernel", fi->name.ptr, pk_quote(m->name, m->name_len, q1, sizeof q1),
                    pk_quote(m->buffer, m->buffer_len, q2, sizeof q2));
            pk_hopper_free(h);
            return PK_ERR_ARTIFACT;
        }
        h->buf_arg[i] = b;
        for (k = 0; k < 2; k++) {
            size_t a = m->dim_name[k] ? arg_named(fi, m->dim_name[k], m->dim_len[k]) : SIZE_MAX;
            if (m->dim_name[k] && (a == SIZE_MAX || !int_scalar(&fi->args[a]))) {
                pk_fail(err, PK_ERR_ARTIFACT, "kernel '%s': tensor map %s has %s %s, which is not an integer "
                        "scalar parameter of the kernel", fi->name.ptr, pk_quote(m->name, m->name_len, q1, sizeof q1),
                        k ? "cols" : "rows", pk_quote(m->dim_name[k], m->dim_len[k], q2, sizeof q2));
                pk_hopper_free(h);
                return PK_ERR_ARTIFACT;
            }
            h->dim_arg[i][k] = a;
        }
    }
    *out = h;
    return 0;
malformed:
    pk_hopper_free(h);
    return pk_fail(err, PK_ERR_ARTIFACT, "kernel '%s': its artifact describes its Hopper launch wrongly (attributes "
                   "%s, %s, %s: docs/internals.md)", fi->name.ptr, PK_KEY_TENSOR_MAPS, PK_KEY_WARPGROUPS,
                   PK_KEY_DYNAMIC_ALIGN);
}

void pk_hopper_free(pk_hopper *h) {
    if (!h) return;
    free(h->strings);
    free(h);
}

int pk_hopper_check_block(const pk_hopper *h, const pk_function_info *fi, const uint32_t block[3], pk_error *err) {
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    if (!h->warpgroups || threads == (uint64_t)PK_WARPGROUP * h->warpgroups) return 0;
    return pk_fail(err, PK_ERR_LAUNCH, PK_LMSG_WARPGROUPS_BLOCK, fi->name.ptr, (unsigned long long)h->warpgroups,
                   (unsigned long long)PK_WARPGROUP * h->warpgroups, (unsigned long long)block[0],
                   (unsigned long long)block[1], (unsigned long long)block[2]);
}

/* An integer scalar argument's value (int_scalar checked it), as a signed 64-bit value where it fits. */
static int64_t scalar_value(const pk_arg_info *a, const void *p) {
    switch (a->bits) {
    case 8: return a->code == PK_CODE_INT ? (int64_t)*(const int8_t *)p : (int64_t)*(const uint8_t *)p;
    case 16: { int16_t s; uint16_t u; memcpy(&s, p, 2); memcpy(&u, p, 2); return a->code == PK_CODE_INT ? s : u; }
    case 32: { int32_t s; uint32_t u; memcpy(&s, p, 4); memcpy(&u, p, 4); return a->code == PK_CODE_INT ? s : (int64_t)u; }
    default: {
        int64_t s; uint64_t u;
        memcpy(&s, p, 8); memcpy(&u, p, 8);
        return a->code == PK_CODE_INT ? s : (u > INT64_MAX ? INT64_MAX : (int64_t)u);
    }
    }
}

int pk_hopper_encodings(const pk_hopper *h, const pk_function_info *fi, void *const *args, const uint64_t *addr,
                        const size_t *bytes, pk_tmap_encoding *enc, pk_error *err) {
    size_t i;
    char where[300], q1[PK_QUOTE_BUF], q2[PK_QUOTE_BUF];
    for (i = 0; i < h->nmaps; i++) {
        const pk_tmap *m = &h->maps[i];
        const pk_arg_info *buf = &fi->args[h->buf_arg[i]];
        unsigned elem = pk_tmap_types[m->elem].bytes, buf_elem = buf->bits / 8u;
        int64_t dim[2];
        int k;
        snprintf(where, sizeof where, PK_LMSG_TMAP_WHERE, fi->name.ptr, pk_quote(m->name, m->name_len, q1, sizeof q1),
                 pk_quote(m->buffer, m->buffer_len, q2, sizeof q2));
        for (k = 0; k < 2; k++)
            dim[k] = h->dim_arg[i][k] == SIZE_MAX ? (int64_t)m->dim[k]
                     : scalar_value(&fi->args[h->dim_arg[i][k]], args[h->dim_arg[i][k]]);
        /* the checks and words of python/polykern/runtime/hopper_launch.py check_map */
        if (dim[0] <= 0 || dim[1] <= 0 || (uint64_t)dim[0] >= PK_TMAP_DIM_LIMIT || (uint64_t)dim[1] >= PK_TMAP_DIM_LIMIT)
            return pk_fail(err, PK_ERR_LAUNCH, PK_LMSG_TMAP_SHAPE, where, (long long)dim[0], (long long)dim[1]);
        /* rows * cols < 2**64: both are below 2**32 */
        if (buf_elem && (uint64_t)dim[0] * (uint64_t)dim[1] > bytes[i] / buf_elem)
            return pk_fail(err, PK_ERR_LAUNCH, PK_LMSG_TMAP_FIT, where, (long long)dim[0], (long long)dim[1],
                           (unsigned long long)dim[0] * (unsigned long long)dim[1],
                           (unsigned long long)(bytes[i] / buf_elem));
        if ((uint64_t)dim[1] * elem % PK_TMAP_ROW_ALIGN)
            return pk_fail(err, PK_ERR_LAUNCH, PK_LMSG_TMAP_ROW, where, (long long)dim[1], pk_tmap_types[m->elem].name,
                           (unsigned long long)dim[1] * elem, (unsigned long long)PK_TMAP_ROW_ALIGN);
        if (addr[i] % PK_TMAP_ADDR_ALIGN)
            return pk_fail(err, PK_ERR_LAUNCH, PK_LMSG_TMAP_ADDR, where, (unsigned long long)addr[i],
                           (unsigned long long)PK_TMAP_ADDR_ALIGN);
        enc[i].dtype = pk_tmap_types[m->elem].cu_dtype;
        enc[i].swizzle = pk_tmap_swizzles[m->swizzle].cu_swizzle;
        enc[i].l2 = PK_TMAP_L2_256B;
        enc[i].addr = addr[i];
        enc[i].dims[0] = (uint64_t)dim[1];
        enc[i].dims[1] = (uint64_t)dim[0];
        enc[i].row_bytes = (uint64_t)dim[1] * elem;
        enc[i].box[0] = m->box[1];
        enc[i].box[1] = m->box[0];
    }
    return 0;
}
