/* Internal helpers shared by the runtime's C files (not installed). */
#ifndef PK_INTERNAL_H
#define PK_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>
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

/* ---- bounds-checked little-endian reader (reader.c) ----
 * Mirrors polykern.kbin.wire.Reader: same checks in the same order, same offsets in errors
 * (absolute offsets into the artifact), so C and Python agree on every input. */
typedef struct pk_reader {
    const uint8_t *data;   /* the whole artifact */
    size_t pos, end;       /* cursor and end of this reader's window */
    pk_arena *arena;
    pk_error *err;
} pk_reader;

size_t pk_rd_remaining(const pk_reader *r);
int pk_rd_fail_at(pk_reader *r, size_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int pk_rd_u8(pk_reader *r, uint8_t *v, const char *what);
int pk_rd_u16(pk_reader *r, uint16_t *v, const char *what);
int pk_rd_u32(pk_reader *r, uint32_t *v, const char *what);
int pk_rd_u64(pk_reader *r, uint64_t *v, const char *what);
int pk_rd_flag(pk_reader *r, uint8_t *v, const char *what);
/* u64 count of items of at least item_size bytes, checked against what remains */
int pk_rd_length(pk_reader *r, const char *what, size_t item_size, size_t *n);
/* u64 length + data (no copy) */
int pk_rd_span(pk_reader *r, const uint8_t **p, size_t *n, const char *what);
/* u64 length + UTF-8 text, validated, copied NUL-terminated into the arena */
int pk_rd_str(pk_reader *r, pk_str *s, const char *what);
/* pk_rd_str that also rejects "" */
int pk_rd_name(pk_reader *r, pk_str *s, const char *what);
int pk_rd_list_str(pk_reader *r, pk_str **out, size_t *n, const char *what);
/* map<str,str> / map<str,bytes>, keys strictly increasing */
int pk_rd_map_str(pk_reader *r, pk_kv **out, size_t *n, const char *what);
int pk_rd_map_names(pk_reader *r, pk_kv **out, size_t *n, const char *what);   /* keys non-empty */
int pk_rd_map_bytes(pk_reader *r, pk_blob **out, size_t *n, const char *what);
int pk_rd_expect_end(pk_reader *r, const char *what);
/* Index of the first byte of the first invalid UTF-8 sequence (as Python's decoder reports
 * it), or (size_t)-1 when all n bytes are valid. */
size_t pk_utf8_error(const uint8_t *p, size_t n);
int pk_str_cmp(const pk_str *a, const pk_str *b);   /* UTF-8 byte order = code point order */

/* ---- kbin_text.c: tables shared with Python (kbin_tables.h), how artifact strings are shown ---- */
#define PK_QUOTE_BUF 64
/* kbin.messages.quote: 'escaped', cut after PK_QUOTE_LIMIT bytes ('...); buf has PK_QUOTE_BUF bytes */
const char *pk_quote(const char *s, size_t n, char *buf, size_t size);
const char *pk_quote_str(const pk_str *s, char *buf, size_t size);
/* kbin.messages.escape into buf (cut at size - 1), returns the length written */
size_t pk_escape(const char *s, size_t n, char *buf, size_t size);
/* kbin_messages.escape (source = 0) or escape_source (source = 1) to a stream */
void pk_write_escaped(FILE *out, const char *s, size_t n, int source);
/* duplicate argument names, launch tags, attributes (function_schema) */
int pk_check_function_schema(pk_reader *r, const pk_function_info *f, const char *what, size_t tags_at,
                             size_t attrs_at);

/* ---- sha256.c ---- */
void pk_sha256_hex(const void *data, size_t n, char out[65]);

/* ---- module payloads (payload.c) ---- */
/* format version 1: the layout of a kind, 0 when version 1 has no such kind */
int pk_v1_layout_of_kind(const char *kind, pk_layout *layout);
const char *pk_layout_name(pk_layout layout);
/* decode module m's payload span of format `version` (2: starts with the layout id) */
int pk_decode_root(pk_reader *r, pk_module *m, uint32_t version);
int pk_decode_device(pk_reader *r, pk_module *m, uint32_t version);

/* ---- ELF relocatable object loader (elf_loader.c) ---- */
typedef struct pk_elf_image pk_elf_image;
pk_elf_image *pk_elf_load(const uint8_t *obj, size_t size, pk_error *err);
void *pk_elf_symbol(const pk_elf_image *img, const char *name);
void pk_elf_free(pk_elf_image *img);
const char *pk_host_machine_name(void);

/* ---- CPU execution (cpu_exec.c) and CUDA (cuda_exec.c) ---- */
typedef void (*pk_range_fn)(void **args, const int32_t *launch, int64_t begin, int64_t end);
typedef struct pk_pool pk_pool;
pk_pool *pk_pool_create(int nthreads, size_t stack_bytes, pk_error *err);
size_t pk_pool_stack_bytes(const pk_pool *p);
size_t pk_default_stack_bytes(void);
int pk_pool_threads(const pk_pool *p);
/* Run fn over groups [0, total) in chunks on the pool; returns when done. */
int pk_pool_run(pk_pool *p, pk_range_fn fn, void **args, const int32_t *launch, int64_t total,
                pk_error *err);
void pk_pool_destroy(pk_pool *p);
int pk_default_threads(void);

typedef struct pk_cuda_ctx pk_cuda_ctx;
pk_cuda_ctx *pk_cuda_open(const pk_module *m, int device, pk_error *err);
void pk_cuda_close(pk_cuda_ctx *c);
const char *pk_cuda_device_name(const pk_cuda_ctx *c);
void *pk_cuda_function(pk_cuda_ctx *c, const pk_function_info *fi, pk_error *err);
int pk_cuda_alloc(pk_cuda_ctx *c, size_t bytes, uint64_t *dptr, pk_error *err);
void pk_cuda_free(pk_cuda_ctx *c, uint64_t dptr);
int pk_cuda_copy_htod(pk_cuda_ctx *c, uint64_t dst, const void *src, size_t n, pk_error *err);
int pk_cuda_copy_dtoh(pk_cuda_ctx *c, void *dst, uint64_t src, size_t n, pk_error *err);
/* shared_bytes: the launch's dynamic shared memory; static_bytes: the function's static shared arrays
 * (past 48 KiB together the dynamic bytes must be opted into). params: a pointer to each of the nparams
 * parameters (kernelParams); maps: the Hopper tensor maps encoded and passed after them (tensor_maps.h) */
struct pk_tmap_encoding;
/* program.c: the bytes of kernel fi's pk.shared_dynamic array for a launch of args (0 without one);
 * PK_ERR_ARTIFACT for a malformed dynamic_shared attribute, PK_ERR_LAUNCH for a length below 1 */
int pk_dynamic_shared_bytes(const pk_function_info *fi, void *const *args, uint64_t *bytes, pk_error *err);
/* whether a launch of dynamic_bytes of dynamic shared memory must raise the function's limit first */
int pk_cuda_needs_opt_in(uint64_t static_bytes, uint64_t dynamic_bytes);
int pk_cuda_launch(pk_cuda_ctx *c, void *func, const uint32_t grid[3], const uint32_t block[3],
                   uint64_t static_bytes, unsigned shared_bytes, void **params, size_t nparams,
                   const struct pk_tmap_encoding *maps, size_t nmaps, pk_error *err);

#endif
