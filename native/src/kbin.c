/* The .kbin container: magic, version, import tree, modules, sources, meta, crc32
 * (docs/internals.md "Container .kbin"), then every module payload. Validates before
 * trusting anything, in the order polykern.kbin.wire.decode_container and
 * polykern.artifact.load do, so both report the same offset for the same defect. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kbin_tables.h"

static const uint8_t MAGIC[8] = {'P', 'K', 'B', 'I', 'N', 0, '\r', '\n'};

/* the versions this reader reads are polykern.kbin.wire's (kbin_tables.h is generated from it) */
#if PK_KBIN_VERSION != PK_WIRE_VERSION || PK_KBIN_MIN_VERSION != PK_WIRE_MIN_VERSION
#error "PK_KBIN_VERSION / PK_KBIN_MIN_VERSION (polykern.h) differ from polykern.kbin.wire.VERSION / VERSIONS"
#endif

typedef struct artifact_impl {
    pk_arena arena;
    uint8_t *bytes;        /* our copy of the artifact */
} artifact_impl;

static int str_is_root(const pk_str *k) { return k->len == 4 && memcmp(k->ptr, "root", 4) == 0; }

/* wire.KIND_RE: [a-z][a-z0-9_]{0,63} */
static int kind_syntax_ok(const pk_str *k) {
    size_t i;
    if (k->len < 1 || k->len > 64 || k->ptr[0] < 'a' || k->ptr[0] > 'z') return 0;
    for (i = 1; i < k->len; i++) {
        char c = k->ptr[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
    }
    return 1;
}

static int read_tree(pk_reader *r, pk_module *mods, size_t n) {
    uint64_t *indptr, *child, nedges;
    uint8_t *seen;
    size_t i, j, indptr_at = r->pos, child_at, *stack, top = 0, reached = 0, bad_module = 0, bad_pos = 0;
    int misplaced = 0;
    indptr = (uint64_t *)pk_arena_array(r->arena, n + 1, sizeof *indptr);
    if (!indptr) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i <= n; i++)   /* (n+1)*8 bytes remain: checked by the caller */
        if (pk_rd_u64(r, &indptr[i], "import index")) return PK_ERR_ARTIFACT;
    if (indptr[0] != 0)
        return pk_rd_fail_at(r, indptr_at, PK_MSG_INDEX_START, (unsigned long long)indptr[0]);
    for (i = 0; i < n; i++)
        if (indptr[i + 1] < indptr[i])
            return pk_rd_fail_at(r, indptr_at + 8 * (i + 1), PK_MSG_INDEX_DECREASES, (unsigned long long)i);
    nedges = indptr[n];
    if (nedges > (uint64_t)(n - 1))
        return pk_rd_fail_at(r, indptr_at + 8 * n, PK_MSG_TOO_MANY_EDGES, (unsigned long long)nedges,
                             (unsigned long long)n, (unsigned long long)(n - 1));
    child_at = r->pos;
    child = (uint64_t *)pk_arena_array(r->arena, (size_t)nedges, sizeof *child);
    seen = (uint8_t *)pk_arena_array(r->arena, n, 1);
    stack = (size_t *)pk_arena_array(r->arena, n, sizeof *stack);
    if (!child || !seen || !stack) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    for (j = 0; j < nedges; j++)
        if (pk_rd_u64(r, &child[j], "import child index")) return PK_ERR_ARTIFACT;
    seen[0] = 1;
    for (j = 0; j < nedges; j++) {
        if (child[j] < 1 || child[j] >= n)
            return pk_rd_fail_at(r, child_at + 8 * j, PK_MSG_CHILD_RANGE, (unsigned long long)child[j],
                                 (unsigned long long)(n - 1));
        if (seen[child[j]])
            return pk_rd_fail_at(r, child_at + 8 * j, PK_MSG_IMPORTED_TWICE, (unsigned long long)child[j]);
        seen[child[j]] = 1;
    }
    for (i = 0; i < n; i++) {
        mods[i].imports = child + indptr[i];
        mods[i].num_imports = (size_t)(indptr[i + 1] - indptr[i]);
    }
    /* each non-root module has exactly one parent: a tree iff all are reachable from 0. The walk is
     * wire._check_tree's preorder (children pushed in reverse), the only order modules are stored in;
     * order[] holds the first mismatch (each module is pushed once: top < n). */
    memset(seen, 0, n);
    stack[top++] = 0;
    while (top) {
        size_t m = stack[--top];
        seen[m] = 1;
        if (m != reached && !misplaced) { misplaced = 1; bad_module = m; bad_pos = reached; }
        reached++;
        for (j = mods[m].num_imports; j-- > 0;) stack[top++] = (size_t)mods[m].imports[j];
    }
    if (reached != n)
        for (i = 0; i < n; i++)
            if (!seen[i])
                return pk_rd_fail_at(r, child_at, PK_MSG_UNREACHABLE, (unsigned long long)i);
    if (misplaced)
        return pk_rd_fail_at(r, child_at, PK_MSG_PREORDER, (unsigned long long)bad_module,
                             (unsigned long long)bad_pos);
    return 0;
}

/* Version 1: the kind must be one of version 1's (which gives the layout). Version 2: any kind
 * name; the layout is the payload's first byte, read with the payload. */
static int read_module_entry(pk_reader *r, pk_module *m, size_t i, uint32_t version) {
    char what[128], q[PK_QUOTE_BUF];   /* "module <u64> (<64-character kind>) payload" fits */
    size_t at = r->pos;
    snprintf(what, sizeof what, "module %zu kind", i);
    if (pk_rd_str(r, &m->kind, what)) return PK_ERR_ARTIFACT;
    if (version == 1 && !pk_v1_layout_of_kind(m->kind.ptr, &m->layout))
        return pk_rd_fail_at(r, at, PK_MSG_UNKNOWN_KIND, (unsigned long long)i, pk_quote_str(&m->kind, q, sizeof q),
                             PK_V1_KINDS);
    if (!kind_syntax_ok(&m->kind))
        return pk_rd_fail_at(r, at, PK_MSG_KIND_NAME, (unsigned long long)i, pk_quote_str(&m->kind, q, sizeof q));
    if (version != 1) m->layout = str_is_root(&m->kind) ? PK_LAYOUT_ROOT : PK_LAYOUT_BYTES;   /* until decoded */
    if (str_is_root(&m->kind) != (i == 0))
        return i == 0 ? pk_rd_fail_at(r, at, PK_MSG_ROOT_FIRST)
                      : pk_rd_fail_at(r, at, PK_MSG_SECOND_ROOT, (unsigned long long)i);
    snprintf(what, sizeof what, "module %zu (%s) payload", i, m->kind.ptr);
    if (pk_rd_span(r, &m->encoded, &m->encoded_size, what)) return PK_ERR_ARTIFACT;
    m->offset = (uint64_t)(m->encoded - r->data);
    return 0;
}

/* Decode module i's payload span (the container is already validated). */
static int decode_module(pk_reader *whole, pk_module *m, size_t i, uint32_t version) {
    pk_reader sub = *whole;
    sub.pos = (size_t)m->offset;
    sub.end = sub.pos + m->encoded_size;
    if (i == 0) return pk_decode_root(&sub, m, version);
    return pk_decode_device(&sub, m, version);
}

static int cmp_name_ptr(const void *a, const void *b) {
    return pk_str_cmp(*(const pk_str *const *)a, *(const pk_str *const *)b);
}

/* artifact.load: every kernel the root lists must be provided by some device module. The device
 * modules' function names are sorted once and searched, O((R + F) log F), never R x F. */
static int check_root_functions(pk_reader *r, const pk_artifact *art) {
    const pk_module *root = &art->modules[0];
    const pk_str **names;
    size_t i, j, k, total = 0, missing = 0, first = 0;
    char q[PK_QUOTE_BUF];
    if (!root->num_functions) return 0;
    for (j = 1; j < art->num_modules; j++) total += art->modules[j].num_functions;
    names = (const pk_str **)pk_arena_array(r->arena, total ? total : 1, sizeof *names);
    if (!names) return pk_fail(r->err, PK_ERR_NOMEM, "out of memory");
    total = 0;
    for (j = 1; j < art->num_modules; j++)
        for (k = 0; k < art->modules[j].num_functions; k++) names[total++] = &art->modules[j].functions[k].name;
    qsort(names, total, sizeof *names, cmp_name_ptr);
    for (i = 0; i < root->num_functions; i++) {
        const pk_str *key = &root->functions[i].name;
        if (!bsearch(&key, names, total, sizeof *names, cmp_name_ptr) && !missing++) first = i;
    }
    if (missing)
        return pk_rd_fail_at(r, (size_t)root->offset, PK_MSG_ROOT_MISSING, (unsigned long long)missing,
                             pk_quote_str(&root->functions[first].name, q, sizeof q));
    return 0;
}

/* wire.check_header: empty, magic, format version, on the first PK_HEADER_SIZE bytes (or all of a
 * shorter artifact); r->end is the length of what the reader has. Returns 0 and leaves r->pos after
 * the version. */
#define PK_HEADER_SIZE 12
static int check_header(pk_reader *r, uint32_t *version) {
    size_t i, size = r->end;
    if (size == 0) return pk_rd_fail_at(r, 0, PK_MSG_DATA_EMPTY);
    if (memcmp(r->data, MAGIC, size < 8 ? size : 8) != 0) {
        char hex[17];
        for (i = 0; i < 8 && i < size; i++) snprintf(hex + 2 * i, 3, "%02x", r->data[i]);
        hex[2 * i] = 0;
        return pk_rd_fail_at(r, 0, PK_MSG_BAD_MAGIC, hex);
    }
    if (size < 8) return pk_rd_fail_at(r, 0, PK_MSG_TRUNCATED, "magic", 8ULL, (unsigned long long)size);
    r->pos = 8;
    if (pk_rd_u32(r, version, "format version")) return PK_ERR_ARTIFACT;
    if (*version < PK_KBIN_MIN_VERSION || *version > PK_KBIN_VERSION)
        return pk_rd_fail_at(r, 8, PK_MSG_VERSION, (unsigned long long)*version,
                             (unsigned long long)PK_KBIN_MIN_VERSION, (unsigned long long)PK_KBIN_VERSION);
    return 0;
}

/* Parse `bytes` (malloc'ed; the artifact owns them from here on, also when parsing fails). */
static pk_artifact *parse_owned(uint8_t *bytes, size_t size, pk_error *err) {
    artifact_impl *impl;
    pk_artifact *art;
    pk_module *mods;
    pk_reader r;
    uint32_t crc;
    uint64_t n64;
    uint8_t flag;
    size_t i, n, at, crc_at;
    pk_kv *meta;

    impl = (artifact_impl *)calloc(1, sizeof *impl);
    if (!impl) { free(bytes); pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    impl->bytes = bytes;
    art = (pk_artifact *)pk_arena_alloc(&impl->arena, sizeof *art);
    if (!art) {
        pk_fail(err, PK_ERR_NOMEM, "out of memory (%zu byte artifact)", size);
        goto fail;
    }
    art->internal_ = impl;
    art->size = size;

    memset(&r, 0, sizeof r);
    r.data = impl->bytes;
    r.end = size;
    r.arena = &impl->arena;
    r.err = err;

    if (check_header(&r, &art->version)) goto fail;
    at = r.pos;
    if (pk_rd_u64(&r, &n64, "module count")) goto fail;
    if (n64 < 1) {
        pk_rd_fail_at(&r, at, PK_MSG_NO_MODULES);
        goto fail;
    }
    if (n64 >= (uint64_t)(pk_rd_remaining(&r) / 8)) {   /* (n+1)*8 > remaining */
        pk_rd_fail_at(&r, at, PK_MSG_MODULE_COUNT, (unsigned long long)n64,
                      (unsigned long long)pk_rd_remaining(&r));
        goto fail;
    }
    n = (size_t)n64;
    mods = (pk_module *)pk_arena_array(&impl->arena, n, sizeof *mods);
    if (!mods) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); goto fail; }
    art->modules = mods;
    art->num_modules = n;
    if (read_tree(&r, mods, n)) goto fail;
    for (i = 0; i < n; i++)
        if (read_module_entry(&r, &mods[i], i, art->version)) goto fail;
    if (pk_rd_flag(&r, &flag, "sources flag")) goto fail;
    art->has_sources = flag;
    if (flag)
        for (i = 0; i < n; i++) {
            char what[48];
            snprintf(what, sizeof what, "module %zu sources", i);
            if (pk_rd_map_names(&r, (pk_kv **)&mods[i].sources, &mods[i].num_sources, what))
                goto fail;
        }
    if (pk_rd_map_names(&r, &meta, &art->num_meta, "metadata")) goto fail;
    art->meta = meta;
    crc_at = r.pos;
    if (pk_rd_u32(&r, &art->crc32, "checksum")) goto fail;
    if (pk_rd_remaining(&r)) {
        pk_rd_fail_at(&r, r.pos, PK_MSG_CRC_TRAILING, (unsigned long long)pk_rd_remaining(&r));
        goto fail;
    }
    crc = pk_crc32(0, r.data, crc_at);
    if (crc != art->crc32) {
        pk_rd_fail_at(&r, crc_at, PK_MSG_CHECKSUM, (unsigned)art->crc32, (unsigned)crc);
        goto fail;
    }
    for (i = 0; i < n; i++)
        if (decode_module(&r, &mods[i], i, art->version)) goto fail;
    if (check_root_functions(&r, art)) goto fail;
    return art;
fail:
    free(impl->bytes);
    pk_arena_free(&impl->arena);
    free(impl);
    return NULL;
}

pk_artifact *pk_artifact_parse(const void *data, size_t size, pk_error *err) {
    uint8_t *copy;
    if (err) memset(err, 0, sizeof *err);
    if (!(copy = (uint8_t *)malloc(size ? size : 1))) {
        pk_fail(err, PK_ERR_NOMEM, "out of memory (%zu byte artifact)", size);
        return NULL;
    }
    if (size) memcpy(copy, data, size);
    return parse_owned(copy, size, err);
}

static const char *file_type(mode_t mode) {   /* user_files.file_type */
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* kbin.file.read (polykern.user_files.read_regular): a regular file only (O_NONBLOCK: opening a FIFO
 * does not wait for a writer); the header is checked before the rest is read, so a file that is not an
 * artifact costs 12 bytes whatever its size; then no more than the size it had when opened is read,
 * into the one buffer the artifact keeps (no second copy). */
/* read(2) until `n` bytes or end of file; the count read, or -1 (errno set) */
static ssize_t read_full(int fd, uint8_t *dst, size_t n) {
    size_t len = 0;
    ssize_t got;
    while (len < n) {
        got = read(fd, dst + len, n - len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -1;
        if (got == 0) break;
        len += (size_t)got;
    }
    return (ssize_t)len;
}

static pk_artifact *load_fd(int fd, const char *shown, pk_error *err) {
    struct stat st;
    uint8_t head[PK_HEADER_SIZE], *buf, extra;
    size_t size, n_head;
    ssize_t got;
    uint32_t version;
    pk_reader r;
    if (fstat(fd, &st) != 0) {
        pk_fail(err, PK_ERR_IO, "cannot read %s: %s", shown, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        pk_fail(err, PK_ERR_IO, PK_MSG_NOT_REGULAR, shown, file_type(st.st_mode));
        return NULL;
    }
    size = (size_t)st.st_size;
    n_head = size < PK_HEADER_SIZE ? size : PK_HEADER_SIZE;
    if ((got = read_full(fd, head, n_head)) < 0) {
        pk_fail(err, PK_ERR_IO, "cannot read %s: %s", shown, strerror(errno));
        return NULL;
    }
    if ((size_t)got != n_head) {
        pk_fail(err, PK_ERR_IO, PK_MSG_FILE_CHANGED, shown, (unsigned long long)size);
        return NULL;
    }
    memset(&r, 0, sizeof r);
    r.data = head;
    r.end = n_head;
    r.err = err;
    if (check_header(&r, &version)) return NULL;
    if ((off_t)size != st.st_size || !(buf = (uint8_t *)malloc(size ? size : 1))) {
        pk_fail(err, PK_ERR_NOMEM, "cannot read %s: %llu bytes do not fit in this process's memory", shown,
                (unsigned long long)st.st_size);
        return NULL;
    }
    memcpy(buf, head, n_head);
    if ((got = read_full(fd, buf + n_head, size - n_head)) < 0) {
        pk_fail(err, PK_ERR_IO, "cannot read %s: %s", shown, strerror(errno));
        free(buf);
        return NULL;
    }
    if ((size_t)got != size - n_head || read(fd, &extra, 1) > 0) {
        pk_fail(err, PK_ERR_IO, PK_MSG_FILE_CHANGED, shown, (unsigned long long)size);
        free(buf);
        return NULL;
    }
    return parse_owned(buf, size, err);
}

pk_artifact *pk_artifact_load(const char *path, pk_error *err) {
    int fd;
    char shown[400];
    pk_artifact *art;
    if (err) memset(err, 0, sizeof *err);
    pk_escape(path, strlen(path), shown, sizeof shown);
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        pk_fail(err, PK_ERR_IO, "cannot read %s: %s", shown, strerror(errno));
        return NULL;
    }
    art = load_fd(fd, shown, err);
    close(fd);
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
    size_t i, nl = strlen(name);
    for (i = 0; i < m->num_functions; i++)
        if (m->functions[i].name.len == nl && memcmp(m->functions[i].name.ptr, name, nl) == 0)
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
    case PK_CODE_BFLOAT: p = "bf"; break;
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
