/* The tables shared with Python (kbin_tables.h, generated) and what uses them: version 1's module kinds,
 * layout names,
 * the FunctionInfo attribute/launch-tag schema, and how artifact strings are shown
 * (polykern.kbin.messages.quote / escape / escape_source, byte for byte). */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#define PK_KBIN_TABLES_IMPL
#include "kbin_tables.h"
#include "tensor_maps.h"

int pk_v1_layout_of_kind(const char *kind, pk_layout *layout) {
    size_t i;
    for (i = 0; i < sizeof pk_v1_kinds / sizeof pk_v1_kinds[0]; i++)
        if (strcmp(pk_v1_kinds[i].kind, kind) == 0) {
            if (layout) *layout = (pk_layout)pk_v1_kinds[i].layout;
            return 1;
        }
    return 0;
}

int pk_is_known_kind(const char *kind) { return pk_v1_layout_of_kind(kind, NULL); }

const char *pk_layout_name(pk_layout layout) {
    return (size_t)layout < sizeof pk_layout_names / sizeof pk_layout_names[0] ? pk_layout_names[layout] : "?";
}

/* One code point at p[*i]; -1 for a byte that does not start valid UTF-8 (consumes it). */
static long next_cp(const uint8_t *p, size_t n, size_t *i) {
    size_t len, k, rest = n - *i;
    uint8_t c = p[*i];
    long cp;
    if (c < 0x80) { (*i)++; return c; }
    if (pk_utf8_error(p + *i, rest < 4 ? rest : 4) == 0) { (*i)++; return -1 - (long)c; }
    len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (k = 1; k < len; k++) cp = (cp << 6) | (p[*i + k] & 0x3F);
    *i += len;
    return cp;
}

static int invisible(long cp) {
    size_t i;
    for (i = 0; i < sizeof pk_invisible / sizeof pk_invisible[0]; i++)
        if (cp >= (long)pk_invisible[i][0] && cp <= (long)pk_invisible[i][1]) return 1;
    return 0;
}

/* kbin.messages._unit: the shown form of the code point at p[*i] into u (NUL-terminated). */
static size_t unit(const uint8_t *p, size_t n, size_t *i, char quote_char, const char *keep, char u[8]) {
    size_t start = *i;
    long cp = next_cp(p, n, i);
    if (cp < 0) return (size_t)snprintf(u, 8, "\\x%02x", (unsigned)(-1 - cp));   /* surrogateescape */
    if (cp < 0x80 && cp && strchr(keep, (int)cp)) { u[0] = (char)cp; u[1] = 0; return 1; }
    if (cp == '\\' || (quote_char && cp == quote_char)) { u[0] = '\\'; u[1] = (char)cp; u[2] = 0; return 2; }
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return (size_t)snprintf(u, 8, "\\x%02x", (unsigned)cp);
    if (invisible(cp)) return (size_t)snprintf(u, 8, "\\u%04x", (unsigned)cp);
    memcpy(u, p + start, *i - start);
    u[*i - start] = 0;
    return *i - start;
}

const char *pk_quote(const char *s, size_t n, char *buf, size_t size) {
    size_t i = 0, used = 0, len = 1;
    char u[8];
    if (size < PK_QUOTE_BUF) { if (size) buf[0] = 0; return buf; }
    buf[0] = '\'';
    while (i < n) {
        size_t un = unit((const uint8_t *)s, n, &i, '\'', "", u);
        if (used + un > PK_QUOTE_LIMIT) {
            memcpy(buf + len, "'...", 5);
            return buf;
        }
        memcpy(buf + len, u, un);
        len += un;
        used += un;
    }
    buf[len] = '\'';
    buf[len + 1] = 0;
    return buf;
}

const char *pk_quote_str(const pk_str *s, char *buf, size_t size) { return pk_quote(s->ptr, s->len, buf, size); }

void pk_write_escaped(FILE *out, const char *s, size_t n, int source) {
    size_t i = 0;
    char u[8];
    while (i < n) {
        size_t un = unit((const uint8_t *)s, n, &i, 0, source ? "\t\n\\" : "", u);
        fwrite(u, 1, un, out);
    }
}

size_t pk_escape(const char *s, size_t n, char *buf, size_t size) {
    size_t i = 0, len = 0;
    char u[8];
    if (!size) return 0;
    while (i < n) {
        size_t un = unit((const uint8_t *)s, n, &i, 0, "", u);
        if (len + un >= size) break;
        memcpy(buf + len, u, un);
        len += un;
    }
    buf[len] = 0;
    return len;
}

/* ------------------------------------------------------------- function_schema */

static int printable(const pk_str *v) {
    size_t i = 0;
    while (i < v->len) {
        long cp = next_cp((const uint8_t *)v->ptr, v->len, &i);
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || invisible(cp)) return 0;
    }
    return 1;
}

static int name_syntax_ok(const pk_str *k) {   /* ^[a-z][a-z0-9_]{0,63}$ */
    size_t i;
    if (k->len < 1 || k->len > 64 || k->ptr[0] < 'a' || k->ptr[0] > 'z') return 0;
    for (i = 1; i < k->len; i++) {
        char c = k->ptr[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
    }
    return 1;
}

static int value_ok(int type, const pk_str *v) {
    unsigned long long limit = pk_attr_types[type].limit, x = 0;
    size_t i;
    if (type == PK_ATTR_FLAG || type == PK_ATTR_U32 || type == PK_ATTR_SIZE) {
        /* ^(0|[1-9][0-9]{0,19})$ and <= limit */
        if (v->len < 1 || v->len > 20 || (v->len > 1 && v->ptr[0] == '0')) return 0;
        for (i = 0; i < v->len; i++) {
            unsigned d = (unsigned)(v->ptr[i] - '0');
            if (d > 9) return 0;
            if (d > limit || x > (limit - d) / 10) return 0;   /* x * 10 + d > limit */
            x = x * 10 + d;
        }
        return 1;
    }
    if (type == PK_ATTR_WARPGROUPS) return pk_warpgroups_attr_ok(v);
    if (type == PK_ATTR_ALIGN) return pk_align_attr_ok(v);
    if (v->len > limit || !printable(v)) return 0;
    if (type == PK_ATTR_TENSOR_MAPS) return pk_tmaps_attr_ok(v);
    return type == PK_ATTR_TEXT || (v->len && memchr(v->ptr, ' ', v->len) == NULL);
}

static int tag_ok(const pk_str *t) {   /* KIND.DIM */
    size_t i, kl;
    if (t->len < 3 || t->ptr[t->len - 2] != '.' || t->ptr[t->len - 1] < '0' || t->ptr[t->len - 1] > '2')
        return 0;
    kl = t->len - 2;
    for (i = 0; i < sizeof pk_launch_tag_kinds / sizeof pk_launch_tag_kinds[0]; i++)
        if (strlen(pk_launch_tag_kinds[i]) == kl && memcmp(pk_launch_tag_kinds[i], t->ptr, kl) == 0) return 1;
    return 0;
}

int pk_check_function_schema(pk_reader *r, const pk_function_info *f, const char *what, size_t tags_at,
                             size_t attrs_at) {
    size_t i, j;
    char q1[PK_QUOTE_BUF], q2[PK_QUOTE_BUF];
    for (i = 0; i < f->num_args; i++)
        for (j = 0; j < i; j++)
            if (pk_str_cmp(&f->args[i].name, &f->args[j].name) == 0)
                return pk_rd_fail_at(r, r->pos, PK_MSG_ARG_DUP, what, pk_quote_str(&f->args[i].name, q1, sizeof q1));
    for (i = 0; i < f->num_launch_tags; i++)
        if (!tag_ok(&f->launch_tags[i]))
            return pk_rd_fail_at(r, tags_at, PK_MSG_TAG_BAD, what, pk_quote_str(&f->launch_tags[i], q1, sizeof q1),
                                 PK_LAUNCH_TAG_KINDS);
    for (i = 0; i < f->num_attrs; i++) {
        const pk_kv *a = &f->attrs[i];
        int type = PK_ATTR_DEFAULT;
        if (!name_syntax_ok(&a->key))
            return pk_rd_fail_at(r, attrs_at, PK_MSG_ATTR_NAME, what, pk_quote_str(&a->key, q1, sizeof q1));
        for (j = 0; j < sizeof pk_attr_schema / sizeof pk_attr_schema[0]; j++)
            if (strlen(pk_attr_schema[j].name) == a->key.len && memcmp(pk_attr_schema[j].name, a->key.ptr, a->key.len) == 0)
                type = pk_attr_schema[j].type;
        if (!value_ok(type, &a->value))
            return pk_rd_fail_at(r, attrs_at, PK_MSG_ATTR_VALUE, what, pk_quote_str(&a->key, q1, sizeof q1),
                                 pk_quote_str(&a->value, q2, sizeof q2), pk_attr_types[type].expect);
    }
    return 0;
}
