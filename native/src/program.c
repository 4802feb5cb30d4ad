/* Programs (a device module loaded for execution), kernels, buffers and launches.
 * CPU: "llvm" modules with fmt "o" (ELF object, elf_loader.c) run on the thread pool
 * (thread_pool.c). CUDA: "cuda" modules run through cuda_exec.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "launch_proof.h"
#include "tensor_maps.h"

#define PK_BUFFER_MAGIC 0x50424B42u  /* "BKBP" */

typedef enum { DEV_CPU, DEV_CUDA } device_kind;

struct pk_kernel {
    pk_program *prog;
    const pk_function_info *fi;
    pk_range_fn range;      /* CPU */
    void *cufn;             /* CUDA */
    pk_hopper *hopper;      /* CUDA: tensor maps, warpgroups (NULL for other kernels) */
    pk_kernel *next;
};

struct pk_program {
    const pk_module *mod;
    device_kind dev;
    pk_elf_image *img;
    pk_pool *pool;
    pk_cuda_ctx *cu;
    pk_kernel *kernels;
    char device[320];
    char skipped[1024];
};

struct pk_buffer {
    uint32_t magic;
    pk_program *prog;
    size_t size;
    void *host;             /* CPU */
    uint64_t dptr;          /* CUDA */
};

static int g_threads;

void pk_set_num_threads(int n) { g_threads = n; }

pk_program *pk_kernel_program(const pk_kernel *k) { return k->prog; }

static pk_program *load_cpu(const pk_module *m, pk_program *p, pk_error *err) {
    if (strcmp(m->fmt.ptr, "o") != 0) {
        pk_fail(err, PK_ERR_LOAD, "llvm module has fmt '%s'; the native runtime runs fmt 'o' "
                "(relocatable ELF object)", m->fmt.ptr);
        return NULL;
    }
    p->img = pk_elf_load(m->payload, m->payload_size, err);
    if (!p->img) return NULL;
    p->pool = pk_pool_create(g_threads > 0 ? g_threads : pk_default_threads(), 0, err);
    if (!p->pool) return NULL;
    p->dev = DEV_CPU;
    snprintf(p->device, sizeof p->device, "cpu: %s, %d thread%s", pk_host_machine_name(),
             pk_pool_threads(p->pool), pk_pool_threads(p->pool) == 1 ? "" : "s");
    return p;
}

pk_program *pk_program_load(const pk_artifact *art, size_t index, pk_error *err) {
    return pk_program_load_on(art, index, -1, err);
}

pk_program *pk_program_load_on(const pk_artifact *art, size_t index, int device, pk_error *err) {
    const pk_module *m;
    pk_program *p, *ok = NULL;
    if (err) memset(err, 0, sizeof *err);
    if (!art || index >= art->num_modules) {
        pk_fail(err, PK_ERR_NOT_FOUND, "no module %zu in this artifact", index);
        return NULL;
    }
    m = &art->modules[index];
    p = (pk_program *)calloc(1, sizeof *p);
    if (!p) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    p->mod = m;
    if (device < -1) {
        pk_fail(err, PK_ERR_UNAVAILABLE, "device %d: a device is an ordinal (0, 1, ...) or -1 for the default",
                device);
    } else if (strcmp(m->kind.ptr, "llvm") == 0) {
        if (device > 0)
            pk_fail(err, PK_ERR_UNAVAILABLE, "module %zu (llvm) runs on the host CPU, device 0; device %d "
                    "asked for", index, device);
        else
            ok = load_cpu(m, p, err);
    } else if (strcmp(m->kind.ptr, "cuda") == 0) {
        p->cu = pk_cuda_open(m, device, err);
        if (p->cu) {
            p->dev = DEV_CUDA;
            snprintf(p->device, sizeof p->device, "cuda: %s", pk_cuda_device_name(p->cu));
            ok = p;
        }
    } else if (strcmp(m->kind.ptr, "root") == 0) {
        pk_fail(err, PK_ERR_LOAD, "module %zu is the root module; load one of its device "
                "modules (its imports)", index);
    } else {
        pk_fail(err, PK_ERR_UNAVAILABLE, "the native runtime has no '%s' runtime (it runs "
                "'llvm' modules on the CPU and 'cuda' modules through the driver API); "
                "`kbin-inspect` can still read it", m->kind.ptr);
    }
    if (!ok) pk_program_free(p);
    return ok;
}

pk_program *pk_program_load_first(const pk_artifact *art, const char *kind, const char *function,
                                  pk_error *err) {
    char why[1024];
    size_t *stack, top = 0, len = 0, tried = 0, j;
    pk_error e;
    if (err) memset(err, 0, sizeof *err);
    why[0] = 0;
    if (!art) { pk_fail(err, PK_ERR_NOT_FOUND, "no artifact"); return NULL; }
    /* preorder walk of the import tree, children in order; a tree: each module is pushed once */
    stack = (size_t *)malloc(art->num_modules * sizeof *stack);
    if (!stack) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    for (j = art->modules[0].num_imports; j > 0; j--)
        stack[top++] = (size_t)art->modules[0].imports[j - 1];
    while (top) {
        size_t i = stack[--top];
        const pk_module *m = &art->modules[i];
        pk_program *p;
        for (j = m->num_imports; j > 0; j--) stack[top++] = (size_t)m->imports[j - 1];
        if (kind && strcmp(kind, m->kind.ptr) != 0) continue;
        if (function && !pk_module_find_function(m, function)) continue;
        tried++;
        p = pk_program_load(art, i, &e);
        if (p) {
            memcpy(p->skipped, why, sizeof why);
            free(stack);
            return p;
        }
        if (len < sizeof why - 1) {
            int n = snprintf(why + len, sizeof why - len, "%smodule %zu (%s): %s",
                             len ? "; " : "", i, m->kind.ptr, e.message);
            if (n > 0) len += (size_t)n;
            if (len > sizeof why - 1) len = sizeof why - 1;
        }
    }
    free(stack);
    if (!tried)
        pk_fail(err, PK_ERR_NOT_FOUND, "no %s%smodule%s%s in this artifact", kind ? kind : "",
                kind ? " " : "device ", function ? " has function " : "",
                function ? function : "");
    else
        pk_fail(err, PK_ERR_UNAVAILABLE, "no module can run here: %s", why);
    return NULL;
}

void pk_program_free(pk_program *p) {
    pk_kernel *k;
    if (!p) return;
    while ((k = p->kernels) != NULL) {
        p->kernels = k->next;
        pk_hopper_free(k->hopper);
        free(k);
    }
    pk_pool_destroy(p->pool);
    pk_elf_free(p->img);
    pk_cuda_close(p->cu);
    free(p);
}

const pk_module *pk_program_module(const pk_program *p) { return p->mod; }
const char *pk_program_device(const pk_program *p) { return p->device; }
const char *pk_program_skipped(const pk_program *p) { return p->skipped; }

pk_kernel *pk_program_kernel(pk_program *p, const char *name, pk_error *err) {
    const pk_function_info *fi = pk_module_find_function(p->mod, name);
    pk_kernel *k;
    if (err) memset(err, 0, sizeof *err);
    for (k = p->kernels; k; k = k->next)
        if (k->fi == fi) return k;
    if (!fi) {
        pk_fail(err, PK_ERR_NOT_FOUND, "the %s module has no function '%s'", p->mod->kind.ptr,
                name);
        return NULL;
    }
    k = (pk_kernel *)calloc(1, sizeof *k);
    if (!k) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    k->prog = p;
    k->fi = fi;
    if (p->dev == DEV_CPU) {
        char sym[300];
        void *addr;
        const pk_str *entry = pk_kv_find(fi->attrs, fi->num_attrs, "entry");
        if (entry) snprintf(sym, sizeof sym, "%s", entry->ptr);
        else snprintf(sym, sizeof sym, "%s__range", fi->name.ptr);
        addr = pk_elf_symbol(p->img, sym);
        if (!addr) {
            free(k);
            pk_fail(err, PK_ERR_NOT_FOUND, "the CPU object does not define '%s' for function "
                    "'%s'", sym, name);
            return NULL;
        }
        memcpy(&k->range, &addr, sizeof addr);   /* object pointer -> function pointer */
    } else {
        if (pk_hopper_plan(fi, &k->hopper, err)) { free(k); return NULL; }
        k->cufn = pk_cuda_function(p->cu, fi, err);
        if (!k->cufn) { pk_hopper_free(k->hopper); free(k); return NULL; }
    }
    k->next = p->kernels;
    p->kernels = k;
    return k;
}

const pk_function_info *pk_kernel_info(const pk_kernel *k) { return k->fi; }

pk_buffer *pk_buffer_alloc(pk_program *p, size_t bytes, pk_error *err) {
    pk_buffer *b = (pk_buffer *)calloc(1, sizeof *b);
    if (!b) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    b->magic = PK_BUFFER_MAGIC;
    b->prog = p;
    b->size = bytes;
    if (p->dev == DEV_CPU) {
        b->host = calloc(bytes ? bytes : 1, 1);
        if (!b->host) {
            free(b);
            pk_fail(err, PK_ERR_NOMEM, "out of memory allocating a %zu-byte buffer", bytes);
            return NULL;
        }
    } else if (pk_cuda_alloc(p->cu, bytes, &b->dptr, err)) {
        free(b);
        return NULL;
    }
    return b;
}

static int range_check(const pk_buffer *b, size_t off, size_t n, pk_error *err) {
    if (!b || b->magic != PK_BUFFER_MAGIC)
        return pk_fail(err, PK_ERR_LAUNCH, "not a pk_buffer");
    if (off > b->size || n > b->size - off)
        return pk_fail(err, PK_ERR_LAUNCH, "range [%zu, %zu+%zu) is outside the %zu-byte buffer",
                       off, off, n, b->size);
    return 0;
}

int pk_buffer_write(pk_buffer *b, size_t off, const void *src, size_t n, pk_error *err) {
    if (range_check(b, off, n, err)) return PK_ERR_LAUNCH;
    if (!n) return 0;
    if (b->prog->dev == DEV_CPU) {
        memcpy((char *)b->host + off, src, n);
        return 0;
    }
    return pk_cuda_copy_htod(b->prog->cu, b->dptr + off, src, n, err);
}

int pk_buffer_read(const pk_buffer *b, size_t off, void *dst, size_t n, pk_error *err) {
    if (range_check(b, off, n, err)) return PK_ERR_LAUNCH;
    if (!n) return 0;
    if (b->prog->dev == DEV_CPU) {
        memcpy(dst, (const char *)b->host + off, n);
        return 0;
    }
    return pk_cuda_copy_dtoh(b->prog->cu, dst, b->dptr + off, n, err);
}

size_t pk_buffer_size(const pk_buffer *b) { return b->size; }

void pk_buffer_free(pk_buffer *b) {
    if (!b) return;
    if (b->prog->dev == DEV_CPU) free(b->host);
    else pk_cuda_free(b->prog->cu, b->dptr);
    b->magic = 0;
    free(b);
}

/* A decimal of 1 to PK_DYN_DIGITS_MAX digits without a leading zero (as polykern/ir/dynamic_shared.py
 * parse_attr reads it) at *p, stored in *out; *p is moved past it. 0 if there is none. */
static int attr_number(const char **p, unsigned long *out) {
    const char *s = *p;
    unsigned long v = 0;
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9' && n <= PK_DYN_DIGITS_MAX) v = v * 10 + (unsigned long)(s[n++] - '0');
    if (n == 0 || n > PK_DYN_DIGITS_MAX || (n > 1 && s[0] == '0')) return 0;
    *p = s + n;
    *out = v;
    return 1;
}

/* The bytes of the kernel's pk.shared_dynamic array for this launch (0 without one): attribute
 * PK_KEY_DYNAMIC_SHARED = "INDEX,BYTES" (its grammar generated from polykern/ir/dynamic_shared.py, read
 * as polykern/runtime/shared_launch.py dynamic_shared_of reads it, in its words) names the i32 size argument, in
 * elements, and the element size. The length must be >= PK_DYN_MIN_LENGTH, as shared_launch.py requires
 * on every runtime. */
int pk_dynamic_shared_bytes(const pk_function_info *fi, void *const *args, uint64_t *bytes, pk_error *err) {
    const pk_str *attr = pk_kv_find(fi->attrs, fi->num_attrs, PK_KEY_DYNAMIC_SHARED);
    unsigned long index = 0, elem = 0;
    const char *p;
    char q[PK_QUOTE_BUF];
    int32_t n;
    *bytes = 0;
    if (!attr) return 0;
    p = attr->ptr;
    if (!attr_number(&p, &index) || *p++ != ',' || !attr_number(&p, &elem) || *p ||
        (size_t)(p - attr->ptr) != attr->len || index > PK_DYN_INDEX_MAX || elem >= 32 ||
        !((PK_DYN_ELEM_MASK >> elem) & 1u) || index >= fi->num_args || fi->args[index].kind != PK_ARG_SCALAR ||
        fi->args[index].code != PK_DYN_SIZE_CODE || fi->args[index].bits != PK_DYN_SIZE_BITS)
        return pk_fail(err, PK_ERR_ARTIFACT, PK_LMSG_DYNAMIC_SHARED_ATTR, fi->name.ptr,
                       pk_quote_str(attr, q, sizeof q), PK_DYN_ELEM_BYTES);
    memcpy(&n, args[index], sizeof n);
    if (n < PK_DYN_MIN_LENGTH)
        return pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': argument %lu ('%s', the pk.shared_dynamic array's "
                       "length in elements) is %d; it must be >= %d", fi->name.ptr, index,
                       fi->args[index].name.ptr, (int)n, PK_DYN_MIN_LENGTH);
    *bytes = (uint64_t)n * elem;
    return 0;
}

/* A Hopper kernel's launch (tensor_maps.h): the block of its declared warpgroups, its tensor maps' encodings
 * from the buffers they view, and the alignment slack of its pk.shared_dynamic array added to *dyn_bytes
 * (as the Python CUDA runtime does: only with a dynamic shared array). */
static int hopper_launch(const pk_kernel *k, void *const *args, const uint32_t block[3], uint64_t *dyn_bytes,
                         pk_tmap_encoding *maps, size_t *nmaps, pk_error *err) {
    const pk_hopper *h = k->hopper;
    uint64_t addr[PK_TMAP_MAX];
    size_t bytes[PK_TMAP_MAX], i;
    int rc = pk_hopper_check_block(h, k->fi, block, err);
    if (rc) return rc;
    for (i = 0; i < h->nmaps; i++) {
        const pk_buffer *b = (const pk_buffer *)args[h->buf_arg[i]];
        addr[i] = b->dptr;
        bytes[i] = b->size;
    }
    if ((rc = pk_hopper_encodings(h, k->fi, args, addr, bytes, maps, err)) != 0) return rc;
    *nmaps = h->nmaps;
    if (*dyn_bytes) *dyn_bytes += h->dyn_slack;
    return 0;
}

static const char *const AXIS[3] = {"x", "y", "z"};   /* dimension d in messages */

int pk_kernel_launch(pk_kernel *k, size_t nargs, void *const *args, const uint32_t grid[3],
                     const uint32_t block[3], pk_error *err) {
    const pk_function_info *fi = k->fi;
    void *argv_small[16], **argv = argv_small;
    size_t i;
    int rc = 0, d;
    int64_t groups = 1;
    if (err) memset(err, 0, sizeof *err);
    if (pk_bounds_hidden_args(fi, nargs)) return pk_bounds_launch(k, nargs, args, grid, block, err);
    if (nargs != fi->num_args)
        return pk_fail(err, PK_ERR_LAUNCH, "%s takes %zu arguments, %zu given", fi->name.ptr,
                       fi->num_args, nargs);
    for (d = 0; d < 3; d++) {
        if (grid[d] == 0 || block[d] == 0 || grid[d] > PK_MAX_DIM || block[d] > PK_MAX_DIM)
            return pk_fail(err, PK_ERR_LAUNCH, "%s: grid and block sizes must be in [1, 2^31) "
                           "(dimension %d: grid %u, block %u)", fi->name.ptr, d, grid[d],
                           block[d]);
        groups *= (int64_t)grid[d];
    }
    if ((uint64_t)block[0] * block[1] * block[2] > INT32_MAX)
        return pk_fail(err, PK_ERR_LAUNCH, "%s: block has more than 2^31 threads", fi->name.ptr);
    for (d = 0; d < 3; d++) {
        /* the language's limit, as polykern.runtime.launch.check_global_size: global_id is an i32 */
        uint64_t items = (uint64_t)grid[d] * block[d];
        if (items > PK_MAX_GLOBAL_SIZE)
            return pk_fail(err, PK_ERR_LAUNCH, PK_LMSG_GLOBAL_SIZE, fi->name.ptr, (unsigned long long)d,
                           (unsigned long long)d, (unsigned long long)grid[d], (unsigned long long)block[d],
                           (unsigned long long)items, AXIS[d], (unsigned long long)d, PK_MAX_GLOBAL_SIZE);
    }
    for (i = 0; i < nargs; i++)
        if (!args[i] || (fi->args[i].kind == PK_ARG_BUFFER && ((pk_buffer *)args[i])->magic != PK_BUFFER_MAGIC))
            break;  /* reported below */
    if (i == nargs && (rc = pk_launch_proof_check(fi, nargs, args, grid, block, err))) return rc;
    if (k->prog->dev == DEV_CPU) {
        /* as the Python CPU runtime (polykern.runtime.launch_rules.PORTABLE_MAX_GRID): CUDA's grid limits */
        static const uint32_t max_grid[3] = PK_PORTABLE_MAX_GRID;
        for (d = 0; d < 3; d++)
            if (grid[d] > max_grid[d])
                return pk_fail(err, PK_ERR_LAUNCH, PK_LMSG_GRID_LIMIT, fi->name.ptr, (unsigned long long)grid[0],
                               (unsigned long long)grid[1], (unsigned long long)grid[2],
                               (unsigned long long)grid[d], AXIS[d], PK_CPU_GRID_LIMIT,
                               (unsigned long long)max_grid[0], (unsigned long long)max_grid[1],
                               (unsigned long long)max_grid[2]);
    }
    if (nargs > 16 && !(argv = (void **)calloc(nargs, sizeof *argv)))
        return pk_fail(err, PK_ERR_NOMEM, "out of memory");
    for (i = 0; i < nargs && !rc; i++) {
        const pk_arg_info *a = &fi->args[i];
        if (!args[i]) {
            rc = pk_fail(err, PK_ERR_LAUNCH, "%s: argument %zu ('%s') is NULL", fi->name.ptr, i,
                         a->name.ptr);
        } else if (a->kind == PK_ARG_BUFFER) {
            pk_buffer *b = (pk_buffer *)args[i];
            if (b->magic != PK_BUFFER_MAGIC || b->prog != k->prog)
                rc = pk_fail(err, PK_ERR_LAUNCH, "%s: argument %zu ('%s') must be a pk_buffer "
                             "allocated on this program's device", fi->name.ptr, i, a->name.ptr);
            /* the kernel ABI (and cuLaunchKernel) take a pointer to the data pointer */
            else argv[i] = k->prog->dev == DEV_CPU ? (void *)&b->host : (void *)&b->dptr;
        } else {
            argv[i] = args[i];
        }
    }
    uint64_t dyn_bytes = 0;
    if (!rc) rc = pk_dynamic_shared_bytes(fi, args, &dyn_bytes, err);
    if (!rc) {
        if (k->prog->dev == DEV_CPU && dyn_bytes && fi->shared_bytes + dyn_bytes > PK_SHARED_LIMIT) {
            rc = pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': its shared arrays need %llu bytes (%llu of them "
                         "the pk.shared_dynamic array's); the language's limit of shared arrays is %u bytes "
                         "per work-group", fi->name.ptr, (unsigned long long)(fi->shared_bytes + dyn_bytes),
                         (unsigned long long)dyn_bytes, PK_SHARED_LIMIT);
        } else if (k->prog->dev == DEV_CPU) {
            int32_t launch[6];
            const pk_str *ib = pk_kv_find(fi->attrs, fi->num_attrs, "item_bytes");
            unsigned long long items = (unsigned long long)block[0] * block[1] * block[2];
            unsigned long long need = (ib ? strtoull(ib->ptr, NULL, 10) : 0) * items +
                                      fi->shared_bytes + dyn_bytes + PK_CPU_STACK_MARGIN;
            size_t have = pk_pool_stack_bytes(k->prog->pool);
            if (need > have) {
                if (argv != argv_small) free(argv);
                return pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': block (%u, %u, %u) needs about "
                               "%llu MiB of stack per CPU worker for shared and per-work-item "
                               "storage; the workers have %zu MiB (raise POLYKERN_CPU_STACK_MB "
                               "before loading, or use smaller blocks)", fi->name.ptr, block[0],
                               block[1], block[2], need >> 20, have >> 20);
            }
            for (d = 0; d < 3; d++) {
                launch[d] = (int32_t)grid[d];
                launch[3 + d] = (int32_t)block[d];
            }
            rc = pk_pool_run(k->prog->pool, k->range, argv, launch, groups, err);
        } else {
            pk_tmap_encoding maps[PK_TMAP_MAX];
            size_t nmaps = 0;
            if (k->hopper) rc = hopper_launch(k, args, block, &dyn_bytes, maps, &nmaps, err);
            if (!rc && dyn_bytes > UINT32_MAX)
                rc = pk_fail(err, PK_ERR_LAUNCH, "kernel '%s': its pk.shared_dynamic array needs %llu "
                             "bytes", fi->name.ptr, (unsigned long long)dyn_bytes);
            if (!rc)
                rc = pk_cuda_launch(k->prog->cu, k->cufn, grid, block, fi->shared_bytes, (unsigned)dyn_bytes,
                                    argv, nargs, maps, nmaps, err);
        }
    }
    if (argv != argv_small) free(argv);
    return rc;
}
