"""libpolykern runs Hopper kernels (cuda -arch=sm_90a; docs/language.md 5.3): the attributes tensor_maps,
warpgroups and shared_dynamic_align are read as strictly by the C reader as by Python (the same verdict, offset
and message on hostile values), the launch plan refuses maps naming parameters the kernel lacks, a launch
checks the block and each map's shape, row and address, and (on an sm_90 GPU) examples/gemm_hopper.py's
kernel runs from C and matches float64.

    pytest -q -p no:cacheprovider tests/test_native_hopper.py    # the GPU test runs where an H100/H200 is
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest

from polykern.kbin import wire
from polykern.kbin.function_info import ArgInfo, FunctionInfo
from native_hopper_support import GEMM_ARGS, GEMM_MAPS, GOOD_MAP, _info, _maps, _Plan  # noqa: F401
from native_support import (EXAMPLES, PkError, CModule, libcuda_reason, python_verdict, clib,  # noqa: F401
                         native_build, needs_cc)

def _artifact(attrs) -> bytes:
    """A cuda module with one kernel k(M: i32, K: i32, A: Buffer[f16]) of these attributes, written field by
    field (the writer would refuse what the readers must refuse)."""
    fi = FunctionInfo("k", [ArgInfo("M", "scalar", 0, 32, 1, False), ArgInfo("K", "scalar", 0, 32, 1, False),
                            ArgInfo("A", "buffer", 2, 16, 1, True)], [], 0, attrs)
    w = wire.Writer()
    w.u8(wire.LAYOUTS.index("bytes"))
    w.str_("ptx")
    w.fmap({"k": fi})
    w.bytes_(b"code")
    root = wire.encode_root_payload({}, ["cuda"])
    return wire.encode_container([("root", root), ("cuda", w.getvalue())], [[1], []], None, {})


def _with(**changes) -> str:
    return _maps({**GOOD_MAP, **changes})


def _named(raw: str) -> str:
    """The good map with its name written as the raw JSON string contents ``raw`` (escapes as they are)."""
    return _with(name="@").replace('"@"', f'"{raw}"')


DEEP = "[" * 2000 + "]" * 2000   # 4000 bytes: past Python's recursion limit, within the 4096-byte attribute
ACCEPTED = [
    ("tensor_maps", _maps(GOOD_MAP)),
    ("tensor_maps", _maps(GOOD_MAP, {**GOOD_MAP, "name": "tb", "buffer": "A", "shape": [64, 4294967295]})),
    ("tensor_maps", "[]"),
    ("tensor_maps", ' [ {"name" : "ta", "buffer":"A","elem":"f\\u00316","shape":["M","K"],"box":[1,256],'
                    '"swizzle":-0} ] '),
    ("tensor_maps", _named("\\ud83d\\ude00 \\ud800 x")),
    ("warpgroups", "1"), ("warpgroups", "8"), ("shared_dynamic_align", "1024"),
]
REFUSED = [
    ("tensor_maps", DEEP),
    ("tensor_maps", _with()[:-2] + ',"box":[1,1]}]'),                         # a key twice
    ("tensor_maps", _with(swizzle=False)), ("tensor_maps", _with(swizzle=0.0)), ("tensor_maps", _with(swizzle=64)),
    ("tensor_maps", _with(box=[0, 64])), ("tensor_maps", _with(box=[257, 64])), ("tensor_maps", _with(box=[1, 2, 3])),
    ("tensor_maps", _with(box=[1e2, 64])), ("tensor_maps", _with(box=[True, 64])),
    ("tensor_maps", _with(shape=[0, "K"])), ("tensor_maps", _with(shape=[4294967296, "K"])),
    ("tensor_maps", _with(shape=[["M"], "K"])), ("tensor_maps", _with(elem="f64")), ("tensor_maps", _with(elem=16)),
    ("tensor_maps", _maps({**GOOD_MAP, "extra": 1})), ("tensor_maps", _maps({k: v for k, v in GOOD_MAP.items()
                                                                            if k != "box"})),
    ("tensor_maps", _maps(*({**GOOD_MAP, "name": f"t{i}"} for i in range(33)))),
    ("tensor_maps", _maps(GOOD_MAP, GOOD_MAP)),                              # two maps named 'ta'
    ("tensor_maps", _with(box=[1, 64]).replace("[1,", "[01,")), ("tensor_maps", "[] x"), ("tensor_maps", "[{}]"),
    ("tensor_maps", "[NaN]"), ("tensor_maps", _named("\\x")), ("tensor_maps", _named("\\u12")),
    ("tensor_maps", '[{"name":"ta'), ("tensor_maps", "{}"), ("tensor_maps", ""),
    ("warpgroups", "0"), ("warpgroups", "9"), ("warpgroups", "08"), ("warpgroups", "3 "), ("warpgroups", "\u0663"),
    ("warpgroups", ""), ("shared_dynamic_align", "1023"), ("shared_dynamic_align", "01024"),
    ("shared_dynamic_align", ""), ("shared_dynamic_align", "1"),
]


@needs_cc
@pytest.mark.parametrize("ok,attr,value", [(True, a, v) for a, v in ACCEPTED] + [(False, a, v) for a, v in REFUSED])
def test_hopper_attributes_read_alike_by_c_and_python(clib, ok, attr, value):
    """Both readers check the three attributes when they read an artifact (function_schema; the C reader's
    table is generated from it): hostile JSON (nested past Python's recursion limit, keys twice, false or
    0.0 for a swizzle, ...) or counts are refused by both with the same offset and message. They were
    accepted as plain text before, and Python's launch took false for a 0 swizzle and crashed with a
    RecursionError on deep nesting."""
    data = _artifact({attr: value})
    py = python_verdict(data)
    assert clib.parse(data) == py, "C and Python disagree"
    assert py[0] is ok, py
    if not ok:
        assert f"function 'k' attribute '{attr}' has an invalid value" in py[2]


# ------------------------------------------------------------------ the launch plan, through libpolykern.so




@needs_cc
@pytest.mark.parametrize("args,maps,why", [
    (GEMM_ARGS[:3] + [("A", 0, 0, 32)] + GEMM_ARGS[4:], GEMM_MAPS,
     "tensor map 'ta' views 'A', which is not a Buffer parameter of the kernel"),
    ([a for a in GEMM_ARGS if a[0] != "B"], GEMM_MAPS, "tensor map 'tb' views 'B', which is not a Buffer"),
    ([a for a in GEMM_ARGS if a[0] != "K"], GEMM_MAPS, "tensor map 'ta' has cols 'K', which is not an integer scalar"),
    (GEMM_ARGS[:1] + [("N", 0, 2, 32)] + GEMM_ARGS[2:], GEMM_MAPS, "tensor map 'tb' has rows 'N', which is not an "
                                                                   "integer scalar parameter"),
])
def test_c_plan_refuses_maps_naming_parameters_the_kernel_lacks(clib, args, maps, why):
    plan = _Plan(clib, args, {"tensor_maps": maps, "warpgroups": "3"})
    try:
        assert plan.rc == 1 and plan.err.status == 1, plan.err.message  # PK_ERR_ARTIFACT
        assert plan.err.message.decode().startswith(f"kernel 'k': {why}")
    finally:
        plan.close()


@needs_cc
def test_c_launch_checks_block_shape_rows_and_alignment(clib):
    """The launch checks of the Python CUDA runtime (runtime/tensor_maps.py), in C, before the driver."""
    plan = _Plan(clib, GEMM_ARGS, {"tensor_maps": GEMM_MAPS, "warpgroups": "3", "shared_dynamic_align": "1024"})
    try:
        assert plan.rc == 0 and plan.h, plan.err.message
        assert plan.block(384, 1, 1)[0] == 0 and plan.block(128, 3, 1)[0] == 0
        assert plan.block(256, 1, 1) == (6, "kernel 'k' runs blocks of exactly 3 warpgroups (384 work-items; "
                                            "pk.warpgroups), got block (256, 1, 1)")
        M, N, K = 256, 128, 64
        ok = plan.encode([M, N, K], [0x10000, 0x20000], [M * K * 2, N * K * 2])
        assert ok == (0, ""), ok
        where = "kernel 'k', tensor map 'ta' over 'A'"
        assert plan.encode([M, N, K], [0x10000, 0x20000], [M * K * 2 - 2, N * K * 2]) == (
            6, f"{where}: shape ({M}, {K}) needs {M * K} elements, the buffer has {M * K - 1}")
        assert plan.encode([-1, N, K], [0x10000, 0x20000], [M * K * 2, N * K * 2]) == (
            6, f"{where}: shape (-1, {K}) must be positive and below 2**32")
        assert plan.encode([M, N, 12], [0x10000, 0x20000], [M * K * 2, N * K * 2]) == (
            6, f"{where}: a row of 12 f16 elements is 24 bytes; the tensor copy engine needs rows of a multiple "
               "of 16 bytes")
        assert plan.encode([M, N, K], [0x10000, 0x20008], [M * K * 2, N * K * 2]) == (
            6, "kernel 'k', tensor map 'tb' over 'B': the buffer's address 0x20008 is not 16-byte aligned (an offset "
               "view?)")  # Python's words (polykern/runtime/launch_rules.py); C's lacked the hint
    finally:
        plan.close()


def _sm90_reason():
    why = libcuda_reason()
    if why:
        return why
    lib = ctypes.CDLL("libcuda.so.1")
    n, dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
        return "the NVIDIA driver found no CUDA device"
    lib.cuDeviceGet(ctypes.byref(dev), 0)
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
    if (major.value, minor.value) != (9, 0):
        return f"sm_90a kernels need a compute capability 9.0 GPU (H100, H200); device 0 is {major.value}.{minor.value}"
    return None


@needs_cc
def test_gemm_hopper_runs_through_libpolykern(clib):
    """examples/gemm_hopper.py's kernel (BN 128, 3 stages), built for cuda -arch=sm_90a, launched from C
    (tensor maps encoded by libpolykern, passed as kernelParams after the user's parameters), against float64;
    a block that is not 3 warpgroups and a shape past its buffer are refused by name."""
    why = _sm90_reason()
    if why:
        pytest.skip(why)
    import polykern as pk
    from polykern import numerics

    sys.path.insert(0, str(EXAMPLES))
    try:
        import gemm_hopper as g
    finally:
        sys.path.remove(str(EXAMPLES))
    BN, STAGES, M, N, K = 128, 3, 256, 256, 512
    kern = g.make_gemm(BN=BN, STAGES=STAGES)
    root = pk.build(kern, targets="cuda -arch=sm_90a")
    cm = CModule(clib, root.export(), "cuda")
    cm.meta = root.functions
    try:
        rng = np.random.default_rng(0)
        a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
        b = rng.uniform(-1, 1, (N, K)).astype(np.float16)
        c = np.zeros(M * N, np.float16)
        shared = g.shared_elems(BN, STAGES)
        cm["gemm_hopper"](np.int32(M), np.int32(N), np.int32(K), a.reshape(-1), b.reshape(-1), c,
                          grid=(M // g.BM, N // BN), block=384, shared_size=shared)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        ref = a64 @ b64.T
        bound = numerics.mma_error_bound("f32", a64, b64.T, np.zeros((M, N))) + np.abs(ref) * 2.0 ** -11
        err = np.abs(c.reshape(M, N).astype(np.float64) - ref)
        assert (err <= bound).all(), f"max |C - float64| = {err.max():.3g}, bound {bound.max():.3g}"
        with pytest.raises(AssertionError, match=r"runs blocks of exactly 3 warpgroups \(384 work-items"):
            cm["gemm_hopper"](np.int32(M), np.int32(N), np.int32(K), a.reshape(-1), b.reshape(-1), c,
                              grid=(M // g.BM, N // BN), block=256, shared_size=shared)
        with pytest.raises(AssertionError, match=rf"tensor map 'ta' over 'A': shape \({M}, {K}\) needs {M * K} "
                                                 rf"elements, the buffer has {M * K // 2}"):
            cm["gemm_hopper"](np.int32(M), np.int32(N), np.int32(K), a.reshape(-1)[:M * K // 2], b.reshape(-1), c,
                              grid=(M // g.BM, N // BN), block=384, shared_size=shared)
    finally:
        cm.close()


@needs_cc
def test_compiled_gemm_artifact_is_read_and_planned_by_c(clib):
    """What the compiler writes for examples/gemm_hopper.py (cuda -arch=sm_90a, built on any host) passes both
    readers, and libpolykern's plan of its kernel reads both maps and the warpgroups."""
    import polykern as pk

    sys.path.insert(0, str(EXAMPLES))
    try:
        import gemm_hopper as g
    finally:
        sys.path.remove(str(EXAMPLES))
    data = pk.build(g.make_gemm(BN=128, STAGES=3), targets="cuda -arch=sm_90a").export()
    assert clib.parse(data) == python_verdict(data) == (True, None, "")
    fi = pk.load(data).functions["gemm_hopper"]
    assert {"tensor_maps", "warpgroups", "shared_dynamic_align"} <= set(fi.attrs)
    args = [(a.name, int(a.is_buffer), a.code, a.bits) for a in fi.args]
    plan = _Plan(clib, args, dict(fi.attrs))
    try:
        assert plan.rc == 0 and plan.h, plan.err.message
        assert plan.block(384, 1, 1)[0] == 0 and plan.block(128, 1, 1)[0] == 6
        assert plan.encode([256, 256, 64], [0x10000, 0x20000], [256 * 64 * 2] * 2) == (0, "")
    finally:
        plan.close()


@needs_cc
def test_damaged_tensor_maps_get_one_verdict_from_both_readers(clib):
    """Seeded damage (a character deleted, inserted or replaced by one of JSON's) to a good tensor_maps value:
    C's JSON reading (no recursion, only the fields' shapes) and Python's json.loads + tensor_maps_of decide
    alike, with the same offset and message."""
    import random

    rng = random.Random(20261128)
    good = _maps(GOOD_MAP, {**GOOD_MAP, "name": "t\\u00e9", "shape": [7, "M"], "swizzle": 0})
    alphabet = '[]{}",:-0123456789.eE \\/ubtnfr' + "aMK"
    verdicts = {True: 0, False: 0}
    for _ in range(1500):
        v = good
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(v) + 1)
            op = rng.randrange(3)
            ch = rng.choice(alphabet)
            v = v[:i] + ch + v[i + 1:] if op == 0 else v[:i] + ch + v[i:] if op == 1 else v[:i] + v[i + 1:]
        data = _artifact({"tensor_maps": v})
        py = python_verdict(data)
        assert clib.parse(data) == py, f"C and Python disagree on tensor_maps {v!r}"
        verdicts[py[0]] += 1
    assert verdicts[True] > 50 and verdicts[False] > 500, verdicts
