"""Synthetic FunctionInfo / module trees for tests that must not need a compiler or runtime."""
from __future__ import annotations

from typing import Dict, Sequence, Type

from ..ir.types import f32, i32
from ..module import ArgInfo, DeviceModule, FallbackModule, FunctionInfo, RootModule


def saxpy_info(name: str = "saxpy", **attrs: str) -> FunctionInfo:
    """``name(n: i32, a: f32, x: Buffer[f32, readonly], y: Buffer[f32])`` using global_id.0."""
    return FunctionInfo(name, (ArgInfo.scalar("n", i32), ArgInfo.scalar("a", f32), ArgInfo.buffer("x", f32, True),
                               ArgInfo.buffer("y", f32)), ("global_id.0",), 0, dict(attrs))


#: Kinds whose modules hold one section per kernel, and the fmt those modules have (test data).
_SECTIONED = {"vulkan": "bin", "metal": "bin", "webgpu": "wgsl"}


def device_module(kind: str, names: Sequence[str] = ("saxpy",), cls: Type[DeviceModule] = FallbackModule,
                  fmt: str = "", with_sources: bool = True) -> DeviceModule:
    """A module of ``kind`` whose payload has the shape the in-tree backend of that kind gives it:
    named sections for vulkan/metal (binary) and webgpu (WGSL text), one text blob otherwise."""
    names = sorted(names)
    fmap = {n: saxpy_info(n) for n in names}
    sectioned = _SECTIONED.get(kind)
    fmt = fmt or (sectioned or "src")
    if sectioned is None:
        payload: object = "".join(f"// {kind} kernel {n}\n" for n in names).encode()
    else:
        payload = {n: f"// {kind} shader {n}\n".encode() if sectioned == "wgsl" else b"\x03\x02\x23\x07" + n.encode()
                   for n in names}
    sources: Dict[str, str] = {"listing": f"{kind}: {', '.join(names)}\n"} if with_sources else {}
    return cls(kind, payload, fmt, fmap, sources)


def synthetic_root(kinds: Sequence[str] = ("cuda", "vulkan", "llvm"), names: Sequence[str] = ("saxpy",),
                   cls: Type[DeviceModule] = FallbackModule) -> RootModule:
    mods = [device_module(k, names, cls) for k in kinds]
    return RootModule.collect(mods, targets=list(kinds))
