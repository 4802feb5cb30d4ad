"""Opt-in fast math (docs/language.md "Fast math", docs/correctness.md "Fast math"): the builtins
pk.fast_exp ... pk.fast_div and build(fast_math=True); their lowering on every backend that has one
(numerics.FAST_MATH), the precise operation elsewhere; the bounds, measured on every runtime here; the
oracle and the fuzzer judging against the fast-math promise; the default build unchanged."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, build_cache, capabilities, f16, f32, f64, i32, numerics
from polykern.errors import KernelSyntaxError, KernelTypeError, PolykernError
from polykern.ir.canonical import canonical_bytes
from polykern.passes.clone import clone_function
from polykern.passes.fast_math import fast_math as apply_fast_math
from polykern.passes.fast_math import uses_fast_math
from polykern.target import Target
from polykern.testing import kernelgen, tier_skip
from polykern.testing.compare import compare
from polykern.testing.fast_math_sweep import run_sweeps
from polykern.testing.interp import interpret
from conformance import ALL_CASES
from runtimes import compile_targets, runnable_targets

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


@pk.kernel
def every_op(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        v = x[i]
        y[i] = pk.exp(v) + pk.exp2(v) + pk.log(v) + pk.log2(v) + pk.rsqrt(v) + v / (v + 1.0)


@pk.kernel
def other_types(n: i32, a: Buffer[f64], h: Buffer[f16]):
    i = pk.global_id(0)
    if i < n:
        a[i] = pk.fast_exp(a[i]) + pk.fast_div(a[i], 3.0)
        h[i] = pk.fast_log(h[i])


def _sources(mod):
    return "\n".join(m.sources[k] for m in mod.walk() for k in sorted(m.sources))


def _marker(backend, entry):
    """What a table entry's lowering looks like in the backend's output (PTX prints the NVVM intrinsic's
    instruction)."""
    if backend == "nvptx":
        return entry.lowering[len("llvm.nvvm."):-len(".f")] + ".f32"
    return entry.lowering


# ------------------------------------------------------------------ surface


def test_builtins_are_exported_and_only_usable_in_kernels():
    for op in numerics.FAST_MATH_OPS:
        with pytest.raises(KernelSyntaxError, match=f"pk.fast_{op}\\(\\) can only be used inside a @pk.kernel"):
            getattr(pk, f"fast_{op}")(1.0)


def test_bad_uses_are_named_errors():
    with pytest.raises(KernelTypeError, match="fast_exp\\(\\) needs a float argument"):
        @pk.kernel
        def on_int(x: Buffer[i32]):
            x[0] = pk.fast_exp(x[0])
        on_int.ir
    with pytest.raises(KernelTypeError, match="fast_div"):
        @pk.kernel
        def one_arg(x: Buffer[f32]):
            x[0] = pk.fast_div(x[0])
        one_arg.ir
    with pytest.raises(PolykernError, match="fast_math must be True or False, got 'yes'"):
        pk.build([every_op], ["llvm"], fast_math="yes")


def test_the_promise_of_a_fast_op():
    for backend in numerics.BACKENDS:
        for op in numerics.FAST_MATH_OPS:
            entry = numerics.fast_math(backend, op)
            fast = numerics.promise(f"fast_{op}", "f32", backend)
            assert numerics.promise(op, "f32", backend, fast_math=True) == fast
            if entry is None:  # no faster lowering: the precise op's promise
                assert fast == numerics.promise(op, "f32", backend)
            elif backend not in numerics.SPECIALS_NOT_PROMISED:
                assert fast == entry.promise
            for dt in ("f16", "f64"):  # fast math is f32 only: the precise op elsewhere
                assert numerics.promise(f"fast_{op}", dt, backend) == numerics.promise(op, dt, backend)
    assert numerics.promise("fast_div", "f32", "nvptx").ulp == 2 and numerics.promise("div", "f32", "nvptx").ulp == 0
    # bf16: the f32 fast op rounded once to bf16 (1 bf16 ulp), keeping its domain and flushing
    p = numerics.promise("fast_div", "bf16", "nvptx")
    assert p.ulp == 1 and p.domain == numerics.promise("fast_div", "f32", "nvptx").domain and p.may_flush_subnormals


def test_bf16_stays_fast():
    """bf16 operations are f32 ones rounded once (widen_bf16): the fast f32 instruction, then the rounding."""
    @pk.kernel
    def bexp(n: i32, x: Buffer[pk.bf16]):
        i = pk.global_id(0)
        if i < n:
            x[i] = pk.fast_exp(x[i])
    ptx = pk.build([bexp], ["nvptx"]).on("cuda").sources["ptx"]
    assert "ex2.approx.ftz.f32" in ptx


# ------------------------------------------------------------------ lowering per backend


@pytest.mark.parametrize("target", compile_targets())
def test_lowering_follows_the_table(target):
    """Every lowering numerics.FAST_MATH lists for the target is in its output with fast_math=True and in
    none without; a target without entries builds the very same output."""
    kind = Target.parse(target).kind
    if kind == "rocm":
        tier_skip.skip_if_absent("ld.lld")  # the hsaco is linked (the GPU machine has no ld.lld)
    backend = capabilities.of(kind).numerics
    if kind == "cuda":
        target += " -fmt=cuda"  # the CUDA C source (NVRTC may be missing here)
    default = _sources(pk.build([every_op], [target]))
    fast = _sources(pk.build([every_op], [target], fast_math=True))
    entries = numerics.FAST_MATH.get(backend, {})
    if not entries:
        assert fast == default
        return
    assert capabilities.of(kind).fast_math, f"{kind} has FAST_MATH entries but does not declare fast_math"
    for op, entry in entries.items():
        marker = _marker(backend, entry)
        assert marker in fast, f"{target}: fast {op} -> {marker} missing"
        assert marker not in default, f"{target}: {marker} in the default build"


@pytest.mark.parametrize("target", compile_targets())
def test_fast_builtins_of_other_types_are_the_precise_ops(target):
    """fast_<op> of f64/f16 compiles to exactly what the precise op compiles to (f32 only is fast)."""
    kind = Target.parse(target).kind
    if kind == "rocm":
        tier_skip.skip_if_absent("ld.lld")  # the hsaco is linked (the GPU machine has no ld.lld)
    if kind == "cuda":
        target += " -fmt=cuda"

    @pk.kernel
    def precise(n: i32, a: Buffer[f64], h: Buffer[f16]):
        i = pk.global_id(0)
        if i < n:
            a[i] = pk.exp(a[i]) + a[i] / 3.0
            h[i] = pk.log(h[i])
    try:
        want = _sources(pk.build([precise], [target]))
    except KernelTypeError as e:  # f64/f16 refused by the backend: refused alike
        with pytest.raises(KernelTypeError):
            pk.build([other_types], [target])
        pytest.skip(f"{kind}: {str(e)[:120]}")
    got = _sources(pk.build([other_types], [target]))
    assert got.replace("other_types", "precise") == want


@pk.kernel
def exps(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f32], z: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = pk.fast_exp(x[i])
        z[i] = pk.fast_exp2(x[i])


def test_the_cpu_stays_precise():
    """The CPU's precise f32 exp/exp2 are already the fast inline expansion (codegen/cpu/vector_exp.py), so
    llvm has no fast math of its own, like vulkan or webgpu: no FAST_MATH entry, no fast_math capability,
    passes/fast_math.py gives it the precise operations, and the oracle (and the fuzzer, through it) judges
    a fast_math=True build against the precise promises."""
    assert "llvm" not in numerics.FAST_MATH and not capabilities.of("llvm").fast_math
    for op in numerics.FAST_MATH_OPS:
        assert numerics.fast_math("llvm", op) is None
        assert numerics.promise(op, "f32", "llvm", fast_math=True) == numerics.promise(op, "f32", "llvm")
    # the pass: every fast op of the llvm copy is the precise op again, so the IR is the default build's
    before = canonical_bytes([every_op.ir])
    assert canonical_bytes([apply_fast_math(clone_function(every_op.ir), "llvm", True)]) == before
    assert not uses_fast_math(apply_fast_math(clone_function(exps.ir), "llvm", False))
    # the oracle: an exp 3 ulp off is within the precise promise (3 ulp), with fast math too; 4 ulp is not
    x = np.array([0.5, 1.5, -2.25, 7.0], np.float32)
    oracle = interpret(exps, [np.int32(4), x, np.zeros(4, np.float32), np.zeros(4, np.float32)], (1, 1, 1), (4, 1, 1))
    for name in ("y", "z"):
        for steps, ok in ((3, True), (4, False)):
            off = oracle.buffers[name].copy()
            for _ in range(steps):
                off[2] = np.nextafter(off[2], np.float32(np.inf))
            got = dict(oracle.buffers, x=x, **{name: off})
            assert compare(oracle, got, "llvm").ok is ok
            assert compare(oracle, got, "llvm", fast_math=True).ok is ok, f"{name}: {steps} ulp with fast math"


def test_default_build_unchanged():
    """Without fast_math and without pk.fast_* calls the pass changes no kernel for any target."""
    kinds = sorted({Target.parse(t).kind for t in compile_targets()})
    for case in ALL_CASES:
        for k in case.kernels:
            ir = k.ir
            assert not uses_fast_math(ir)  # so pk.build does not even run the pass
            for kind in kinds:
                before = canonical_bytes([ir])
                after = canonical_bytes([apply_fast_math(clone_function(ir), kind, False)])
                assert after == before, f"{case.name}/{k.name} changed for {kind}"


# ------------------------------------------------------------------ cache key and artifact


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYKERN_CACHE", "1")
    monkeypatch.setenv("POLYKERN_CACHE_DIR", str(tmp_path / "cache"))
    build_cache.clear_memory()
    yield
    build_cache.clear_memory()


def test_fast_math_is_in_the_cache_key_and_the_artifact(cache):
    s = build_cache.stats()
    plain = pk.build([every_op], ["opencl"])
    fast = pk.build([every_op], ["opencl"], fast_math=True)
    assert build_cache.stats()["misses"] - s["misses"] == 2  # not answered by the default build's entry
    assert fast.on("opencl").sources != plain.on("opencl").sources  # native_* (the CPU has no fast math)
    again = pk.build([every_op], ["opencl"], fast_math=True)
    assert build_cache.stats()["memory_hits"] - s["memory_hits"] == 1
    assert again.export() == fast.export()
    assert pk.load(fast.export()).metadata["fast-math"] == "true"
    assert "fast-math" not in pk.load(plain.export()).metadata


# ------------------------------------------------------------------ bounds, measured on every runtime here


@pytest.mark.parametrize("target,kind", [pytest.param(t, k, id=k) for t, k, _ in runnable_targets()])
def test_fast_ops_within_their_promise(target, kind):
    n = 4000 if kind == "hexagon" else 100_000  # the hexagon runtime is an emulator
    for op, sweep in run_sweeps(target, n=n).items():
        assert sweep.failures == 0, sweep.line()


# ------------------------------------------------------------------ oracle and fuzzer


@pk.kernel
def divide(n: i32, x: Buffer[f32, "readonly"], z: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = x[i] / z[i]


def test_compare_uses_the_fast_promise_only_with_fast_math():
    """A quotient 2 ulp off: outside nvptx's default promise (exact), inside its fast one (div.approx)."""
    x = np.array([1.0, 2.0, 3.0, 7.0], np.float32)
    z = np.array([3.0, 7.0, 11.0, 13.0], np.float32)
    oracle = interpret(divide, [np.int32(4), x, z, np.zeros(4, np.float32)], (1, 1, 1), (4, 1, 1))
    ref = oracle.buffers["y"]
    off = ref.copy()
    off[1] = np.nextafter(np.nextafter(off[1], np.float32(9)), np.float32(9))
    got = {"x": x, "z": z, "y": off}
    assert not compare(oracle, got, "nvptx").ok
    assert compare(oracle, got, "nvptx", fast_math=True).ok
    worse = ref.copy()
    worse[1] = ref[1] * np.float32(1 + 2 ** -19)  # 8 ulp: outside both
    assert not compare(oracle, dict(got, y=worse), "nvptx", fast_math=True).ok


def test_generator_fast_math_option():
    seeds = range(7000000, 7000030)
    plain = [kernelgen.generate(s) for s in seeds]
    fast = [kernelgen.generate(s, fast_math=True) for s in seeds]
    assert [p.source for p in plain] == [kernelgen.generate(s).source for s in seeds]  # default unchanged
    assert not any(p.fast_math or "pk.fast_" in p.source for p in plain)
    assert all(p.fast_math for p in fast) and sum(p.source.count("pk.fast_") for p in fast) >= 5


def test_docs_embed_the_generated_fast_math_table():
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "docs", "correctness.md")
    if not os.path.exists(path):  # Bazel runfiles hold no docs/ (as for test_language_doc)
        pytest.skip("docs/correctness.md is not in this tree")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert numerics.FAST_DOC_BEGIN in text and numerics.FAST_DOC_END in text
    embedded = text.split(numerics.FAST_DOC_BEGIN, 1)[1].split(numerics.FAST_DOC_END, 1)[0].lstrip("\n")
    assert embedded == numerics.fast_math_table(), \
        "docs/correctness.md's fast math table is stale: paste polykern.numerics.fast_math_table() again"


def test_cli_compile_fast_math(tmp_path, capsys):
    from polykern.cli import main

    src = tmp_path / "k.py"
    src.write_text("import polykern as pk\nfrom polykern import Buffer, f32, i32\n\n\n@pk.kernel\n"
                   "def ex(n: i32, x: Buffer[f32]):\n    i = pk.global_id(0)\n    if i < n:\n"
                   "        x[i] = pk.exp(x[i])\n")
    for flag, want in ((["--fast-math"], "true"), ([], None)):
        out = tmp_path / f"k{len(flag)}.kbin"
        assert main(["compile", str(src), "-t", "llvm", "-o", str(out), *flag]) == 0
        assert pk.load(str(out)).metadata.get("fast-math") == want
