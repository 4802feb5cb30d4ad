/* Module payloads: FunctionInfo maps and the per-layout payload of each module kind
 * (docs/internals.md "Device module payload, by layout"). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const struct {
    const char *kind;
    pk_layout layout;
} kinds[] = {
    {"root", PK_LAYOUT_ROOT},     {"llvm", PK_LAYOUT_BYTES},   {"cuda", PK_LAYOUT_BYTES},
    {"rocm", PK_LAYOUT_BYTES},    {"opencl", PK_LAYOUT_BYTES}, {"hexagon", PK_LAYOUT_BYTES},
    {"vulkan", PK_LAYOUT_SMAP},   {"metal", PK_LAYOUT_SMAP},   {"webgpu", PK_LAYOUT_WEBGPU},
};

int pk_layout_of_kind(const char *kind, pk_layout *layout) {
    size_t i;
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].kind, kind) == 0) {
            if (layout) *layout = kinds[i].layout;
            return 1;
        }
    return 0;
}

int pk_is_known_kind(const char *kind) { return pk_layout_of_kind(kind, NULL); }

/* arg = str name; u8 kind; u8 code; u8 bits; u16 lanes; u8 readonly  (>= 14 bytes) */
static int read_arg(pk_reader *r, pk_arg_info *a, const char *fn, size_t idx) {
    char field[160];
    uint64_t at;
    snprintf(field, sizeof field, "function '%.60s' argument %zu", fn, idx);
    if (pk_rd_str(r, &a->name, field)) return PK_ERR_ARTIFACT;
    at = r->pos;
    if (pk_rd_u8(r, &a->kind, field) || pk_rd_u8(r, &a->code, field) ||
        pk_rd_u8(r, &a->bits, field) || pk_rd_u16(r, &a->lanes, field) ||
        pk_rd_u8(r, &a->readonly, field))
        return PK_ERR_ARTIFACT;
    if (a->kind > PK_ARG_BUFFER) {
        r->pos = (size_t)at;
        return pk_rd_fail(r, "%s ('%s') has unknown kind %u (0 scalar, 1 buffer)", field,
                          a->name.ptr, a->kind);
    }
    if (a->readonly > 1) {
        r->pos = (size_t)at + 5;
        return pk_rd_fail(r, "%s ('%s') has readonly flag %u (0 or 1)", field, a->name.ptr,
                          a->readonly);
    }
    return 0;
}

static int read_function(pk_reader *r, pk_function_info *f, const pk_str *key) {
    size_t i;
    pk_arg_info *args;
    pk_str *tags;
    pk_kv *attrs;
    char field[128];
    size_t at = r->pos;
    if (pk_rd_str(r, &f->name, "function name")) return PK_ERR_ARTIFACT;
    if (pk_str_cmp(&f->name, key) != 0) {
        r->pos = at;
        return pk_rd_fail(r, "function map key '%s' holds a function named '%s'", key->ptr,
                          f->name.ptr);
    }
    snprintf(field, sizeof field, "function '%.60s' arguments", f->name.ptr);
    if (pk_rd_count(r, 14, &f->num_args, field)) return PK_ERR_ARTIFACT;
    args = (pk_arg_info *)pk_arena_array(r->arena, f->num_args, sizeof *args);
    if (!args && f->num_args) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i < f->num_args; i++)
        if (read_arg(r, &args[i], f->name.ptr, i)) return PK_ERR_ARTIFACT;
    f->args = args;
    snprintf(field, sizeof field, "function '%.60s' launch tags", f->name.ptr);
    if (pk_rd_count(r, 8, &f->num_launch_tags, field)) return PK_ERR_ARTIFACT;
    tags = (pk_str *)pk_arena_array(r->arena, f->num_launch_tags, sizeof *tags);
    if (!tags && f->num_launch_tags) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i < f->num_launch_tags; i++)
        if (pk_rd_str(r, &tags[i], field)) return PK_ERR_ARTIFACT;
    f->launch_tags = tags;
    snprintf(field, sizeof field, "function '%.60s' shared_bytes", f->name.ptr);
    if (pk_rd_u64(r, &f->shared_bytes, field)) return PK_ERR_ARTIFACT;
    snprintf(field, sizeof field, "function '%.60s' attrs", f->name.ptr);
    if (pk_rd_str_map(r, &attrs, &f->num_attrs, field)) return PK_ERR_ARTIFACT;
    f->attrs = attrs;
    return 0;
}

static int read_fmap(pk_reader *r, pk_module *m) {
    size_t i, n;
    pk_function_info *fs;
    /* key (8) + name (8) + 3 counts (24) + shared_bytes (8) */
    if (pk_rd_count(r, 48, &n, "function map")) return PK_ERR_ARTIFACT;
    fs = (pk_function_info *)pk_arena_array(r->arena, n, sizeof *fs);
    if (!fs && n) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        pk_str key;
        size_t at = r->pos;
        if (pk_rd_str(r, &key, "function map key")) return PK_ERR_ARTIFACT;
        if (i && pk_str_cmp(&fs[i - 1].name, &key) >= 0) {
            r->pos = at;
            return pk_rd_fail(r, "function map keys are not strictly sorted ('%s' after '%s')",
                              key.ptr, fs[i - 1].name.ptr);
        }
        if (read_function(r, &fs[i], &key)) return PK_ERR_ARTIFACT;
    }
    m->functions = fs;
    m->num_functions = n;
    return 0;
}

static int read_shaders(pk_reader *r, pk_module *m) {
    size_t i, n;
    pk_blob *b;
    if (pk_rd_count(r, 16, &n, "shader map")) return PK_ERR_ARTIFACT;
    b = (pk_blob *)pk_arena_array(r->arena, n, sizeof *b);
    if (!b && n) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        size_t at = r->pos;
        if (pk_rd_str(r, &b[i].name, "shader name")) return PK_ERR_ARTIFACT;
        if (i && pk_str_cmp(&b[i - 1].name, &b[i].name) >= 0) {
            r->pos = at;
            return pk_rd_fail(r, "shader map keys are not strictly sorted ('%s' after '%s')",
                              b[i].name.ptr, b[i - 1].name.ptr);
        }
        if (pk_rd_span(r, &b[i].data, &b[i].size, "shader bytes")) return PK_ERR_ARTIFACT;
    }
    m->shaders = b;
    m->num_shaders = n;
    return 0;
}

static int read_targets(pk_reader *r, pk_module *m) {
    size_t i, n;
    pk_str *t;
    if (pk_rd_count(r, 8, &n, "target list")) return PK_ERR_ARTIFACT;
    t = (pk_str *)pk_arena_array(r->arena, n, sizeof *t);
    if (!t && n) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i < n; i++)
        if (pk_rd_str(r, &t[i], "target")) return PK_ERR_ARTIFACT;
    m->targets = t;
    m->num_targets = n;
    return 0;
}

int pk_decode_payload(pk_reader *r, pk_module *m) {
    static const pk_str wgsl = {"wgsl", 4};
    static const pk_str none = {"", 0};
    switch (m->layout) {
    case PK_LAYOUT_ROOT:
        m->fmt = none;
        if (read_fmap(r, m) || read_targets(r, m)) return PK_ERR_ARTIFACT;
        break;
    case PK_LAYOUT_BYTES:
        if (pk_rd_str(r, &m->fmt, "fmt") || read_fmap(r, m) ||
            pk_rd_span(r, &m->payload, &m->payload_size, "payload"))
            return PK_ERR_ARTIFACT;
        break;
    case PK_LAYOUT_SMAP:
        if (pk_rd_str(r, &m->fmt, "fmt") || read_fmap(r, m) || read_shaders(r, m))
            return PK_ERR_ARTIFACT;
        break;
    case PK_LAYOUT_WEBGPU:
        m->fmt = wgsl;
        if (read_fmap(r, m) || read_shaders(r, m)) return PK_ERR_ARTIFACT;
        break;
    }
    if (pk_rd_remaining(r))
        return pk_rd_fail(r, "%zu unexpected trailing bytes in the payload", pk_rd_remaining(r));
    return 0;
}
