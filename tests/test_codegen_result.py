"""What a codegen plugin (``target.build.<kind>``) returns is checked in one place
(polykern/codegen_result.py): None, a module of another kind or without a fmt, a module missing a
kernel, or a plugin bug (a non-polykern exception) is a CompileError naming the plugin — its registry
key, function, backend and origin. Was: a raw TypeError ("can only import a
Module, got NoneType") or ValueError that named nothing."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, backends, f32
from polykern.errors import CompileError
from polykern.kbin.function_info import FunctionInfo
from polykern.module import FallbackModule, Module, RootModule
from polykern.target import TargetKind
from polykern.testing.isolation import isolated


@pk.kernel
def double(x: Buffer[f32]):
    i = pk.global_id(0)
    x[i] = x[i] * 2.0


class _NoFmt(Module):  # a plugin's own Module subclass that forgot its payload format
    kind = "zzgen"

    def __init__(self, funcs):
        super().__init__()
        self.functions = {f.name: FunctionInfo.from_ir(f) for f in funcs}


_RESULTS = {
    "none": (lambda funcs, t: None, "returned None, not the device Module it built"),
    "root": (lambda funcs, t: RootModule(), "returned a RootModule, not the device Module it built"),
    "kind": (lambda funcs, t: FallbackModule("zzother", b"x", "bin", {f.name: FunctionInfo.from_ir(f) for f in funcs}),
             "returned a module of kind 'zzother'; target kind 'zzgen' builds 'zzgen' modules"),
    "no_fmt": (lambda funcs, t: _NoFmt(funcs), "returned a zzgen module without a payload format (fmt '')"),
    "no_kernel": (lambda funcs, t: FallbackModule("zzgen", b"x", "bin", {}),
                  "returned a zzgen module without the kernel(s) it was given: double"),
    # the plugin builds with an empty fmt: DeviceModule's ValueError is raised inside the plugin
    "empty_fmt": (lambda funcs, t: FallbackModule("zzgen", b"x", "", {f.name: FunctionInfo.from_ir(f) for f in funcs}),
                  "failed on target 'zzgen': ValueError: zzgen module: fmt must be a non-empty string, got ''"),
}


@pytest.mark.parametrize("case", sorted(_RESULTS))
def test_what_a_codegen_returns_is_checked_and_the_plugin_is_named(case):
    build, expected = _RESULTS[case]

    def codegen():
        TargetKind("zzgen", "zzgen").register()
        pk.registry.register("target.build.zzgen", build)

    with isolated(loaded=True):
        rec = backends.declare("zzgen", "zzgen", codegen=codegen)
        rec.origin = "POLYKERN_BACKEND_PATH entry '/src/polykern_zzgen'"
        with pytest.raises(CompileError) as e:  # was: TypeError / ValueError naming no plugin
            pk.build([double], targets=["zzgen"])
    msg = str(e.value)
    assert msg.startswith(f"the code generator target.build.zzgen ({__name__}.<lambda>, ")
    assert "backend 'zzgen', POLYKERN_BACKEND_PATH entry '/src/polykern_zzgen')" in msg
    assert expected in msg


def test_a_real_codegen_passes_the_check():
    root = pk.build([double], targets=["llvm"])
    x = np.arange(4, dtype=np.float32)
    root["double"](x, grid=1, block=4)
    np.testing.assert_array_equal(x, [0, 2, 4, 6])
