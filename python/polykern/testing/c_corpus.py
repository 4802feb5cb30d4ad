"""A corpus of kernels covering every IR construct the C-like emitter prints.

Used by the cuda/opencl/metal golden tests and external validators (ptxas, PoCL): each kernel is
small and focused, so a golden diff points at one feature. Most are written in the kernel language;
a few are built as IR by hand for what the frontend never produces (special float constants, the
most negative integers, names that clash with C keywords and builtins, Unicode names).

``corpus()`` returns ``{name: ir.Function}``, verified and simplified exactly as ``polykern.build``
does, fresh on every call (backends may mutate what they get).
"""
from __future__ import annotations

import copy
from typing import Callable, Dict

from ..ir import nodes as ir
from ..ir.types import Buffer, BufferType, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from ..passes import run_default_passes

import polykern as pk

__all__ = ["corpus", "NAMES"]


# ---------------------------------------------------------------- kernel language
@pk.kernel
def saxpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pk.kernel
def control_flow(n: i32, out: Buffer[i32]):
    i = pk.global_id(0)
    if i >= n:
        return
    acc = 0
    for k in range(i):
        if k % 3 == 0:
            continue
        elif k > 100:
            break
        else:
            acc += k
    for k in range(10, 0, -2):
        acc -= k
    j = i
    while j > 1:
        if j % 2 == 0:
            j = j // 2
        else:
            j = 3 * j + 1
        acc += 1
    out[i] = acc


@pk.kernel
def logic(n: i32, x: Buffer[f32, "readonly"], flags: Buffer[i32]):
    i = pk.global_id(0)
    ok = i < n and x[i] > 0.0
    bad = i >= n or x[i] != x[i]
    neither = not ok and not bad
    flags[i] = pk.select(ok, 1, pk.select(neither, 2, 3))
    if (i & 1) == 0 or (i > 4 and i < 8):
        flags[i] += i >> 1


@pk.kernel
def int_arith(a: Buffer[i32], b: Buffer[u32], c: Buffer[i64], d: Buffer[u64]):
    i = pk.global_id(0)
    x = a[i]
    y = a[i + 1]
    a[i] = x // y + x % y - (x << (y & 7)) + (x >> 3) + (x ^ y) + (x | 5) + (~x) + (-x)
    u = b[i]
    b[i] = u // (u + 1) + u % 7 + (u >> 31) + (u << 4) + pk.min(u, 9) + pk.max(u, b[0])
    w = c[i]
    c[i] = w * w // 3 - (w << 40) + (w >> 2) + pk.abs(w) + pk.max(w, -7)
    d[i] = d[i] // 3 + (d[i] >> 63) + pk.min(d[i], d[0])


@pk.kernel
def small_ints(a: Buffer[i8], b: Buffer[u8], c: Buffer[i16], d: Buffer[u16]):
    i = pk.global_id(0)
    a[i] = a[i] * a[i] + (a[i] << 3) - a[i] // 3 + pk.abs(a[i]) + pk.max(a[i], a[0])
    b[i] = b[i] * b[i] - (b[i] >> 1) + ~b[i]
    c[i] = c[i] * c[i] + (c[i] << 9) - (-c[i]) + pk.min(c[i], c[0])
    d[i] = d[i] * d[i] + (d[i] << 15) + d[i] % 10


@pk.kernel
def casts(xf: Buffer[f32], xi: Buffer[i32], xd: Buffer[f64], xb: Buffer[u8], xl: Buffer[i64], xu: Buffer[u32]):
    i = pk.global_id(0)
    f = xf[i]
    n = xi[i]
    xi[i] = i32(f) + i32(xd[i]) + i32(xb[i]) + i32(f > 0.5) + i32(xl[i]) + i32(xu[i])
    xf[i] = f32(n) + f32(xd[i]) + f32(xb[i]) + f32(xl[i]) + f32(xu[i])
    xd[i] = f64(f) + f64(n) + f64(xl[i])
    xb[i] = u8(n) + u8(f)
    xl[i] = i64(n) * i64(xu[i]) + i64(f)
    xu[i] = u32(n) + u32(f) + u32(xl[i])
    if bool(n) and not bool(f):
        xi[i] = 0


@pk.kernel
def float_math(x: Buffer[f32], y: Buffer[f32, "readonly"]):
    i = pk.global_id(0)
    a = x[i]
    b = y[i]
    x[i] = (pk.sqrt(a) + pk.rsqrt(a) + pk.exp(a) + pk.exp2(a) + pk.log(a) + pk.log2(a) + pk.sin(a) + pk.cos(a)
            + pk.tanh(a) + pk.pow(a, b) + pk.abs(a) + pk.min(a, b) + pk.max(a, b) + pk.fma(a, b, 1.5)
            + pk.floor(a) + pk.ceil(b) + a % b + a // b + a / b - a * 0.1)


@pk.kernel
def double_math(x: Buffer[f64], y: Buffer[f64, "readonly"]):
    i = pk.global_id(0)
    a = x[i]
    b = y[i]
    x[i] = (pk.sqrt(a) + pk.rsqrt(a) + pk.exp(a) + pk.exp2(a) + pk.log(a) + pk.log2(a) + pk.sin(a) + pk.cos(a)
            + pk.tanh(a) + pk.pow(a, b) + pk.abs(a) + pk.min(a, b) + pk.max(a, b) + pk.fma(a, b, 1.5)
            + pk.floor(a) + pk.ceil(b) + a % b + a // b + a / b - a * 0.1)


@pk.kernel
def half_math(n: i32, s: f16, x: Buffer[f16], y: Buffer[f16, "readonly"], z: Buffer[f32]):
    i = pk.global_id(0)
    t = pk.shared(f16, 64)
    t[pk.local_id(0)] = y[i]
    pk.barrier()
    h = x[i] * s + t[0]
    h = h - pk.sqrt(h) + pk.abs(h) + pk.max(h, s) + h % s
    x[i] = h / f16(n) + f16(z[i])
    z[i] = f32(h) + f32(x[0] > y[0])


@pk.kernel
def shared_reduce(x: Buffer[f32, "readonly"], out: Buffer[f32]):
    tile = pk.shared(f32, 256)
    lid = pk.local_id(0)
    tile[lid] = x[pk.group_id(0) * pk.local_size(0) + lid]
    pk.barrier()
    s = 128
    while s > 0:
        if lid < s:
            tile[lid] += tile[lid + s]
        pk.barrier()
        s = s // 2
    if lid == 0:
        out[pk.group_id(0) + pk.num_groups(0) * 0] = tile[0]


@pk.kernel
def local_array(x: Buffer[f32]):
    buf = pk.local(f32, 8)
    idx = pk.local(i32, 4)
    i = pk.global_id(0)
    for k in range(8):
        buf[k] = x[i * 8 + k]
    for k in range(4):
        idx[k] = 7 - k
    x[i] = buf[idx[0]] + buf[idx[3]]


@pk.kernel
def grid_3d(out: Buffer[i32], w: i32, h: i32):
    x = pk.global_id(0)
    y = pk.global_id(1)
    z = pk.global_id(2)
    out[(z * h + y) * w + x] = pk.local_id(1) + pk.group_id(2) + pk.local_size(2) + pk.num_groups(1)


@pk.kernel
def atomics_i32(a: Buffer[i32], b: Buffer[u32]):
    counts = pk.shared(i32, 16)
    i = pk.global_id(0)
    counts[i % 16] = 0
    pk.barrier()
    old = pk.atomic_add(a, 0, 1)
    old += pk.atomic_min(a, 1, i) + pk.atomic_max(a, 2, i) + pk.atomic_xchg(a, 3, i)
    old += pk.atomic_cas(a, 4, 0, i)
    b[i] = pk.atomic_add(b, 0, u32(1)) + pk.atomic_max(b, 1, u32(i)) + pk.atomic_cas(b, 2, u32(0), u32(i))
    pk.atomic_add(counts, i % 16, 1)
    pk.atomic_max(counts, 0, old)
    pk.atomic_cas(counts, 1, 0, old)
    pk.barrier()
    a[i + 8] = counts[i % 16]


@pk.kernel
def atomics_f32(x: Buffer[f32], v: f32):
    acc = pk.shared(f32, 4)
    i = pk.global_id(0)
    old = pk.atomic_add(x, 0, v)
    old += pk.atomic_min(x, 1, v) + pk.atomic_max(x, 2, v) + pk.atomic_xchg(x, 3, v)
    old += pk.atomic_cas(x, 4, 0.0, v)
    pk.atomic_add(acc, 0, old)
    pk.atomic_max(acc, 1, old)
    pk.atomic_xchg(acc, 2, old)
    pk.atomic_cas(acc, 3, 1.0, old)
    pk.barrier()
    x[i + 8] = acc[i % 4]


@pk.kernel
def atomics_64(a: Buffer[i64], b: Buffer[u64]):
    i = pk.global_id(0)
    a[i + 8] = pk.atomic_add(a, 0, i64(i)) + pk.atomic_min(a, 1, i64(i)) + pk.atomic_max(a, 2, i64(i)) \
        + pk.atomic_xchg(a, 3, i64(i)) + pk.atomic_cas(a, 4, i64(0), i64(i))
    b[i + 8] = pk.atomic_add(b, 0, u64(i)) + pk.atomic_max(b, 1, u64(i)) + pk.atomic_cas(b, 2, u64(0), u64(i))


@pk.kernel
def atomics_f64(x: Buffer[f64], v: f64):
    i = pk.global_id(0)
    x[i + 8] = pk.atomic_add(x, 0, v) + pk.atomic_min(x, 1, v) + pk.atomic_max(x, 2, v) \
        + pk.atomic_xchg(x, 3, v) + pk.atomic_cas(x, 4, 0.0, v)


@pk.kernel
def atomics_16(h: Buffer[f16], s: Buffer[i16], v: f16):
    i = pk.global_id(0)
    h[i + 8] = pk.atomic_add(h, 0, v) + pk.atomic_max(h, 1, v) + pk.atomic_cas(h, 2, f16(0.0), v)
    s[i + 8] = pk.atomic_add(s, 0, i16(1)) + pk.atomic_min(s, 1, i16(i)) + pk.atomic_xchg(s, 2, i16(i))


@pk.kernel
def atomic_order(x: Buffer[i32], out: Buffer[i32]):
    i = pk.global_id(0)
    # Python order: read x[0], then add; C alone would leave the order of the operands open.
    out[i] = x[0] + pk.atomic_add(x, 0, 1) * 10 + x[0] * 100
    if x[1] == pk.atomic_xchg(x, 1, i) or x[2] > 0 and pk.atomic_add(x, 2, 1) > 0:
        out[i] += 1
    elif pk.atomic_max(x, 3, i) < x[3]:
        out[i] -= 1


@pk.kernel
def atomics_8(a: Buffer[u8]):
    pk.atomic_add(a, 0, u8(1))


@pk.kernel
def bools(flag: bool_, mask: Buffer[bool_], out: Buffer[i32]):
    i = pk.global_id(0)
    m = mask[i]
    mask[i] = flag and not m
    if m or flag:
        out[i] = 1


# ---------------------------------------------------------------- hand-built IR
def _const(v, t):
    return ir.Const(v, t)


def _special_values() -> ir.Function:
    """Constants the frontend folds away or cannot spell: inf, nan, -0.0, INT_MIN, UINT64_MAX."""
    xf, xd, xi, xl, xu = (ir.Var(n, BufferType(t)) for n, t in
                          (("xf", f32), ("xd", f64), ("xi", i32), ("xl", i64), ("xu", u64)))
    def at(buf, k):
        return ir.Load(buf, _const(k, i32))

    def put(buf, k, value):
        return ir.Store(buf, _const(k, i32), value)

    body = [
        put(xf, 0, _const(float("inf"), f32)),
        put(xf, 1, _const(float("-inf"), f32)),
        put(xf, 2, _const(float("nan"), f32)),
        put(xf, 3, _const(-0.0, f32)),
        put(xf, 4, ir.BinOp("add", ir.BinOp("mul", at(xf, 4), _const(1e-30, f32)),
                            _const(3.4028234663852886e38, f32))),
        put(xd, 0, _const(float("inf"), f64)),
        put(xd, 1, _const(float("nan"), f64)),
        put(xd, 2, ir.BinOp("div", at(xd, 2), _const(0.1, f64))),
        put(xd, 3, _const(-2.5e-300, f64)),
        put(xi, 0, ir.BinOp("sub", at(xi, 0), _const(-2147483648, i32))),
        put(xl, 0, ir.BinOp("add", at(xl, 0), _const(-9223372036854775808, i64))),
        put(xu, 0, ir.BinOp("xor", at(xu, 0), _const(18446744073709551615, u64))),
    ]
    params = [ir.Param(v.name, v.type) for v in (xf, xd, xi, xl, xu)]
    return ir.Function("special_values", params, body)


def _clashing_names() -> ir.Function:
    """Names that are keywords or builtins in C, OpenCL C or MSL, one already suffixed, and Unicode."""
    names = {"int": i32, "float": f32, "half": f32, "max": f32, "threadIdx": i32, "pk_tmp": i32, "float_": f32,
             "\u03b1": f32}
    buf = ir.Var("kernel", BufferType(f32))
    body, locs = [], {}
    for n, t in names.items():
        locs[n] = t
    body.append(ir.Assign("int", ir.SpecialReg("global_id", 0)))
    body.append(ir.Assign("threadIdx", ir.BinOp("add", ir.Var("int", i32), _const(1, i32))))
    body.append(ir.Assign("pk_tmp", ir.Var("threadIdx", i32)))
    body.append(ir.Assign("float", ir.Load(buf, ir.Var("int", i32))))
    body.append(ir.Assign("half", ir.Cast(f32, ir.Var("pk_tmp", i32))))
    body.append(ir.Assign("float_", _const(2.0, f32)))
    body.append(ir.Assign("\u03b1", ir.BinOp("mul", ir.Var("float_", f32), ir.Var("half", f32))))
    body.append(ir.Assign("max", ir.Call("max", [ir.Var("float", f32), ir.Var("\u03b1", f32)])))
    body.append(ir.Store(buf, ir.Var("int", i32), ir.Var("max", f32)))
    return ir.Function("main", [ir.Param("kernel", buf.type)], body, locs)


_BUILDERS: Dict[str, Callable[[], ir.Function]] = {
    "special_values": _special_values,
    "main": _clashing_names,  # a kernel named like the C entry point, with clashing variable names
}
_KERNELS = [saxpy, control_flow, logic, int_arith, small_ints, casts, float_math, double_math, half_math,
            shared_reduce, local_array, grid_3d, atomics_i32, atomics_f32, atomics_64, atomics_f64, atomics_16,
            atomic_order, atomics_8, bools]
NAMES = sorted([k.name for k in _KERNELS] + list(_BUILDERS))


def corpus() -> Dict[str, ir.Function]:
    """{name: verified, simplified ir.Function} (fresh copies)."""
    out = {k.name: copy.deepcopy(k.ir) for k in _KERNELS}
    out.update({name: build() for name, build in _BUILDERS.items()})
    return {name: run_default_passes(out[name]) for name in sorted(out)}
