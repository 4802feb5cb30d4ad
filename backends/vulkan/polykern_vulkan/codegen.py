"""``target.build.vulkan``: verified IR functions -> a vulkan module, one SPIR-V shader per kernel.

Payload (wire layout "smap"): fmt "spirv"; ``map<str,bytes>`` kernel name -> SPIR-V binary (one
GLCompute entry point named like the kernel). Sources: "spirv-asm", our own disassembly of every
shader (see spirv_text.py: deterministic, never depends on tools installed on the build host).
"""
from __future__ import annotations

from typing import Dict, List

from polykern import registry
from polykern.kbin import payload_formats
from polykern.capabilities import Capabilities, F16Rounding, FloatSemantics, IntSemantics
from polykern.ir import nodes as ir
from polykern.module import FunctionInfo, Module, create_with_fallback
from polykern.target import Target

from .fallback import VulkanFallbackModule
from .features import parse_features, parse_version, target_kind
from .lower import lower_kernel
from .spirv_matrix import supported as matrix_supported
from .spirv_text import disassemble

TARGET_KIND = target_kind(Capabilities(
    refuses={"math_f64": "GLSL.std.450 has no 64-bit exp/exp2/log/log2/sin/cos/tanh/pow"},
    matrix=matrix_supported,
    atomics={**dict.fromkeys(("i64", "u64", "f64"), "with `-features=default,int64_atomics`"),
             **dict.fromkeys(("i16", "u16", "f16", "i8", "u8"), "no")},
    # drivers fold OpFConvert f32 -> f16 -> f32 (NVIDIA, newer lavapipe) and widen i2f16 past f16's range
    f16=F16Rounding("bits", ops_in_f32=("fma",)),
    # OpSDiv/OpUDiv/OpUMod by 0, OpSRem of negatives, shifts by the width, OpConvertFTo* out of range are
    # undefined; OpFRem rounds and GLSL Pow is undefined for x < 0: passes/legalize_numerics.py writes them all
    ints=IntSemantics(), floats=FloatSemantics()))


def compile_function(fn: ir.Function, target: Target):
    """(FunctionInfo, SPIR-V binary) of one kernel."""
    version = parse_version(str(target.attrs.get("spirv", "1.3")))
    features = parse_features(target.attrs.get("features", "default"))
    binary, attrs = lower_kernel(fn, version, features)
    base = FunctionInfo.from_ir(fn)
    info = FunctionInfo(base.name, base.args, base.launch_tags, base.shared_bytes, {**base.attrs, **attrs})
    return info, binary


def build(funcs: List[ir.Function], target: Target) -> Module:
    fmap: Dict[str, FunctionInfo] = {}
    shaders: Dict[str, bytes] = {}
    for fn in sorted(funcs, key=lambda f: f.name):
        fmap[fn.name], shaders[fn.name] = compile_function(fn, target)
    source = "\n".join(f"; ---- kernel {name} ----\n{disassemble(shaders[name])}" for name in shaders)
    return create_with_fallback("vulkan", shaders, "spirv", fmap, {"spirv-asm": source},
                                fallback_cls=VulkanFallbackModule)


def register() -> None:
    TARGET_KIND.register()
    registry.register("target.build.vulkan", build)
    registry.register(payload_formats.registry_key("vulkan"), VulkanFallbackModule.payload_formats)
