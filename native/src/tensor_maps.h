/* Hopper kernels' launch facts (tensor_maps.c): the FunctionInfo attributes tensor_maps, warpgroups and
 * shared_dynamic_align (polykern/ir/hopper.py; docs/internals.md, the attribute schema), read as
 * strictly as the Python reader, and what a launch checks and encodes from them. */
#ifndef PK_TENSOR_MAPS_H
#define PK_TENSOR_MAPS_H
#include <stddef.h>
#include <stdint.h>

#include "polykern.h"
#include "kbin_tables.h"

/* One pk.tensor_map(buffer, (rows, cols), (box_rows, box_cols), swizzle). Strings are decoded from the
 * JSON (not NUL-terminated: use the lengths). */
typedef struct pk_tmap {
    const char *name, *buffer;
    size_t name_len, buffer_len;
    const char *dim_name[2];   /* rows, cols: a scalar parameter's name, or NULL for the constant dim[] */
    size_t dim_len[2];
    uint64_t dim[2];
    uint32_t box[2];           /* box_rows, box_cols */
    unsigned elem;             /* index in pk_tmap_types */
    unsigned swizzle;          /* index in pk_tmap_swizzles */
} pk_tmap;

/* Parse a tensor_maps attribute of `len` bytes (as polykern.ir.hopper.tensor_maps_of accepts it); the
 * strings are decoded into `strings` (at least len bytes). 0: valid, *n maps; 1: malformed. */
int pk_tmaps_parse(const char *text, size_t len, pk_tmap maps[PK_TMAP_MAX], size_t *n, char *strings);

/* The values function_schema allows (kbin_text.c checks them when an artifact is read): 1 when valid. */
int pk_tmaps_attr_ok(const pk_str *v);
int pk_warpgroups_attr_ok(const pk_str *v);
int pk_align_attr_ok(const pk_str *v);

/* A Hopper kernel's launch plan: its maps with the arguments they read. */
typedef struct pk_hopper {
    unsigned warpgroups;            /* 0: not declared */
    unsigned dyn_slack;             /* bytes added to the pk.shared_dynamic array's (shared_dynamic_align) */
    size_t nmaps;
    pk_tmap maps[PK_TMAP_MAX];
    size_t buf_arg[PK_TMAP_MAX];    /* the Buffer argument each map views */
    size_t dim_arg[PK_TMAP_MAX][2]; /* the scalar argument of rows / cols, SIZE_MAX for a constant */
    char *strings;
} pk_hopper;

/* What cuTensorMapEncodeTiled takes for one map (innermost dimension first). */
typedef struct pk_tmap_encoding {
    int dtype, swizzle, l2;
    uint64_t addr, dims[2], row_bytes;
    uint32_t box[2];
} pk_tmap_encoding;

/* The plan of kernel fi: *out NULL when it has none of the Hopper attributes. PK_ERR_ARTIFACT naming the
 * kernel and the map when a map names a parameter the kernel does not have (of the right kind). */
int pk_hopper_plan(const pk_function_info *fi, pk_hopper **out, pk_error *err);
void pk_hopper_free(pk_hopper *h);
/* PK_ERR_LAUNCH unless block is exactly the declared warpgroups */
int pk_hopper_check_block(const pk_hopper *h, const pk_function_info *fi, const uint32_t block[3], pk_error *err);
/* The encodings of a launch's maps: args are the user's (scalars by address), addr[i] / bytes[i] the device
 * address and size of map i's buffer. PK_ERR_LAUNCH naming the map when a shape does not fit its buffer,
 * a row is not a multiple of 16 bytes or the address is not 16-byte aligned. */
int pk_hopper_encodings(const pk_hopper *h, const pk_function_info *fi, void *const *args, const uint64_t *addr,
                        const size_t *bytes, pk_tmap_encoding *enc, pk_error *err);
#endif
