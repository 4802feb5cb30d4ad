"""ON the GPU machine: second probe (see neg_probe.py): formulations with no overflow on any path
(x == MIN ? x : -x), opaque inline asm, and hand-written PTX, to find which layer folds the wrap."""
import os
import sys
import tempfile
import numpy as np

C = {"i16": ("short", "unsigned int", np.int16, "(-32767-1)"), "i32": ("int", "unsigned int", np.int32, "(-2147483647-1)"),
     "i64": ("long long", "unsigned long long", np.int64, "(-9223372036854775807LL-1)")}


def expect(npt):
    lo = int(np.iinfo(npt).min)
    return [-((-lo) % 25), 1, lo]


def cvariants(T, U, MIN, cuda):
    v = {
        "neg_minsel": f"(x == ({T}){MIN} ? x : ({T})(-x))",
        "abs_minsel": f"(x == ({T}){MIN} ? x : (x < 0 ? ({T})(-x) : x))",
        "abs_minsel_u": f"(x == ({T}){MIN} ? x : ({T})(x < 0 ? ({U})0 - ({U})x : ({U})x))",
    }
    if cuda and T != "long long":
        v["neg_asm_launder"] = f"({T})pk_launder(({T})(({U})0 - ({U})x))"
        v["abs_asm_launder"] = f"({T})pk_launder(({T})(x < 0 ? ({U})0 - ({U})x : ({U})x))"
    return v


LAUNDER = ('__device__ __forceinline__ int pk_launder(int v) { asm volatile("" : "+r"(v)); return v; }\n')


def body(T, expr):
    return (f"{T} x = a[0]; {T} r = {expr}; o[0] = ({T})(r % ({T})25); o[1] = r < ({T})0 ? ({T})1 : ({T})2;"
            f" o[2] = r;")


def report(api, tn, vn, got, npt):
    print(f"{api} {tn} {vn}: {'OK' if got == expect(npt) else 'WRONG'} got {got} want {expect(npt)}", flush=True)


def run_cuda():
    import cupy as cp
    for tn, (T, U, npt, MIN) in C.items():
        for vn, expr in cvariants(T, U, MIN, True).items():
            src = LAUNDER + f'extern "C" __global__ void k(const {T}* a, {T}* o) {{ if (threadIdx.x == 0) {{ {body(T, expr)} }} }}'
            try:
                k = cp.RawKernel(src, "k")
                a = cp.array([np.iinfo(npt).min], npt); o = cp.zeros(3, npt)
                k((1,), (32,), (a, o)); report("cuda", tn, vn, o.get().tolist(), npt)
            except Exception as e:  # noqa: BLE001
                print(f"cuda {tn} {vn}: ERROR {type(e).__name__}: {str(e)[:300]}")


PTX_HEAD = ".version 7.8\n.target sm_90\n.address_size 64\n"
PTX = {
    ("i16", "neg_s16"): """
.visible .entry k(.param .u64 pa, .param .u64 po) {
 .reg .pred %p<3>; .reg .b16 %rs<8>; .reg .b64 %rd<3>;
 ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [po];
 ld.global.b16 %rs1, [%rd1]; neg.s16 %rs2, %rs1; rem.s16 %rs3, %rs2, 25; st.global.b16 [%rd2], %rs3;
 setp.lt.s16 %p1, %rs2, 0; selp.b16 %rs4, 1, 2, %p1; st.global.b16 [%rd2+2], %rs4; st.global.b16 [%rd2+4], %rs2; ret; }""",
    ("i16", "neg_s32_cvt"): """
.visible .entry k(.param .u64 pa, .param .u64 po) {
 .reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<3>;
 ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [po];
 ld.global.s16 %r1, [%rd1]; neg.s32 %r2, %r1; cvt.s32.s16 %r3, %r2; rem.s32 %r4, %r3, 25; st.global.b16 [%rd2], %r4;
 setp.lt.s32 %p1, %r3, 0; selp.b32 %r5, 1, 2, %p1; st.global.b16 [%rd2+2], %r5; st.global.b16 [%rd2+4], %r3; ret; }""",
    ("i32", "abs_s32"): """
.visible .entry k(.param .u64 pa, .param .u64 po) {
 .reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<3>;
 ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [po];
 ld.global.b32 %r1, [%rd1]; abs.s32 %r2, %r1; rem.s32 %r3, %r2, 25; st.global.b32 [%rd2], %r3;
 setp.lt.s32 %p1, %r2, 0; selp.b32 %r4, 1, 2, %p1; st.global.b32 [%rd2+4], %r4; st.global.b32 [%rd2+8], %r2; ret; }""",
    ("i32", "abs_neg_selp"): """
.visible .entry k(.param .u64 pa, .param .u64 po) {
 .reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<3>;
 ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [po];
 ld.global.b32 %r1, [%rd1]; neg.s32 %r5, %r1; setp.lt.s32 %p2, %r1, 0; selp.b32 %r2, %r5, %r1, %p2;
 rem.s32 %r3, %r2, 25; st.global.b32 [%rd2], %r3;
 setp.lt.s32 %p1, %r2, 0; selp.b32 %r4, 1, 2, %p1; st.global.b32 [%rd2+4], %r4; st.global.b32 [%rd2+8], %r2; ret; }""",
}


def run_ptx():
    import cupy as cp
    d = tempfile.mkdtemp()
    for (tn, vn), body_ in PTX.items():
        npt = C[tn][2]
        path = os.path.join(d, f"{tn}_{vn}.ptx")
        with open(path, "w") as fh:
            fh.write(PTX_HEAD + body_ + "\n")
        try:
            k = cp.RawModule(path=path).get_function("k")
            a = cp.array([np.iinfo(npt).min], npt); o = cp.zeros(3, npt)
            k((1,), (32,), (a, o)); report("ptx", tn, vn, o.get().tolist(), npt)
        except Exception as e:  # noqa: BLE001
            print(f"ptx {tn} {vn}: ERROR {type(e).__name__}: {str(e)[:300]}")


def run_opencl():
    import pyopencl as cl
    plats = [p for p in cl.get_platforms() if "nvidia" in p.name.lower()]
    if not plats:
        print("opencl: no NVIDIA platform"); return
    ctx = cl.Context(plats[0].get_devices()); q = cl.CommandQueue(ctx)
    for tn, (T, U, npt, MIN) in C.items():
        T, U, MIN = T.replace("long long", "long"), U.replace("unsigned long long", "ulong").replace("unsigned int", "uint"), MIN.replace("LL", "L")
        for vn, expr in cvariants(T, U, MIN, False).items():
            src = f"__kernel void k(__global const {T}* a, __global {T}* o) {{ if (get_local_id(0) == 0) {{ {body(T, expr)} }} }}"
            try:
                prg = cl.Program(ctx, src).build()
                a = np.array([np.iinfo(npt).min], npt); o = np.zeros(3, npt); mf = cl.mem_flags
                ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
                ob = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=o)
                prg.k(q, (32,), (32,), ab, ob); cl.enqueue_copy(q, o, ob); q.finish()
                report("opencl", tn, vn, o.tolist(), npt)
            except Exception as e:  # noqa: BLE001
                print(f"opencl {tn} {vn}: ERROR {type(e).__name__}: {str(e)[:300]}")


if __name__ == "__main__":
    for api in sys.argv[1:] or ["cuda", "ptx", "opencl"]:
        try:
            {"cuda": run_cuda, "ptx": run_ptx, "opencl": run_opencl}[api]()
        except Exception as e:  # noqa: BLE001
            print(f"{api}: ERROR {type(e).__name__}: {e}")
