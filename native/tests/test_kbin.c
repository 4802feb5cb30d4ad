/* Parser tests: a valid artifact reads back field by field; every malformed variant is
 * rejected with PK_ERR_ARTIFACT and the right offset; no truncation or byte flip crashes. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "internal.h"

static pk_artifact *parse(const tbuf *b, pk_error *e) { return pk_artifact_parse(b->p, b->n, e); }

static void expect_error(const uint8_t *p, size_t n, uint64_t offset, const char *needle,
                         int line) {
    pk_error e;
    pk_artifact *a = pk_artifact_parse(p, n, &e);
    t_checks++;
    if (a) {
        t_failures++;
        fprintf(stderr, "line %d: expected an error containing '%s', parse succeeded\n", line, needle);
        pk_artifact_free(a);
        return;
    }
    if (e.status != PK_ERR_ARTIFACT || !e.has_offset || e.offset != offset ||
        !strstr(e.message, needle)) {
        t_failures++;
        fprintf(stderr, "line %d: expected offset %llu and '%s', got status %d offset %llu: %s\n",
                line, (unsigned long long)offset, needle, e.status,
                (unsigned long long)e.offset, e.message);
    }
}
#define EXPECT_ERROR(p, n, off, needle) expect_error(p, n, off, needle, __LINE__)

static void test_crc_and_sha(void) {
    char hex[65];
    static const char two_blocks[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    pk_sha256_hex("abc", 3, hex);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    pk_sha256_hex("", 0, hex);
    CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
    pk_sha256_hex(two_blocks, sizeof two_blocks - 1, hex);
    CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0);
    CHECK(pk_crc32(0, "123456789", 9) == 0xCBF43926u);
    CHECK(pk_crc32(pk_crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u);
    CHECK(pk_crc32(0, "", 0) == 0);
}

static void test_valid(void) {
    tbuf b = {0};
    pk_error e;
    pk_artifact *a;
    const pk_module *m;
    const pk_function_info *f;
    static const uint8_t obj[] = {1, 2, 3, 0, 5};
    tb_artifact(&b, "cuda", "ptx", obj, sizeof obj, "saxpy", "saxpy_kernel", 1);
    a = parse(&b, &e);
    CHECK_MSG(a != NULL, "%s", e.message);
    if (!a) { tb_free(&b); return; }
    CHECK(a->version == 1);
    CHECK(a->num_modules == 2);
    CHECK(a->has_sources == 1);
    CHECK(a->size == b.n);
    CHECK(a->num_meta == 2 && strcmp(a->meta[0].key.ptr, "compiler") == 0);
    m = &a->modules[0];
    CHECK(strcmp(m->kind.ptr, "root") == 0 && m->layout == PK_LAYOUT_ROOT);
    CHECK(m->num_imports == 1 && m->imports[0] == 1);
    CHECK(m->num_targets == 1 && strcmp(m->targets[0].ptr, "cuda") == 0);
    CHECK(m->num_functions == 1);
    m = &a->modules[1];
    CHECK(strcmp(m->kind.ptr, "cuda") == 0 && strcmp(m->fmt.ptr, "ptx") == 0);
    CHECK(m->payload_size == sizeof obj && memcmp(m->payload, obj, sizeof obj) == 0);
    CHECK(m->num_sources == 1 && strcmp(m->sources[0].key.ptr, "c") == 0);
    CHECK(m->num_imports == 0);
    f = pk_module_find_function(m, "saxpy");
    CHECK(f != NULL);
    if (f) {
        char sig[200];
        const pk_str *entry = pk_kv_find(f->attrs, f->num_attrs, "entry");
        CHECK(f->num_args == 4);
        CHECK(f->args[2].kind == PK_ARG_BUFFER && f->args[2].readonly == 1);
        CHECK(f->num_launch_tags == 1 && strcmp(f->launch_tags[0].ptr, "global_id.0") == 0);
        CHECK(entry && strcmp(entry->ptr, "saxpy_kernel") == 0);
        pk_function_signature(f, sig, sizeof sig);
        CHECK_MSG(strcmp(sig, "saxpy(n: i32, a: f32, x: Buffer[f32, readonly], y: Buffer[f32])") == 0,
                  "%s", sig);
    }
    CHECK(pk_module_find_function(m, "nope") == NULL);
    pk_artifact_free(a);
    tb_free(&b);
}

/* Every prefix is rejected and every single-byte change too (checksum), without crashing;
 * the same edits with the checksum recomputed are accepted or rejected cleanly. */
static void test_truncations_and_flips(void) {
    tbuf b = {0};
    size_t i;
    uint8_t *copy;
    int accepted = 0;
    static const uint8_t obj[] = {0x7f, 'E', 'L', 'F'};
    tb_artifact(&b, "llvm", "o", obj, sizeof obj, "k", NULL, 1);
    for (i = 0; i < b.n; i++) {
        pk_error e;
        pk_artifact *a = pk_artifact_parse(b.p, i, &e);
        CHECK_MSG(a == NULL && e.status == PK_ERR_ARTIFACT && e.has_offset && e.offset <= i,
                  "prefix %zu: %s", i, a ? "accepted" : e.message);
        pk_artifact_free(a);
    }
    copy = (uint8_t *)malloc(b.n);
    for (i = 0; i < b.n; i++) {
        pk_error e;
        pk_artifact *a;
        memcpy(copy, b.p, b.n);
        copy[i] ^= 0x41;
        a = pk_artifact_parse(copy, b.n, &e);
        CHECK_MSG(a == NULL && e.status == PK_ERR_ARTIFACT, "flip at %zu accepted", i);
        pk_artifact_free(a);
        tb_fix_crc(copy, b.n);
        a = pk_artifact_parse(copy, b.n, &e);
        if (a) accepted++;
        else CHECK(e.status == PK_ERR_ARTIFACT && e.has_offset && e.offset < b.n);
        pk_artifact_free(a);
    }
    /* flips inside payload bytes, sources text and meta values stay valid */
    CHECK(accepted > 0);
    free(copy);
    tb_free(&b);
}

/* Hand-made containers with one defect each. */
static void header(tbuf *b, uint64_t nmod) {
    tb_raw(b, "PKBIN\0\r\n", 8);
    tb_u32(b, 1);
    tb_u64(b, nmod);
}

static void test_container_errors(void) {
    tbuf b = {0};
    uint8_t *p;
    /* magic / version / counts */
    EXPECT_ERROR((const uint8_t *)"", 0, 0, "not a polykern artifact: the data is empty");
    EXPECT_ERROR((const uint8_t *)"PKB", 3, 0, "truncated magic: needs 8 bytes but only 3 remain");
    EXPECT_ERROR((const uint8_t *)"PKX", 3, 0, "bad magic (the first bytes are 504b58 in hex");
    EXPECT_ERROR((const uint8_t *)"PKBIN\0\r\nxxxxxxxxxxxxxxxxxxxx", 28, 8, "unsupported artifact format");
    EXPECT_ERROR((const uint8_t *)"XKBIN\0\r\n\1\0\0\0", 12, 0, "bad magic");
    tb_raw(&b, "PKBIN\0\r\n", 8);
    tb_u32(&b, 3);
    EXPECT_ERROR(b.p, b.n, 8, "unsupported artifact format version 3; this reader supports versions 1 to 2");
    tb_free(&b);
    header(&b, 0);
    tb_u64(&b, 0);
    EXPECT_ERROR(b.p, b.n, 12, "no modules");
    tb_free(&b);
    /* a huge module count must not allocate: rejected against the bytes that remain */
    header(&b, (uint64_t)1 << 62);
    tb_u64(&b, 0);
    EXPECT_ERROR(b.p, b.n, 12, "needs an import index larger");
    tb_free(&b);
    header(&b, UINT64_MAX);
    EXPECT_ERROR(b.p, b.n, 12, "needs an import index larger");
    tb_free(&b);
    /* import index */
    header(&b, 2);
    tb_u64(&b, 1); tb_u64(&b, 1); tb_u64(&b, 1);
    EXPECT_ERROR(b.p, b.n, 20, "import index must start at 0");
    tb_free(&b);
    header(&b, 3);
    tb_u64(&b, 0); tb_u64(&b, 2); tb_u64(&b, 1); tb_u64(&b, 2);
    EXPECT_ERROR(b.p, b.n, 36, "import index decreases");
    tb_free(&b);
    header(&b, 2);
    tb_u64(&b, 0); tb_u64(&b, 2); tb_u64(&b, 2);
    EXPECT_ERROR(b.p, b.n, 36, "edges for 2 modules");
    tb_free(&b);
    /* children: out of range, root as child, duplicate, cycle/orphan */
    header(&b, 2);
    tb_u64(&b, 0); tb_u64(&b, 1); tb_u64(&b, 1); tb_u64(&b, 5);
    EXPECT_ERROR(b.p, b.n, 44, "out of range");
    tb_free(&b);
    header(&b, 2);
    tb_u64(&b, 0); tb_u64(&b, 1); tb_u64(&b, 1); tb_u64(&b, 0);
    EXPECT_ERROR(b.p, b.n, 44, "out of range");
    tb_free(&b);
    header(&b, 3);
    tb_u64(&b, 0); tb_u64(&b, 2); tb_u64(&b, 2); tb_u64(&b, 2); tb_u64(&b, 1); tb_u64(&b, 1);
    EXPECT_ERROR(b.p, b.n, 60, "imported twice");
    tb_free(&b);
    header(&b, 3);   /* 1 -> 2 -> 1: both have one parent, neither reachable from 0 */
    tb_u64(&b, 0); tb_u64(&b, 0); tb_u64(&b, 1); tb_u64(&b, 2); tb_u64(&b, 2); tb_u64(&b, 1);
    EXPECT_ERROR(b.p, b.n, 52, "module 1 is not reachable");
    tb_free(&b);
    /* module entries */
    header(&b, 1);
    tb_u64(&b, 0); tb_u64(&b, 0);
    tb_str(&b, "llvm"); tb_bytes(&b, "", 0);
    EXPECT_ERROR(b.p, b.n, 36, "module 0 must be the root");
    tb_free(&b);
    header(&b, 1);
    tb_u64(&b, 0); tb_u64(&b, 0);
    tb_str(&b, "Root");
    EXPECT_ERROR(b.p, b.n, 36, "unknown kind");
    tb_free(&b);
    header(&b, 1);
    tb_u64(&b, 0); tb_u64(&b, 0);
    tb_str(&b, "root"); tb_u64(&b, 1000);
    EXPECT_ERROR(b.p, b.n, 48, "claims 1000 bytes");
    tb_free(&b);
    header(&b, 1);
    tb_u64(&b, 0); tb_u64(&b, 0);
    tb_u64(&b, UINT64_MAX);
    EXPECT_ERROR(b.p, b.n, 36, "claims 18446744073709551615 bytes");
    tb_free(&b);
    /* invalid UTF-8 is reported at the offending byte */
    header(&b, 1);
    tb_u64(&b, 0); tb_u64(&b, 0);
    tb_u64(&b, 4); tb_raw(&b, "ro\xc3(", 4);
    EXPECT_ERROR(b.p, b.n, 46, "not valid UTF-8");
    tb_free(&b);

    /* a complete minimal artifact, then defects after the modules */
    {
        tbuf root = {0};
        size_t crc_at;
        tb_u64(&root, 0);   /* no functions */
        tb_u64(&root, 0);   /* no targets */
        header(&b, 1);
        tb_u64(&b, 0); tb_u64(&b, 0);
        tb_str(&b, "root"); tb_bytes(&b, root.p, root.n);
        tb_u8(&b, 2);   /* bad sources flag */
        EXPECT_ERROR(b.p, b.n, b.n - 1, "sources flag must be 0 or 1");
        b.n--;
        tb_u8(&b, 0);
        tb_u64(&b, 2);
        tb_str(&b, "z"); tb_str(&b, "1");
        tb_str(&b, "a"); tb_str(&b, "2");
        crc_at = b.n;
        tb_u32(&b, pk_crc32(0, b.p, b.n));
        EXPECT_ERROR(b.p, b.n, crc_at - 18, "keys are not strictly sorted");
        tb_free(&b);
        header(&b, 1);
        tb_u64(&b, 0); tb_u64(&b, 0);
        tb_str(&b, "root"); tb_bytes(&b, root.p, root.n);
        tb_u8(&b, 0);
        tb_u64(&b, 0);
        crc_at = b.n;
        tb_u32(&b, 0xDEADBEEF);
        EXPECT_ERROR(b.p, b.n, crc_at, "checksum mismatch");
        b.n -= 4;
        tb_u32(&b, pk_crc32(0, b.p, b.n));
        {
            pk_error e;
            pk_artifact *a = parse(&b, &e);
            CHECK_MSG(a != NULL, "%s", e.message);
            pk_artifact_free(a);
        }
        tb_u8(&b, 0);
        EXPECT_ERROR(b.p, b.n, b.n - 1, "1 trailing bytes");
        tb_free(&b);
        tb_free(&root);
    }
    (void)p;
}

/* Payload-level defects: build the device payload by hand inside a valid container. */
static void build_with_device(tbuf *out, const tbuf *dev, const char *root_fn) {
    tbuf root = {0};
    tb_u64(&root, root_fn ? 1 : 0);
    if (root_fn) {
        tb_str(&root, root_fn);
        tb_saxpy_info(&root, root_fn, NULL);
    }
    tb_u64(&root, 0);
    header(out, 2);
    tb_u64(out, 0); tb_u64(out, 1); tb_u64(out, 1); tb_u64(out, 1);
    tb_str(out, "root"); tb_bytes(out, root.p, root.n);
    tb_str(out, "llvm"); tb_bytes(out, dev->p, dev->n);
    tb_u8(out, 0);
    tb_u64(out, 0);
    tb_u32(out, pk_crc32(0, out->p, out->n));
    tb_free(&root);
}

/* the device payload starts after header(20) + indptr(24) + child(8) + "root"(12) + len(8)
 * + root payload + "llvm"(12) + len(8) */
static size_t dev_base(size_t root_size) { return 20 + 24 + 8 + 12 + 8 + root_size + 12 + 8; }

static void one_arg_fn(tbuf *d, const char *name, uint8_t kind, uint8_t code, uint8_t bits,
                       uint16_t lanes, uint8_t ro) {
    tb_str(d, "o");
    tb_u64(d, 1);
    tb_str(d, "f");
    tb_str(d, "f");
    tb_u64(d, 1);
    tb_str(d, name); tb_u8(d, kind); tb_u8(d, code); tb_u8(d, bits); tb_u16(d, lanes); tb_u8(d, ro);
}

static void test_payload_errors(void) {
    tbuf d = {0}, b = {0};
    size_t base = dev_base(16);
    /* arg fields start at: fmt(9) + count(8) + key(9) + name(9) + nargs(8) + argname(9) */
    size_t arg = base + 9 + 8 + 9 + 9 + 8 + 9;
    one_arg_fn(&d, "x", 2, 2, 32, 1, 0);
    tb_u64(&d, 0); tb_u64(&d, 0); tb_u64(&d, 0); tb_bytes(&d, "", 0);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, arg, "unknown kind 2");
    tb_free(&d); tb_free(&b);
    one_arg_fn(&d, "x", 0, 2, 8, 1, 0);
    tb_u64(&d, 0); tb_u64(&d, 0); tb_u64(&d, 0); tb_bytes(&d, "", 0);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, arg + 1, "unknown type code 2 bits 8");
    tb_free(&d); tb_free(&b);
    one_arg_fn(&d, "x", 0, 2, 32, 4, 0);
    tb_u64(&d, 0); tb_u64(&d, 0); tb_u64(&d, 0); tb_bytes(&d, "", 0);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, arg + 3, "4 lanes");
    tb_free(&d); tb_free(&b);
    one_arg_fn(&d, "x", 0, 2, 32, 1, 1);
    tb_u64(&d, 0); tb_u64(&d, 0); tb_u64(&d, 0); tb_bytes(&d, "", 0);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, arg + 5, "scalar marked readonly");
    tb_free(&d); tb_free(&b);
    one_arg_fn(&d, "x", 0, 2, 32, 1, 7);
    tb_u64(&d, 0); tb_u64(&d, 0); tb_u64(&d, 0); tb_bytes(&d, "", 0);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, arg + 5, "readonly flag must be 0 or 1");
    tb_free(&d); tb_free(&b);
    /* launch tags unsorted */
    one_arg_fn(&d, "x", 1, 2, 32, 1, 1);
    tb_u64(&d, 2); tb_str(&d, "b"); tb_str(&d, "a");
    tb_u64(&d, 0); tb_u64(&d, 0); tb_bytes(&d, "", 0);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, arg + 6, "launch tags are not sorted");
    tb_free(&d); tb_free(&b);
    /* key / name mismatch */
    tb_str(&d, "o"); tb_u64(&d, 1); tb_str(&d, "f"); tb_str(&d, "g"); tb_u64(&d, 0);
    tb_u64(&d, 0); tb_u64(&d, 0); tb_u64(&d, 0); tb_bytes(&d, "", 0);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, base + 9 + 8, "describes a function named 'g'");
    tb_free(&d); tb_free(&b);
    /* empty function name */
    tb_str(&d, "o"); tb_u64(&d, 1); tb_str(&d, ""); tb_raw(&d, "0123456789012345678901234567890123456789", 40);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, base + 9 + 8, "is empty");
    tb_free(&d); tb_free(&b);
    /* trailing bytes inside the payload */
    tb_str(&d, "o"); tb_u64(&d, 0); tb_bytes(&d, "abc", 3); tb_u8(&d, 9);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, base + 9 + 8 + 11, "1 unexpected trailing bytes");
    tb_free(&d); tb_free(&b);
    /* a huge function count must not allocate */
    tb_str(&d, "o"); tb_u64(&d, (uint64_t)1 << 60);
    build_with_device(&b, &d, NULL);
    EXPECT_ERROR(b.p, b.n, base + 9, "claims 1152921504606846976 entries");
    tb_free(&d); tb_free(&b);
    /* the root lists a kernel nobody provides */
    tb_str(&d, "o"); tb_u64(&d, 0); tb_bytes(&d, "", 0);
    build_with_device(&b, &d, "saxpy");
    {
        pk_error e;
        pk_artifact *a = parse(&b, &e);
        CHECK(a == NULL && strstr(e.message, "the root lists 1 kernel(s) that no module provides; the first is 'saxpy'"));
        pk_artifact_free(a);
    }
    tb_free(&d); tb_free(&b);
}

static void test_load_file(void) {
    pk_error e;
    pk_artifact *a = pk_artifact_load("/nonexistent/k.kbin", &e);
    CHECK(a == NULL && e.status == PK_ERR_IO && strstr(e.message, "/nonexistent/k.kbin"));
    /* only regular files, read without waiting (a FIFO with no writer) or without bound (/dev/zero) */
    a = pk_artifact_load("/dev/zero", &e);
    CHECK(a == NULL && e.status == PK_ERR_IO &&
          strcmp(e.message, "cannot read /dev/zero: it is a character device, not a regular file") == 0);
    a = pk_artifact_load(".", &e);
    CHECK(a == NULL && e.status == PK_ERR_IO &&
          strcmp(e.message, "cannot read .: it is a directory, not a regular file") == 0);
    {
        char dir[] = "/tmp/pk-test-XXXXXX", fifo[64], msg[160];
        if (mkdtemp(dir)) {
            snprintf(fifo, sizeof fifo, "%s/k\x1b.kbin", dir);
            /* the control character (ESC) in the name is escaped in the message */
            if (mkfifo(fifo, 0600) == 0) {
                a = pk_artifact_load(fifo, &e);
                snprintf(msg, sizeof msg, "cannot read %s/k\\x1b.kbin: it is a FIFO (named pipe), not a regular file",
                         dir);
                CHECK(a == NULL && e.status == PK_ERR_IO && strcmp(e.message, msg) == 0);
                unlink(fifo);
            }
            rmdir(dir);
        }
    }
}

static void test_describe(void) {
    tbuf b = {0};
    pk_error e;
    pk_artifact *a;
    static const char ptx[] = "//\n.version 8.0\n.target sm_90\r\n";
    char buf[128];
    tb_artifact(&b, "cuda", "ptx", ptx, sizeof ptx - 1, "saxpy", NULL, 0);
    a = parse(&b, &e);
    CHECK(a != NULL);
    if (a) {
        FILE *f = tmpfile();
        char text[4096];
        size_t n;
        pk_artifact_describe(a, "t.kbin", f);
        rewind(f);
        n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
        CHECK_MSG(strstr(text, "payload: text, 3 lines (31 bytes)") != NULL, "%s", text);
        CHECK_MSG(strstr(text, "sources: none embedded (stripped)") != NULL, "%s", text);
        CHECK(strstr(text, "[1] cuda  fmt=ptx") != NULL);
        pk_artifact_free(a);
    }
    CHECK(strcmp(pk_describe_binary((const uint8_t *)"BC\xc0\xde", 4, buf, sizeof buf),
                 "LLVM bitcode (4 bytes)") == 0);
    CHECK(strcmp(pk_describe_binary((const uint8_t *)"a\0b", 3, buf, sizeof buf),
                 "binary data (3 bytes)") == 0);
    CHECK(strcmp(pk_describe_binary((const uint8_t *)"a\r\nb\x0b" "c\xe2\x80\xa8", 9, buf, sizeof buf),
                 "text, 3 lines (9 bytes)") == 0);
    tb_free(&b);
}

/* Format version 2: each payload starts with its layout id, so a kind this reader has never
 * heard of parses, and pk_artifact_write gives back the same bytes; hostile layout ids are refused. */
static size_t v2_artifact(tbuf *out, uint8_t root_layout, uint8_t dev_layout, const char *kind) {
    tbuf root = {0}, dev = {0};
    size_t dev_at;
    tb_u8(&root, root_layout);
    tb_u64(&root, 1);
    tb_str(&root, "saxpy");
    tb_saxpy_info(&root, "saxpy", NULL);
    tb_u64(&root, 1);
    tb_str(&root, kind);
    tb_u8(&dev, dev_layout);
    tb_str(&dev, "bin");
    tb_u64(&dev, 1);
    tb_str(&dev, "saxpy");
    tb_saxpy_info(&dev, "saxpy", "saxpy_entry");
    tb_u64(&dev, 2);
    tb_str(&dev, "a"); tb_bytes(&dev, "\0\1\2", 3);
    tb_str(&dev, "b"); tb_bytes(&dev, "text\n", 5);
    tb_raw(out, "PKBIN\0\r\n", 8);
    tb_u32(out, 2);
    tb_u64(out, 2);
    tb_u64(out, 0); tb_u64(out, 1); tb_u64(out, 1);
    tb_u64(out, 1);
    tb_str(out, "root"); tb_bytes(out, root.p, root.n);
    tb_str(out, kind);
    dev_at = out->n + 8;
    tb_bytes(out, dev.p, dev.n);
    tb_u8(out, 0);
    tb_u64(out, 0);
    tb_u32(out, pk_crc32(0, out->p, out->n));
    tb_free(&root);
    tb_free(&dev);
    return dev_at;
}

static void test_v2_layouts(void) {
    tbuf b = {0};
    pk_error e;
    pk_artifact *a;
    uint8_t *again = NULL;
    size_t n = 0, dev_at, root_at = 20 + 24 + 8 + 12 + 8;
    dev_at = v2_artifact(&b, 0, 2, "zz_never_heard_of");
    a = parse(&b, &e);
    CHECK_MSG(a != NULL, "%s", e.message);
    if (a) {
        const pk_module *m = &a->modules[1];
        CHECK(a->version == 2 && m->layout == PK_LAYOUT_SMAP && strcmp(m->fmt.ptr, "bin") == 0);
        CHECK(m->num_shaders == 2 && m->shaders[1].size == 5 && m->num_functions == 1);
        CHECK(!pk_is_known_kind(m->kind.ptr) && pk_is_known_kind("vulkan"));
        CHECK(pk_artifact_write(a, &again, &n, &e) == 0);
        CHECK(n == b.n && again && memcmp(again, b.p, n) == 0);
        free(again);
        pk_artifact_free(a);
    }
    tb_free(&b);
    dev_at = v2_artifact(&b, 0, 3, "zz");
    EXPECT_ERROR(b.p, b.n, dev_at, "zz module has unknown payload layout 3; known layouts: 0 (root), 1 (bytes), 2 (smap)");
    tb_free(&b);
    dev_at = v2_artifact(&b, 0, 255, "zz");
    EXPECT_ERROR(b.p, b.n, dev_at, "unknown payload layout 255");
    tb_free(&b);
    dev_at = v2_artifact(&b, 0, 0, "zz");
    EXPECT_ERROR(b.p, b.n, dev_at, "zz module has payload layout 0 (root), which only the root module may have");
    tb_free(&b);
    v2_artifact(&b, 2, 2, "zz");
    EXPECT_ERROR(b.p, b.n, root_at, "the root module has payload layout 2 (smap); it must be 0 (root)");
    tb_free(&b);
    dev_at = v2_artifact(&b, 0, 2, "Zz");   /* the kind entry: u64 length, "Zz", u64 payload length */
    EXPECT_ERROR(b.p, b.n, dev_at - 18, "module 1 kind 'Zz' is not a module kind name");
    tb_free(&b);
}

int main(void) {
    test_crc_and_sha();
    test_valid();
    test_truncations_and_flips();
    test_container_errors();
    test_payload_errors();
    test_load_file();
    test_describe();
    test_v2_layouts();
    return t_finish("test_kbin");
}
