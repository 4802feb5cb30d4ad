/* Encode a parsed artifact again, in format version PK_KBIN_VERSION, from its decoded fields
 * (polykern.kbin.wire's Writer and encode_* functions, byte for byte): what `load(...).export()` gives
 * in Python, for modules of every kind, known here or not. A version-1 webgpu module (version 1's
 * own layout) is written in the smap layout, with its fmt "wgsl". */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} wbuf;

static void w_raw(wbuf *b, const void *data, size_t n) {
    if (b->oom || !n) return;
    if (b->n + n < b->n) { b->oom = 1; return; }
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        uint8_t *p;
        while (cap < b->n + n) {
            if (cap > SIZE_MAX / 2) { b->oom = 1; return; }
            cap *= 2;
        }
        p = (uint8_t *)realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void w_le(wbuf *b, uint64_t v, int nbytes) {
    uint8_t le[8];
    int i;
    for (i = 0; i < nbytes; i++) le[i] = (uint8_t)(v >> (8 * i));
    w_raw(b, le, (size_t)nbytes);
}
static void w_u8(wbuf *b, uint64_t v) { w_le(b, v, 1); }
static void w_u16(wbuf *b, uint64_t v) { w_le(b, v, 2); }
static void w_u32(wbuf *b, uint64_t v) { w_le(b, v, 4); }
static void w_u64(wbuf *b, uint64_t v) { w_le(b, v, 8); }

static void w_bytes(wbuf *b, const void *data, size_t n) {
    w_u64(b, n);
    w_raw(b, data, n);
}
static void w_str(wbuf *b, const pk_str *s) { w_bytes(b, s->ptr, s->len); }

static void w_list_str(wbuf *b, const pk_str *items, size_t n) {
    size_t i;
    w_u64(b, n);
    for (i = 0; i < n; i++) w_str(b, &items[i]);
}

/* the readers accepted these maps only with strictly sorted keys: written in the same order */
static void w_map_str(wbuf *b, const pk_kv *kv, size_t n) {
    size_t i;
    w_u64(b, n);
    for (i = 0; i < n; i++) {
        w_str(b, &kv[i].key);
        w_str(b, &kv[i].value);
    }
}

static void w_function(wbuf *b, const pk_function_info *f) {   /* Writer.function_info */
    size_t i;
    w_str(b, &f->name);
    w_u64(b, f->num_args);
    for (i = 0; i < f->num_args; i++) {
        const pk_arg_info *a = &f->args[i];
        w_str(b, &a->name);
        w_u8(b, a->kind);
        w_u8(b, a->code);
        w_u8(b, a->bits);
        w_u16(b, a->lanes);
        w_u8(b, a->readonly);
    }
    w_list_str(b, f->launch_tags, f->num_launch_tags);
    w_u64(b, f->shared_bytes);
    w_map_str(b, f->attrs, f->num_attrs);
}

static void w_fmap(wbuf *b, const pk_module *m) {   /* Writer.fmap: key, then the function */
    size_t i;
    w_u64(b, m->num_functions);
    for (i = 0; i < m->num_functions; i++) {
        w_str(b, &m->functions[i].name);
        w_function(b, &m->functions[i]);
    }
}

/* wire.encode_root_payload / encode_device_payload (format version 2) */
static void w_payload(wbuf *b, const pk_module *m, size_t i) {
    size_t k;
    if (i == 0) {
        w_u8(b, PK_LAYOUT_ROOT);
        w_fmap(b, m);
        w_list_str(b, m->targets, m->num_targets);
        return;
    }
    w_u8(b, m->layout == PK_LAYOUT_BYTES ? PK_LAYOUT_BYTES : PK_LAYOUT_SMAP);
    w_str(b, &m->fmt);
    w_fmap(b, m);
    if (m->layout == PK_LAYOUT_BYTES) {
        w_bytes(b, m->payload, m->payload_size);
        return;
    }
    w_u64(b, m->num_shaders);
    for (k = 0; k < m->num_shaders; k++) {
        w_str(b, &m->shaders[k].name);
        w_bytes(b, m->shaders[k].data, m->shaders[k].size);
    }
}

int pk_artifact_write(const pk_artifact *art, uint8_t **out, size_t *size, pk_error *err) {
    wbuf b, mod;
    size_t i, j, edges = 0;
    static const uint8_t magic[8] = {'P', 'K', 'B', 'I', 'N', 0, '\r', '\n'};
    if (err) memset(err, 0, sizeof *err);
    *out = NULL;
    *size = 0;
    memset(&b, 0, sizeof b);
    memset(&mod, 0, sizeof mod);
    w_raw(&b, magic, sizeof magic);
    w_u32(&b, PK_KBIN_VERSION);
    w_u64(&b, art->num_modules);
    w_u64(&b, 0);
    for (i = 0; i < art->num_modules; i++) {
        edges += art->modules[i].num_imports;
        w_u64(&b, edges);
    }
    for (i = 0; i < art->num_modules; i++)
        for (j = 0; j < art->modules[i].num_imports; j++) w_u64(&b, art->modules[i].imports[j]);
    for (i = 0; i < art->num_modules; i++) {
        mod.n = 0;
        w_payload(&mod, &art->modules[i], i);
        if (mod.oom) b.oom = 1;
        w_str(&b, &art->modules[i].kind);
        w_bytes(&b, mod.p, mod.n);
    }
    free(mod.p);
    w_u8(&b, art->has_sources ? 1 : 0);
    if (art->has_sources)
        for (i = 0; i < art->num_modules; i++) w_map_str(&b, art->modules[i].sources, art->modules[i].num_sources);
    w_map_str(&b, art->meta, art->num_meta);
    if (!b.oom) w_u32(&b, pk_crc32(0, b.p, b.n));
    if (b.oom) {
        free(b.p);
        return pk_fail(err, PK_ERR_NOMEM, "out of memory encoding the artifact");
    }
    *out = b.p;
    *size = b.n;
    return 0;
}
