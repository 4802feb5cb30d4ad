/* polykern native runtime: read .kbin artifacts and run their kernels without Python.
 *
 * C99. The byte format is the one of python/polykern/kbin/wire.py (docs/internals.md,
 * "Byte format"); this header is the only public interface of libpolykern.
 *
 * Errors: every fallible call takes a pk_error* (may be NULL) and returns NULL or
 * a nonzero status on failure, with a message and, for artifact errors, the byte
 * offset where the problem was found.
 */
#ifndef POLYKERN_H
#define POLYKERN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The format version written by pk_artifact_write; versions PK_KBIN_MIN_VERSION..PK_KBIN_VERSION are read. */
#define PK_KBIN_VERSION 2u
#define PK_KBIN_MIN_VERSION 1u

typedef enum pk_status {
    PK_OK = 0,
    PK_ERR_ARTIFACT = 1,   /* malformed or unsupported .kbin */
    PK_ERR_IO = 2,         /* file could not be read */
    PK_ERR_NOMEM = 3,
    PK_ERR_LOAD = 4,       /* device code could not be loaded (ELF object, PTX, ...) */
    PK_ERR_UNAVAILABLE = 5,/* no runtime for this kind here (e.g. libcuda.so.1 missing) */
    PK_ERR_LAUNCH = 6,     /* bad launch arguments */
    PK_ERR_DEVICE = 7,     /* the device API returned an error */
    PK_ERR_NOT_FOUND = 8   /* no such function / module */
} pk_status;

typedef struct pk_error {
    pk_status status;
    int has_offset;        /* 1 when `offset` is meaningful (artifact errors) */
    uint64_t offset;       /* byte offset into the artifact */
    char message[512];
} pk_error;

/* A length-counted UTF-8 string; `ptr` is also NUL-terminated. */
typedef struct pk_str {
    const char *ptr;
    size_t len;
} pk_str;

typedef struct pk_kv {
    pk_str key;
    pk_str value;
} pk_kv;

typedef struct pk_blob {
    pk_str name;           /* shader name (smap / webgpu layouts) */
    const uint8_t *data;
    size_t size;
} pk_blob;

/* DLPack type codes, as in polykern.ir.types */
enum { PK_CODE_INT = 0, PK_CODE_UINT = 1, PK_CODE_FLOAT = 2, PK_CODE_BFLOAT = 4, PK_CODE_BOOL = 6 };
enum { PK_ARG_SCALAR = 0, PK_ARG_BUFFER = 1 };

typedef struct pk_arg_info {
    pk_str name;
    uint8_t kind;          /* PK_ARG_SCALAR or PK_ARG_BUFFER */
    uint8_t code;          /* PK_CODE_* */
    uint8_t bits;
    uint16_t lanes;
    uint8_t readonly;
} pk_arg_info;

typedef struct pk_function_info {
    pk_str name;
    size_t num_args;
    const pk_arg_info *args;
    size_t num_launch_tags;
    const pk_str *launch_tags;
    uint64_t shared_bytes;
    size_t num_attrs;
    const pk_kv *attrs;
} pk_function_info;

/* A module payload's layout. Format version 2: the payload's first byte (the id below), for any
 * module kind, known here or not. Version 1: from the kind (llvm cuda rocm opencl hexagon: bytes;
 * vulkan metal: smap; webgpu: its own layout). */
typedef enum pk_layout {
    PK_LAYOUT_ROOT = 0,    /* fmap; targets */
    PK_LAYOUT_BYTES = 1,   /* fmt; fmap; payload (one blob) */
    PK_LAYOUT_SMAP = 2,    /* fmt; fmap; map<str,bytes> (named sections) */
    PK_LAYOUT_WEBGPU = 3   /* version 1 only: fmap; map<str,bytes> (fmt is "wgsl") */
} pk_layout;

typedef struct pk_module {
    pk_str kind;
    pk_layout layout;
    pk_str fmt;            /* "" for the root */
    size_t num_functions;
    const pk_function_info *functions;  /* sorted by name */
    const uint8_t *payload;             /* PK_LAYOUT_BYTES */
    size_t payload_size;
    size_t num_shaders;                 /* PK_LAYOUT_SMAP / PK_LAYOUT_WEBGPU */
    const pk_blob *shaders;
    size_t num_targets;                 /* PK_LAYOUT_ROOT */
    const pk_str *targets;
    size_t num_imports;                 /* children in the import tree */
    const uint64_t *imports;
    size_t num_sources;                 /* fmt -> text, 0 when stripped */
    const pk_kv *sources;
    const uint8_t *encoded;             /* the module's whole payload entry as stored (format version 2:
                                           its first byte is the layout id) */
    size_t encoded_size;
    uint64_t offset;                    /* where `encoded` starts in the file */
} pk_module;

typedef struct pk_artifact {
    uint32_t version;
    size_t num_modules;
    const pk_module *modules;           /* modules[0] is the root */
    int has_sources;
    size_t num_meta;
    const pk_kv *meta;
    uint32_t crc32;
    size_t size;                        /* bytes in the artifact */
    void *internal_;
} pk_artifact;

/* ---- reading ---------------------------------------------------------------- */

/* Parse and validate `size` bytes (copied; the caller keeps ownership of `data`). */
pk_artifact *pk_artifact_parse(const void *data, size_t size, pk_error *err);
/* Read a file and parse it. */
pk_artifact *pk_artifact_load(const char *path, pk_error *err);
void pk_artifact_free(pk_artifact *art);

const pk_function_info *pk_module_find_function(const pk_module *m, const char *name);
/* Value of a map entry (attrs, meta, sources) or NULL. */
const pk_str *pk_kv_find(const pk_kv *kv, size_t n, const char *key);
/* 1 when `kind` is one of the module kinds a format-version-1 artifact may hold (version 2
 * holds any kind whose name is a lowercase identifier). */
int pk_is_known_kind(const char *kind);
/* "f32", "i64", "bool", "f32x4" ... written into buf (NUL-terminated). */
const char *pk_type_name(uint8_t code, uint8_t bits, uint16_t lanes, char *buf, size_t bufsize);

/* What `polykern inspect` prints, byte for byte: the text listing, `--json` (json.dumps with
 * indent=2, sort_keys=True) and `--source FMT`. `file` is the name shown (the basename of
 * the path, as the Python CLI shows it). pk_artifact_print_source returns 0 when it printed
 * something, else 1 with the reason written to `err_out`. */
#include <stdio.h>
void pk_artifact_describe(const pk_artifact *art, const char *file, FILE *out);
void pk_artifact_write_json(const pk_artifact *art, const char *file, FILE *out);
int pk_artifact_print_source(const pk_artifact *art, const char *file, const char *fmt, FILE *out,
                             FILE *err_out);
/* "saxpy(n: i32, a: f32, x: Buffer[f32], y: Buffer[f32, readonly])" into buf; names are escaped as
 * `polykern inspect` shows them (control characters as \xNN), cut at bufsize - 1 */
const char *pk_function_signature(const pk_function_info *f, char *buf, size_t bufsize);
/* One line, like file(1): "ELF 64-bit relocatable object, x86-64 (1234 bytes)" */
const char *pk_describe_binary(const uint8_t *data, size_t n, char *buf, size_t bufsize);
/* 1 when data is UTF-8 text without NUL bytes (PTX, C, WGSL ...) */
int pk_payload_is_text(const uint8_t *data, size_t n);

/* Encode the parsed artifact again, in format version PK_KBIN_VERSION, from its decoded fields
 * (modules of every kind, known here or not): the bytes polykern's `load(...).export()` gives.
 * For a version-2 artifact they are the bytes it was parsed from. *out is malloc'ed (free it). */
int pk_artifact_write(const pk_artifact *art, uint8_t **out, size_t *size, pk_error *err);

/* CRC-32 (zlib polynomial), continuing from `crc` (start with 0). */
uint32_t pk_crc32(uint32_t crc, const void *data, size_t size);

/* ---- running ---------------------------------------------------------------- */

typedef struct pk_program pk_program;   /* one device module loaded for execution */
typedef struct pk_kernel pk_kernel;
typedef struct pk_buffer pk_buffer;

/* Load device module `index` of the artifact (must be a runnable kind here:
 * "llvm" fmt "o" on the host machine, or "cuda" fmt "ptx"/"cubin" with libcuda.so.1).
 * The artifact must outlive the program. */
pk_program *pk_program_load(const pk_artifact *art, size_t index, pk_error *err);
/* pk_program_load on device `device`: for a "cuda" module the CUDA device ordinal (-1: the default,
 * POLYKERN_CUDA_DEVICE or 0; an ordinal this host lacks is PK_ERR_UNAVAILABLE naming how many there are);
 * a CPU ("llvm") module runs on the host, device 0 (-1 or 0). The program's buffers live on that device;
 * programs on different devices may be used from one thread (each call makes its program's context current). */
pk_program *pk_program_load_on(const pk_artifact *art, size_t index, int device, pk_error *err);
/* Load the first device module in the root's import order (optionally of `kind`)
 * that has `function` (may be NULL) and can run here. When none can, the error
 * lists each candidate and why it was refused. */
pk_program *pk_program_load_first(const pk_artifact *art, const char *kind,
                                  const char *function, pk_error *err);
void pk_program_free(pk_program *prog);
/* For a program from pk_program_load_first: the modules it skipped and why, "; "-separated
 * ("" when none), e.g. "module 1 (cuda): CUDA runtime is not available ...". */
const char *pk_program_skipped(const pk_program *prog);
const pk_module *pk_program_module(const pk_program *prog);
/* A line saying what this program runs on, e.g. "cpu: x86_64, 2 threads" or
 * "cuda: NVIDIA H100 80GB HBM3 (sm_90)". */
const char *pk_program_device(const pk_program *prog);

pk_kernel *pk_program_kernel(pk_program *prog, const char *name, pk_error *err);
const pk_function_info *pk_kernel_info(const pk_kernel *k);

/* Buffers live on the program's device (host memory for CPU programs). */
pk_buffer *pk_buffer_alloc(pk_program *prog, size_t bytes, pk_error *err);
int pk_buffer_write(pk_buffer *buf, size_t offset, const void *src, size_t bytes, pk_error *err);
int pk_buffer_read(const pk_buffer *buf, size_t offset, void *dst, size_t bytes, pk_error *err);
size_t pk_buffer_size(const pk_buffer *buf);
void pk_buffer_free(pk_buffer *buf);

/* Launch: args[i] points at the scalar value for a scalar argument (of the exact
 * size FunctionInfo gives), and IS a pk_buffer* for a buffer argument. A default CPU build's
 * launch-time bounds conditions are checked first (src/launch_proof.c); a kernel with checked
 * accesses (attribute bounds_check) may be given the user's arguments only (bounds_user_args):
 * the hidden ones are added here and a violation is PK_ERR_LAUNCH.
 * grid counts workgroups (CUDA semantics), block is the workgroup size.
 * Returns after the kernel has finished. */
int pk_kernel_launch(pk_kernel *k, size_t nargs, void *const *args,
                     const uint32_t grid[3], const uint32_t block[3], pk_error *err);

/* CPU worker count of CPU programs loaded afterwards (default: POLYKERN_CPU_THREADS or the
 * number of online CPUs). Worker stacks: POLYKERN_CPU_STACK_MB (default 64), as in Python. */
void pk_set_num_threads(int n);

#ifdef __cplusplus
}
#endif
#endif
