"""The rocm math is the shared ``polykern.codegen.llvm_devmath.PortableMath`` (also used by nvptx):
this runs the expansion on the CPU through the CPU backend for the conformance math cases. Which
functions stay LLVM intrinsics for the AMDGPU backend is checked on the emitted IR."""
import copy
import pathlib
import sys

import numpy as np
import pytest

from polykern import backends, registry
from polykern.testing.c_corpus import corpus
from polykern.codegen.llvm_target import compile_ir, data_layout, target_machine
from polykern.module import create_with_fallback
from polykern.passes import run_default_passes
from polykern.passes.legalize_target import legalize_for_target
from polykern.target import Target
from polykern.codegen import llvm_devmath as devmath
from polykern.testing import tier_skip

try:
    from conformance import ALL_CASES
except ImportError:  # plain pytest: the suite lives in the repository's tests/
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests"))
    from conformance import ALL_CASES

@pytest.mark.parametrize("name", ["math_f32", "math_f64"])
def test_conformance_math_on_cpu(name):
    llvm_codegen = pytest.importorskip("polykern_llvm.codegen", reason="the CPU backend runs the expansion")
    backends.load_all()
    if not backends.record_for_kind("llvm").runtime_available:
        tier_skip.skip("llvm", f"the CPU runtime is unavailable: {backends.runtime_reason('llvm')}")

    class CPUWithDevmath(devmath.PortableMath, llvm_codegen.CPUEmitter):
        pass

    case = next(c for c in ALL_CASES if c.name == name)
    funcs = [legalize_for_target(run_default_passes(copy.deepcopy(k.ir)), "rocm") for k in case.kernels]
    triple, cpu, features, opt = llvm_codegen.resolve(Target("llvm"))
    tm = target_machine(triple, cpu, features, opt)
    em = CPUWithDevmath(triple, data_layout(tm)).emit(funcs)
    out = compile_ir(em.render(), triple, cpu, features, opt, tm=tm)
    mod = create_with_fallback("llvm", out.obj, "o", llvm_codegen.function_map(funcs, em.kernel_facts, triple, cpu,
                                                                                features), {})
    case.run(mod, np.random.default_rng(0))


def test_amdgpu_keeps_native_exp_and_log_only():
    """f32 exp/exp2/log/log2 stay LLVM intrinsics (AMDGPU lowers them at full precision); sin, cos,
    tanh, pow and all of f64 are expanded, so no llvm.sin/llvm.pow (AMDGPU's are approximate or
    missing) and no library call reaches the code object."""
    backends.load_all()
    dev = registry.get("target.build.rocm")([corpus()["float_math"], corpus()["double_math"]], Target("rocm"))
    ll_text = dev.sources["llvm"]
    for name in ("llvm.exp2.f32", "llvm.log.f32"):
        assert name in ll_text, name
    for name in ("llvm.sin.", "llvm.cos.", "llvm.tanh.", "llvm.pow.", "llvm.exp.f64", "llvm.log.f64"):
        assert name not in ll_text, name
    assert "__pk_two_over_pi" in ll_text  # Payne-Hanek table for huge sin/cos arguments
