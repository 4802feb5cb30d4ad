/* The .kbin container: magic, version, import tree, modules, sources, meta, crc32
 * (docs/internals.md "Container .kbin"). Validates before trusting anything. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const uint8_t MAGIC[8] = {'P', 'K', 'B', 'I', 'N', 0, '\r', '\n'};

typedef struct artifact_impl {
    pk_arena arena;
    uint8_t *bytes;        /* our copy of the file */
} artifact_impl;

static int read_tree(pk_reader *r, pk_module *mods, size_t n) {
    uint64_t *indptr, *child, nchild, i, j;
    uint8_t *seen;
    size_t at = r->pos, *stack, top = 0;
    /* indptr: N+1 values; the count check already guaranteed 8*(N+1) bytes may fit */
    indptr = (uint64_t *)pk_arena_array(r->arena, n + 1, sizeof *indptr);
    if (!indptr) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i <= n; i++) {
        at = r->pos;
        if (pk_rd_u64(r, &indptr[i], "import tree indptr")) return PK_ERR_ARTIFACT;
        if (i == 0 && indptr[0] != 0) {
            r->pos = at;
            return pk_rd_fail(r, "import tree indptr[0] is %llu, must be 0",
                              (unsigned long long)indptr[0]);
        }
        if (i && indptr[i] < indptr[i - 1]) {
            r->pos = at;
            return pk_rd_fail(r, "import tree indptr decreases at %llu (%llu < %llu)",
                              (unsigned long long)i, (unsigned long long)indptr[i],
                              (unsigned long long)indptr[i - 1]);
        }
    }
    nchild = indptr[n];
    if (nchild > pk_rd_remaining(r) / 8) {
        r->pos = at;
        return pk_rd_fail(r, "import tree has %llu children, more than the bytes that remain "
                             "can hold", (unsigned long long)nchild);
    }
    child = (uint64_t *)pk_arena_array(r->arena, (size_t)nchild + 1, sizeof *child);
    seen = (uint8_t *)pk_arena_array(r->arena, n, 1);
    stack = (size_t *)pk_arena_array(r->arena, n, sizeof *stack);
    if (!child || !seen || !stack) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (j = 0; j < nchild; j++) {
        at = r->pos;
        if (pk_rd_u64(r, &child[j], "import tree child")) return PK_ERR_ARTIFACT;
        if (child[j] >= n) {
            r->pos = at;
            return pk_rd_fail(r, "import tree child %llu is module %llu, but there are %zu modules",
                              (unsigned long long)j, (unsigned long long)child[j], n);
        }
        if (child[j] == 0) {
            r->pos = at;
            return pk_rd_fail(r, "import tree: the root (module 0) is imported by another module");
        }
        if (seen[child[j]]) {
            r->pos = at;
            return pk_rd_fail(r, "import tree: module %llu is imported twice",
                              (unsigned long long)child[j]);
        }
        seen[child[j]] = 1;
    }
    for (i = 0; i < n; i++) {
        mods[i].imports = child + indptr[i];
        mods[i].num_imports = (size_t)(indptr[i + 1] - indptr[i]);
    }
    /* every module must be reachable from the root: with one parent each, that also
     * rules out cycles */
    memset(seen, 0, n);
    seen[0] = 1;
    stack[top++] = 0;
    while (top) {
        size_t m = stack[--top];
        for (j = 0; j < mods[m].num_imports; j++) {
            size_t c = (size_t)mods[m].imports[j];
            if (seen[c]) /* unreachable given the checks above; kept as a guard */
                return pk_rd_fail(r, "import tree has a cycle through module %zu", c);
            seen[c] = 1;
            stack[top++] = c;
        }
    }
    for (i = 0; i < n; i++)
        if (!seen[i])
            return pk_rd_fail(r, "import tree: module %llu is not reachable from the root "
                                 "(cycle or orphan)", (unsigned long long)i);
    return 0;
}

static int read_module(pk_reader *r, pk_module *m, size_t idx) {
    char what[64];
    pk_reader sub;
    const uint8_t *p;
    size_t n, at = r->pos;
    m->offset = pk_rd_offset(r);
    snprintf(what, sizeof what, "module %zu kind", idx);
    if (pk_rd_str(r, &m->kind, what)) return PK_ERR_ARTIFACT;
    if (!pk_layout_of_kind(m->kind.ptr, &m->layout) || strlen(m->kind.ptr) != m->kind.len) {
        r->pos = at;
        return pk_rd_fail(r, "module %zu has unknown kind '%.64s' (known: root, llvm, cuda, "
                             "rocm, opencl, vulkan, metal, webgpu, hexagon)", idx, m->kind.ptr);
    }
    if (idx == 0 && m->layout != PK_LAYOUT_ROOT) {
        r->pos = at;
        return pk_rd_fail(r, "module 0 must be the root, found kind '%s'", m->kind.ptr);
    }
    if (idx != 0 && m->layout == PK_LAYOUT_ROOT) {
        r->pos = at;
        return pk_rd_fail(r, "module %zu has kind 'root'; only module 0 may", idx);
    }
    snprintf(what, sizeof what, "module %zu payload", idx);
    if (pk_rd_span(r, &p, &n, what)) return PK_ERR_ARTIFACT;
    memset(&sub, 0, sizeof sub);
    sub.data = p;
    sub.size = n;
    sub.arena = r->arena;
    sub.err = r->err;
    sub.base = r->base + (uint64_t)(p - r->data);
    snprintf(what, sizeof what, "module %zu ('%s') payload", idx, m->kind.ptr);
    sub.what = what;
    return pk_decode_payload(&sub, m);
}

pk_artifact *pk_artifact_parse(const void *data, size_t size, pk_error *err) {
    artifact_impl *impl;
    pk_artifact *art;
    pk_module *mods;
    pk_reader r;
    uint32_t crc, want;
    uint8_t flag;
    size_t i, n, at;
    pk_kv *meta;

    if (err) memset(err, 0, sizeof *err);
    impl = (artifact_impl *)calloc(1, sizeof *impl);
    if (!impl) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    art = (pk_artifact *)pk_arena_alloc(&impl->arena, sizeof *art);
    impl->bytes = (uint8_t *)malloc(size ? size : 1);
    if (!art || !impl->bytes) {
        pk_fail(err, PK_ERR_NOMEM, "out of memory (%zu byte artifact)", size);
        goto fail;
    }
    if (size) memcpy(impl->bytes, data, size);
    art->internal_ = impl;
    art->size = size;

    memset(&r, 0, sizeof r);
    r.data = impl->bytes;
    r.size = size;
    r.arena = &impl->arena;
    r.err = err;

    if (size < 8 || memcmp(r.data, MAGIC, 8) != 0) {
        pk_rd_fail(&r, "not a .kbin artifact (bad magic; expected \"PKBIN\\0\\r\\n\")");
        goto fail;
    }
    r.pos = 8;
    at = r.pos;
    if (pk_rd_u32(&r, &art->version, "version")) goto fail;
    if (art->version != PK_KBIN_VERSION) {
        r.pos = at;
        pk_rd_fail(&r, "unsupported .kbin format version %u (this runtime reads version %u)",
                   art->version, PK_KBIN_VERSION);
        goto fail;
    }
    at = r.pos;
    /* each module costs at least 8 (indptr) + 16 (kind, payload lengths) bytes */
    if (pk_rd_count(&r, 24, &n, "module count")) goto fail;
    if (n == 0) {
        r.pos = at;
        pk_rd_fail(&r, "module count is 0; an artifact has at least the root module");
        goto fail;
    }
    mods = (pk_module *)pk_arena_array(&impl->arena, n, sizeof *mods);
    if (!mods) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); goto fail; }
    art->modules = mods;
    art->num_modules = n;
    if (read_tree(&r, mods, n)) goto fail;
    for (i = 0; i < n; i++)
        if (read_module(&r, &mods[i], i)) goto fail;
    at = r.pos;
    if (pk_rd_u8(&r, &flag, "sources flag")) goto fail;
    if (flag > 1) {
        r.pos = at;
        pk_rd_fail(&r, "sources flag is %u (0 stripped, 1 present)", flag);
        goto fail;
    }
    art->has_sources = flag;
    if (flag)
        for (i = 0; i < n; i++) {
            char field[48];
            snprintf(field, sizeof field, "module %zu sources", i);
            if (pk_rd_str_map(&r, (pk_kv **)&mods[i].sources, &mods[i].num_sources, field))
                goto fail;
        }
    if (pk_rd_str_map(&r, &meta, &art->num_meta, "meta")) goto fail;
    art->meta = meta;
    at = r.pos;
    if (pk_rd_u32(&r, &want, "crc32")) goto fail;
    crc = pk_crc32(0, r.data, at);
    art->crc32 = want;
    if (crc != want) {
        r.pos = at;
        pk_rd_fail(&r, "checksum mismatch: stored crc32 0x%08x, computed 0x%08x (corrupted "
                       "artifact)", want, crc);
        goto fail;
    }
    if (pk_rd_remaining(&r)) {
        pk_rd_fail(&r, "%zu trailing bytes after the checksum", pk_rd_remaining(&r));
        goto fail;
    }
    return art;
fail:
    free(impl->bytes);
    pk_arena_free(&impl->arena);
    free(impl);
    return NULL;
}

pk_artifact *pk_artifact_load(const char *path, pk_error *err) {
    FILE *f;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, got;
    pk_artifact *art;
    if (err) memset(err, 0, sizeof *err);
    f = fopen(path, "rb");
    if (!f) {
        pk_fail(err, PK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            uint8_t *nb = ncap > cap ? (uint8_t *)realloc(buf, ncap) : NULL;
            if (!nb) {
                free(buf);
                fclose(f);
                pk_fail(err, PK_ERR_NOMEM, "%s: out of memory reading the file", path);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        free(buf);
        fclose(f);
        pk_fail(err, PK_ERR_IO, "%s: read error", path);
        return NULL;
    }
    fclose(f);
    art = pk_artifact_parse(buf, len, err);
    free(buf);
    if (!art && err && err->status == PK_ERR_ARTIFACT) {
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%.280s: ", path);
        pk_error_prefix(err, prefix);
    }
    return art;
}

void pk_artifact_free(pk_artifact *art) {
    artifact_impl *impl;
    if (!art) return;
    impl = (artifact_impl *)art->internal_;
    free(impl->bytes);
    pk_arena_free(&impl->arena);
    free(impl);
}

const pk_function_info *pk_module_find_function(const pk_module *m, const char *name) {
    size_t i;
    for (i = 0; i < m->num_functions; i++)
        if (strcmp(m->functions[i].name.ptr, name) == 0 &&
            m->functions[i].name.len == strlen(name))
            return &m->functions[i];
    return NULL;
}

const pk_str *pk_kv_find(const pk_kv *kv, size_t n, const char *key) {
    size_t i, kl = strlen(key);
    for (i = 0; i < n; i++)
        if (kv[i].key.len == kl && memcmp(kv[i].key.ptr, key, kl) == 0) return &kv[i].value;
    return NULL;
}

const char *pk_type_name(uint8_t code, uint8_t bits, uint16_t lanes, char *buf, size_t bufsize) {
    const char *p;
    switch (code) {
    case PK_CODE_INT: p = "i"; break;
    case PK_CODE_UINT: p = "u"; break;
    case PK_CODE_FLOAT: p = "f"; break;
    case PK_CODE_BOOL: p = "bool"; break;
    default: p = NULL;
    }
    if (!p)
        snprintf(buf, bufsize, "code%u:%u", code, bits);
    else if (code == PK_CODE_BOOL)
        snprintf(buf, bufsize, "bool");
    else
        snprintf(buf, bufsize, "%s%u", p, bits);
    if (lanes > 1) {
        size_t l = strlen(buf);
        if (l < bufsize) snprintf(buf + l, bufsize - l, "x%u", lanes);
    }
    return buf;
}
