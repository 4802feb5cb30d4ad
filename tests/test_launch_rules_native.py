"""The launch rules libpolykern enforces are the Python runtimes' (docs/internals.md "Runtime kernel handles").

Their data (limits, the dynamic_shared grammar, the CUDA opt-in threshold, tensor-map alignments, messages)
is defined once in Python (polykern/runtime/launch_rules.py, polykern/ir/dynamic_shared.py,
backends/cuda/polykern_cuda/driver_limits.py, tensor_map_codes.py) and generated into native/src/kbin_tables.h
(tests/test_native.py fails while the header is stale). Where a rule is logic, the same cases run here through
both implementations and must get the same verdict and the same words; a failure names the file to fix.

    pytest -q -p no:cacheprovider tests/test_launch_rules_native.py
"""
from __future__ import annotations

import ast
import ctypes
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from polykern.errors import ArtifactError, LaunchError
from polykern.kbin.function_info import ArgInfo, FunctionInfo
from native_hopper_support import GEMM_ARGS, GEMM_MAPS, _info, _Plan
from native_support import EXAMPLES, IS_ELF_HOST, CModule, PkError, clib, native_build, needs_cc  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
PK_ERR_ARTIFACT, PK_ERR_LAUNCH = 1, 6
FIX = ("the rule drifted between Python and C: fix native/src/{c} to follow {py} (or change the Python rule and "
       "run `python tools/gen_native_tables.py`)")


def _c_verdict(rc: int, err: PkError):
    return (rc, err.message.decode() if rc else "")


# ------------------------------------------------------------------ the dynamic_shared attribute


ARG_LAYOUTS = {
    "i32 size": [("n", 0, 0, 32), ("x", 1, 2, 32), ("y", 1, 2, 32), ("shared_size", 0, 0, 32)],
    "u32 size": [("n", 0, 0, 32), ("x", 1, 2, 32), ("y", 1, 2, 32), ("shared_size", 0, 1, 32)],
    "i64 size": [("n", 0, 0, 32), ("x", 1, 2, 32), ("y", 1, 2, 32), ("shared_size", 0, 0, 64)],
    "f32 size": [("n", 0, 0, 32), ("x", 1, 2, 32), ("y", 1, 2, 32), ("shared_size", 0, 2, 32)],
}
ATTRS = ["3,4", "3,1", "3,2", "3,8", "0,4", "1,4", "99,4", "65536,4", "65537,4", "99999,4", "100000,4", "0,0",
         "3,16", "3,3", "x", "", " 3,4", "3,04", "+3,4", "3,4,", "3,4 ", "03,4", "3", "3,", ",4", "-3,4",
         "3,\u0664", "\u0663,4", "3,4\x00", "3,4\n", "3," + "9" * 40, "99999999999999999999,4"]


def _python_dynamic(args, attr):
    from polykern.runtime.shared_launch import dynamic_shared_of

    info = FunctionInfo("k", [ArgInfo(n, "buffer" if kind else "scalar", code, bits) for n, kind, code, bits in args],
                        [], 0, {"dynamic_shared": attr})
    try:
        return dynamic_shared_of(info), ""
    except ArtifactError as e:
        return None, str(e)


@needs_cc
@pytest.mark.parametrize("layout", sorted(ARG_LAYOUTS))
def test_dynamic_shared_attribute_gets_one_verdict_and_message(clib, layout):
    """shared_launch.dynamic_shared_of (every Python runtime) and pk_dynamic_shared_bytes (libpolykern) accept the
    same attributes, size the array alike, and refuse the rest in the same words (the C runtime worded it
    differently, printed the attribute raw, and refused non-i32 size arguments Python took)."""
    lib = clib.lib
    fn = lib.pk_dynamic_shared_bytes
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                             ctypes.POINTER(PkError)]
    args = ARG_LAYOUTS[layout]
    cells = [ctypes.c_int64(5) for _ in args]
    argv = (ctypes.c_void_p * len(args))(*[ctypes.addressof(c) for c in cells])
    accepted = 0
    for attr in ATTRS:
        info = _info(args, {"dynamic_shared": attr})
        err, nbytes = PkError(), ctypes.c_uint64()
        rc = fn(ctypes.byref(info), argv, ctypes.byref(nbytes), ctypes.byref(err))
        got, words = _python_dynamic(args, attr)
        where = f"{layout}, attribute {attr!r}: " + FIX.format(c="program.c (pk_dynamic_shared_bytes)",
                                                               py="python/polykern/runtime/shared_launch.py dynamic_shared_of")
        if got is None:
            assert (rc, err.status) == (PK_ERR_ARTIFACT, PK_ERR_ARTIFACT), where
            assert err.message.decode() == words, where
        else:
            assert rc == 0, f"{where} ({err.message.decode()})"
            assert nbytes.value == 5 * got[1], where
            accepted += 1
    assert accepted == (5 if layout == "i32 size" else 1)  # index 0 (n: i32) is a well-formed size argument too


@needs_cc
def test_dynamic_shared_index_limit_is_the_same(clib):
    """The size parameter's index is at most ir/dynamic_shared.INDEX_MAX in both readers, even where the kernel
    has more parameters (the C reader allowed any 5-digit index)."""
    from polykern.ir.dynamic_shared import INDEX_MAX

    fn = clib.lib.pk_dynamic_shared_bytes
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                             ctypes.POINTER(PkError)]
    args = [(f"s{i}", 0, 0, 32) for i in range(INDEX_MAX + 2)]
    cell = ctypes.c_int32(3)
    argv = (ctypes.c_void_p * len(args))(*[ctypes.addressof(cell)] * len(args))
    for index in (INDEX_MAX, INDEX_MAX + 1):
        attr = f"{index},4"
        err, nbytes = PkError(), ctypes.c_uint64()
        rc = fn(ctypes.byref(_info(args, {"dynamic_shared": attr})), argv, ctypes.byref(nbytes), ctypes.byref(err))
        got, words = _python_dynamic(args, attr)
        assert (rc, err.message.decode()) == ((0, "") if got else (PK_ERR_ARTIFACT, words)), FIX.format(
            c="program.c (pk_dynamic_shared_bytes)", py="python/polykern/ir/dynamic_shared.py INDEX_MAX")
        assert (got is not None) == (index <= INDEX_MAX)


@needs_cc
@pytest.mark.parametrize("length", [-(2 ** 31), -1, 0, 1, 2, 2 ** 31 - 1])
def test_dynamic_shared_length_is_refused_below_the_same_minimum(clib, length):
    """A pk.shared_dynamic length below ir/dynamic_shared.MIN_LENGTH is refused by the Python wrapper
    (shared_launch.DynamicSharedKernel) and by libpolykern; others pass both (the limits come later)."""
    from polykern.runtime.shared_launch import DynamicSharedKernel

    lib = clib.lib
    fn = lib.pk_dynamic_shared_bytes
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                             ctypes.POINTER(PkError)]
    args = ARG_LAYOUTS["i32 size"]
    cell = ctypes.c_int32(length)
    argv = (ctypes.c_void_p * 4)(None, None, None, ctypes.addressof(cell))
    err, nbytes = PkError(), ctypes.c_uint64()
    rc = fn(ctypes.byref(_info(args, {"dynamic_shared": "3,1"})), argv, ctypes.byref(nbytes), ctypes.byref(err))
    info = FunctionInfo("k", [ArgInfo(n, "buffer" if kind else "scalar", code, bits) for n, kind, code, bits in args],
                        [], 0, {"dynamic_shared": "3,1"})
    kernel = DynamicSharedKernel(info, lambda *a, **k: None, 3, 1, limit=2 ** 40)
    try:
        kernel(1, np.zeros(1, np.float32), np.zeros(1, np.float32), grid=1, block=1, shared_size=length)
        py_ok = True
    except LaunchError:
        py_ok = False
    assert (rc == 0) == py_ok, FIX.format(c="program.c (pk_dynamic_shared_bytes)", py="python/polykern/runtime/shared_launch.py")
    if rc:
        assert rc == PK_ERR_LAUNCH and "must be >= 1" in err.message.decode()


# ------------------------------------------------------------------ CUDA's dynamic shared memory opt-in


@needs_cc
def test_cuda_opt_in_rule_is_the_python_runtimes(clib):
    """libpolykern's cuda_exec.c raises a function's dynamic shared limit exactly when the Python CUDA runtime does
    (polykern_cuda/driver_limits.py needs_opt_in: past 48 KiB of static plus dynamic bytes)."""
    from polykern_cuda.driver_limits import DEFAULT_SHARED, needs_opt_in

    fn = clib.lib.pk_cuda_needs_opt_in
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_uint64, ctypes.c_uint64]
    edges = sorted({0, 1, 1024, 16384, 20000, 32768, DEFAULT_SHARED - 1, DEFAULT_SHARED, DEFAULT_SHARED + 1, 65536,
                    200000})
    opted = 0
    for static in edges:
        for dynamic in sorted(set(edges) | {max(0, DEFAULT_SHARED - static + d) for d in (-1, 0, 1)}):
            want = needs_opt_in(static, dynamic)
            assert bool(fn(static, dynamic)) == want, f"static {static}, dynamic {dynamic}: " + FIX.format(
                c="cuda_exec.c (pk_cuda_needs_opt_in)", py="backends/cuda/polykern_cuda/driver_limits.py")
            opted += want
    assert 0 < opted < len(edges) ** 2
    assert needs_opt_in(32768, 20000) and not needs_opt_in(0, DEFAULT_SHARED)  # the case that once failed to launch


# ------------------------------------------------------------------ Hopper kernels' launch checks


def _py(fn, *args):
    try:
        fn(*args)
        return (0, "")
    except LaunchError as e:
        return (PK_ERR_LAUNCH, str(e))


@needs_cc
@pytest.mark.parametrize("warpgroups", [1, 2, 3, 8])
def test_warpgroup_block_check_is_the_python_runtimes(clib, warpgroups):
    """pk_hopper_check_block (native/src/tensor_maps.c) and polykern/runtime/hopper_launch.py check_block."""
    from polykern.runtime.hopper_launch import check_block

    plan = _Plan(clib, GEMM_ARGS, {"tensor_maps": GEMM_MAPS, "warpgroups": str(warpgroups)})
    try:
        assert plan.rc == 0, plan.err.message
        blocks = [(128 * warpgroups, 1, 1), (128, warpgroups, 1), (64, 2 * warpgroups, 1), (128 * warpgroups + 1, 1, 1),
                  (1, 1, 1), (32, 4, warpgroups + 1), (2 ** 16, 2 ** 16, 2)]
        verdicts = [plan.block(*b) for b in blocks]
        for b, got in zip(blocks, verdicts):
            assert got == _py(check_block, "k", warpgroups, b), f"block {b}: " + FIX.format(
                c="tensor_maps.c (pk_hopper_check_block)", py="python/polykern/runtime/hopper_launch.py check_block")
        assert {rc for rc, _ in verdicts} == {0, PK_ERR_LAUNCH}
    finally:
        plan.close()


@needs_cc
def test_tensor_map_checks_are_the_python_runtimes(clib):
    """pk_hopper_encodings' refusals (native/src/tensor_maps.c) are polykern/runtime/hopper_launch.py check_map's, map
    by map, in the same words: shape, fit in the buffer, row bytes, address alignment."""
    from polykern.ir import hopper as H
    from polykern.runtime.hopper_launch import check_map

    maps = H.tensor_maps_of({"tensor_maps": GEMM_MAPS})
    plan = _Plan(clib, GEMM_ARGS, {"tensor_maps": GEMM_MAPS, "warpgroups": "3"})
    try:
        assert plan.rc == 0, plan.err.message
        cases = 0
        refused = set()
        for M, N, K in [(256, 128, 64), (-1, 128, 64), (0, 128, 64), (256, 0, 64), (256, 128, 12), (256, 128, 8),
                        (256, 128, 2 ** 31 - 1), (-(2 ** 31), 1, 8)]:
            for addrs in [(0x10000, 0x20000), (0x10008, 0x20000), (0x10000, 0x20001)]:
                for short in (0, 2):
                    sizes = [max(0, M * K * 2 - short), max(0, N * K * 2)]
                    c = plan.encode([M, N, K], addrs, sizes)

                    def python():
                        for m, rows, addr, size in zip(maps, (M, N), addrs, sizes):
                            check_map("k", m, addr, (rows, K), size // 2)

                    assert c == _py(python), f"M, N, K = {M, N, K}, addresses {addrs}, sizes {sizes}: " + FIX.format(
                        c="tensor_maps.c (pk_hopper_encodings)", py="python/polykern/runtime/hopper_launch.py")
                    cases += 1
                    refused.add(c[1].split(": ", 1)[-1][:20])
        assert cases == 48 and len(refused) >= 5  # accepted, and each of the four refusals seen
    finally:
        plan.close()


# ------------------------------------------------------------------ the CPU launch shape


@needs_cc
def test_cpu_launch_shape_limits_are_the_python_runtimes(clib):
    """libpolykern's CPU launches refuse the grids the Python CPU runtime refuses (launch.check_global_size,
    check_grid_limits with launch_rules.PORTABLE_MAX_GRID), in its words."""
    import polykern as pk
    from polykern.runtime.launch import check_global_size, check_grid_limits
    from polykern.runtime.launch_rules import PORTABLE_MAX_GRID, grid_limit_name

    if not IS_ELF_HOST:
        pytest.skip("the native CPU loader runs on x86-64/aarch64 Linux")
    spec = importlib.util.spec_from_file_location("_rules_saxpy", EXAMPLES / "saxpy.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    root = pk.build([example.saxpy], targets=["llvm"])
    cm = CModule(clib, root.export(), "llvm")
    cm.meta = root.functions

    def python(grid, block):
        check_global_size("saxpy", grid, block)
        check_grid_limits("saxpy", grid, PORTABLE_MAX_GRID, grid_limit_name("CPU"))

    try:
        x = np.zeros(1, np.float32)
        seen = set()
        for grid, block in [((1, 65536, 1), (1, 1, 1)), ((1, 1, 65536), (1, 1, 1)), ((1, 65535, 65535), (1, 1, 1)),
                            ((2 ** 31 - 1, 1, 1), (2, 1, 1)), ((1, 65535, 1), (1, 40000, 1)),
                            ((1, 1, 65535), (1, 1, 32769)), ((2 ** 20, 1, 1), (2 ** 11, 1, 1)),
                            ((2 ** 20, 1, 1), (2 ** 11 + 1, 1, 1))]:
            want = _py(python, grid, block)
            try:
                cm["saxpy"](np.int32(0), np.float32(1), x, x.copy(), grid=grid, block=block)
                got = (0, "")
            except AssertionError as e:  # CModule asserts with the pk_error's message (its repr, first line)
                got = (PK_ERR_LAUNCH, ast.literal_eval(str(e).split("\n")[0]).decode())
            assert got == want, f"grid {grid}, block {block}: " + FIX.format(
                c="program.c (pk_kernel_launch)", py="python/polykern/runtime/launch.py / launch_rules.py")
            seen.add(want[1].split(";")[0].split(" = ")[0][-12:])
        assert len(seen) >= 3
    finally:
        cm.close()


# ------------------------------------------------------------------ no hand-written copies left in C


HAND_COPIES = [r"48\s*\*\s*1024", r"\b49152\b", r"\b65535u?\b", r"\b214748364[78]u?\b", r"64u?\s*\*\s*1024u?",
               r"1u?\s*<<\s*20", r"\(\s*1\s*,\s*2\s*,\s*4\s*or\s*8\s*\)", r"'dynamic_shared'|\"dynamic_shared\"",
               r"\b16-byte aligned", r"multiple of 16 bytes"]


def test_libpolykern_has_no_hand_copies_of_the_launch_rules():
    """libpolykern's launch code (native/src/program.c, cuda_exec.c, tensor_maps.c) takes the launch rules from
    kbin_tables.h (generated); a number or phrase of a rule written again by hand would drift from Python unseen."""
    src = ROOT / "native" / "src"
    if not src.exists():
        pytest.skip("native/src is not in this tree (a Bazel sandbox)")
    found = [f"native/src/{p.name}:{n}: {line.strip()}" for p in (src / "program.c", src / "cuda_exec.c", src / "tensor_maps.c")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if any(re.search(pat, line) for pat in HAND_COPIES)]
    assert not found, ("use the generated PK_* names of native/src/kbin_tables.h (tools/gen_native_tables.py) "
                       "instead of:\n" + "\n".join(found))


# ------------------------------------------------------------------ launch-time conditions of proven accesses


PROOF_ARGS = [("x", 0, 0, 32), ("n", 0, 0, 64), ("u", 0, 1, 32), ("buf", 1, 2, 32)]
PROOF_SYMBOLS = ["a0", "a1", "a2", "L3", "b0", "b1", "b2", "g0", "g1", "g2", "q0_3", "r0_4", "q1_7", "r1_2"]


def _random_condition(r) -> str:
    def term():
        c = r.choice([r.randint(-40, 40), r.randint(-40, 40), r.choice([-(2 ** 40), 2 ** 40, 0])])
        return "*".join([str(c)] + [r.choice(PROOF_SYMBOLS) for _ in range(r.randint(0, 2))])

    def alt():
        polys = [" ".join(term() for _ in range(r.randint(1, 3))) for _ in range(r.randint(0, 2))]
        return " & ".join(polys) if polys else "true"
    return " | ".join(alt() for _ in range(r.randint(1, 2)))


@needs_cc
def test_launch_proof_conditions_get_one_verdict_and_description(clib):
    """The conditions of proven accesses (python/polykern/runtime/launch_proof.py, native/src/launch_proof.c: the same
    text, evaluated twice) hold or fail alike on random conditions and launches, and a failure names the same
    access and the same failed inequalities in the kernel's names."""
    import random

    import polykern as pk
    from polykern.runtime.launch_proof import ProvenKernel

    if not IS_ELF_HOST:
        pytest.skip("the native CPU loader runs on x86-64/aarch64 Linux")
    spec = importlib.util.spec_from_file_location("_rules_saxpy", EXAMPLES / "saxpy.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    cm = CModule(clib, pk.build([example.saxpy], targets=["llvm"]).export(), "llvm")  # a program for pk_buffers
    lib = clib.lib
    check = lib.pk_launch_proof_check
    check.restype = ctypes.c_int
    check.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.POINTER(PkError)]
    user = FunctionInfo("k", [ArgInfo(n, "buffer" if kind else "scalar", code, bits) for n, kind, code, bits in PROOF_ARGS],
                        [], 0, {})
    r = random.Random(7)
    verdicts = {True: 0, False: 0}
    try:
        for case in range(400):
            conds = [_random_condition(r) for _ in range(r.randint(1, 3))]
            attrs = {"bounds_proof": str(len(conds))}
            for k, c in enumerate(conds):
                attrs[f"bounds_proof_{k}"], attrs[f"bounds_proof_at_{k}"] = c, f"'buf' at k.py:{k + 1}"
            x, n, u, length = r.randint(-20, 20), r.randint(-20, 20), r.randint(0, 20), r.randint(0, 20)
            grid, block = tuple(r.randint(1, 4) for _ in range(3)), tuple(r.randint(1, 4) for _ in range(3))
            info = _info(PROOF_ARGS, attrs)
            err = PkError()
            buf = lib.pk_buffer_alloc(cm.prog, 4 * length, ctypes.byref(err))
            assert buf, err.message
            cells = [ctypes.c_int32(x), ctypes.c_int64(n), ctypes.c_uint32(u)]
            argv = (ctypes.c_void_p * 4)(*[ctypes.addressof(c) for c in cells], buf)
            rc = check(ctypes.byref(info), 4, argv, (ctypes.c_uint32 * 3)(*grid), (ctypes.c_uint32 * 3)(*block),
                       ctypes.byref(err))
            lib.pk_buffer_free(buf)
            kernel = ProvenKernel(FunctionInfo("k", user.args, [], 0, attrs), user, lambda *a, **k: None)
            try:
                kernel(np.int32(x), np.int64(n), np.uint32(u), np.zeros(length, np.float32), grid=grid, block=block)
                py = None
            except LaunchError as e:
                py = str(e)
            where = f"case {case}: conditions {conds}, x={x} n={n} u={u} len={length} grid {grid} block {block}: "
            fix = FIX.format(c="launch_proof.c", py="python/polykern/runtime/launch_proof.py")
            assert (rc == 0) == (py is None), where + fix + f" (C: {err.message.decode()!r}; Python: {py!r})"
            verdicts[rc == 0] += 1
            if rc:
                c_msg = err.message.decode()
                at_c = re.search(r"out-of-bounds access to (.*?) \(grid", c_msg).group(1)
                at_py = re.search(r"out-of-bounds access to (.*?) with these", py).group(1)
                why_c = c_msg.split("condition fails: ", 1)[1]
                why_py = py.split("condition fails: ", 1)[1].split(". Nothing ran", 1)[0]
                assert (at_c, why_c) == (at_py, why_py), where + fix
    finally:
        cm.close()
    assert verdicts[True] > 50 and verdicts[False] > 50, verdicts
