"""Modules: the compiled form of kernels (DESIGN.md section 4, docs/internals.md "Modules").

- :class:`FunctionInfo` / :class:`ArgInfo` describe a launchable kernel well enough for a
  runtime to launch it without the compiler.
- :class:`DeviceModule` is the shared base of every real and fallback device module; its
  ``save_to_bytes`` is the one serializer (``wire.encode_device_payload``), which is what
  makes fallback and real modules byte-identical by construction.
- :class:`FallbackModule` is what a compile host without the runtime produces.
- :class:`UnavailableModule` is what *loading* produces for a kind with no registered
  loader: it keeps the raw bytes (re-export is lossless) and explains why it cannot run.
- :class:`RootModule` holds the launchable functions and imports one module per target.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import registry
from .errors import ArtifactError, LaunchError, PolykernError, RuntimeNotLinkedError
from .aligned_launch import wrap_if_aligned
from .checked_launch import wrap_if_checked
from .ir.types import BufferType, ScalarType, scalar_from_code

__all__ = [
    "ArgInfo", "FunctionInfo", "Module", "DeviceModule", "FallbackModule", "UnavailableModule",
    "RootModule", "Launcher", "create_with_fallback", "force_fallback_enabled", "payload_text",
    "FORCE_FALLBACK_ENV",
]

FORCE_FALLBACK_ENV = "POLYKERN_COMPILE_FORCE_FALLBACK"
_ARG_KINDS = ("scalar", "buffer")


# ------------------------------------------------------------------ function descriptions


@dataclass(frozen=True)
class ArgInfo:
    """One kernel parameter: a scalar or a 1-D buffer of a DLPack-coded element type."""

    name: str
    kind: str  # "scalar" | "buffer"
    code: int
    bits: int
    lanes: int = 1
    readonly: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"argument names are non-empty strings, got {self.name!r}")
        if self.kind not in _ARG_KINDS:
            raise ValueError(f"argument {self.name!r}: kind must be 'scalar' or 'buffer', got {self.kind!r}")
        scalar_from_code(self.code, self.bits)  # ValueError for unknown types
        if not isinstance(self.lanes, int) or not 1 <= self.lanes <= 0xFFFF:
            raise ValueError(f"argument {self.name!r}: lanes must be in 1..65535, got {self.lanes!r}")
        if not isinstance(self.readonly, bool):
            raise ValueError(f"argument {self.name!r}: readonly must be a bool")
        if self.readonly and self.kind != "buffer":
            raise ValueError(f"argument {self.name!r}: only buffers can be readonly")

    @property
    def dtype(self) -> ScalarType:
        """The scalar type (of the value, or of a buffer's elements)."""
        return scalar_from_code(self.code, self.bits)

    @property
    def is_buffer(self) -> bool:
        return self.kind == "buffer"

    @property
    def type_str(self) -> str:
        return str(BufferType(self.dtype, self.readonly)) if self.is_buffer else str(self.dtype)

    @classmethod
    def scalar(cls, name: str, dtype: ScalarType) -> "ArgInfo":
        return cls(name, "scalar", dtype.code, dtype.bits)

    @classmethod
    def buffer(cls, name: str, dtype: ScalarType, readonly: bool = False) -> "ArgInfo":
        return cls(name, "buffer", dtype.code, dtype.bits, 1, readonly)

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "type": self.type_str, "code": self.code,
                "bits": self.bits, "lanes": self.lanes, "readonly": self.readonly}


@dataclass(frozen=True)
class FunctionInfo:
    """Everything a runtime needs to launch a kernel without the compiler."""

    name: str
    args: Tuple[ArgInfo, ...] = ()
    launch_tags: Tuple[str, ...] = ()
    shared_bytes: int = 0
    attrs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"function names are non-empty strings, got {self.name!r}")
        args = tuple(self.args)
        if not all(isinstance(a, ArgInfo) for a in args):
            raise ValueError(f"function {self.name!r}: args must be ArgInfo instances")
        names = [a.name for a in args]
        if len(set(names)) != len(names):
            raise ValueError(f"function {self.name!r}: duplicate argument names {names}")
        tags = tuple(self.launch_tags)
        if not all(isinstance(t, str) and t for t in tags):
            raise ValueError(f"function {self.name!r}: launch tags are non-empty strings")
        if not isinstance(self.shared_bytes, int) or not 0 <= self.shared_bytes < (1 << 64):
            raise ValueError(f"function {self.name!r}: shared_bytes must be a u64, got {self.shared_bytes!r}")
        attrs = dict(self.attrs)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in attrs.items()):
            raise ValueError(f"function {self.name!r}: attrs map str -> str")
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "launch_tags", tuple(sorted(set(tags))))
        object.__setattr__(self, "attrs", dict(sorted(attrs.items())))

    def __hash__(self) -> int:
        return hash((self.name, self.args, self.launch_tags, self.shared_bytes, tuple(self.attrs.items())))

    def signature(self) -> str:
        return f"{self.name}({', '.join(f'{a.name}: {a.type_str}' for a in self.args)})"

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "signature": self.signature(), "args": [a.to_dict() for a in self.args],
                "launch_tags": list(self.launch_tags), "shared_bytes": self.shared_bytes,
                "attrs": dict(self.attrs)}

    @classmethod
    def from_ir(cls, fn) -> "FunctionInfo":
        """Describe an ``ir.Function``: parameters, special registers used, shared memory, barrier use."""
        from .ir import nodes

        args = []
        for p in fn.params:
            if isinstance(p.type, BufferType):
                args.append(ArgInfo.buffer(p.name, p.type.elem, p.type.readonly))
            elif isinstance(p.type, ScalarType):
                args.append(ArgInfo.scalar(p.name, p.type))
            else:
                raise ValueError(f"function {fn.name!r}: parameter {p.name!r} has unsupported type {p.type}")
        tags = set()
        atomics = False
        for e in nodes.walk_all_exprs(fn.body):
            if isinstance(e, nodes.SpecialReg):
                tags.add(f"{e.kind}.{e.dim}")
            elif isinstance(e, nodes.Atomic):
                atomics = True
        shared = sum(a.elem.nbytes * a.size for a in fn.shared_arrays.values())
        attrs = dict(fn.attrs)
        if nodes.uses_barrier(fn):
            attrs["uses_barrier"] = "1"
        if atomics:
            attrs["uses_atomics"] = "1"
        return cls(fn.name, tuple(args), tuple(sorted(tags)), shared, attrs)


# ------------------------------------------------------------------ helpers


def _wire():
    from . import wire  # wire imports this module; import it lazily to keep the cycle one-way

    return wire


def force_fallback_enabled() -> bool:
    """``POLYKERN_COMPILE_FORCE_FALLBACK``: anything but unset, "", "0", "false" (any case) is true."""
    value = os.environ.get(FORCE_FALLBACK_ENV)
    return value is not None and value.lower() not in ("", "0", "false")


def payload_text(data: bytes) -> Optional[str]:
    """``data`` as text if it is UTF-8 without NUL bytes (PTX, C, MSL, WGSL), else ``None``."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _check_fmap(fmap: Mapping[str, FunctionInfo]) -> Dict[str, FunctionInfo]:
    out = {}
    for name, info in dict(fmap).items():
        if not isinstance(info, FunctionInfo) or info.name != name:
            raise ValueError(f"function map entry {name!r} must be a FunctionInfo named {name!r}")
        out[name] = info
    return dict(sorted(out.items()))


def _check_sources(sources: Optional[Mapping[str, str]]) -> Dict[str, str]:
    out = dict(sources or {})
    if not all(isinstance(k, str) and k and isinstance(v, str) for k, v in out.items()):
        raise ValueError("sources map a format name to its text (str -> str)")
    return dict(sorted(out.items()))


# ------------------------------------------------------------------ modules


class Module:
    """Abstract module. Subclasses set ``kind``, ``fmt``, ``functions``, ``imports``, ``sources``."""

    kind: str = ""
    fmt: str = ""
    is_runnable: bool = False
    #: Source formats shown by ``inspect_source("")``, most preferred first (backends override).
    source_preference: Tuple[str, ...] = ()

    def __init__(self) -> None:
        self.functions: Dict[str, FunctionInfo] = {}
        self.imports: List[Module] = []
        self.sources: Dict[str, str] = {}

    # -- abstract
    def save_to_bytes(self) -> bytes:
        raise NotImplementedError(f"{type(self).__name__} does not implement save_to_bytes")

    def get_function(self, name: str):
        raise NotImplementedError(f"{type(self).__name__} does not implement get_function")

    def __getitem__(self, name: str):
        return self.get_function(name)

    def __contains__(self, name: object) -> bool:
        return name in self.functions

    def function_info(self, name: str) -> FunctionInfo:
        info = self.functions.get(name)
        if info is None:
            avail = ", ".join(self.functions) or "none"
            raise LaunchError(f"no kernel named {name!r} in this {self.kind} module; available: {avail}")
        return info

    def not_runnable_reason(self, name: str) -> str:
        """Why ``get_function(name)`` cannot run here (meaningful when ``is_runnable`` is false)."""
        return f"the {self.kind} module ({type(self).__name__}) is not runnable"

    # -- sources
    def _payload_text(self, fmt: str) -> Optional[str]:
        return None

    def source_formats(self) -> List[str]:
        """Formats :meth:`inspect_source` can return: embedded sources plus a textual payload."""
        fmts = set(self.sources)
        if self.fmt and self._payload_text(self.fmt) is not None:
            fmts.add(self.fmt)
        return sorted(fmts)

    def inspect_source(self, fmt: str = "") -> str:
        avail = self.source_formats()
        if not fmt:
            order = [f for f in self.source_preference if f in avail]
            order += [self.fmt] if self.fmt in avail else []
            order += avail
            if not order:
                raise PolykernError(self._no_source_message())
            fmt = order[0]
        if fmt in self.sources:
            return self.sources[fmt]
        text = self._payload_text(fmt)
        if text is not None:
            return text
        raise PolykernError(f"{self.kind} module has no {fmt!r} source; available formats: "
                            f"{', '.join(avail) if avail else 'none'}"
                            + ("" if avail else f" ({self._no_source_message()})"))

    def _no_source_message(self) -> str:
        return f"no source is embedded in this {self.kind} module (built or exported with --strip-sources?)"

    # -- imports
    def import_module(self, m: "Module") -> None:
        if not isinstance(m, Module):
            raise TypeError(f"can only import a Module, got {type(m).__name__}")
        if isinstance(m, RootModule):
            raise PolykernError("a root module cannot be imported into another module")
        if m is self or any(x is self for x in m.walk()):
            raise PolykernError("importing this module would create an import cycle")
        if any(x is m for x in self.walk()):
            raise PolykernError(f"this {m.kind} module is already imported")
        self.imports.append(m)

    def walk(self) -> Iterator["Module"]:
        """This module and every module it imports, depth first, in import order (preorder)."""
        stack = [self]
        while stack:
            m = stack.pop()
            yield m
            stack.extend(reversed(m.imports))

    def __repr__(self) -> str:
        fmt = f" fmt={self.fmt}" if self.fmt else ""
        return f"<{type(self).__name__} kind={self.kind}{fmt} functions=[{', '.join(self.functions)}]>"


Payload = Union[bytes, Dict[str, bytes]]


class DeviceModule(Module):
    """Shared base of every real and fallback device module.

    Subclasses that can run set ``is_runnable = True`` and implement
    ``_get_function(info) -> callable(*args, grid=..., block=...)``; ``get_function``
    first checks that the name exists.
    """

    def __init__(self, kind: str, payload: Payload, fmt: str, fmap: Mapping[str, FunctionInfo],
                 sources: Optional[Mapping[str, str]] = None):
        super().__init__()
        layout = _wire().layout_of(kind)
        if layout == "root":
            raise ValueError("a device module cannot have kind 'root'")
        if not isinstance(fmt, str) or (not fmt and layout != "webgpu"):
            raise ValueError(f"{kind} module: fmt must be a non-empty string, got {fmt!r}")
        if layout == "webgpu":
            fmt = fmt or "wgsl"
        if layout == "bytes":
            if not isinstance(payload, (bytes, bytearray, memoryview)):
                raise TypeError(f"a {kind} payload is bytes, got {type(payload).__name__}")
            payload = bytes(payload)
        else:
            if not isinstance(payload, Mapping):
                raise TypeError(f"a {kind} payload is a dict[str, bytes] of per-kernel shaders")
            payload = {str(k): bytes(v) for k, v in sorted(payload.items())}
        self.kind = kind
        self.fmt = fmt
        self.payload: Payload = payload
        self.functions = _check_fmap(fmap)
        self.sources = _check_sources(sources)

    @property
    def layout(self) -> str:
        return _wire().PAYLOAD_LAYOUT[self.kind]

    def save_to_bytes(self) -> bytes:
        return _wire().encode_device_payload(self.kind, self.fmt, self.functions, self.payload)

    def get_function(self, name: str):
        info = self.function_info(name)
        return wrap_if_aligned(info, wrap_if_checked(info, self._get_function(info)))

    def _get_function(self, info: FunctionInfo):
        raise NotImplementedError(f"{type(self).__name__} must implement _get_function")

    def _payload_text(self, fmt: str) -> Optional[str]:
        if fmt != self.fmt:
            return None
        if isinstance(self.payload, bytes):
            return payload_text(self.payload)
        parts = []
        for name, data in self.payload.items():
            text = payload_text(data)
            if text is None:
                return None
            parts.append(f"// ---- {name} ----\n{text}")
        return "\n".join(parts) if parts else None


class FallbackModule(DeviceModule):
    """What a host without the runtime builds: same bytes as the real module, cannot run."""

    is_runnable = False

    def _get_function(self, info: FunctionInfo):
        raise RuntimeNotLinkedError(self.not_runnable_reason(info.name))

    def not_runnable_reason(self, name: str) -> str:
        from . import backends

        return backends.runtime_missing_message(self.kind, name)


class UnavailableModule(DeviceModule):
    """A loaded module whose kind has no registered loader here. Keeps the raw bytes."""

    is_runnable = False

    def __init__(self, kind: str, data: bytes, sources: Optional[Mapping[str, str]], reason: str,
                 origin: str = "the artifact", decoded: Optional[Tuple[str, Dict[str, FunctionInfo], Payload]] = None):
        fmt, fmap, payload = decoded if decoded is not None else _wire().decode_device_payload(kind, data)
        super().__init__(kind, payload, fmt, fmap, sources)
        self.raw = bytes(data)
        self.reason = reason
        self.origin = origin

    def save_to_bytes(self) -> bytes:
        return self.raw

    def message(self) -> str:
        from . import backends

        display = backends.display_name(self.kind)
        return (f"{self.origin} contains a '{self.kind}' module but no {display} runtime is registered here "
                f"(reason: {self.reason}). `polykern inspect` can read it without one.")

    def not_runnable_reason(self, name: str) -> str:
        return self.message()

    def _get_function(self, info: FunctionInfo):
        raise ArtifactError(self.message())


# ------------------------------------------------------------------ root module


class Launcher:
    """``root["k"]``: runs ``k`` on the first runnable imported module that has it."""

    def __init__(self, root: "RootModule", info: FunctionInfo):
        self.root = root
        self.info = info
        self._lock = threading.Lock()
        self._resolved: Optional[Tuple[Module, Any]] = None

    @property
    def name(self) -> str:
        return self.info.name

    def resolve(self) -> Tuple[Module, Any]:
        """(module, device function) this launcher runs on; raises if none is runnable."""
        with self._lock:
            if self._resolved is not None:
                return self._resolved
            reasons = []
            for m in self.root.device_modules():
                if self.name not in m.functions:
                    continue
                if m.is_runnable:
                    self._resolved = (m, m.get_function(self.name))
                    return self._resolved
                reasons.append(f"  - {m.kind} ({m.fmt}): {m.not_runnable_reason(self.name)}")
            if not reasons:
                raise LaunchError(f"kernel {self.name!r} is listed by the root module but no imported module "
                                  "provides it")
            raise RuntimeNotLinkedError(f"cannot launch {self.name!r}: no module that has it can run here:\n"
                                        + "\n".join(reasons))

    @property
    def module(self) -> Module:
        return self.resolve()[0]

    def __call__(self, *args, grid=None, block=None):
        return self.resolve()[1](*args, grid=grid, block=block)

    def __repr__(self) -> str:
        return f"<Launcher {self.info.signature()}>"


class RootModule(Module):
    """The launchable functions plus one imported device module per target, in target order."""

    kind = "root"
    fmt = ""

    def __init__(self, functions: Optional[Mapping[str, FunctionInfo]] = None, imports: Iterable[Module] = (),
                 targets: Sequence[Any] = (), sources: Optional[Mapping[str, str]] = None):
        super().__init__()
        self.functions = _check_fmap(functions or {})
        for m in imports:
            self.import_module(m)
        self.targets: List[str] = [str(t) for t in targets]
        self.sources = _check_sources(sources)

    @classmethod
    def collect(cls, imports: Sequence[Module], targets: Sequence[Any] = ()) -> "RootModule":
        """A root whose functions are those of ``imports`` (the first description of a name wins)."""
        functions: Dict[str, FunctionInfo] = {}
        for m in imports:
            for name, info in m.functions.items():
                functions.setdefault(name, info)
        return cls(functions, imports, targets)

    @property
    def is_runnable(self) -> bool:  # type: ignore[override]
        return any(m.is_runnable for m in self.device_modules())

    def device_modules(self) -> List[Module]:
        return [m for m in self.walk() if m is not self]

    def save_to_bytes(self) -> bytes:
        return _wire().encode_root_payload(self.functions, self.targets)

    def get_function(self, name: str) -> Launcher:
        return Launcher(self, self.function_info(name))

    def on(self, kind: str) -> Module:
        """The first imported module of module kind ``kind`` (a target kind such as 'nvptx' also works)."""
        mods = self.device_modules()
        for m in mods:
            if m.kind == kind:
                return m
        tk = registry.get(f"target.kind.{kind}")
        if tk is not None:
            for m in mods:
                if m.kind == tk.module_kind:
                    return m
        have = ", ".join(m.kind for m in mods) or "none"
        raise LaunchError(f"this artifact has no {kind!r} module; modules: {have}")

    def inspect_source(self, fmt: str = "") -> str:
        own = self.source_formats()
        if own and (not fmt or fmt in own):
            return super().inspect_source(fmt)
        for m in self.device_modules():
            if (fmt and fmt in m.source_formats()) or (not fmt and m.source_formats()):
                return m.inspect_source(fmt)
        have = sorted({f for m in self.walk() for f in m.source_formats()})
        raise PolykernError(f"no module has a {fmt or 'source'!r} source; available: "
                            f"{', '.join(have) if have else 'none (sources were stripped?)'}")

    def export(self, path=None, strip_sources: bool = False, metadata: Optional[Mapping[str, str]] = None) -> bytes:
        from . import artifact

        return artifact.export(self, path, strip_sources=strip_sources, metadata=metadata)


# ------------------------------------------------------------------ create_with_fallback


def create_with_fallback(kind: str, payload: Payload, fmt: str, fmap: Mapping[str, FunctionInfo],
                         sources: Optional[Mapping[str, str]] = None, *, fallback_cls: Optional[type] = None
                         ) -> Module:
    """DESIGN.md section 4: the real module if its runtime is registered, else a fallback.

    ``POLYKERN_COMPILE_FORCE_FALLBACK`` is read on every call. ``fallback_cls`` lets a
    backend use its own :class:`FallbackModule` subclass (e.g. for ``source_preference``).
    """
    cls = fallback_cls or FallbackModule
    if not (isinstance(cls, type) and issubclass(cls, FallbackModule)):
        raise TypeError("fallback_cls must be a FallbackModule subclass")
    if force_fallback_enabled():
        return cls(kind, payload, fmt, fmap, sources)
    factory = registry.get(f"module.create.{kind}")
    if factory is None:
        return cls(kind, payload, fmt, fmap, sources)
    m = factory(payload, fmt, fmap, dict(sources or {}))
    if not isinstance(m, Module) or m.kind != kind:
        raise PolykernError(f"module.create.{kind} returned {m!r}, not a {kind!r} Module")
    return m
