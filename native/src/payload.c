/* Module payloads: FunctionInfo maps and the payload of every module, by its layout
 * (docs/internals.md "Module payloads"), checked like polykern.kbin.wire. Format version 2 payloads
 * start with their layout id, so a module of any kind decodes; version 1's come from the kind. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "kbin_tables.h"

/* polykern.ir.types.scalar_from_code */
static int known_type(uint8_t code, uint8_t bits) {
    switch (code) {
    case PK_CODE_INT: case PK_CODE_UINT: return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case PK_CODE_FLOAT: return bits == 16 || bits == 32 || bits == 64;
    case PK_CODE_BFLOAT: return bits == 16;
    case PK_CODE_BOOL: return bits == 8;
    default: return 0;
    }
}

/* arg = str name; u8 kind; u8 code; u8 bits; u16 lanes; u8 readonly */
static int read_arg(pk_reader *r, pk_arg_info *a, const char *fwhat, size_t i) {
    char what[200], w[260], q[PK_QUOTE_BUF];
    size_t at;
    snprintf(what, sizeof what, "%s arg %zu", fwhat, i);
    snprintf(w, sizeof w, "%s name", what);
    if (pk_rd_name(r, &a->name, w)) return PK_ERR_ARTIFACT;
    at = r->pos;
    snprintf(w, sizeof w, "%s kind", what);
    if (pk_rd_u8(r, &a->kind, w)) return PK_ERR_ARTIFACT;
    snprintf(w, sizeof w, "%s type code", what);
    if (pk_rd_u8(r, &a->code, w)) return PK_ERR_ARTIFACT;
    snprintf(w, sizeof w, "%s bits", what);
    if (pk_rd_u8(r, &a->bits, w)) return PK_ERR_ARTIFACT;
    snprintf(w, sizeof w, "%s lanes", what);
    if (pk_rd_u16(r, &a->lanes, w)) return PK_ERR_ARTIFACT;
    snprintf(w, sizeof w, "%s readonly flag", what);
    if (pk_rd_flag(r, &a->readonly, w)) return PK_ERR_ARTIFACT;
    pk_quote_str(&a->name, q, sizeof q);
    if (a->kind > 1)
        return pk_rd_fail_at(r, at, PK_MSG_ARG_KIND, what, q, (unsigned long long)a->kind);
    if (!known_type(a->code, a->bits))
        return pk_rd_fail_at(r, at + 1, PK_MSG_ARG_TYPE, what, q, (unsigned long long)a->code,
                             (unsigned long long)a->bits);
    if (a->lanes != 1)
        return pk_rd_fail_at(r, at + 3, PK_MSG_ARG_LANES, what, q, (unsigned long long)a->lanes);
    if (a->readonly && a->kind == PK_ARG_SCALAR)
        return pk_rd_fail_at(r, at + 5, PK_MSG_ARG_RO_SCALAR, what, q);
    return 0;
}

static int read_function(pk_reader *r, pk_function_info *f, const char *what) {
    size_t i, at, attrs_at;
    pk_arg_info *args;
    pk_str *tags;
    pk_kv *attrs;
    char w[260];
    snprintf(w, sizeof w, "%s name", what);
    if (pk_rd_name(r, &f->name, w)) return PK_ERR_ARTIFACT;
    snprintf(w, sizeof w, "%s args", what);
    if (pk_rd_length(r, w, 8 + 6, &f->num_args)) return PK_ERR_ARTIFACT;
    args = (pk_arg_info *)pk_arena_array(r->arena, f->num_args, sizeof *args);
    if (!args) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i < f->num_args; i++)
        if (read_arg(r, &args[i], what, i)) return PK_ERR_ARTIFACT;
    f->args = args;
    at = r->pos;
    snprintf(w, sizeof w, "%s launch tags", what);
    if (pk_rd_list_str(r, &tags, &f->num_launch_tags, w)) return PK_ERR_ARTIFACT;
    f->launch_tags = tags;
    for (i = 1; i < f->num_launch_tags; i++)
        if (pk_str_cmp(&tags[i - 1], &tags[i]) >= 0)
            return pk_rd_fail_at(r, at, PK_MSG_TAGS_UNSORTED, what);
    snprintf(w, sizeof w, "%s shared bytes", what);
    if (pk_rd_u64(r, &f->shared_bytes, w)) return PK_ERR_ARTIFACT;
    snprintf(w, sizeof w, "%s attrs", what);
    attrs_at = r->pos;
    if (pk_rd_map_str(r, &attrs, &f->num_attrs, w)) return PK_ERR_ARTIFACT;
    f->attrs = attrs;
    return pk_check_function_schema(r, f, what, at, attrs_at);
}

static int read_fmap(pk_reader *r, pk_module *m, const char *what) {
    size_t i, n;
    pk_function_info *fs;
    char w[260], fw[160], q1[PK_QUOTE_BUF], q2[PK_QUOTE_BUF];
    if (pk_rd_length(r, what, 8 + 8 + 8 + 8 + 8 + 8, &n)) return PK_ERR_ARTIFACT;
    fs = (pk_function_info *)pk_arena_array(r->arena, n, sizeof *fs);
    if (!fs) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        pk_str key;
        size_t at = r->pos;
        snprintf(w, sizeof w, "key of %s", what);
        if (pk_rd_name(r, &key, w)) return PK_ERR_ARTIFACT;
        if (i && pk_str_cmp(&key, &fs[i - 1].name) <= 0)
            return pk_rd_fail_at(r, at, PK_MSG_UNSORTED, what, pk_quote_str(&key, q1, sizeof q1),
                                 pk_quote_str(&fs[i - 1].name, q2, sizeof q2));
        snprintf(fw, sizeof fw, "function %s", pk_quote_str(&key, q1, sizeof q1));
        if (read_function(r, &fs[i], fw)) return PK_ERR_ARTIFACT;
        if (pk_str_cmp(&key, &fs[i].name) != 0)
            return pk_rd_fail_at(r, at, PK_MSG_FMAP_NAME, what, pk_quote_str(&key, q1, sizeof q1),
                                 pk_quote_str(&fs[i].name, q2, sizeof q2));
    }
    m->functions = fs;
    m->num_functions = n;
    return 0;
}

/* wire._layout_id: a version-2 payload's first byte; known, and root exactly for the root */
static int read_layout(pk_reader *r, pk_module *m, const char *what, int root) {
    size_t at = r->pos;
    uint8_t id;
    char w[160];
    snprintf(w, sizeof w, "%s payload layout", what);
    if (pk_rd_u8(r, &id, w)) return PK_ERR_ARTIFACT;
    if (id >= PK_NUM_LAYOUTS)
        return pk_rd_fail_at(r, at, PK_MSG_LAYOUT_UNKNOWN, what, (unsigned long long)id, PK_KNOWN_LAYOUTS);
    if (root && id != PK_LAYOUT_ROOT)
        return pk_rd_fail_at(r, at, PK_MSG_ROOT_LAYOUT, (unsigned long long)id, pk_layout_name((pk_layout)id));
    if (!root && id == PK_LAYOUT_ROOT) return pk_rd_fail_at(r, at, PK_MSG_LAYOUT_NOT_ROOT, what);
    m->layout = (pk_layout)id;
    return 0;
}

int pk_decode_root(pk_reader *r, pk_module *m, uint32_t version) {
    pk_str *t;
    static const pk_str none = {"", 0};
    m->fmt = none;
    if (version != 1 && read_layout(r, m, "root module", 1)) return PK_ERR_ARTIFACT;
    if (read_fmap(r, m, "root function map")) return PK_ERR_ARTIFACT;
    if (pk_rd_list_str(r, &t, &m->num_targets, "root targets")) return PK_ERR_ARTIFACT;
    m->targets = t;
    return pk_rd_expect_end(r, "root payload");
}

int pk_decode_device(pk_reader *r, pk_module *m, uint32_t version) {
    static const pk_str wgsl = {"wgsl", 4};
    char what[100], w[160];
    pk_blob *b;
    snprintf(what, sizeof what, "%s module", m->kind.ptr);
    if (version != 1 && read_layout(r, m, what, 0)) return PK_ERR_ARTIFACT;
    if (m->layout == PK_LAYOUT_WEBGPU) {   /* version 1 only */
        m->fmt = wgsl;
    } else {
        snprintf(w, sizeof w, "%s fmt", what);
        if (pk_rd_name(r, &m->fmt, w)) return PK_ERR_ARTIFACT;
    }
    snprintf(w, sizeof w, "%s function map", what);
    if (read_fmap(r, m, w)) return PK_ERR_ARTIFACT;
    if (m->layout == PK_LAYOUT_BYTES) {
        snprintf(w, sizeof w, "%s payload", what);
        if (pk_rd_span(r, &m->payload, &m->payload_size, w)) return PK_ERR_ARTIFACT;
    } else {
        snprintf(w, sizeof w, "%s shader map", what);
        if (pk_rd_map_bytes(r, &b, &m->num_shaders, w)) return PK_ERR_ARTIFACT;
        m->shaders = b;
    }
    snprintf(w, sizeof w, "%s payload", what);
    return pk_rd_expect_end(r, w);
}
