/* run_saxpy: load a .kbin built by `polykern compile` and run its `saxpy` kernel from C,
 * with no Python: y = a * x + y on n elements, checked against a plain C loop.
 *
 *   run_saxpy K.kbin [--on llvm|cuda] [--n N] [--block B]
 *
 * The kernel runs on the first module of the artifact (in target order) that can run here:
 * the CPU ("llvm" module, ELF object loaded in-process) or an NVIDIA GPU ("cuda" module,
 * through libcuda.so.1). The first line of output says which. Exit 0 when the result is
 * right, 1 on any error or mismatch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polykern.h"

static int expect_signature(const pk_function_info *f) {
    static const struct { uint8_t kind, code, bits; } want[4] = {
        {PK_ARG_SCALAR, PK_CODE_INT, 32}, {PK_ARG_SCALAR, PK_CODE_FLOAT, 32},
        {PK_ARG_BUFFER, PK_CODE_FLOAT, 32}, {PK_ARG_BUFFER, PK_CODE_FLOAT, 32}};
    size_t i;
    if (f->num_args != 4) return 0;
    for (i = 0; i < 4; i++)
        if (f->args[i].kind != want[i].kind || f->args[i].code != want[i].code ||
            f->args[i].bits != want[i].bits)
            return 0;
    return 1;
}

int main(int argc, char **argv) {
    const char *path = NULL, *kind = NULL;
    long n = 100000, block = 128;
    int i, rc = 1;
    pk_error err;
    pk_artifact *art = NULL;
    pk_program *prog = NULL;
    pk_kernel *k;
    pk_buffer *bx = NULL, *by = NULL;
    float *x = NULL, *y = NULL, *out = NULL, a = 2.5f;
    int32_t n32;
    double maxerr = 0.0;
    char sig[512];

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--on") == 0 && i + 1 < argc) kind = argv[++i];
        else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) n = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--block") == 0 && i + 1 < argc) block = strtol(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else {
            fprintf(stderr, "usage: run_saxpy K.kbin [--on llvm|cuda] [--n N] [--block B]\n");
            return 2;
        }
    }
    if (!path || n < 1 || n > 0x7FFFFFFF || block < 1 || block > 1024) {
        fprintf(stderr, "usage: run_saxpy K.kbin [--on llvm|cuda] [--n N (1..2^31-1)] "
                "[--block B (1..1024)]\n");
        return 2;
    }
    n32 = (int32_t)n;
    if (!(art = pk_artifact_load(path, &err))) goto fail;
    if (!(prog = pk_program_load_first(art, kind, "saxpy", &err))) goto fail;
    if (pk_program_skipped(prog)[0]) printf("skipped: %s\n", pk_program_skipped(prog));
    if (!(k = pk_program_kernel(prog, "saxpy", &err))) goto fail;
    pk_function_signature(pk_kernel_info(k), sig, sizeof sig);
    printf("running %s on %s (module kind %s, fmt %s)\n", sig, pk_program_device(prog),
           pk_program_module(prog)->kind.ptr, pk_program_module(prog)->fmt.ptr);
    if (!expect_signature(pk_kernel_info(k))) {
        fprintf(stderr, "run_saxpy: expected saxpy(n: i32, a: f32, x: Buffer[f32], y: Buffer[f32])\n");
        goto done;
    }
    x = (float *)malloc((size_t)n * sizeof *x);
    y = (float *)malloc((size_t)n * sizeof *y);
    out = (float *)malloc((size_t)n * sizeof *out);
    if (!x || !y || !out) { fprintf(stderr, "run_saxpy: out of memory\n"); goto done; }
    for (i = 0; i < n; i++) {
        x[i] = (float)(i % 1000) * 0.5f - 100.0f;
        y[i] = (float)((i * 7) % 333) * 0.25f;
    }
    if (!(bx = pk_buffer_alloc(prog, (size_t)n * sizeof(float), &err)) ||
        !(by = pk_buffer_alloc(prog, (size_t)n * sizeof(float), &err)) ||
        pk_buffer_write(bx, 0, x, (size_t)n * sizeof(float), &err) ||
        pk_buffer_write(by, 0, y, (size_t)n * sizeof(float), &err))
        goto fail;
    {
        void *args[4];
        uint32_t grid[3] = {(uint32_t)((n + block - 1) / block), 1, 1};
        uint32_t blk[3] = {(uint32_t)block, 1, 1};
        args[0] = &n32;
        args[1] = &a;
        args[2] = bx;
        args[3] = by;
        if (pk_kernel_launch(k, 4, args, grid, blk, &err)) goto fail;
        printf("launched grid (%u, 1, 1) x block (%u, 1, 1) for n = %ld\n", grid[0], blk[0], n);
    }
    if (pk_buffer_read(by, 0, out, (size_t)n * sizeof(float), &err)) goto fail;
    for (i = 0; i < n; i++) {
        double want = (double)(a * x[i] + y[i]);
        double e = fabs((double)out[i] - want) / (fabs(want) > 1.0 ? fabs(want) : 1.0);
        if (e > maxerr) maxerr = e;
    }
    if (maxerr > 1e-6) {
        printf("FAILED: max relative error %g\n", maxerr);
        goto done;
    }
    printf("OK: y = a*x + y matches the C reference on %ld elements (max rel. error %g)\n", n, maxerr);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "run_saxpy: error: %s\n", err.message);
done:
    pk_buffer_free(bx);
    pk_buffer_free(by);
    pk_program_free(prog);
    pk_artifact_free(art);
    free(x);
    free(y);
    free(out);
    return rc;
}
