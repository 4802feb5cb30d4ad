/* CUDA modules (kind "cuda", fmt "ptx" / "cubin" / "fatbin", or "cuda" source compiled with
 * NVRTC) through the CUDA driver API, dlopen'ed at run time: libpolykern has no link-time
 * dependency on CUDA, and a host without libcuda.so.1 gets a clear PK_ERR_UNAVAILABLE. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tensor_maps.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;

typedef struct cuda_api {
    void *lib;
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*PrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, void *, void **, void **);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    /* CUDA 12 drivers and later (Hopper tensor maps); NULL on older ones, which launch everything else */
    CUresult (*TensorMapEncodeTiled)(void *, int, uint32_t, void *, const uint64_t *, const uint64_t *,
                                     const uint32_t *, const uint32_t *, int, int, int, int);
} cuda_api;

static cuda_api api;
static int api_state;        /* 0 untried, 1 ok, -1 failed */
static char api_why[300];
static pthread_mutex_t api_mu = PTHREAD_MUTEX_INITIALIZER;

struct pk_cuda_ctx {
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    char name[256];
};

static int load_api(pk_error *err) {
    int ok;
    pthread_mutex_lock(&api_mu);
    if (api_state == 0) {
        api.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!api.lib) {
            snprintf(api_why, sizeof api_why, "libcuda.so.1 could not be loaded: %s", dlerror());
            api_state = -1;
        } else {
#define SYM(field, name)                                                           \
    do {                                                                           \
        *(void **)(&api.field) = dlsym(api.lib, name);                             \
        if (!api.field && !api_why[0])                                             \
            snprintf(api_why, sizeof api_why, "libcuda.so.1 lacks %s", name);      \
    } while (0)
            SYM(Init, "cuInit");
            SYM(DeviceGetCount, "cuDeviceGetCount");
            SYM(DeviceGet, "cuDeviceGet");
            SYM(DeviceGetName, "cuDeviceGetName");
            SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
            SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
            SYM(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
            SYM(CtxSetCurrent, "cuCtxSetCurrent");
            SYM(CtxSynchronize, "cuCtxSynchronize");
            SYM(ModuleLoadDataEx, "cuModuleLoadDataEx");
            SYM(ModuleUnload, "cuModuleUnload");
            SYM(ModuleGetFunction, "cuModuleGetFunction");
            SYM(MemAlloc, "cuMemAlloc_v2");
            SYM(MemFree, "cuMemFree_v2");
            SYM(MemcpyHtoD, "cuMemcpyHtoD_v2");
            SYM(MemcpyDtoH, "cuMemcpyDtoH_v2");
            SYM(LaunchKernel, "cuLaunchKernel");
            SYM(FuncSetAttribute, "cuFuncSetAttribute");
            SYM(GetErrorName, "cuGetErrorName");
            SYM(GetErrorString, "cuGetErrorString");
#undef SYM
            *(void **)(&api.TensorMapEncodeTiled) = dlsym(api.lib, "cuTensorMapEncodeTiled");
            api_state = api_why[0] ? -1 : 1;
        }
    }
    ok = api_state == 1;
    pthread_mutex_unlock(&api_mu);
    if (!ok)
        return pk_fail(err, PK_ERR_UNAVAILABLE,
                       "CUDA runtime is not available in this environment (%s); run this "
                       "artifact on a host with an NVIDIA driver, or use its CPU module", api_why);
    return 0;
}

static int cu_fail(pk_error *err, CUresult rc, const char *what) {
    const char *name = "?", *text = "";
    if (api.GetErrorName) api.GetErrorName(rc, &name);
    if (api.GetErrorString) api.GetErrorString(rc, &text);
    return pk_fail(err, PK_ERR_DEVICE, "CUDA %s failed: %s (%d): %s", what, name ? name : "?",
                   rc, text ? text : "");
}

#define CU(call, what)                                   \
    do {                                                 \
        CUresult rc_ = (call);                           \
        if (rc_ != 0) return cu_fail(err, rc_, what);    \
    } while (0)

/* fmt "cuda": CUDA C source, compiled here by NVRTC to PTX for this device. */
static char *nvrtc_compile(const pk_module *m, int major, int minor, const char *variant, pk_error *err) {
    static const char *libs[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                 "/usr/local/cuda/lib64/libnvrtc.so"};
    typedef int (*create_t)(void **, const char *, const char *, int, const char *const *,
                            const char *const *);
    typedef int (*compile_t)(void *, int, const char *const *);
    typedef int (*size_t_fn)(void *, size_t *);
    typedef int (*get_t)(void *, char *);
    typedef int (*destroy_t)(void **);
    void *lib = NULL, *prog = NULL;
    size_t i, n = 0, logn = 0;
    char arch[64], *src, *ptx = NULL;
    const char *opts[1];
    create_t create; compile_t compile; size_t_fn ptxsize, logsize; get_t getptx, getlog;
    destroy_t destroy;
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        char path[512];
        snprintf(path, sizeof path, "%s/lib64/libnvrtc.so", home);
        lib = dlopen(path, RTLD_NOW);
    }
    for (i = 0; !lib && i < sizeof libs / sizeof libs[0]; i++) lib = dlopen(libs[i], RTLD_NOW);
    if (!lib) {
        pk_fail(err, PK_ERR_UNAVAILABLE, "this CUDA module ships CUDA C source (fmt \"cuda\"), "
                "which needs NVRTC (libnvrtc.so) to finish compiling here, and none was found");
        return NULL;
    }
    *(void **)&create = dlsym(lib, "nvrtcCreateProgram");
    *(void **)&compile = dlsym(lib, "nvrtcCompileProgram");
    *(void **)&ptxsize = dlsym(lib, "nvrtcGetPTXSize");
    *(void **)&getptx = dlsym(lib, "nvrtcGetPTX");
    *(void **)&logsize = dlsym(lib, "nvrtcGetProgramLogSize");
    *(void **)&getlog = dlsym(lib, "nvrtcGetProgramLog");
    *(void **)&destroy = dlsym(lib, "nvrtcDestroyProgram");
    if (!create || !compile || !ptxsize || !getptx || !logsize || !getlog || !destroy) {
        pk_fail(err, PK_ERR_UNAVAILABLE, "libnvrtc lacks the expected functions");
        return NULL;
    }
    src = (char *)malloc(m->payload_size + 1);
    if (!src) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    memcpy(src, m->payload, m->payload_size);
    src[m->payload_size] = 0;
    snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d%d%s", major, minor, variant);
    opts[0] = arch;
    if (create(&prog, src, "kernel.cu", 0, NULL, NULL) != 0) {
        free(src);
        pk_fail(err, PK_ERR_LOAD, "nvrtcCreateProgram failed");
        return NULL;
    }
    if (compile(prog, 1, opts) != 0) {
        char log[400] = "";
        if (logsize(prog, &logn) == 0 && logn < sizeof log) getlog(prog, log);
        pk_fail(err, PK_ERR_LOAD, "NVRTC could not compile the module for %s: %s", arch, log);
    } else if (ptxsize(prog, &n) == 0 && (ptx = (char *)calloc(n + 1, 1)) != NULL) {
        if (getptx(prog, ptx) != 0) { free(ptx); ptx = NULL; pk_fail(err, PK_ERR_LOAD, "nvrtcGetPTX failed"); }
    } else {
        pk_fail(err, PK_ERR_LOAD, "nvrtcGetPTXSize failed");
    }
    destroy(&prog);
    free(src);
    return ptx;
}

/* The architecture-specific target (sm_90a) m's kernels were built for (FunctionInfo "arch"; NULL for
 * portable code), as backends/cuda/polykern_cuda/runtime/module.py reads it: such code (wgmma, setmaxnreg)
 * runs only on that exact compute capability. */
static const pk_str *specific_arch(const pk_module *m, int *major, int *minor) {
    size_t i, d;
    for (i = 0; i < m->num_functions; i++) {
        const pk_str *a = pk_kv_find(m->functions[i].attrs, m->functions[i].num_attrs, "arch");
        /* ^sm_(\d+)(\d)a$ */
        if (!a || a->len < 6 || memcmp(a->ptr, "sm_", 3) != 0 || a->ptr[a->len - 1] != 'a' || a->len > 12) continue;
        for (d = 3; d < a->len - 1 && a->ptr[d] >= '0' && a->ptr[d] <= '9'; d++) {}
        if (d != a->len - 1) continue;
        *minor = a->ptr[a->len - 2] - '0';
        *major = atoi(a->ptr + 3) / 10;
        return a;
    }
    return NULL;
}

/* device: the ordinal, or -1 for POLYKERN_CUDA_DEVICE (default 0) */
static int open_ctx(pk_cuda_ctx *c, const pk_module *m, int device, pk_error *err) {
    int count = 0, ordinal = 0, major = 0, minor = 0, want_major = 0, want_minor = 0;
    const pk_str *arch;
    const char *env = getenv("POLYKERN_CUDA_DEVICE");
    char logbuf[4096] = "";
    int opt[2] = {5 /* CU_JIT_ERROR_LOG_BUFFER */, 6 /* ..._SIZE_BYTES */};
    void *val[2];
    char *image = NULL;
    CUresult rc;
    CU(api.Init(0), "cuInit");
    CU(api.DeviceGetCount(&count), "cuDeviceGetCount");
    if (device >= 0) ordinal = device;
    else if (env && *env) ordinal = atoi(env);
    if (count <= 0)
        return pk_fail(err, PK_ERR_UNAVAILABLE, "CUDA driver found but no CUDA device");
    if ((ordinal < 0 || ordinal >= count) && device >= 0)
        return pk_fail(err, PK_ERR_UNAVAILABLE, "CUDA device %d asked for but %d device%s exist (0..%d)",
                       ordinal, count, count == 1 ? "" : "s", count - 1);
    if (ordinal < 0 || ordinal >= count)
        return pk_fail(err, PK_ERR_UNAVAILABLE, "POLYKERN_CUDA_DEVICE=%d but %d devices exist",
                       ordinal, count);
    CU(api.DeviceGet(&c->dev, ordinal), "cuDeviceGet");
    CU(api.DeviceGetName(c->name, (int)sizeof c->name - 16, c->dev), "cuDeviceGetName");
    CU(api.DeviceGetAttribute(&major, 75, c->dev), "cuDeviceGetAttribute(major)");
    CU(api.DeviceGetAttribute(&minor, 76, c->dev), "cuDeviceGetAttribute(minor)");
    snprintf(c->name + strlen(c->name), 16, " (sm_%d%d)", major, minor);
    if ((arch = specific_arch(m, &want_major, &want_minor)) != NULL && (want_major != major || want_minor != minor))
        return pk_fail(err, PK_ERR_UNAVAILABLE, "this module was built for %.20s (architecture-specific code such as "
                       "wgmma and setmaxnreg, which runs only on compute capability %d.%d); %s is sm_%d%d: rebuild "
                       "for its architecture", arch->ptr, want_major, want_minor, c->name, major, minor);
    CU(api.PrimaryCtxRetain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain");
    CU(api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
    if (strcmp(m->fmt.ptr, "ptx") == 0) {
        image = (char *)malloc(m->payload_size + 1);   /* the driver wants NUL-terminated PTX */
        if (!image) return pk_fail(err, PK_ERR_NOMEM, "out of memory");
        memcpy(image, m->payload, m->payload_size);
        image[m->payload_size] = 0;
    } else if (strcmp(m->fmt.ptr, "cuda") == 0) {
        image = nvrtc_compile(m, major, minor, specific_arch(m, &want_major, &want_minor) ? "a" : "", err);
        if (!image) return err ? (int)err->status : PK_ERR_LOAD;
    } else if (strcmp(m->fmt.ptr, "cubin") != 0 && strcmp(m->fmt.ptr, "fatbin") != 0) {
        return pk_fail(err, PK_ERR_LOAD, "CUDA module has fmt '%s'; this runtime loads ptx, "
                       "cubin, fatbin and cuda (with NVRTC)", m->fmt.ptr);
    }
    val[0] = logbuf;
    val[1] = (void *)(uintptr_t)sizeof logbuf;
    rc = api.ModuleLoadDataEx(&c->mod, image ? (const void *)image : (const void *)m->payload, 2,
                              opt, val);
    free(image);
    if (rc != 0) {
        pk_error e2;
        cu_fail(&e2, rc, "cuModuleLoadDataEx");
        return pk_fail(err, PK_ERR_LOAD, "%s on %s; JIT log: %.200s", e2.message, c->name,
                       logbuf[0] ? logbuf : "(empty)");
    }
    return 0;
}

pk_cuda_ctx *pk_cuda_open(const pk_module *m, int device, pk_error *err) {
    pk_cuda_ctx *c;
    if (load_api(err)) return NULL;
    c = (pk_cuda_ctx *)calloc(1, sizeof *c);
    if (!c) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    c->dev = -1;
    if (open_ctx(c, m, device, err)) { pk_cuda_close(c); return NULL; }
    return c;
}

void pk_cuda_close(pk_cuda_ctx *c) {
    if (!c) return;
    if (c->mod) api.ModuleUnload(c->mod);
    if (c->ctx) api.PrimaryCtxRelease(c->dev);
    free(c);
}

const char *pk_cuda_device_name(const pk_cuda_ctx *c) { return c->name; }

void *pk_cuda_function(pk_cuda_ctx *c, const pk_function_info *fi, pk_error *err) {
    const pk_str *entry = pk_kv_find(fi->attrs, fi->num_attrs, "entry");
    const char *name = entry ? entry->ptr : fi->name.ptr;
    CUfunction f = NULL;
    CUresult rc;
    if (api.CtxSetCurrent(c->ctx) != 0) { pk_fail(err, PK_ERR_DEVICE, "cuCtxSetCurrent failed"); return NULL; }
    rc = api.ModuleGetFunction(&f, c->mod, name);
    if (rc != 0) {
        cu_fail(err, rc, "cuModuleGetFunction");
        if (err) {
            char prefix[300];
            snprintf(prefix, sizeof prefix, "kernel entry '%.200s': ", name);
            pk_error_prefix(err, prefix);
            err->status = PK_ERR_NOT_FOUND;
        }
        return NULL;
    }
    return f;
}

int pk_cuda_alloc(pk_cuda_ctx *c, size_t bytes, uint64_t *dptr, pk_error *err) {
    CUdeviceptr p = 0;
    CU(api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
    CU(api.MemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    *dptr = p;
    return 0;
}

void pk_cuda_free(pk_cuda_ctx *c, uint64_t dptr) {
    api.CtxSetCurrent(c->ctx);
    api.MemFree((CUdeviceptr)dptr);
}

int pk_cuda_copy_htod(pk_cuda_ctx *c, uint64_t dst, const void *src, size_t n, pk_error *err) {
    CU(api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
    CU(api.MemcpyHtoD((CUdeviceptr)dst, src, n), "cuMemcpyHtoD");
    return 0;
}

int pk_cuda_copy_dtoh(pk_cuda_ctx *c, void *dst, uint64_t src, size_t n, pk_error *err) {
    CU(api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
    CU(api.MemcpyDtoH(dst, (CUdeviceptr)src, n), "cuMemcpyDtoH");
    return 0;
}

/* Static + dynamic shared memory past PK_CUDA_DEFAULT_SHARED (48 KiB) is opt-in, per function: the default
 * limit of the dynamic bytes is that less the static ones (32 KiB static + 20 KiB dynamic failed to launch).
 * The rule of polykern_cuda/driver_limits.py needs_opt_in (tests/test_launch_rules_native.py compares them). */
int pk_cuda_needs_opt_in(uint64_t static_bytes, uint64_t dynamic_bytes) {
    return dynamic_bytes && static_bytes + dynamic_bytes > PK_CUDA_DEFAULT_SHARED;
}

static int launch_sync(pk_cuda_ctx *c, void *func, const uint32_t grid[3], const uint32_t block[3],
                       uint64_t static_bytes, unsigned shared_bytes, void **params, pk_error *err) {
    if (pk_cuda_needs_opt_in(static_bytes, shared_bytes))
        CU(api.FuncSetAttribute((CUfunction)func, PK_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED, (int)shared_bytes),
           "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES): the launch's pk.shared_dynamic bytes exceed "
           "what this device allows per block");
    CU(api.LaunchKernel((CUfunction)func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                        shared_bytes, NULL, params, NULL),
       "cuLaunchKernel");
    CU(api.CtxSynchronize(), "kernel execution (cuCtxSynchronize)");
    return 0;
}

/* Hopper tensor maps: each encoded into a 64-byte aligned CUtensorMap of `store` (PK_TMAP_BYTES each, plus
 * PK_TMAP_ALIGN of slack), its address appended to params after the n user parameters. */
static int encode_maps(const pk_tmap_encoding *maps, size_t nmaps, unsigned char *store, void **params, size_t n,
                       pk_error *err) {
    unsigned char *base = store + (PK_TMAP_ALIGN - (uintptr_t)store % PK_TMAP_ALIGN) % PK_TMAP_ALIGN;
    size_t i;
    static const uint32_t unit_strides[2] = {1, 1};
    if (nmaps && !api.TensorMapEncodeTiled)
        return pk_fail(err, PK_ERR_UNAVAILABLE, "this kernel's Hopper tensor maps need cuTensorMapEncodeTiled, which "
                       "this NVIDIA driver lacks (CUDA 12 or later)");
    for (i = 0; i < nmaps; i++) {
        void *map = base + i * PK_TMAP_BYTES;
        CUresult rc = api.TensorMapEncodeTiled(map, maps[i].dtype, 2, (void *)(uintptr_t)maps[i].addr, maps[i].dims,
                                               &maps[i].row_bytes, maps[i].box, unit_strides, 0, maps[i].swizzle,
                                               maps[i].l2, 0);
        if (rc != 0) {
            cu_fail(err, rc, "cuTensorMapEncodeTiled");
            if (err) {
                char prefix[160];
                snprintf(prefix, sizeof prefix, "tensor map %zu (shape (%llu, %llu), box (%u, %u)): ", i,
                         (unsigned long long)maps[i].dims[1], (unsigned long long)maps[i].dims[0], maps[i].box[1],
                         maps[i].box[0]);
                pk_error_prefix(err, prefix);
            }
            return PK_ERR_DEVICE;
        }
        params[n + i] = map;   /* kernelParams: a pointer to each parameter's bytes */
    }
    return 0;
}

int pk_cuda_launch(pk_cuda_ctx *c, void *func, const uint32_t grid[3], const uint32_t block[3],
                   uint64_t static_bytes, unsigned shared_bytes, void **params, size_t nparams,
                   const pk_tmap_encoding *maps, size_t nmaps, pk_error *err) {
    unsigned char store[PK_TMAP_MAX * PK_TMAP_BYTES + PK_TMAP_ALIGN];
    void *all_small[16 + PK_TMAP_MAX], **all = params;
    int rc;
    CU(api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
    if (nmaps > PK_TMAP_MAX) return pk_fail(err, PK_ERR_LAUNCH, "more than %u tensor maps", PK_TMAP_MAX);
    if (nmaps) {   /* the user's parameters, then the hidden tensor maps */
        all = nparams <= 16 ? all_small : (void **)calloc(nparams + nmaps, sizeof *all);
        if (!all) return pk_fail(err, PK_ERR_NOMEM, "out of memory");
        if (nparams) memcpy(all, params, nparams * sizeof *all);
        rc = encode_maps(maps, nmaps, store, all, nparams, err);
        if (rc) {
            if (all != all_small) free(all);
            return rc;
        }
    }
    rc = launch_sync(c, func, grid, block, static_bytes, shared_bytes, all, err);
    if (all != params && all != all_small) free(all);
    return rc;
}
