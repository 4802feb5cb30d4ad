"""Regressions of the language frontend (found by the differential fuzzer and by trying bad input): names,
constant folding, literal ranges, build purity, deep expressions and located errors. Results are checked
on every runtime present."""
import copy
import threading

import numpy as np
import pytest

import polykern as pk
from kernel_sources import make_kernel
from polykern import Buffer, f32, i32, i64, ir
from polykern.errors import KernelTypeError
from runtimes import all_target_kinds, runnable_targets

RUNTIMES = [pytest.param(t, k, id=t.split()[0]) for t, k, _ in runnable_targets()]
ONE = dict(grid=(1, 1, 1), block=(1, 1, 1))


def run1(kern, target, kind, out, *scalars):
    """Launch ``kern`` once (one work-item) on ``target`` with ``scalars`` then ``out``; return ``out``."""
    mod = pk.build([kern], targets=[target])
    mod.on(kind)[kern.name](*scalars, out, **ONE)
    return out


# ---------------------------------------------------------------- 1. names are the user's, on every backend

@pk.kernel
def k_keyword_locals(out: Buffer[f32]):
    int_ = 5
    int = 7
    out[0] = f32(int_ * 10 + int)


@pk.kernel
def k_keyword_params(loop: f32, loop_: f32, half: i32, out: Buffer[f32]):
    kernel = loop * 10.0 + loop_
    var = f32(half)
    main = kernel + var
    __x = main * 2.0
    out[0] = __x


@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_keyword_names_do_not_collide(target, kind):
    assert run1(k_keyword_locals, target, kind, np.zeros(1, np.float32))[0] == 57.0
    out = run1(k_keyword_params, target, kind, np.zeros(1, np.float32), np.float32(5), np.float32(7), np.int32(1))
    assert out[0] == 116.0


@pytest.mark.parametrize("kind", all_target_kinds())
def test_user_names_are_the_abi_on_every_backend(kind, monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    mod = pk.build([k_keyword_params, k_keyword_locals], targets=[kind])
    for m in (mod, mod.imports[0]):
        assert [a.name for a in m.functions["k_keyword_params"].args] == ["loop", "loop_", "half", "out"]
    assert mod.imports[0].inspect_source()


# ---------------------------------------------------------------- 2. folding gives what the target computes

@pk.kernel
def k_fold(o: Buffer[i32], f: Buffer[f32]):
    o[0] = 0
    if f32(0.1) == f32(0.10000000001):  # the same f32
        o[0] = 1
    o[1] = i32(-2147483648) // i32(-1)  # wraps
    o[2] = i32(-2147483648) % i32(-1)
    o[3] = i32(-7) // i32(2)  # C truncation
    o[4] = i32(-7) % i32(2)
    o[5] = -7 // 2
    o[6] = -7 % 2
    o[7] = i32(1) << 31
    o[8] = i32(-8) >> 1
    o[9] = i32(2147483647) + i32(1)
    o[10] = 0
    if f32(16777217.0) == f32(16777216.0):
        o[10] = 1
    o[11] = 0
    if (f32(0.1) + f32(0.2)) == f32(0.3):  # true in f32, false in f64
        o[11] = 1
    o[12] = 1 << 31 >> 20  # an untyped constant is exact, then typed
    f[0] = f32(0.1)
    f[1] = f32(1.0) / f32(3.0)


@pk.kernel
def k_fold64(q: Buffer[i64]):
    q[0] = 1 << 40
    q[1] = 3 ** 30


FOLD_EXPECTED = [1, -2147483648, 0, -3, -1, -3, -1, -2147483648, -4, -2147483648, 1, 1, 2048]


@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_constant_folding_matches_the_target(target, kind):
    o, f = np.zeros(13, np.int32), np.zeros(2, np.float32)
    pk.build([k_fold], targets=[target]).on(kind)["k_fold"](o, f, **ONE)
    assert o.tolist() == FOLD_EXPECTED
    assert f[0] == np.float32(0.1) and f[1] == np.float32(1) / np.float32(3)
    if kind != "webgpu":  # WGSL has no i64
        assert run1(k_fold64, target, kind, np.zeros(2, np.int64)).tolist() == [1 << 40, 3 ** 30]


def test_folded_ir_holds_typed_values():
    from polykern.passes import simplify

    fn = simplify(copy.deepcopy(k_fold.ir))
    stores = {}
    for s in ir.walk_stmts(fn.body):
        if isinstance(s, ir.Store) and isinstance(s.index, ir.Const) and isinstance(s.value, ir.Const):
            stores[(s.base.name, s.index.value)] = s.value.value
    assert [stores[("o", i)] for i in range(1, 10)] == FOLD_EXPECTED[1:10]
    assert stores[("f", 0)] == float(np.float32(0.1))  # f32 constants hold f32 values
    assert stores[("f", 1)] == float(np.float32(1) / np.float32(3))
    assert not any(isinstance(s, ir.If) for s in fn.body)  # every constant condition folded


# ---------------------------------------------------------------- 4. literals that do not fit are errors

@pytest.mark.parametrize("src,msg", [
    ("o[0] = 99999999999999999999999", "integer literal 99999999999999999999999 does not fit i32"),
    ("o[0] = 1 << 40", "integer literal 1099511627776 does not fit i32"),
    ("x = 99999999999999999999999", "does not fit i32"),
    ("o[0] = i32(1) << 32", "shift amount 32 is out of range for i32 (0..31)"),
    ("o[0] = o[1] >> 40", "shift amount 40 is out of range for i32 (0..31)"),
    ("o[0] = 1 << -1", "shift amount -1 of a constant expression is out of range"),
    ("o[0] = 10 ** 100", "is too large for any integer type"),
    ("o[0] = 2147483647 + 1", "integer literal 2147483648 does not fit i32"),
    ("o[0] = i32(f32(1e39))", "float literal 1e+39 does not fit f32"),
    ("for k in range(0, 10, 1 << 40): o[k] = 1", "range() step 1099511627776 does not fit the loop variable's "
                                                 "type i32"),
])
def test_literal_out_of_range_is_located(src, msg, tmp_path):
    k = make_kernel(tmp_path, "def kk(o: Buffer[i32]):\n    " + src + "\n")
    with pytest.raises(KernelTypeError) as info:
        k.ir
    assert msg in str(info.value)
    assert info.value.loc is not None and info.value.loc.line == 6 and src in str(info.value)




# ---------------------------------------------------------------- 3. build leaves the kernel's IR alone

def test_build_does_not_mutate_the_kernel_ir():
    before = ir.function_str(k_fold.ir)
    pk.build([k_fold], targets=["llvm"])
    assert ir.function_str(k_fold.ir) == before
    assert any(isinstance(s, ir.If) for s in k_fold.ir.body)


def test_threads_build_one_kernel():
    @pk.kernel
    def k(n: i32, x: Buffer[f32]):
        i = pk.global_id(0)
        if i < n and 1 + 1 == 2:
            x[i] = x[i] * 2.0 + f32(3 * 4)

    before = ir.function_str(k.ir)
    results, errors = [], []
    start = threading.Barrier(4)

    def work():
        try:
            start.wait()
            for _ in range(5):
                results.append(pk.build([k], targets=["llvm", "opencl"]).export(None))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 20 and len(set(results)) == 1
    assert ir.function_str(k.ir) == before


# ---------------------------------------------------------------- 12.9 bad targets and Buffer forms

@pytest.mark.parametrize("targets", [None, 5, {"llvm": 1}, b"llvm"])
def test_bad_targets_argument_is_a_target_error(targets):
    from polykern.errors import TargetError

    with pytest.raises(TargetError, match="targets must be a target string or a list of them"):
        pk.build([k_fold], targets=targets)


@pytest.mark.parametrize("ann,msg", [
    ('Buffer[f32, "writeonly"]', "Buffer[...] got 'writeonly' after the element type"),
    ("Buffer[f32, 'readonly', 'x']", "Buffer[...] got 'readonly', 'x' after the element type"),
    ("Buffer[int]", "Buffer element must be a scalar type, got <class 'int'>"),
])
@pytest.mark.parametrize("future", [False, True], ids=["eager", "string_annotations"])
def test_bad_buffer_form_is_located(ann, msg, future, tmp_path):
    head = "from __future__ import annotations\n" if future else ""
    path = tmp_path / "bad.py"
    path.write_text(head + "import polykern as pk\nfrom polykern import *\n\n@pk.kernel\n"
                    f"def kk(o: {ann}):\n    o[0] = 1\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    with pytest.raises(KernelTypeError) as info:
        spec.loader.exec_module(mod)
        mod.kk.ir  # string annotations are evaluated when the kernel is translated
    err = info.value
    assert msg in str(err) and 'Buffer[T] or Buffer[T, "readonly"]' in str(err)
    assert err.loc is not None and err.loc.file == str(path) and err.loc.line == 5 + future
    assert err.loc.col == len("def kk(o: ") + 1


# ---------------------------------------------------------------- 12.10 array sizes: constant expressions, limits

@pytest.mark.parametrize("src,msg", [
    ("s = pk.shared(f32, 1 << 40)", "pk.shared(f32, 1099511627776) is too large: 4398046511104 bytes; the "
                                    "limit of shared arrays is 65536 bytes per workgroup"),
    ("s = pk.shared(f32, 16385)", "the limit of shared arrays is 65536 bytes"),
    ("t = pk.shared(f32, 8192)\n    s = pk.shared(f64, 4097)", "(with the 32768 bytes of this kernel's other "
                                                               "shared arrays)"),
    ("s = pk.local(f64, 8193)", "the limit of local arrays is 65536 bytes per work-item"),
    ("s = pk.shared(f32, o[0])", "must be a compile-time integer constant"),
    ("s = pk.shared(f32, 1 << 200)", "shift amount 200 in the size of pk.shared() is out of range"),
    ("s = pk.shared(f32, 4 // (2 - 2))", "division by zero in the size of pk.shared()"),
])
def test_array_size_errors(src, msg, tmp_path):
    k = make_kernel(tmp_path, f"def kk(o: Buffer[i32]):\n    {src}\n    o[0] = i32(s[0])\n")
    with pytest.raises(KernelTypeError) as info:
        k.ir
    assert msg in str(info.value), str(info.value)
    assert info.value.loc.line == 6 + src.count("\n")


def test_array_size_accepts_integer_operators(tmp_path):
    k = make_kernel(tmp_path, "def kk(o: Buffer[i32]):\n"
                              "    s = pk.shared(i32, (1 << 10) | 3 ^ 1 & 7)\n"
                              "    t = pk.local(i32, 2 ** 4 - ~1 + -7 // 2 + (-7 % 4) + (256 >> 2))\n"
                              "    o[0] = s[0] + t[0]\n")
    arrays = k.ir.arrays
    assert arrays["s"].size == (1 << 10) | 3 ^ 1 & 7
    assert arrays["t"].size == 16 + 2 - 3 - 3 + 64  # C truncation for // and %


# ---------------------------------------------------------------- 12.8 deep expressions compile

def deep_kernel(tmp_path, body):
    """Define a kernel whose source needs a raised recursion limit to be compiled by CPython itself;
    polykern then translates and builds it under the default limit."""
    import sys

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 30000))
    try:
        return make_kernel(tmp_path, body)
    finally:
        sys.setrecursionlimit(old)


DEEP_TARGETS = [p for p in RUNTIMES if p.values[1] in ("llvm", "opencl", "vulkan")]


@pytest.mark.parametrize("terms,target,kind", [
    pytest.param(n, *p.values, id=f"{n}-{p.id}") for n in (400, 5000) for p in DEEP_TARGETS
    if n == 400 or p.values[1] != "vulkan"])
def test_long_operator_chains_compile_and_run(terms, target, kind, tmp_path):
    k = deep_kernel(tmp_path, "def kk(x: Buffer[f32], o: Buffer[f32], c: Buffer[i32]):\n"
                              f"    o[0] = {' + '.join(['x[0]'] * terms)}\n"
                              f"    o[1] = {' - ('.join(['x[1]'] * 150)}{')' * 149}\n"
                              f"    if {' and '.join(['x[0] > 0.0'] * 400)}:\n"
                              "        c[0] = 1\n"
                              f"    c[1] = min({', '.join(f'c[{2 + i % 2}]' for i in range(400))})\n")
    fn = k.ir
    assert max(_expr_depth(e) for e in ir.walk_all_exprs(fn.body)) <= 70
    x, o, c = np.array([1.0, 2.0], np.float32), np.zeros(2, np.float32), np.array([0, 0, 7, 5], np.int32)
    pk.build([k], targets=[target]).on(kind)["kk"](x, o, c, **ONE)
    assert o.tolist() == [float(terms), 0.0]
    assert c.tolist() == [1, 5, 7, 5]


def _expr_depth(e):
    depth, stack = 0, [(e, 1)]
    while stack:
        n, d = stack.pop()
        depth = max(depth, d)
        stack.extend((c, d + 1) for c in n.children())
    return depth


def test_deeply_nested_unary_operators_get_a_located_error(tmp_path):
    from polykern.errors import KernelSyntaxError

    k = deep_kernel(tmp_path, f"def kk(x: Buffer[f32]):\n    x[0] = {'-' * 3000}x[1]\n")
    with pytest.raises(KernelSyntaxError, match="nested too deeply to compile") as info:
        k.ir
    assert info.value.loc.line == 6


def test_clone_is_deep_and_equal():
    from polykern.passes.clone import clone_function

    fn = k_fold.ir
    c = clone_function(fn)
    assert ir.function_str(c) == ir.function_str(fn)
    originals = {id(x) for x in ir.walk_stmts(fn.body)} | {id(e) for e in ir.walk_all_exprs(fn.body)}
    assert not originals & ({id(x) for x in ir.walk_stmts(c.body)} | {id(e) for e in ir.walk_all_exprs(c.body)})
    assert c.locals is not fn.locals and c.params[0] is not fn.params[0]


def test_simplify_compares_hand_built_floats_in_their_type():
    from polykern.ir.types import bool_
    from polykern.passes.simplify import fold

    for t, same in ((pk.f32, True), (pk.f64, False)):
        e = fold(ir.BinOp("eq", ir.Const(0.1, t), ir.Const(0.10000000001, t)))
        assert isinstance(e, ir.Const) and e.type == bool_ and e.value is same


def test_verifier_refuses_constants_outside_their_type():
    from polykern.errors import CompileError
    from polykern.ir.verifier import verify

    for value, t in ((2 ** 31, i32), (-1, pk.u8), (1.5, i32), (2, pk.bool_)):
        out = ir.Var("o", Buffer[t])
        fn = ir.Function("k", [ir.Param("o", out.type)], [ir.Store(out, ir.Const(0, i32), ir.Const(value, t))])
        with pytest.raises(CompileError, match=f"constant {value!r} is not a value of {t}"):
            verify(fn)
