/* Internal helpers shared by the runtime's C files (not installed). */
#ifndef PK_INTERNAL_H
#define PK_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "polykern.h"

/* ---- errors (error.c) ---- */
int pk_fail(pk_error *err, pk_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int pk_fail_at(pk_error *err, uint64_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prepend `prefix` to err->message (truncating the end). */
void pk_error_prefix(pk_error *err, const char *prefix);

/* ---- arena allocator (arena.c): everything a parsed artifact owns ---- */
typedef struct pk_arena_block pk_arena_block;
typedef struct pk_arena {
    pk_arena_block *head;
} pk_arena;
void *pk_arena_alloc(pk_arena *a, size_t size);           /* zeroed, 16-aligned, NULL on OOM */
/* n * size with overflow check */
void *pk_arena_array(pk_arena *a, size_t n, size_t size);
void pk_arena_free(pk_arena *a);

/* ---- bounds-checked little-endian reader (reader.c) ---- */
typedef struct pk_reader {
    const uint8_t *data;
    size_t size;
    size_t pos;
    pk_arena *arena;
    pk_error *err;
    const char *what;      /* context for messages: "module 2 payload" */
    uint64_t base;         /* offset of data[0] in the whole artifact, for messages */
} pk_reader;

size_t pk_rd_remaining(const pk_reader *r);
uint64_t pk_rd_offset(const pk_reader *r);   /* absolute offset of the cursor */
int pk_rd_u8(pk_reader *r, uint8_t *v, const char *field);
int pk_rd_u16(pk_reader *r, uint16_t *v, const char *field);
int pk_rd_u32(pk_reader *r, uint32_t *v, const char *field);
int pk_rd_u64(pk_reader *r, uint64_t *v, const char *field);
/* u64 length + data, length checked against the remaining bytes; no copy. */
int pk_rd_span(pk_reader *r, const uint8_t **p, size_t *n, const char *field);
/* u64 length + UTF-8 text (validated), copied NUL-terminated into the arena. */
int pk_rd_str(pk_reader *r, pk_str *s, const char *field);
/* u64 count of items at least `min_item` bytes each; rejects a count that cannot fit. */
int pk_rd_count(pk_reader *r, size_t min_item, size_t *n, const char *field);
/* map<str,str>, keys strictly increasing */
int pk_rd_str_map(pk_reader *r, pk_kv **out, size_t *n, const char *field);
int pk_rd_fail(pk_reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int pk_utf8_valid(const uint8_t *p, size_t n);
int pk_str_cmp(const pk_str *a, const pk_str *b);   /* byte order, like sorted() on UTF-8 */

/* ---- device payload decoding (payload.c) ---- */
int pk_decode_payload(pk_reader *r, pk_module *m);   /* reads the whole payload span */
int pk_layout_of_kind(const char *kind, pk_layout *layout);

/* ---- ELF relocatable object loader (elf_loader.c) ---- */
typedef struct pk_elf_image pk_elf_image;
pk_elf_image *pk_elf_load(const uint8_t *obj, size_t size, pk_error *err);
void *pk_elf_symbol(const pk_elf_image *img, const char *name);
void pk_elf_free(pk_elf_image *img);
const char *pk_host_machine_name(void);

/* ---- CPU execution (cpu_exec.c) and CUDA (cuda_exec.c) ---- */
typedef void (*pk_range_fn)(void **args, const int32_t *launch, int64_t begin, int64_t end);
typedef struct pk_pool pk_pool;
pk_pool *pk_pool_create(int nthreads, pk_error *err);
int pk_pool_threads(const pk_pool *p);
/* Run fn over groups [0, total) in chunks on the pool; returns when done. */
int pk_pool_run(pk_pool *p, pk_range_fn fn, void **args, const int32_t *launch, int64_t total,
                pk_error *err);
void pk_pool_destroy(pk_pool *p);
int pk_default_threads(void);

typedef struct pk_cuda_ctx pk_cuda_ctx;
pk_cuda_ctx *pk_cuda_open(const pk_module *m, pk_error *err);
void pk_cuda_close(pk_cuda_ctx *c);
const char *pk_cuda_device_name(const pk_cuda_ctx *c);
void *pk_cuda_function(pk_cuda_ctx *c, const pk_function_info *fi, pk_error *err);
int pk_cuda_alloc(pk_cuda_ctx *c, size_t bytes, uint64_t *dptr, pk_error *err);
void pk_cuda_free(pk_cuda_ctx *c, uint64_t dptr);
int pk_cuda_copy_htod(pk_cuda_ctx *c, uint64_t dst, const void *src, size_t n, pk_error *err);
int pk_cuda_copy_dtoh(pk_cuda_ctx *c, void *dst, uint64_t src, size_t n, pk_error *err);
int pk_cuda_launch(pk_cuda_ctx *c, void *func, const uint32_t grid[3], const uint32_t block[3],
                   unsigned shared_bytes, void **params, pk_error *err);

#endif
