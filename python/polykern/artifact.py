"""The .kbin container: export a module tree, load it back, describe it without a runtime.

- :func:`export` writes a :class:`RootModule` and its import tree (``RootModule.export``; a bare
  device module is wrapped in a root first).
- :func:`load` validates the whole container first, then turns each module into a real
  module through ``module.load_from_bytes.<kind>``, or into an :class:`UnavailableModule`
  when no loader is registered here, including kinds this build has never heard of
  (``strict=True`` raises instead). Loaders always get format version 2 payload bytes: a
  version-1 artifact's payloads are re-encoded once, here.
- :func:`read_artifact` returns a plain description (dicts/lists/str/int) for
  ``polykern inspect``; it never imports or needs a runtime.
"""
from __future__ import annotations

import hashlib
import os
import struct
from typing import Any, Dict, List, Mapping, Optional, Union, cast

from . import backends, registry
from .kbin import wire
from .errors import (ArtifactError, BackendUnavailableError, CompileError, DeviceError, PolykernError,
                     RuntimeNotLinkedError)
from .kbin.file import Source
from .kbin.file import read as _read
from .kbin.messages import message, quote
from .module import Module, RootModule, UnavailableModule, payload_text
from .kbin.payload_formats import check_registered
from .version import compiler_version

__all__ = ["export", "load", "read_artifact", "describe_binary", "compiler_version"]


# ------------------------------------------------------------------ export


def export(root: Module, path: Union[str, "os.PathLike[str]", None] = None, *, strip_sources: Optional[bool] = None,
           metadata: Optional[Mapping[str, str]] = None) -> bytes:
    """Serialize ``root`` (a RootModule; a bare device module is wrapped in one) to .kbin bytes,
    writing them to ``path`` (atomically) when given; see :meth:`RootModule.export`."""
    if not isinstance(root, Module):
        raise PolykernError(f"export needs a polykern module, got {type(root).__name__}")
    if not isinstance(root, RootModule):
        root = RootModule.collect([root])
    return root.export(path, strip_sources=strip_sources, metadata=metadata)


# ------------------------------------------------------------------ load


_DEGRADE = (BackendUnavailableError, RuntimeNotLinkedError, DeviceError, CompileError)


def load(src: Source, strict: bool = False) -> RootModule:
    """Load a .kbin (path or bytes). Modules whose kind has no loader here become
    :class:`UnavailableModule` (inspectable, re-exportable, not runnable); ``strict=True``
    raises :class:`ArtifactError` on the first such module instead."""
    data, origin = _read(src)
    c = wire.decode_container(data)
    backends.load_all()
    root_entry = c.modules[0]
    functions, targets = wire.decode_root_payload(data, root_entry.offset, root_entry.offset + len(root_entry.payload),
                                                  c.version)
    mods: List[Module] = []
    for i, entry in enumerate(c.modules):
        sources = dict(c.sources[i]) if c.sources is not None else {}
        if i == 0:
            mods.append(RootModule(functions, (), targets, sources))
            continue
        end = entry.offset + len(entry.payload)
        decoded = wire.decode_device_payload(entry.kind, data, entry.offset, end, c.version)
        payload = entry.payload if c.version == wire.VERSION else wire.encode_device_payload(entry.kind, *decoded)
        mods.append(_load_device(i, entry, payload, decoded, sources, origin, strict))
    _link(mods, c.children)
    root = cast(RootModule, mods[0])  # decode_container checked that module 0 is the root
    _check_root_provided(functions, [m.functions for m in mods[1:]], root_entry.offset)
    root.origin = origin  # type: ignore[attr-defined]
    root.metadata = dict(c.meta)
    root.sources_stripped = c.sources is None
    return root


def _check_root_provided(root_functions, device_fmaps, offset: int) -> None:
    """Every kernel the root lists is provided by some device module (load and inspect alike)."""
    provided = {name for fmap in device_fmaps for name in fmap}
    missing = sorted(set(root_functions) - provided, key=lambda name: name.encode("utf-8"))
    if missing:
        raise ArtifactError(message("ROOT_MISSING", len(missing), quote(missing[0])), offset)


def _link(mods: List[Module], children: List[List[int]]) -> None:
    """Attach each module's imports. ``decode_container`` proved the indices form a tree rooted
    at module 0, so Module.import_module's cycle and duplicate checks (each a walk of the tree,
    quadratic over a whole artifact) are not needed; a loader must return a fresh module."""
    if len({id(m) for m in mods}) != len(mods) or any(m.imports for m in mods):
        raise ArtifactError("a module loader returned a module it had returned before or one that already "
                            "imports others; loaders must return a fresh module")
    for i, kids in enumerate(children):
        mods[i].imports.extend(mods[k] for k in kids)


def _load_device(i: int, entry: wire.ContainerModule, payload: bytes, decoded, sources: Dict[str, str], origin: str,
                 strict: bool) -> Module:
    """Module ``i`` through its kind's loader, which gets ``payload`` (format version 2 bytes)."""
    kind = entry.kind
    try:  # the kind's accepted layout/fmt: the same verdict with the runtime (loader) or without it
        check_registered(kind, *decoded)
    except ArtifactError as e:
        raise ArtifactError(f"module {i}: {e}", entry.offset) from None
    loader = registry.get(f"module.load_from_bytes.{kind}")
    reason = ""
    if loader is None:
        reason = backends.runtime_reason(kind) or f"no module.load_from_bytes.{kind} is registered"
    else:
        try:
            m = loader(payload, sources)
        except ArtifactError:
            raise
        except _DEGRADE as e:
            reason = f"the {kind} loader failed: {e}"
            if strict:
                raise ArtifactError(f"{origin}: module {i} ({kind}) cannot be loaded here: {e}", entry.offset) from e
        except Exception as e:
            raise ArtifactError(f"the {kind} loader failed on module {i}: {type(e).__name__}: {e}",
                                entry.offset) from e
        else:
            if not isinstance(m, Module) or m.kind != kind:
                raise ArtifactError(f"module.load_from_bytes.{kind} returned {m!r}, not a {kind!r} module",
                                    entry.offset)
            return m
    um = UnavailableModule(kind, payload, sources, reason, origin, decoded)
    if strict:
        raise ArtifactError(um.message(), entry.offset)
    return um


# ------------------------------------------------------------------ describe (no runtime)

_ELF_MACHINES = {3: "x86", 40: "ARM", 62: "x86-64", 164: "Hexagon", 183: "AArch64", 190: "NVIDIA CUDA",
                 224: "AMD GPU", 243: "RISC-V", 247: "BPF"}
_ELF_TYPES = {1: "relocatable object", 2: "executable", 3: "shared object"}


def describe_binary(data: bytes) -> str:
    """A one-line description of a payload, like file(1) but for the formats polykern ships."""
    n = len(data)
    if data[:4] == b"\x7fELF" and n >= 20:
        bits = {1: "32-bit", 2: "64-bit"}.get(data[4], "?-bit")
        endian = "<" if data[5] != 2 else ">"
        e_type, e_machine = struct.unpack_from(endian + "HH", data, 16)
        machine = _ELF_MACHINES.get(e_machine, f"machine {e_machine}")
        return f"ELF {bits} {_ELF_TYPES.get(e_type, f'type {e_type}')}, {machine} ({n} bytes)"
    if n >= 20 and n % 4 == 0 and data[:4] in (b"\x03\x02\x23\x07", b"\x07\x23\x02\x03"):
        endian = "<" if data[:4] == b"\x03\x02\x23\x07" else ">"
        version = struct.unpack_from(endian + "I", data, 4)[0]
        return f"SPIR-V module, version {(version >> 16) & 0xFF}.{(version >> 8) & 0xFF} ({n} bytes)"
    if data[:4] == b"BC\xc0\xde":
        return f"LLVM bitcode ({n} bytes)"
    if data[:4] == b"MTLB":
        return f"Metal library ({n} bytes)"
    text = payload_text(data)
    if text is not None:
        lines = len(text.splitlines())
        return f"text, {lines} line{'s' * (lines != 1)} ({n} bytes)"
    return f"binary data ({n} bytes)"


def _payload_dict(data: bytes, with_text: bool) -> Dict[str, Any]:
    out: Dict[str, Any] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                           "description": describe_binary(data), "is_text": payload_text(data) is not None}
    if with_text and out["is_text"]:
        out["text"] = payload_text(data)
    return out


def read_artifact(src: Source, with_payload_text: bool = True) -> Dict[str, Any]:
    """Describe an artifact with no runtime: modules, kinds, fmts, functions, sources, metadata."""
    data, origin = _read(src)
    c = wire.decode_container(data)
    modules: List[Dict[str, Any]] = []
    root_functions: List[Dict[str, Any]] = []
    targets: List[str] = []
    root_fmap: Dict[str, Any] = {}
    device_fmaps = []
    for i, entry in enumerate(c.modules):
        end = entry.offset + len(entry.payload)
        desc: Dict[str, Any] = {"index": i, "kind": entry.kind, "offset": entry.offset, "size": len(entry.payload),
                                "sha256": hashlib.sha256(entry.payload).hexdigest(), "imports": list(c.children[i])}
        if i == 0:
            fmap, targets = wire.decode_root_payload(data, entry.offset, end, c.version)
            root_fmap = fmap
            root_functions = [f.to_dict() for f in fmap.values()]
            desc.update(fmt="", layout="root", functions=list(fmap), targets=list(targets))
        else:
            fmt, fmap, payload = wire.decode_device_payload(entry.kind, data, entry.offset, end, c.version)
            device_fmaps.append(fmap)
            layout = wire.V1_KINDS[entry.kind] if c.version == 1 else wire.payload_layout(payload)
            desc.update(fmt=fmt, layout=layout, functions=list(fmap),
                        function_info=[f.to_dict() for f in fmap.values()])
            if isinstance(payload, bytes):
                desc["payload"] = _payload_dict(payload, with_payload_text)
            else:
                desc["shaders"] = {name: _payload_dict(blob, with_payload_text) for name, blob in payload.items()}
        desc["sources"] = dict(c.sources[i]) if c.sources is not None else {}
        modules.append(desc)
    _check_root_provided(root_fmap, device_fmaps, c.modules[0].offset)
    return {"file": origin, "format_version": c.version, "size": c.size, "crc32": f"0x{c.crc32:08x}",
            "metadata": dict(c.meta), "targets": targets, "sources_embedded": c.sources is not None,
            "functions": root_functions, "modules": modules}
