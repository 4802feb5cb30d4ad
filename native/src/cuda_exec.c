/* CUDA modules (kind "cuda", fmt "ptx" / "cubin" / "fatbin", or "cuda" source compiled with
 * NVRTC) through the CUDA driver API, dlopen'ed at run time: libpolykern has no link-time
 * dependency on CUDA, and a host without libcuda.so.1 gets a clear PK_ERR_UNAVAILABLE. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
static char *nvrtc_compile(const pk_module *m, int major, int minor, pk_error *err) {
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
    snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d%d", major, minor);
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

static int open_ctx(pk_cuda_ctx *c, const pk_module *m, pk_error *err) {
    int count = 0, ordinal = 0, major = 0, minor = 0;
    const char *env = getenv("POLYKERN_CUDA_DEVICE");
    char logbuf[4096] = "";
    int opt[2] = {5 /* CU_JIT_ERROR_LOG_BUFFER */, 6 /* ..._SIZE_BYTES */};
    void *val[2];
    char *image = NULL;
    CUresult rc;
    CU(api.Init(0), "cuInit");
    CU(api.DeviceGetCount(&count), "cuDeviceGetCount");
    if (env && *env) ordinal = atoi(env);
    if (count <= 0)
        return pk_fail(err, PK_ERR_UNAVAILABLE, "CUDA driver found but no CUDA device");
    if (ordinal < 0 || ordinal >= count)
        return pk_fail(err, PK_ERR_UNAVAILABLE, "POLYKERN_CUDA_DEVICE=%d but %d devices exist",
                       ordinal, count);
    CU(api.DeviceGet(&c->dev, ordinal), "cuDeviceGet");
    CU(api.DeviceGetName(c->name, (int)sizeof c->name - 16, c->dev), "cuDeviceGetName");
    CU(api.DeviceGetAttribute(&major, 75, c->dev), "cuDeviceGetAttribute(major)");
    CU(api.DeviceGetAttribute(&minor, 76, c->dev), "cuDeviceGetAttribute(minor)");
    snprintf(c->name + strlen(c->name), 16, " (sm_%d%d)", major, minor);
    CU(api.PrimaryCtxRetain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain");
    CU(api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
    if (strcmp(m->fmt.ptr, "ptx") == 0) {
        image = (char *)malloc(m->payload_size + 1);   /* the driver wants NUL-terminated PTX */
        if (!image) return pk_fail(err, PK_ERR_NOMEM, "out of memory");
        memcpy(image, m->payload, m->payload_size);
        image[m->payload_size] = 0;
    } else if (strcmp(m->fmt.ptr, "cuda") == 0) {
        image = nvrtc_compile(m, major, minor, err);
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

pk_cuda_ctx *pk_cuda_open(const pk_module *m, pk_error *err) {
    pk_cuda_ctx *c;
    if (load_api(err)) return NULL;
    c = (pk_cuda_ctx *)calloc(1, sizeof *c);
    if (!c) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    c->dev = -1;
    if (open_ctx(c, m, err)) { pk_cuda_close(c); return NULL; }
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
    /* Hopper kernels (docs/language.md 5.3) take hidden tensor maps encoded at launch and need a block of their
       declared warpgroups: the Python CUDA runtime launches them, libpolykern does not yet (refused by name,
       never launched with parameters it did not pass). */
    if (pk_kv_find(fi->attrs, fi->num_attrs, "tensor_maps") || pk_kv_find(fi->attrs, fi->num_attrs, "warpgroups")) {
        pk_fail(err, PK_ERR_UNAVAILABLE, "kernel '%.200s' uses Hopper tensor maps / warpgroups, which libpolykern does "
                "not launch yet; launch it with polykern's Python CUDA runtime", fi->name.ptr);
        return NULL;
    }
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

int pk_cuda_launch(pk_cuda_ctx *c, void *func, const uint32_t grid[3], const uint32_t block[3],
                   uint64_t static_bytes, unsigned shared_bytes, void **params, pk_error *err) {
    CU(api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
    /* static + dynamic shared memory past 48 KiB is opt-in, per function: the default limit of the
     * dynamic bytes is 48 KiB less the static ones (32 KiB static + 20 KiB dynamic failed to launch) */
    if (shared_bytes && static_bytes + shared_bytes > 48 * 1024)
        CU(api.FuncSetAttribute((CUfunction)func, 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */,
                                (int)shared_bytes),
           "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES): the launch's pk.shared_dynamic bytes exceed "
           "what this device allows per block");
    CU(api.LaunchKernel((CUfunction)func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                        shared_bytes, NULL, params, NULL),
       "cuLaunchKernel");
    CU(api.CtxSynchronize(), "kernel execution (cuCtxSynchronize)");
    return 0;
}
