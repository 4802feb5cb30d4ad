"""Hopper objects passed to @pk.func device functions (docs/language.md 3, "Device functions", and 5.3):
``pk.WgAcc`` / ``pk.WgVec`` / ``pk.MBarriers`` / ``pk.TensorMap`` parameters alias the caller's objects, and
the Hopper operations work on them inside the function.

One attention kernel (tensor copies, a wgmma loop, the online softmax on S's registers, O += P V with P from
S's registers, the final store) is written three ways: inline, with its steps in device functions, and with
those called by device functions again. The IR interpreter gives bit-identical results for the three, and their
CUDA C does the same operations. What a function's operations record for the kernel (a shared array swizzled
by a wgmma in the function, the alignment wg_store needs of its buffer) reaches the kernel; declarations stay
in kernels, and wrong arguments are located errors naming the parameter.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, Shared, f16, f32, i32
from polykern.errors import KernelTypeError
from polykern.ir import hopper as H
from polykern.ir import nodes as ir
from polykern.ir.vector import ALIGN_ATTR
from polykern.testing.interp import interpret
from kernel_sources import make_module

NEG_INF = float("-inf")
D = 64              # head dimension: one 64-column panel
BN = 64             # key columns a step
Q_OFF, K_OFF, V_OFF = 0, 64 * D, 64 * D + BN * D   # element offsets of the Q, K and V tiles in `tiles`
TILE_BYTES = (64 * D + 2 * BN * D) * 2
SHARED_ELEMS = 64 * D + 2 * BN * D


# ---------------------------------------------------------------------- the kernel written inline


@pk.kernel
def attn_0(seq: i32, scale: f32, Q: Buffer[f16, "readonly"], K: Buffer[f16, "readonly"],
           V: Buffer[f16, "readonly"], O: Buffer[f16]):
    pk.warpgroups(1)
    tq = pk.tensor_map(Q, (seq, D), (64, 64), "128B")
    tk = pk.tensor_map(K, (seq, D), (BN, 64), "128B")
    tv = pk.tensor_map(V, (seq, D), (BN, 64), "128B")
    tiles = pk.shared_dynamic(f16)
    bar = pk.mbarriers(1)
    S = pk.wg_acc(f32, 64, BN)
    Oacc = pk.wg_acc(f32, 64, D)
    m = pk.wg_vec(f32)
    l = pk.wg_vec(f32)
    alpha = pk.wg_vec(f32)
    red = pk.wg_vec(f32)
    q0 = pk.group_id(0) * 64
    if pk.local_id(0) == 0:
        pk.mbarrier_init(bar, 0, 1)
    pk.barrier()
    for i in pk.wg_rows():
        m[i] = NEG_INF
        l[i] = 0.0
    pk.wg_fill(Oacc, 0.0)
    for it in range(seq // BN):
        if pk.local_id(0) == 0:
            pk.mbarrier_arrive_tx(bar, 0, TILE_BYTES)
            pk.tma_load(tiles, Q_OFF, tq, q0, 0, bar, 0)
            pk.tma_load(tiles, K_OFF, tk, it * BN, 0, bar, 0)
            pk.tma_load(tiles, V_OFF, tv, it * BN, 0, bar, 0)
        pk.mbarrier_wait(bar, 0, it % 2)
        pk.wg_fill(S, 0.0)
        for kk in range(4):
            pk.wgmma(S, tiles, Q_OFF + kk * 16, tiles, K_OFF + kk * 16)
        pk.wgmma_commit()
        pk.wgmma_wait(0)
        pk.wg_row_max(red, S)
        for i in pk.wg_rows():
            mn = pk.max(m[i], red[i] * scale)
            alpha[i] = pk.exp2(m[i] - mn)
            m[i] = mn
        for i, j in pk.wg_elements(S):
            S[i, j] = pk.exp2(S[i, j] * scale - m[i])
        pk.wg_row_sum(red, S)
        for i in pk.wg_rows():
            l[i] = l[i] * alpha[i] + red[i]
        for i, j in pk.wg_elements(Oacc):
            Oacc[i, j] = Oacc[i, j] * alpha[i]
        for kk in range(BN // 16):
            pk.wgmma_kn(Oacc, S, kk * 16, tiles, V_OFF + kk * 16 * 64, BN * 64)
        pk.wgmma_commit()
        pk.wgmma_wait(0)
        pk.barrier()
    for i, j in pk.wg_elements(Oacc):
        Oacc[i, j] = Oacc[i, j] / l[i]
    pk.wg_store(O, q0 * D, D, Oacc)


# ---------------------------------------------------------------------- its steps in device functions


@pk.func
def load_step(tiles: Shared[f16], tq: pk.TensorMap, tk: pk.TensorMap, tv: pk.TensorMap, bar: pk.MBarriers,
              q0: i32, row: i32):
    if pk.local_id(0) == 0:
        pk.mbarrier_arrive_tx(bar, 0, TILE_BYTES)
        pk.tma_load(tiles, Q_OFF, tq, q0, 0, bar, 0)
        pk.tma_load(tiles, K_OFF, tk, row, 0, bar, 0)
        pk.tma_load(tiles, V_OFF, tv, row, 0, bar, 0)


@pk.func
def mma_tile(acc: pk.WgAcc, tiles: Shared[f16], a_off: i32, b_off: i32):
    for kk in range(4):
        pk.wgmma(acc, tiles, a_off + kk * 16, tiles, b_off + kk * 16)


@pk.func
def softmax_step(S: pk.WgAcc, O: pk.WgAcc, m: pk.WgVec, l: pk.WgVec, alpha: pk.WgVec, red: pk.WgVec, scale: f32):
    pk.wg_row_max(red, S)
    for i in pk.wg_rows():
        mn = pk.max(m[i], red[i] * scale)
        alpha[i] = pk.exp2(m[i] - mn)
        m[i] = mn
    for i, j in pk.wg_elements(S):
        S[i, j] = pk.exp2(S[i, j] * scale - m[i])
    pk.wg_row_sum(red, S)
    for i in pk.wg_rows():
        l[i] = l[i] * alpha[i] + red[i]
    for i, j in pk.wg_elements(O):
        O[i, j] = O[i, j] * alpha[i]


@pk.func
def pv(O: pk.WgAcc[64, D], P: pk.WgAcc[64, BN], tiles: Shared[f16]):
    for kk in range(BN // 16):
        pk.wgmma_kn(O, P, kk * 16, tiles, V_OFF + kk * 16 * 64, BN * 64)


@pk.func
def finish(O: pk.WgAcc, l: pk.WgVec, out: Buffer[f16], off: i32):
    for i, j in pk.wg_elements(O):
        O[i, j] = O[i, j] / l[i]
    pk.wg_store(out, off, D, O)


@pk.kernel
def attn_1(seq: i32, scale: f32, Q: Buffer[f16, "readonly"], K: Buffer[f16, "readonly"],
           V: Buffer[f16, "readonly"], O: Buffer[f16]):
    pk.warpgroups(1)
    tq = pk.tensor_map(Q, (seq, D), (64, 64), "128B")
    tk = pk.tensor_map(K, (seq, D), (BN, 64), "128B")
    tv = pk.tensor_map(V, (seq, D), (BN, 64), "128B")
    tiles = pk.shared_dynamic(f16)
    bar = pk.mbarriers(1)
    S = pk.wg_acc(f32, 64, BN)
    Oacc = pk.wg_acc(f32, 64, D)
    m = pk.wg_vec(f32)
    l = pk.wg_vec(f32)
    alpha = pk.wg_vec(f32)
    red = pk.wg_vec(f32)
    q0 = pk.group_id(0) * 64
    if pk.local_id(0) == 0:
        pk.mbarrier_init(bar, 0, 1)
    pk.barrier()
    for i in pk.wg_rows():
        m[i] = NEG_INF
        l[i] = 0.0
    pk.wg_fill(Oacc, 0.0)
    for it in range(seq // BN):
        load_step(tiles, tq, tk, tv, bar, q0, it * BN)
        pk.mbarrier_wait(bar, 0, it % 2)
        pk.wg_fill(S, 0.0)
        mma_tile(S, tiles, Q_OFF, K_OFF)
        pk.wgmma_commit()
        pk.wgmma_wait(0)
        softmax_step(S, Oacc, m, l, alpha, red, scale)
        pv(Oacc, S, tiles)
        pk.wgmma_commit()
        pk.wgmma_wait(0)
        pk.barrier()
    finish(Oacc, l, O, q0 * D)


# ---------------------------------------------------------------------- two levels deep


@pk.func
def attend(S: pk.WgAcc, O: pk.WgAcc, m: pk.WgVec, l: pk.WgVec, alpha: pk.WgVec, red: pk.WgVec,
           tiles: Shared[f16], scale: f32):
    pk.wg_fill(S, 0.0)
    mma_tile(S, tiles, Q_OFF, K_OFF)
    pk.wgmma_commit()
    pk.wgmma_wait(0)
    softmax_step(S, O, m, l, alpha, red, scale)
    pv(O, S, tiles)
    pk.wgmma_commit()
    pk.wgmma_wait(0)


@pk.func
def step(S: pk.WgAcc, O: pk.WgAcc, m: pk.WgVec, l: pk.WgVec, alpha: pk.WgVec, red: pk.WgVec, tiles: Shared[f16],
         tq: pk.TensorMap, tk: pk.TensorMap, tv: pk.TensorMap, bar: pk.MBarriers, q0: i32, it: i32, scale: f32):
    load_step(tiles, tq, tk, tv, bar, q0, it * BN)
    pk.mbarrier_wait(bar, 0, it % 2)
    attend(S, O, m, l, alpha, red, tiles, scale)


@pk.func
def finish_outer(O: pk.WgAcc, l: pk.WgVec, out: Buffer[f16], q0: i32):
    finish(O, l, out, q0 * D)


@pk.kernel
def attn_2(seq: i32, scale: f32, Q: Buffer[f16, "readonly"], K: Buffer[f16, "readonly"],
           V: Buffer[f16, "readonly"], O: Buffer[f16]):
    pk.warpgroups(1)
    tq = pk.tensor_map(Q, (seq, D), (64, 64), "128B")
    tk = pk.tensor_map(K, (seq, D), (BN, 64), "128B")
    tv = pk.tensor_map(V, (seq, D), (BN, 64), "128B")
    tiles = pk.shared_dynamic(f16)
    bar = pk.mbarriers(1)
    S = pk.wg_acc(f32, 64, BN)
    Oacc = pk.wg_acc(f32, 64, D)
    m = pk.wg_vec(f32)
    l = pk.wg_vec(f32)
    alpha = pk.wg_vec(f32)
    red = pk.wg_vec(f32)
    q0 = pk.group_id(0) * 64
    if pk.local_id(0) == 0:
        pk.mbarrier_init(bar, 0, 1)
    pk.barrier()
    for i in pk.wg_rows():
        m[i] = NEG_INF
        l[i] = 0.0
    pk.wg_fill(Oacc, 0.0)
    for it in range(seq // BN):
        step(S, Oacc, m, l, alpha, red, tiles, tq, tk, tv, bar, q0, it, scale)
        pk.barrier()
    finish_outer(Oacc, l, O, q0)


KERNELS = (attn_0, attn_1, attn_2)


def _run(kernel, seq=128, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.uniform(-1, 1, seq * D).astype(np.float16) for _ in range(3))
    args = [seq, np.float32(np.log2(np.e) / np.sqrt(D)), q, k, v, np.zeros(seq * D, np.float16), SHARED_ELEMS]
    return q, k, v, interpret(kernel, args, (seq // 64,), 128).buffers["O"]


def test_the_interpreter_gives_the_same_bits_through_device_functions():
    q, k, v, direct = _run(attn_0)
    # the kernel is attention: check it against float64 so that the comparison below compares real work
    s = q.astype(np.float64).reshape(-1, D) @ k.astype(np.float64).reshape(-1, D).T / np.sqrt(D)
    p = np.exp(s - s.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v.astype(np.float64).reshape(-1, D)
    assert np.abs(direct.astype(np.float64).reshape(-1, D) - ref).max() <= 2e-3
    for kernel in KERNELS[1:]:
        assert _run(kernel)[3].tobytes() == direct.tobytes(), kernel.name


def _hopper_ops(kernel):
    return sorted(s.op for s in ir.walk_stmts(kernel.ir.body) if isinstance(s, ir.HopperOp))


def test_the_kernels_do_the_same_operations_on_the_same_objects():
    direct = attn_0.ir
    for kernel in KERNELS[1:]:
        fn = kernel.ir
        assert _hopper_ops(kernel) == _hopper_ops(attn_0)
        # every operation names the kernel's own objects (the functions' parameters are renamed to them)
        names = {n for s in ir.walk_stmts(fn.body) if isinstance(s, ir.HopperOp) for n in s.names}
        assert names <= set(fn.hopper.accs) | set(fn.hopper.vecs) | set(fn.hopper.mbarriers) \
            | set(fn.hopper.tensor_maps) | set(fn.arrays) | {p.name for p in fn.params}
        assert fn.hopper.swizzled == direct.hopper.swizzled == {"tiles": H.SWIZZLE_BYTES}
        assert fn.attrs == direct.attrs  # tensor maps, warpgroups, the swizzled tile's alignment, O's alignment


def _cuda(kernel):
    return pk.build(kernel, "cuda -arch=sm_90a -fmt=cuda").on("cuda").inspect_source("cuda")


#: What the CUDA C of a kernel body does, in order: its PTX instructions, loops, block barriers, shuffles, the
#: swizzled tile's 1024-byte alignment.
_OPS = re.compile(r"wgmma\.\w+|cp\.async\.bulk\.tensor\.\w+|mbarrier\.[\w.]+|for \(|__syncthreads|__shfl_xor_sync|"
                  r"\+ 1023ull\) & ~1023ull")


def test_the_cuda_c_does_the_same():
    ops = []
    for kernel in KERNELS:
        src = _cuda(kernel)
        ops.append(_OPS.findall(src[src.index("__global__"):]))
    assert ops[0].count("wgmma.fence") == 2 and ops[0].count("+ 1023ull) & ~1023ull") == 1
    assert {"wgmma.mma_async", "cp.async.bulk.tensor.2d", "__shfl_xor_sync"} <= set(ops[0])
    assert ops[1] == ops[0] and ops[2] == ops[0]


# ---------------------------------------------------------------------- facts a function records for the kernel


@pk.func
def _mma_only(acc: pk.WgAcc, a: Shared[f16], b: Shared[f16]):
    pk.wgmma(acc, a, 0, b, 0)


@pk.kernel
def swz_indexed(out: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    a = pk.shared(f16, 64 * 64)
    b = pk.shared_dynamic(f16)
    pk.wg_fill(acc, 0.0)
    _mma_only(acc, a, b)
    out[0] = f32(a[3])


@pk.kernel
def swz_ok(out: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    a = pk.shared_dynamic(f16)
    pk.wg_fill(acc, 0.0)
    _mma_only(acc, a, a)
    pk.wgmma_commit()
    pk.wgmma_wait(0)
    pk.wg_store(out, 0, 16, acc)


@pk.kernel
def swz_static(out: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    a = pk.shared(f16, 64 * 64)
    pk.wg_fill(acc, 0.0)
    _mma_only(acc, a, a)
    pk.wgmma_commit()
    pk.wgmma_wait(0)
    pk.wg_store(out, 0, 16, acc)


@pk.func
def _own_tile(acc: pk.WgAcc):
    t = pk.shared_dynamic(f16)
    pk.wgmma(acc, t, 0, t, 1024)


@pk.kernel
def swz_own(out: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    pk.wg_fill(acc, 0.0)
    _own_tile(acc)
    pk.wgmma_commit()
    pk.wgmma_wait(0)
    pk.wg_store(out, 0, 16, acc)


def test_an_array_only_wgmma_read_in_a_function_is_swizzled_in_the_kernel():
    with pytest.raises(KernelTypeError, match="'a' holds swizzled tiles") as e:
        swz_indexed.ir
    assert e.value.loc.line == swz_indexed.pyfunc.__code__.co_firstlineno + 8  # out[0] = f32(a[3])
    fn = swz_ok.ir
    assert fn.hopper.swizzled == {"a": H.SWIZZLE_BYTES}
    assert fn.attrs[H.ATTR_DYNAMIC_ALIGN] == str(H.SWIZZLE_ALIGN)
    assert re.search(r"\+ 1023ull\) & ~1023ull", _cuda(swz_ok))  # the tile starts at a 1024-byte boundary
    with pytest.raises(KernelTypeError, match="swizzled tile 'a'"):  # cuda aligns only the dynamic array
        _cuda(swz_static)
    # a tile the function declares itself: swizzled under the name it has in the kernel
    fn = swz_own.ir
    assert list(fn.hopper.swizzled) == [n for n in fn.arrays if n.startswith("_own_tile__t")] and fn.hopper.swizzled
    assert fn.attrs[H.ATTR_DYNAMIC_ALIGN] == str(H.SWIZZLE_ALIGN)


def test_wg_store_in_a_function_records_its_buffers_alignment():
    assert attn_1.ir.attrs[ALIGN_ATTR] == attn_0.ir.attrs[ALIGN_ATTR] == attn_2.ir.attrs[ALIGN_ATTR]
    assert "O" in attn_1.ir.attrs[ALIGN_ATTR]


# ---------------------------------------------------------------------- errors


def _module(tmp_path, src: str, future: bool = False):
    """Kernels and functions of ``src`` (a module of its own, so errors have lines to point at), and its lines."""
    text = ("from __future__ import annotations\n" if future else "") + \
        "import polykern as pk\nfrom polykern import Buffer, Shared, f16, f32, i32\n" + src
    return make_module(tmp_path, text), text.splitlines()


_KERNEL = """
@pk.kernel
def k(out: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    wide = pk.wg_acc(f32, 64, 32)
    m = pk.wg_vec(f32)
    bars = pk.mbarriers(2)
    tiles = pk.shared_dynamic(f16)
    pk.wg_fill(acc, 0.0)
    pk.wg_fill(wide, 0.0)
    {call}
"""


@pytest.mark.parametrize("funcs, call, marker, msg", [
    ("def f(a: pk.WgAcc):\n    pk.wg_fill(a, 1.0)\n", "f(tiles)", "f(tiles)",
     r"argument 'a' of f\(\) is a pk.WgAcc parameter: pass a warpgroup accumulator \(pk.wg_acc\) of the caller, "
     r"got .*'tiles'"),
    ("def f(t: Shared[f16]):\n    pass\n", "f(acc)", "f(acc)",
     r"argument 't' of f\(\) is a array parameter \(Shared\[f16\]\), got warpgroup accumulator .*'acc'"),
    ("def f(x: f32):\n    pass\n", "f(m)", "f(m)",
     r"argument 'x' of f\(\) is a scalar parameter \(f32\), got warpgroup row vector .*'m'"),
    ("def f(a: pk.WgAcc[64, 16]):\n    pk.wg_fill(a, 1.0)\n", "f(wide)", "f(wide)",
     r"argument 'a' of f\(\) is a pk.WgAcc\[64, 16\] parameter: pass a warpgroup accumulator \(pk.wg_acc\) of "
     r"64 x 16 of the caller, got .*64x32.*'wide'"),
    ("def f(a: pk.WgVec):\n    pass\n", "f(bars)", "f(bars)",
     r"argument 'a' of f\(\) is a pk.WgVec parameter: pass a warpgroup row vector"),
    ("def f(a: pk.MBarriers):\n    pass\n", "f(out)", "f(out)", r"argument 'a' of f\(\) is a pk.MBarriers"),
    ("def f(a: pk.TensorMap):\n    pass\n", "f(acc)", "f(acc)", r"argument 'a' of f\(\) is a pk.TensorMap"),
    ("def f(a: pk.WgAcc):\n    b = pk.wg_acc(f32, 64, 16)\n", "f(acc)", "b = pk.wg_acc",
     r"pk.wg_acc\(\) is a kernel's declaration, not allowed in a @pk.func device function: declare it in the "
     r"kernel and pass it to the function as a pk.WgAcc parameter \(in device function 'f', called at"),
    ("def f():\n    b = pk.mbarriers(2)\n", "f()", "b = pk.mbarriers", r"as a pk.MBarriers parameter"),
    ("def f():\n    v = pk.wg_vec(f32)\n", "f()", "v = pk.wg_vec", r"as a pk.WgVec parameter"),
    ("def f(o: Buffer[f32]):\n    t = pk.tensor_map(o, (64, 64), (64, 64), 'none')\n", "f(out)", "t = pk.tensor_map",
     r"as a pk.TensorMap parameter"),
    ("def f():\n    pk.warpgroups(1)\n", "f()", "pk.warpgroups(1)\n",
     r"pk.warpgroups\(\) is a kernel's declaration.*in the kernel, before it calls functions"),
    ("def f(a: pk.WgAcc, b: pk.WgAcc, t: Shared[f16]):\n    pk.wgmma(a, b, 0, t, 0)\n", "f(wide, wide, tiles)",
     "f(wide, wide, tiles)",
     r"this call passes accumulator 'wide' to two parameters of device function 'f', whose pk.wgmma\(\) at .*reads A "
     r"from the accumulator it adds into"),
    ("def f(v: pk.WgVec):\n    for i in pk.wg_rows():\n        v[i] = 0.0\n",
     "for i, j in pk.wg_elements(acc):\n        f(m)", "for i in pk.wg_rows()",
     r"pk.wg_rows\(\) loops do not nest \(this one is in a device function called in the body of one\) "
     r"\(in device function 'f', called at"),
    ("def f(a: pk.WgAcc[64, 8, 2]):\n    pass\n", "f(acc)", "pk.WgAcc[64, 8, 2]",
     r"pk.WgAcc\[64, n\] takes an accumulator's shape"),
    ("def f(a: pk.WgAcc[64, 12]):\n    pass\n", "f(acc)", "pk.WgAcc[64, 12]", r"N = 12"),
    ("def f(a: pk.WgVec[64]):\n    pass\n", "f(m)", "pk.WgVec[64]", r"pk.WgVec\[...\] takes no shape"),
])
def test_errors_are_located_and_name_the_parameter(tmp_path, funcs, call, marker, msg):
    # annotations evaluated by the compiler (postponed), so that a bad one is an error located at it
    mod, lines = _module(tmp_path, "\n@pk.func\n" + funcs + _KERNEL.format(call=call), future=True)
    with pytest.raises(KernelTypeError, match=msg) as e:
        mod.k.ir
    assert marker.rstrip("\n") in lines[e.value.loc.line - 1]


def test_a_bad_shape_annotation_is_refused_when_python_evaluates_it():
    with pytest.raises(KernelTypeError, match=r"pk.WgAcc\[64, n\] takes an accumulator's shape"):
        pk.WgAcc[32, 16]
    with pytest.raises(KernelTypeError, match=r"pk.WgAcc\[64, 16\]\[...\] takes no shape"):
        pk.WgAcc[64, 16][64, 16]
    assert pk.WgAcc[64, 16].accepts(H.WgAccType(f32, 16)) and not pk.WgAcc[64, 16].accepts(H.WgAccType(f32, 32))


def test_a_warpgroup_operation_in_a_function_needs_the_kernels_warpgroups_before_the_call(tmp_path):
    mod, lines = _module(tmp_path, """
@pk.func
def inner(a: pk.WgAcc):
    pk.wg_fill(a, 1.0)

@pk.func
def outer(a: pk.WgAcc):
    inner(a)

@pk.func
def rows(v: pk.WgVec):
    for i in pk.wg_rows():
        v[i] = 0.0

@pk.kernel
def late(out: Buffer[f32]):
    acc = pk.wg_acc(f32, 64, 16)
    outer(acc)
    pk.warpgroups(1)

@pk.kernel
def never(out: Buffer[f32]):
    v = pk.wg_vec(f32)
    rows(v)

@pk.func
def wg_of() -> i32:
    return pk.warpgroup_id()

@pk.kernel
def fine(out: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    pk.wg_fill(acc, 2.0)
    if wg_of() == 0:
        outer(acc)
    pk.wgmma_commit()
    pk.wgmma_wait(0)
    pk.wg_store(out, 0, 16, acc)
""")
    with pytest.raises(KernelTypeError, match=r"pk.wg_fill\(\) is a warpgroup operation: the kernel declares the "
                       r"block's warpgroups .* before it calls a device function that uses one, and kernel 'late' has "
                       r"not \(in device function 'inner', called at .*kern_\d+.py:\d+:\d+\) "
                       r"\(in device function 'outer', called at .*kern_\d+.py:\d+:\d+\)") as e:
        mod.late.ir
    assert "pk.wg_fill(a, 1.0)" in lines[e.value.loc.line - 1]
    called_at = re.findall(r"called at \S+:(\d+):\d+\)", e.value.message)
    assert [lines[int(n) - 1].strip() for n in called_at] == ["inner(a)", "outer(acc)"]
    with pytest.raises(KernelTypeError, match=r"pk.wg_rows\(\) loops over a warpgroup's registers: the kernel "
                       r"declares the block's warpgroups"):
        mod.never.ir
    out = interpret(mod.fine, [np.zeros(64 * 16, np.float32)], (1,), 128).buffers["out"]
    assert (out == 1.0).all()
