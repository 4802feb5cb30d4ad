/* kbin-run: run one kernel of a .kbin with its arguments streamed on stdin.
 *
 *   kbin-run K.kbin KERNEL [--on KIND] < launch > results
 *
 * The stream is polykern's launch stream (python/polykern/runtime/launch_stream.py; the Hexagon harness
 * reads the same), little-endian:
 *   stdin   header  u32 magic "PKHX", u32 nargs, u64 body bytes, i32 grid[3], i32 block[3]
 *           body    per argument a 64-byte record head (u32 kind, u32 0, u64 nbytes, zeros)
 *                   then nbytes of data padded to 64 bytes; kind 0 = scalar, 1 = read-only
 *                   buffer, 2 = written buffer
 *   stdout  the data of every kind-2 argument in order, then u32 "PKOK". What the kernel prints
 *           (pk.debug_print: printf) goes to stderr, so it is never taken for results.
 * The records must match the kernel's signature: as many records as arguments, a scalar's record of
 * kind 0 holding exactly the scalar's bytes, a buffer's of kind 1 or 2 ("argument 0 (n: i32) is a
 * scalar of 4 bytes, but its record is a buffer (kind 1); the kernel is saxpy(...)").
 * Exit status 0 after a complete run, 3 with a message on stderr otherwise. Built for aarch64
 * (make -C native aarch64), it runs aarch64 artifacts under qemu-aarch64 on any host
 * (tests/test_emulation_aarch64.py).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "polykern.h"

#define PK_MAGIC 0x58484b50u /* "PKHX" */
#define PK_DONE 0x4b4f4b50u  /* "PKOK" */
#define PK_RECORD 64u
#define PK_MAX_ARGS 1024u

static int fail(const char *what) {
    fprintf(stderr, "kbin-run: %s\n", what);
    return 3;
}

/* A record that does not match the kernel's signature (the kernel would read one as the other). */
static int mismatch(const pk_function_info *fi, const char *fmt, ...) {
    char sig[400];
    va_list ap;
    fprintf(stderr, "kbin-run: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "; the kernel is %s\n", pk_function_signature(fi, sig, sizeof sig));
    return 3;
}

/* 0 when record `i` (kind `rkind`, `n` data bytes) fits argument `i` of `fi`, else 3 after the message */
static int check_record(const pk_function_info *fi, uint32_t i, uint32_t rkind, uint64_t n) {
    const pk_arg_info *a = &fi->args[i];
    char type[32];
    uint64_t size = ((uint64_t)a->bits * a->lanes + 7) / 8;
    pk_type_name(a->code, a->bits, a->lanes, type, sizeof type);
    if (a->kind == PK_ARG_BUFFER) {
        if (rkind == 0)
            return mismatch(fi, "argument %u (Buffer[%s]) is a buffer, but its record is a scalar (kind 0)", i,
                            type);
        return 0;
    }
    if (rkind != 0)
        return mismatch(fi, "argument %u (%s) is a scalar of %llu bytes, but its record is a buffer (kind %u)", i,
                        type, (unsigned long long)size, rkind);
    if (n != size)
        return mismatch(fi, "argument %u (%s) is a scalar of %llu bytes, but its record holds %llu bytes", i, type,
                        (unsigned long long)size, (unsigned long long)n);
    return 0;
}

static int read_all(void *dst, size_t n) {
    return fread(dst, 1, n, stdin) == n;
}

/* The arguments a caller passes: all of them, or for a kernel of the CPU runtimes' default build with checked
 * accesses the user's alone (attribute bounds_user_args; libpolykern adds the hidden ones, launch_proof.c). */
static size_t user_args(const pk_function_info *fi) {
    size_t i, on = 0, n = fi->num_args;
    for (i = 0; i < fi->num_attrs; i++) {
        const pk_kv *a = &fi->attrs[i];
        if (a->key.len == 12 && memcmp(a->key.ptr, "bounds_check", 12) == 0)
            on = a->value.len == 1 && a->value.ptr[0] == '1';
    }
    for (i = 0; on && i < fi->num_attrs; i++) {
        const pk_kv *a = &fi->attrs[i];
        if (a->key.len == 16 && memcmp(a->key.ptr, "bounds_user_args", 16) == 0 && a->value.len < 8) {
            char buf[8];
            memcpy(buf, a->value.ptr, a->value.len);
            buf[a->value.len] = 0;
            if (strtoul(buf, NULL, 10) < n) n = strtoul(buf, NULL, 10);
        }
    }
    return n;
}

int main(int argc, char **argv) {
    pk_error err;
    pk_artifact *art = NULL;
    pk_program *prog = NULL;
    pk_kernel *k;
    const pk_function_info *fi;
    uint32_t head[4], i, grid[3], block[3], done = PK_DONE;
    int32_t launch[6];
    uint64_t body_bytes, off = 0;
    unsigned char *body = NULL;
    void **args = NULL;
    pk_buffer **bufs = NULL;
    const char *kind = NULL;
    FILE *results = NULL;
    int results_fd, rc = 3;

    if (argc == 5 && strcmp(argv[3], "--on") == 0) kind = argv[4];
    else if (argc != 3) {
        fprintf(stderr, "usage: kbin-run K.kbin KERNEL [--on KIND] < launch-stream > results\n");
        return 2;
    }
    results_fd = dup(STDOUT_FILENO);  /* the results' stream; the process's stdout becomes stderr */
    if (results_fd < 0 || !(results = fdopen(results_fd, "wb")) || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        return fail("cannot set up the results stream");
    if (!read_all(head, sizeof head) || !read_all(launch, sizeof launch))
        return fail("stdin ended before the launch header was complete");
    memcpy(&body_bytes, &head[2], sizeof body_bytes);
    if (head[0] != PK_MAGIC) return fail("bad magic on stdin (not a polykern launch stream)");
    if (head[1] > PK_MAX_ARGS) return fail("too many arguments");
    if (body_bytes > SIZE_MAX / 2) return fail("launch body too large");
    body = malloc(body_bytes ? (size_t)body_bytes : 1);
    args = calloc(head[1] ? head[1] : 1, sizeof *args);
    bufs = calloc(head[1] ? head[1] : 1, sizeof *bufs);
    if (!body || !args || !bufs) return fail("out of memory");
    if (!read_all(body, (size_t)body_bytes)) { rc = fail("stdin ended before the launch was complete"); goto out; }
    for (i = 0; i < 6; i++)
        if (launch[i] <= 0) { rc = fail("grid and block sizes must be positive"); goto out; }
    for (i = 0; i < 3; i++) {
        grid[i] = (uint32_t)launch[i];
        block[i] = (uint32_t)launch[3 + i];
    }
    if (!(art = pk_artifact_load(argv[1], &err))) goto pkfail;
    if (!(prog = pk_program_load_first(art, kind, argv[2], &err))) goto pkfail;
    if (!(k = pk_program_kernel(prog, argv[2], &err))) goto pkfail;
    fi = pk_kernel_info(k);
    if (head[1] != fi->num_args && head[1] != user_args(fi)) {
        rc = mismatch(fi, "the launch stream has %u arguments, but the kernel takes %zu", head[1], user_args(fi));
        goto out;
    }
    for (i = 0; i < head[1]; i++) {
        uint32_t rkind;
        uint64_t n, padded;
        if (body_bytes - off < PK_RECORD) { rc = fail("argument record past the end of the body"); goto out; }
        memcpy(&rkind, body + off, 4);
        memcpy(&n, body + off + 8, 8);
        padded = (n + PK_RECORD - 1) / PK_RECORD * PK_RECORD;
        if (rkind > 2) { rc = fail("bad argument kind"); goto out; }
        if (n > body_bytes || body_bytes - off - PK_RECORD < padded) {
            rc = fail("argument data past the end of the body");
            goto out;
        }
        if ((rc = check_record(fi, i, rkind, n))) goto out;
        if (rkind == 0) {
            args[i] = body + off + PK_RECORD;
        } else {
            if (!(bufs[i] = pk_buffer_alloc(prog, n ? (size_t)n : 1, &err))) goto pkfail;
            if (n && pk_buffer_write(bufs[i], 0, body + off + PK_RECORD, (size_t)n, &err)) goto pkfail;
            args[i] = bufs[i];
        }
        off += PK_RECORD + padded;
    }
    if (pk_kernel_launch(k, head[1], args, grid, block, &err)) goto pkfail;
    fflush(stdout); /* what the kernel printed, before the results */
    off = 0;
    for (i = 0; i < head[1]; i++) {
        uint32_t rkind;
        uint64_t n;
        memcpy(&rkind, body + off, 4);
        memcpy(&n, body + off + 8, 8);
        if (rkind == 2 && n) {
            if (pk_buffer_read(bufs[i], 0, body + off + PK_RECORD, (size_t)n, &err)) goto pkfail;
            if (fwrite(body + off + PK_RECORD, 1, (size_t)n, results) != n) { rc = fail("cannot write stdout"); goto out; }
        }
        off += PK_RECORD + (n + PK_RECORD - 1) / PK_RECORD * PK_RECORD;
    }
    if (fwrite(&done, sizeof done, 1, results) != 1 || fflush(results)) { rc = fail("cannot write stdout"); goto out; }
    rc = 0;
    goto out;
pkfail:
    rc = fail(err.message);
out:
    if (bufs)
        for (i = 0; i < head[1]; i++) pk_buffer_free(bufs[i]);
    if (prog) pk_program_free(prog);
    if (art) pk_artifact_free(art);
    free(bufs);
    free(args);
    free(body);
    return rc;
}
