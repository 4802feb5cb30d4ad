/* Runtime tests: programs, kernels, buffers and launches on the CPU pool, using kernels
 * written against the payload ABI (tests/objects/saxpy_range.c) packed into a .kbin here.
 *   test_runtime SAXPY_RANGE.o */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>

#include "testutil.h"

/* FunctionInfo with args given as "n:s:0:32,y:b:2:32" style triples */
static void fn_info(tbuf *b, const char *name, const char *args, const char *entry,
                    const char *item_bytes) {
    char spec[256], *tok, *save = NULL;
    size_t n = 0;
    const char *p;
    for (p = args; *p; p++) n += *p == ',';
    n += *args ? 1 : 0;
    tb_str(b, name);
    tb_u64(b, n);
    snprintf(spec, sizeof spec, "%s", args);
    for (tok = strtok_r(spec, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char an[32], kind;
        unsigned code, bits;
        if (sscanf(tok, "%31[^:]:%c:%u:%u", an, &kind, &code, &bits) != 4) abort();
        tb_str(b, an); tb_u8(b, kind == 'b'); tb_u8(b, code); tb_u8(b, bits); tb_u16(b, 1); tb_u8(b, 0);
    }
    tb_u64(b, 0);   /* launch tags */
    tb_u64(b, 0);   /* shared bytes */
    tb_u64(b, (entry ? 1 : 0) + (item_bytes ? 1 : 0));
    if (entry) { tb_str(b, "entry"); tb_str(b, entry); }
    if (item_bytes) { tb_str(b, "item_bytes"); tb_str(b, item_bytes); }
}

#define SAXPY_ARGS "n:s:0:32,a:s:2:32,x:b:2:32,y:b:2:32"
/* Functions (sorted by name): big (stack check), count, ghost (no symbol), saxpy, vsqrt. */
static void device_fmap(tbuf *b) {
    tb_u64(b, 5);
    tb_str(b, "big"); fn_info(b, "big", SAXPY_ARGS, "saxpy__range", "100000000");
    tb_str(b, "count"); fn_info(b, "count", "hits:b:0:32", NULL, NULL);
    tb_str(b, "ghost"); fn_info(b, "ghost", "", NULL, NULL);
    tb_str(b, "saxpy"); fn_info(b, "saxpy", SAXPY_ARGS, "saxpy__range", "0");
    tb_str(b, "vsqrt"); fn_info(b, "vsqrt", "n:s:0:32,y:b:2:32", NULL, NULL);
}

/* root + [cuda ptx] + llvm(obj) + vulkan: in that target order */
static void build(tbuf *out, const uint8_t *obj, size_t n) {
    tbuf root = {0}, cpu = {0}, cu = {0}, vk = {0};
    device_fmap(&root);
    tb_u64(&root, 3); tb_str(&root, "cuda"); tb_str(&root, "llvm"); tb_str(&root, "vulkan");
    tb_str(&cu, "ptx"); device_fmap(&cu); tb_bytes(&cu, ".version 8.0\n", 13);
    tb_str(&cpu, "o"); device_fmap(&cpu); tb_bytes(&cpu, obj, n);
    tb_str(&vk, "spirv"); device_fmap(&vk); tb_u64(&vk, 0);
    tb_raw(out, "PKBIN\0\r\n", 8);
    tb_u32(out, 1);
    tb_u64(out, 4);
    tb_u64(out, 0); tb_u64(out, 3); tb_u64(out, 3); tb_u64(out, 3); tb_u64(out, 3);
    tb_u64(out, 1); tb_u64(out, 2); tb_u64(out, 3);
    tb_str(out, "root"); tb_bytes(out, root.p, root.n);
    tb_str(out, "cuda"); tb_bytes(out, cu.p, cu.n);
    tb_str(out, "llvm"); tb_bytes(out, cpu.p, cpu.n);
    tb_str(out, "vulkan"); tb_bytes(out, vk.p, vk.n);
    tb_u8(out, 0);
    tb_u64(out, 0);
    tb_u32(out, pk_crc32(0, out->p, out->n));
    tb_free(&root); tb_free(&cpu); tb_free(&cu); tb_free(&vk);
}

static int run_saxpy(pk_program *prog, int32_t n, uint32_t block, pk_error *e) {
    pk_kernel *k = pk_program_kernel(prog, "saxpy", e);
    pk_buffer *bx, *by;
    float *x = (float *)malloc((size_t)n * 4), *y = (float *)malloc((size_t)n * 4), a = 3.0f;
    int32_t i;
    int ok = 1;
    void *args[4];
    uint32_t grid[3] = {((uint32_t)n + block - 1) / block, 1, 1}, blk[3] = {block, 1, 1};
    if (!k) return 0;
    for (i = 0; i < n; i++) { x[i] = (float)i; y[i] = 1.0f; }
    bx = pk_buffer_alloc(prog, (size_t)n * 4, e);
    by = pk_buffer_alloc(prog, (size_t)n * 4, e);
    pk_buffer_write(bx, 0, x, (size_t)n * 4, e);
    pk_buffer_write(by, 0, y, (size_t)n * 4, e);
    args[0] = &n; args[1] = &a; args[2] = bx; args[3] = by;
    if (pk_kernel_launch(k, 4, args, grid, blk, e)) ok = 0;
    pk_buffer_read(by, 0, y, (size_t)n * 4, e);
    for (i = 0; ok && i < n; i++) ok = y[i] == 3.0f * (float)i + 1.0f;
    pk_buffer_free(bx);
    pk_buffer_free(by);
    free(x);
    free(y);
    return ok;
}

typedef struct { pk_program *prog; int ok; } thread_arg;
static void *concurrent(void *p) {
    thread_arg *t = (thread_arg *)p;
    pk_error e;
    int r;
    t->ok = 1;
    for (r = 0; r < 20; r++) t->ok &= run_saxpy(t->prog, 3000 + r, 32, &e);
    return NULL;
}

static void test_cpu(const pk_artifact *art) {
    pk_error e;
    pk_program *prog, *other;
    pk_kernel *k;
    int threads;
    for (threads = 1; threads <= 3; threads += 2) {
        pk_set_num_threads(threads);
        prog = pk_program_load(art, 2, &e);
        CHECK_MSG(prog != NULL, "%s", e.message);
        if (!prog) return;
        CHECK_MSG(strncmp(pk_program_device(prog), "cpu: ", 5) == 0, "%s", pk_program_device(prog));
        CHECK(run_saxpy(prog, 1000, 64, &e));
        CHECK(run_saxpy(prog, 1, 1, &e));
        CHECK(run_saxpy(prog, 100003, 256, &e));
        pk_program_free(prog);
    }
    pk_set_num_threads(0);
    prog = pk_program_load(art, 2, &e);
    if (!prog) return;
    /* every workgroup exactly once, 3-D grids, many groups */
    {
        uint32_t grids[3][3] = {{5, 3, 2}, {1, 1, 1}, {1000, 7, 13}};
        int gi;
        k = pk_program_kernel(prog, "count", &e);
        CHECK(k != NULL);
        for (gi = 0; k && gi < 3; gi++) {
            size_t total = (size_t)grids[gi][0] * grids[gi][1] * grids[gi][2], i;
            int32_t *hits = (int32_t *)calloc(total, 4);
            pk_buffer *b = pk_buffer_alloc(prog, total * 4, &e);
            void *args[1];
            uint32_t blk[3] = {1, 1, 1};
            int ok = 1;
            args[0] = b;
            pk_buffer_write(b, 0, hits, total * 4, &e);
            CHECK_MSG(pk_kernel_launch(k, 1, args, grids[gi], blk, &e) == 0, "%s", e.message);
            pk_buffer_read(b, 0, hits, total * 4, &e);
            for (i = 0; i < total; i++) ok &= hits[i] == 1;
            CHECK_MSG(ok, "grid %d: not every group ran exactly once", gi);
            pk_buffer_free(b);
            free(hits);
        }
    }
    /* libm through trampolines */
    {
        int32_t n = 100;
        float y[100];
        int i, ok = 1;
        pk_buffer *b = pk_buffer_alloc(prog, sizeof y, &e);
        void *args[2];
        uint32_t grid[3] = {4, 1, 1}, blk[3] = {32, 1, 1};
        for (i = 0; i < 100; i++) y[i] = (float)(i * i);
        pk_buffer_write(b, 0, y, sizeof y, &e);
        k = pk_program_kernel(prog, "vsqrt", &e);
        args[0] = &n; args[1] = b;
        CHECK(k && pk_kernel_launch(k, 2, args, grid, blk, &e) == 0);
        pk_buffer_read(b, 0, y, sizeof y, &e);
        for (i = 0; i < 100; i++) ok &= fabsf(y[i] - ((float)i + 1.0f)) < 1e-4f;
        CHECK(ok);
        pk_buffer_free(b);
    }
    /* launch errors */
    {
        int32_t n = 4;
        float a = 1.0f;
        pk_buffer *b = pk_buffer_alloc(prog, 16, &e), *foreign;
        void *args[4] = {&n, &a, b, b};
        uint32_t grid[3] = {1, 1, 1}, blk[3] = {4, 1, 1}, zero[3] = {0, 1, 1};
        char tmp[32];
        k = pk_program_kernel(prog, "saxpy", &e);
        CHECK(pk_kernel_launch(k, 3, args, grid, blk, &e) == PK_ERR_LAUNCH &&
              strstr(e.message, "takes 4 arguments, 3 given"));
        CHECK(pk_kernel_launch(k, 4, args, zero, blk, &e) == PK_ERR_LAUNCH);
        {   /* was: grid (2**20)**3 ran 2**60 workgroups (a hang); global ids past i32 */
            uint32_t tall[3] = {1, 65536, 1}, one[3] = {1, 1, 1};
            uint32_t wide[3] = {1u << 30, 1, 1};
            CHECK_MSG(pk_kernel_launch(k, 4, args, tall, one, &e) == PK_ERR_LAUNCH &&
                      strstr(e.message, "65536 workgroups in dimension y; the CPU runtime (it keeps "
                             "CUDA's grid limits) allows at most (2147483647, 65535, 65535)"), "%s", e.message);
            CHECK_MSG(pk_kernel_launch(k, 4, args, wide, blk, &e) == PK_ERR_LAUNCH &&
                      strstr(e.message, "= 1073741824 * 4 = 4294967296 work-items in dimension x, but "
                             "global_id(0) is an i32"), "%s", e.message);
        }
        args[2] = NULL;
        CHECK(pk_kernel_launch(k, 4, args, grid, blk, &e) == PK_ERR_LAUNCH &&
              strstr(e.message, "('x') is NULL"));
        other = pk_program_load(art, 2, &e);
        foreign = other ? pk_buffer_alloc(other, 16, &e) : NULL;
        args[2] = foreign;
        CHECK(foreign && pk_kernel_launch(k, 4, args, grid, blk, &e) == PK_ERR_LAUNCH &&
              strstr(e.message, "this program's device"));
        pk_buffer_free(foreign);
        pk_program_free(other);
        CHECK(pk_buffer_write(b, 8, tmp, 9, &e) == PK_ERR_LAUNCH);
        CHECK(pk_buffer_read(b, 17, tmp, 0, &e) == PK_ERR_LAUNCH);
        CHECK(pk_buffer_read(b, 16, tmp, 0, &e) == 0);
        k = pk_program_kernel(prog, "big", &e);
        args[2] = b;
        CHECK_MSG(k && pk_kernel_launch(k, 4, args, grid, blk, &e) == PK_ERR_LAUNCH &&
                  strstr(e.message, "POLYKERN_CPU_STACK_MB"), "%s", e.message);
        CHECK(pk_program_kernel(prog, "ghost", &e) == NULL && e.status == PK_ERR_NOT_FOUND &&
              strstr(e.message, "ghost__range"));
        CHECK(pk_program_kernel(prog, "nope", &e) == NULL && e.status == PK_ERR_NOT_FOUND);
        pk_buffer_free(b);
    }
    /* launches from several threads at once share the pool */
    {
        pthread_t th[4];
        thread_arg ta[4];
        int i;
        for (i = 0; i < 4; i++) { ta[i].prog = prog; pthread_create(&th[i], NULL, concurrent, &ta[i]); }
        for (i = 0; i < 4; i++) { pthread_join(th[i], NULL); CHECK(ta[i].ok); }
    }
    pk_program_free(prog);
}

static void test_selection(const pk_artifact *art) {
    pk_error e;
    pk_program *p;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    /* first runnable in target order: cuda (if a GPU is here) else llvm */
    p = pk_program_load_first(art, NULL, "saxpy", &e);
    CHECK_MSG(p != NULL, "%s", e.message);
    if (p && !cuda) {
        CHECK(strcmp(pk_program_module(p)->kind.ptr, "llvm") == 0);
        CHECK_MSG(strstr(pk_program_skipped(p), "module 1 (cuda): CUDA runtime is not available") != NULL,
                  "%s", pk_program_skipped(p));
    }
    pk_program_free(p);
    if (!cuda) {
        p = pk_program_load_first(art, "cuda", NULL, &e);
        CHECK_MSG(p == NULL && e.status == PK_ERR_UNAVAILABLE && strstr(e.message, "libcuda.so.1"),
                  "%s", e.message);
    } else {
        printf("  libcuda.so.1 present: CUDA selection checked by run_saxpy instead\n");
        dlclose(cuda);
    }
    /* a device index: the CPU module has device 0 only; a CUDA one needs the driver first */
    p = pk_program_load_on(art, 2, 0, &e);
    CHECK_MSG(p != NULL, "%s", e.message);
    pk_program_free(p);
    p = pk_program_load_on(art, 2, 1, &e);
    CHECK_MSG(p == NULL && e.status == PK_ERR_UNAVAILABLE && strstr(e.message, "host CPU, device 0; device 1 asked"),
              "%s", e.message);
    p = pk_program_load_on(art, 1, -2, &e);
    CHECK_MSG(p == NULL && e.status == PK_ERR_UNAVAILABLE && strstr(e.message, "device -2: a device is an ordinal"),
              "%s", e.message);
    if (!cuda) {
        p = pk_program_load_on(art, 1, 1, &e);
        CHECK_MSG(p == NULL && e.status == PK_ERR_UNAVAILABLE && strstr(e.message, "libcuda.so.1"), "%s", e.message);
    }
    p = pk_program_load(art, 3, &e);
    CHECK(p == NULL && e.status == PK_ERR_UNAVAILABLE && strstr(e.message, "no 'vulkan' runtime"));
    p = pk_program_load(art, 0, &e);
    CHECK(p == NULL && strstr(e.message, "root module"));
    p = pk_program_load(art, 9, &e);
    CHECK(p == NULL && e.status == PK_ERR_NOT_FOUND);
    p = pk_program_load_first(art, "metal", NULL, &e);
    CHECK(p == NULL && e.status == PK_ERR_NOT_FOUND);
}

int main(int argc, char **argv) {
    size_t n;
    uint8_t *obj;
    tbuf b = {0};
    pk_error e;
    pk_artifact *art;
    if (argc != 2 || !(obj = t_read_file(argv[1], &n))) {
        fprintf(stderr, "usage: test_runtime SAXPY_RANGE.o\n");
        return 2;
    }
    build(&b, obj, n);
    free(obj);
    art = pk_artifact_parse(b.p, b.n, &e);
    CHECK_MSG(art != NULL, "%s", e.message);
    if (art) {
        test_cpu(art);
        test_selection(art);
    }
    pk_artifact_free(art);
    tb_free(&b);
    return t_finish("test_runtime");
}
