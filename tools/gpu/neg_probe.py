"""ON the GPU machine: which formulation of integer negation / abs keeps the wrap of MIN on NVIDIA's
compilers (NVRTC via CuPy, NVIDIA OpenCL via pyopencl). Prints one line per (api, type, variant)."""
import sys
import numpy as np

TYPES = {"i8": ("signed char", "unsigned int", np.int8, 8), "i16": ("short", "unsigned int", np.int16, 16),
         "i32": ("int", "unsigned int", np.int32, 32), "i64": ("long long", "unsigned long long", np.int64, 64)}
CL_TYPES = {"i8": ("char", "uint"), "i16": ("short", "uint"), "i32": ("int", "uint"), "i64": ("long", "ulong")}


def variants(T, U, bits):
    return {
        "neg_plain": f"({T})(-x)",
        "neg_unsigned": f"({T})(({U})0 - ({U})x)",
        "neg_notplus1": f"({T})((~({U})x) + ({U})1)",
        "abs_select_unsigned": f"({T})(x < 0 ? ({U})0 - ({U})x : ({U})x)",
        "abs_bits": f"({T})((({U})x ^ ({U})(x >> {bits - 1})) - ({U})(x >> {bits - 1}))",
        "abs_bits_int": f"({T})((({U})(long long)x ^ ({U})((long long)x >> 63)) - ({U})((long long)x >> 63))",
    }


def body(T, U, expr):
    return (f"{T} x = a[0]; {T} r = {expr}; o[0] = ({T})(r % ({T})25); o[1] = r < ({T})0 ? ({T})1 : ({T})2;"
            f" o[2] = r;")


def expect(npt):
    lo = int(np.iinfo(npt).min)
    return [-((-lo) % 25), 1, lo]


def run_cuda():
    import cupy as cp
    for tn, (T, U, npt, bits) in TYPES.items():
        for vn, expr in variants(T, U, bits).items():
            src = f'extern "C" __global__ void k(const {T}* a, {T}* o) {{ if (threadIdx.x == 0) {{ {body(T, U, expr)} }} }}'
            try:
                k = cp.RawKernel(src, "k")
                a = cp.array([np.iinfo(npt).min], npt)
                o = cp.zeros(3, npt)
                k((1,), (32,), (a, o))
                got = o.get().tolist()
                print(f"cuda {tn} {vn}: {'OK' if got == expect(npt) else 'WRONG'} got {got} want {expect(npt)}")
            except Exception as e:  # noqa: BLE001
                print(f"cuda {tn} {vn}: ERROR {type(e).__name__}: {str(e)[:200]}")


def run_opencl():
    import pyopencl as cl
    plats = [p for p in cl.get_platforms() if "nvidia" in p.name.lower()]
    if not plats:
        print("opencl: no NVIDIA platform"); return
    ctx = cl.Context(plats[0].get_devices())
    q = cl.CommandQueue(ctx)
    for tn, (T, U) in CL_TYPES.items():
        npt, bits = TYPES[tn][2], TYPES[tn][3]
        for vn, expr in variants(T, U, bits).items():
            expr = expr.replace("long long", "long")
            src = f"__kernel void k(__global const {T}* a, __global {T}* o) {{ if (get_local_id(0) == 0) {{ {body(T, U, expr)} }} }}"
            try:
                prg = cl.Program(ctx, src).build()
                a = np.array([np.iinfo(npt).min], npt); o = np.zeros(3, npt)
                mf = cl.mem_flags
                ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
                ob = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=o)
                prg.k(q, (32,), (32,), ab, ob)
                cl.enqueue_copy(q, o, ob); q.finish()
                got = o.tolist()
                print(f"opencl {tn} {vn}: {'OK' if got == expect(npt) else 'WRONG'} got {got} want {expect(npt)}")
            except Exception as e:  # noqa: BLE001
                print(f"opencl {tn} {vn}: ERROR {type(e).__name__}: {str(e)[:200]}")


if __name__ == "__main__":
    for api in sys.argv[1:] or ["cuda", "opencl"]:
        try:
            {"cuda": run_cuda, "opencl": run_opencl}[api]()
        except Exception as e:  # noqa: BLE001
            print(f"{api}: ERROR {type(e).__name__}: {e}")
