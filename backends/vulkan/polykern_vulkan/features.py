"""The ``vulkan`` target kind: its attributes, and the optional device features a shader may use.

``-spirv=1.0..1.6`` picks the SPIR-V version (default 1.3, what Vulkan 1.1 consumes natively).
``-features=`` lists the optional shader features the target device is assumed to have, comma
separated, ``default`` standing for the default set. A kernel that needs a feature the target does
not list is refused at compile time with a :class:`KernelTypeError` that names it.

The default set is what desktop GPUs and Mesa's lavapipe all support: 8/16/64-bit integers, half and
double floats, with buffer storage of 8- and 16-bit types. 64-bit atomics are opt-in
(``-features=default,int64_atomics``) because many devices lack ``shaderBufferInt64Atomics``.
For a mobile-class device write e.g. ``-features=int8,int16,float16``.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

from polykern.errors import TargetError

SPIRV_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6")
DEFAULT_SPIRV = "1.3"

# feature -> (what it enables, the Vulkan device features the runtime must find enabled)
FEATURES: Dict[str, Tuple[str, str]] = {
    "int8": ("i8/u8 arithmetic and 8-bit buffers (also Buffer[bool])",
             "shaderInt8, storageBuffer8BitAccess"),
    "int16": ("i16/u16 arithmetic and 16-bit buffers", "shaderInt16, storageBuffer16BitAccess"),
    "int64": ("i64/u64 arithmetic and buffers", "shaderInt64"),
    "float16": ("f16 arithmetic and buffers", "shaderFloat16, storageBuffer16BitAccess"),
    "float64": ("f64 arithmetic and buffers", "shaderFloat64"),
    "int64_atomics": ("atomics on 64-bit integers (and f64 atomics, done with a CAS loop)",
                      "shaderBufferInt64Atomics, shaderSharedInt64Atomics"),
}
DEFAULT_FEATURES = ("float16", "float64", "int16", "int64", "int8")
DEFAULT_FEATURES_TEXT = ",".join(DEFAULT_FEATURES)

# SPIR-V version -> the spirv-val --target-env that consumes it (documented for the runtime too).
VULKAN_ENV = {"1.0": "vulkan1.0", "1.1": "vulkan1.1", "1.2": "vulkan1.1", "1.3": "vulkan1.1",
              "1.4": "vulkan1.1spv1.4", "1.5": "vulkan1.2", "1.6": "vulkan1.3"}


def parse_version(text: str) -> Tuple[int, int]:
    if text not in SPIRV_VERSIONS:
        raise TargetError(f"vulkan: -spirv={text!r} is not a SPIR-V version; valid: {', '.join(SPIRV_VERSIONS)}")
    major, minor = text.split(".")
    return int(major), int(minor)


def parse_features(text: str) -> FrozenSet[str]:
    out = set()
    for item in (t.strip() for t in str(text).split(",")):
        if not item or item == "none":
            continue
        if item == "default":
            out.update(DEFAULT_FEATURES)
        elif item in FEATURES:
            out.add(item)
        else:
            raise TargetError(
                f"vulkan: unknown feature {item!r} in -features; valid: default, none, "
                f"{', '.join(sorted(FEATURES))}")
    return frozenset(out)


def canonical_features(features) -> str:
    return ",".join(sorted(features)) or "none"


def target_kind(capabilities):
    """The ``TargetKind`` registered under ``target.kind.vulkan``, with ``capabilities``."""
    from polykern.target import Attr, TargetKind

    class FeaturesAttr(Attr):
        """Validated when the target string is parsed; the value is canonicalized (sorted, 'default'
        expanded) so equal feature sets give equal target strings and artifact bytes."""

        def convert(self, kind, key, text):
            return canonical_features(parse_features(super().convert(kind, key, text)))

    feature_doc = "; ".join(f"{k}: {v[0]}" for k, v in sorted(FEATURES.items()))
    return TargetKind(
        "vulkan", "vulkan",
        {
            "spirv": Attr("str", DEFAULT_SPIRV, SPIRV_VERSIONS, "SPIR-V version of the shaders"),
            "features": FeaturesAttr("str", DEFAULT_FEATURES_TEXT, None,
                             "comma-separated optional device features the shaders may use "
                             f"('default' = {DEFAULT_FEATURES_TEXT}, 'none'); {feature_doc}"),
        },
        doc="Vulkan compute: one GLCompute SPIR-V shader per kernel, from polykern's own emitter",
        capabilities=capabilities,
    )
