"""Kernels that exercise every construct and every scalar type the Vulkan emitter lowers.

``CORPUS`` lists (case id, kernel, extra target attrs). The spirv-val test validates each for every
SPIR-V version; the lavapipe tests run several of them against NumPy references.
"""
import math

import polykern as pk
from polykern import Buffer, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64

ALL_TYPES = [bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64]
INT_TYPES = [i8, i16, i32, i64, u8, u16, u32, u64]
FLOAT_TYPES = [f16, f32, f64]


@pk.kernel
def saxpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@pk.kernel
def control(n: i32, x: Buffer[i32, "readonly"], out: Buffer[i32]):
    i = pk.global_id(0)
    if i >= n:
        return
    v = x[i]
    acc = 0
    if v < 0:
        acc = -1
    elif v == 0:
        acc = 100
    else:
        k = 0
        while True:
            k += 1
            if k > 50:
                break
            if k % 3 == 0:
                continue
            acc += k
            if acc > v * 4:
                break
    for j in range(10, 0, -3):
        acc += j
        for m in range(j):
            if m == 2:
                break
            acc += m
    out[i] = acc


@pk.kernel
def early_return_in_loop(n: i32, x: Buffer[i32, "readonly"], out: Buffer[i32]):
    i = pk.global_id(0)
    if i < n:
        for j in range(64):
            if j == x[i]:
                out[i] = j * 2
                return
            out[i] = -j


@pk.kernel
def short_circuit(n: i32, x: Buffer[i32, "readonly"], y: Buffer[i32, "readonly"], out: Buffer[i32]):
    i = pk.global_id(0)
    r = 0
    if i < n and x[i] > 0:          # the load must not run when i >= n: branches + OpPhi
        r += 1
    if i >= n or y[i] == 0:
        r += 10
    if i < n and (i % 2 == 0 or i > 5):   # side-effect free: OpLogicalAnd/Or
        r += 100
    if i < n:
        out[i] = r


@pk.kernel
def shared_reduce(n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32]):
    tile = pk.shared(f32, 64)
    t = pk.local_id(0)
    i = pk.group_id(0) * pk.local_size(0) + t
    tile[t] = x[i] if i < n else 0.0
    pk.barrier()
    s = pk.local_size(0) // 2
    while s > 0:
        if t < s:
            tile[t] = tile[t] + tile[t + s]
        pk.barrier()
        s = s // 2
    if t == 0:
        out[pk.group_id(0)] = tile[0] + f32(pk.num_groups(0) * 0)


@pk.kernel
def geometry(out: Buffer[i32]):
    x = pk.global_id(0)
    y = pk.global_id(1)
    z = pk.global_id(2)
    w = pk.num_groups(0) * pk.local_size(0)
    h = pk.num_groups(1) * pk.local_size(1)
    idx = (z * h + y) * w + x
    out[idx] = pk.local_id(2) * 10000 + pk.group_id(1) * 100 + pk.local_size(2)


@pk.kernel
def local_arrays(n: i32, x: Buffer[i32, "readonly"], out: Buffer[i32]):
    tmp = pk.local(i32, 8)
    flags = pk.local(bool_, 8)
    i = pk.global_id(0)
    if i < n:
        for j in range(8):
            tmp[j] = x[i] + j
            flags[j] = j % 2 == 0
        s = 0
        for j in range(8):
            if flags[7 - j]:
                s += tmp[7 - j] * j
        out[i] = s


@pk.kernel
def atomics_i32(n: i32, x: Buffer[i32, "readonly"], acc: Buffer[i32], old: Buffer[i32]):
    counts = pk.shared(i32, 4)
    t = pk.local_id(0)
    i = pk.global_id(0)
    if t < 4:
        counts[t] = 0
    pk.barrier()
    if i < n:
        v = x[i]
        pk.atomic_add(acc, 0, v)
        pk.atomic_min(acc, 1, v)
        pk.atomic_max(acc, 2, v)
        pk.atomic_add(counts, v & 3, 1)
        old[i] = pk.atomic_xchg(acc, 3, i)
        pk.atomic_cas(acc, 4, 0, i + 1)
    pk.barrier()
    if t < 4:
        pk.atomic_add(acc, 5 + t, counts[t])


@pk.kernel
def atomics_u32(n: i32, x: Buffer[u32, "readonly"], acc: Buffer[u32]):
    i = pk.global_id(0)
    if i < n:
        pk.atomic_add(acc, 0, x[i])
        pk.atomic_min(acc, 1, x[i])
        pk.atomic_max(acc, 2, x[i])


@pk.kernel
def atomics_f32(n: i32, x: Buffer[f32, "readonly"], acc: Buffer[f32]):
    part = pk.shared(f32, 1)
    if pk.local_id(0) == 0:
        part[0] = 0.0
    pk.barrier()
    i = pk.global_id(0)
    if i < n:
        pk.atomic_add(acc, 0, x[i])
        pk.atomic_min(acc, 1, x[i])
        pk.atomic_max(acc, 2, x[i])
        pk.atomic_add(part, 0, x[i])
        if i == 0:
            pk.atomic_xchg(acc, 3, 2.5)
            pk.atomic_cas(acc, 4, 1.0, 3.5)
    pk.barrier()
    if pk.local_id(0) == 0:
        pk.atomic_add(acc, 5, part[0])


def make_atomics_64(T):
    @pk.kernel
    def atomics_64(n: i32, x: Buffer[T, "readonly"], acc: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            pk.atomic_add(acc, 0, x[i])
            pk.atomic_xchg(acc, 1, x[i])

    return atomics_64


def make_arith(T):
    """Every operator and builtin defined for T, plus a push-constant scalar of type T."""
    if T == bool_:
        @pk.kernel
        def arith(n: i32, s: bool_, a: Buffer[bool_, "readonly"], b: Buffer[bool_, "readonly"],
                  out: Buffer[bool_]):
            i = pk.global_id(0)
            if i < n:
                x = a[i]
                y = b[i]
                out[i * 8 + 0] = x and y
                out[i * 8 + 1] = x or y
                out[i * 8 + 2] = not x
                out[i * 8 + 3] = x == y
                out[i * 8 + 4] = x != y
                out[i * 8 + 5] = pk.select(s, x, y)
                out[i * 8 + 6] = x ^ y
                out[i * 8 + 7] = (x & y) | s
        return arith
    if T.is_float:
        @pk.kernel
        def arith(n: i32, s: T, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], out: Buffer[T],
                  cmp: Buffer[i32]):
            i = pk.global_id(0)
            if i < n:
                x = a[i]
                y = b[i]
                out[i * 16 + 0] = x + y * s
                out[i * 16 + 1] = x - y
                out[i * 16 + 2] = x * y
                out[i * 16 + 3] = x / y
                out[i * 16 + 4] = x // y
                out[i * 16 + 5] = x % y
                out[i * 16 + 6] = -x
                out[i * 16 + 7] = pk.min(x, y)
                out[i * 16 + 8] = pk.max(x, y)
                out[i * 16 + 9] = pk.abs(x)
                out[i * 16 + 10] = pk.floor(x) + pk.ceil(y)
                out[i * 16 + 11] = pk.fma(x, y, s)
                out[i * 16 + 12] = pk.sqrt(pk.abs(x)) + pk.rsqrt(pk.abs(y) + 1.0)
                out[i * 16 + 13] = pk.select(x < y, x, y)
                out[i * 16 + 14] = x
                out[i * 16 + 15] = y
                cmp[i * 6 + 0] = i32(x < y)
                cmp[i * 6 + 1] = i32(x <= y)
                cmp[i * 6 + 2] = i32(x > y)
                cmp[i * 6 + 3] = i32(x >= y)
                cmp[i * 6 + 4] = i32(x == y)
                cmp[i * 6 + 5] = i32(x != y)
        return arith
    if T.is_signed:
        @pk.kernel
        def arith(n: i32, s: T, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], out: Buffer[T],
                  cmp: Buffer[i32]):
            i = pk.global_id(0)
            if i < n:
                x = a[i]
                y = b[i]
                out[i * 16 + 0] = x + y + s
                out[i * 16 + 1] = x - y
                out[i * 16 + 2] = x * y
                out[i * 16 + 3] = x // y
                out[i * 16 + 4] = x % y
                out[i * 16 + 5] = x & y
                out[i * 16 + 6] = x | y
                out[i * 16 + 7] = x ^ y
                out[i * 16 + 8] = x << y
                out[i * 16 + 9] = x >> y
                out[i * 16 + 10] = ~x
                out[i * 16 + 11] = -x
                out[i * 16 + 12] = pk.min(x, y)
                out[i * 16 + 13] = pk.max(x, y)
                out[i * 16 + 14] = pk.abs(x)
                out[i * 16 + 15] = pk.select(x < y, x, y)
                cmp[i * 6 + 0] = i32(x < y)
                cmp[i * 6 + 1] = i32(x <= y)
                cmp[i * 6 + 2] = i32(x > y)
                cmp[i * 6 + 3] = i32(x >= y)
                cmp[i * 6 + 4] = i32(x == y)
                cmp[i * 6 + 5] = i32(x != y)
        return arith

    @pk.kernel
    def arith(n: i32, s: T, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], out: Buffer[T],
              cmp: Buffer[i32]):
        i = pk.global_id(0)
        if i < n:
            x = a[i]
            y = b[i]
            out[i * 16 + 0] = x + y + s
            out[i * 16 + 1] = x - y
            out[i * 16 + 2] = x * y
            out[i * 16 + 3] = x // y
            out[i * 16 + 4] = x % y
            out[i * 16 + 5] = x & y
            out[i * 16 + 6] = x | y
            out[i * 16 + 7] = x ^ y
            out[i * 16 + 8] = x << y
            out[i * 16 + 9] = x >> y
            out[i * 16 + 10] = ~x
            out[i * 16 + 11] = x
            out[i * 16 + 12] = pk.min(x, y)
            out[i * 16 + 13] = pk.max(x, y)
            out[i * 16 + 14] = pk.abs(x)
            out[i * 16 + 15] = pk.select(x < y, x, y)
            cmp[i * 6 + 0] = i32(x < y)
            cmp[i * 6 + 1] = i32(x <= y)
            cmp[i * 6 + 2] = i32(x > y)
            cmp[i * 6 + 3] = i32(x >= y)
            cmp[i * 6 + 4] = i32(x == y)
            cmp[i * 6 + 5] = i32(x != y)
    return arith


def make_casts(T):
    """T -> every scalar type."""
    @pk.kernel
    def casts(n: i32, a: Buffer[T, "readonly"], o_bool: Buffer[bool_], o_i8: Buffer[i8], o_i16: Buffer[i16],
              o_i32: Buffer[i32], o_i64: Buffer[i64], o_u8: Buffer[u8], o_u16: Buffer[u16], o_u32: Buffer[u32],
              o_u64: Buffer[u64], o_f16: Buffer[f16], o_f32: Buffer[f32], o_f64: Buffer[f64]):
        i = pk.global_id(0)
        if i < n:
            x = a[i]
            o_bool[i] = bool_(x)
            o_i8[i] = i8(x)
            o_i16[i] = i16(x)
            o_i32[i] = i32(x)
            o_i64[i] = i64(x)
            o_u8[i] = u8(x)
            o_u16[i] = u16(x)
            o_u32[i] = u32(x)
            o_u64[i] = u64(x)
            o_f16[i] = f16(x)
            o_f32[i] = f32(x)
            o_f64[i] = f64(x)
    return casts


def make_math(T):
    """The transcendental builtins (GLSL.std.450 has them for 16- and 32-bit floats only)."""
    @pk.kernel
    def math32(n: i32, x: Buffer[T, "readonly"], out: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            a = x[i]
            out[i * 8 + 0] = pk.exp(a)
            out[i * 8 + 1] = pk.exp2(a)
            out[i * 8 + 2] = pk.log(a)
            out[i * 8 + 3] = pk.log2(a)
            out[i * 8 + 4] = pk.sin(a)
            out[i * 8 + 5] = pk.cos(a)
            out[i * 8 + 6] = pk.tanh(a)
            out[i * 8 + 7] = pk.pow(a, a)
    return math32


INF = math.inf
NAN = math.nan


@pk.kernel
def constants(a: Buffer[f32], b: Buffer[f64], c: Buffer[f16], d: Buffer[i8], e: Buffer[i64], g: Buffer[u64]):
    """Literal encodings: non-finite floats, narrow and extreme integers (disassembly must round-trip)."""
    a[0] = INF
    a[1] = -INF
    a[2] = NAN
    a[3] = 1e-30
    a[4] = 0.1
    b[0] = -INF
    b[1] = 1.0 / 3.0
    c[0] = f16(65504.0)
    c[1] = f16(-0.1)
    d[0] = i8(-128)
    e[0] = i64(-9223372036854775808)
    g[0] = u64(18446744073709551615)


def make_divmod(T):
    """C ``//`` and ``%`` of T (the operators Vulkan leaves partly undefined as OpSRem/OpSMod)."""
    @pk.kernel
    def divmod_(n: i32, a: Buffer[T, "readonly"], b: Buffer[T, "readonly"], q: Buffer[T], r: Buffer[T]):
        i = pk.global_id(0)
        if i < n:
            q[i] = a[i] // b[i]
            r[i] = a[i] % b[i]
    return divmod_


@pk.kernel
def narrow_f16(n: i32, x: Buffer[f32, "readonly"], out: Buffer[f32], out_h: Buffer[f16]):
    """f32 -> f16 -> f32 (the pair drivers fold away) and the f16 itself (its exact bits)."""
    i = pk.global_id(0)
    if i < n:
        h = f16(x[i])
        out[i] = f32(h)
        out_h[i] = h


@pk.kernel
def narrow_f16_from_f64(n: i32, x: Buffer[f64, "readonly"], out: Buffer[f16]):
    i = pk.global_id(0)
    if i < n:
        out[i] = f16(x[i])


CORPUS = [
    ("constants", constants, ""),
    ("saxpy", saxpy, ""),
    ("control", control, ""),
    ("early_return_in_loop", early_return_in_loop, ""),
    ("short_circuit", short_circuit, ""),
    ("shared_reduce", shared_reduce, ""),
    ("geometry", geometry, ""),
    ("local_arrays", local_arrays, ""),
    ("atomics_i32", atomics_i32, ""),
    ("atomics_u32", atomics_u32, ""),
    ("atomics_f32", atomics_f32, ""),
    ("atomics_i64", make_atomics_64(i64), "-features=default,int64_atomics"),
    ("atomics_u64", make_atomics_64(u64), "-features=default,int64_atomics"),
    ("atomics_f64", make_atomics_64(f64), "-features=default,int64_atomics"),
    ("math_f16", make_math(f16), ""),
    ("math_f32", make_math(f32), ""),
]
CORPUS += [("narrow_f16", narrow_f16, ""), ("narrow_f16_no_int16", narrow_f16, "-features=float16"),
           ("narrow_f16_from_f64", narrow_f16_from_f64, "")]
CORPUS += [(f"divmod_{T.name}", make_divmod(T), "") for T in (i8, i16, i32, i64)]
CORPUS += [(f"arith_{T.name}", make_arith(T), "") for T in ALL_TYPES]
CORPUS += [(f"casts_{T.name}", make_casts(T), "") for T in ALL_TYPES]
