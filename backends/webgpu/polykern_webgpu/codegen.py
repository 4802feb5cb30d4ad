"""``target.build.webgpu``: verified IR functions -> a webgpu module (one WGSL shader per kernel).

Payload (wire layout "webgpu"): ``map<str,FunctionInfo> fmap; map<str,bytes> shaders`` where
each shader is the UTF-8 WGSL text of one kernel; fmt is always "wgsl". The launch ABI
each shader implements is recorded in its FunctionInfo attrs (see abi.py).
"""
from __future__ import annotations

from typing import Dict, List

from polykern import hooks, registry
from polykern.kbin import payload_formats
from polykern.capabilities import Capabilities, F16Rounding, IntSemantics
from polykern.ir import nodes as ir
from polykern.module import FunctionInfo, Module, create_with_fallback
from polykern.target import Attr, Target, TargetKind

from .fallback import WebGPUFallbackModule
from .wgsl_emit import emit_wgsl

TARGET_KIND = TargetKind(
    "webgpu", "webgpu",
    {"shader_f16": Attr("bool", False, None,
                        "allow f16 (emits 'enable f16;'; the device needs the 'shader-f16' feature)")},
    doc="WGSL compute shaders for WebGPU (wgpu-native, Dawn, browsers)",
    capabilities=Capabilities(
        refuses={"f64": "WGSL has no 64-bit floating-point type",
                 "math_f64": "WGSL has no 64-bit floating-point type",
                 **dict.fromkeys(("i64", "u64"), "WGSL has no 64-bit integer types"),
                 **dict.fromkeys(("i8", "u8"), "WGSL has no 8-bit integer types"),
                 **dict.fromkeys(("i16", "u16"), "WGSL has no 16-bit integer types"),
                 "bf16": "WGSL has no bfloat16 type and no 16-bit integers to hold its bits",
                 "bool_buffer": "bool is not host-shareable in WGSL storage buffers"},
        no_matrix="WebGPU has no standard matrix engine yet (wgpu's 'cooperative-matrix' feature is not part "
                  "of WebGPU); use vulkan or llvm",
        f16=F16Rounding("bits", ops_in_f32=("div", "floordiv", "mod", "pow", "fma")),
        atomics={"f16": "no"},
        # WGSL defines x / 0 == x, x % 0 == 0 and MIN / -1 == MIN; naga's signed % is OpSRem (below)
        ints=IntSemantics(division="native")))


def compile_function(fn: ir.Function, target: Target):
    """(FunctionInfo, WGSL text) of one kernel, after the polykern.hook.webgpu.postproc hook."""
    text, attrs = emit_wgsl(fn, f16_ok=bool(target.attrs.get("shader_f16", False)))
    text, hook_attrs = hooks.postprocess("webgpu", text, target)
    base = FunctionInfo.from_ir(fn)
    info = FunctionInfo(base.name, base.args, base.launch_tags, base.shared_bytes,
                        {**base.attrs, **attrs, **hook_attrs})
    return info, text


def build(funcs: List[ir.Function], target: Target) -> Module:
    fmap: Dict[str, FunctionInfo] = {}
    shaders: Dict[str, bytes] = {}
    for fn in sorted(funcs, key=lambda f: f.name):
        info, text = compile_function(fn, target)
        fmap[fn.name] = info
        shaders[fn.name] = text.encode("utf-8")
    source = "\n".join(f"// ---- {name} ----\n{shaders[name].decode('utf-8')}" for name in shaders)
    return create_with_fallback("webgpu", shaders, "wgsl", fmap, {"wgsl": source},
                                fallback_cls=WebGPUFallbackModule)


def register() -> None:
    TARGET_KIND.register()
    registry.register("target.build.webgpu", build)
    # drivers fold naga's f16(x) round trip (NVIDIA, newer lavapipe); WGSL's /, %, pow and fma of f16 are
    # computed in f32 (its division, fmod and pow helpers) and rounded once
    registry.register(payload_formats.registry_key("webgpu"), WebGPUFallbackModule.payload_formats)
