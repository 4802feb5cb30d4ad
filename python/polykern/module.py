"""Modules: the compiled form of kernels (docs/internals.md "Modules").

- :class:`FunctionInfo` / :class:`ArgInfo` (defined in ``function_info``) describe a launchable
  kernel well enough for a runtime to launch it without the compiler.
- :class:`DeviceModule` is the shared base of every real and fallback device module; its
  ``save_to_bytes`` is the one serializer (``wire.encode_device_payload``), which is what
  makes fallback and real modules byte-identical by construction.
- :class:`FallbackModule` is what a compile host without the runtime produces.
- :class:`DeferredModule` is what compiling produces while the kind's runtime is not imported yet
  (runtimes are imported on first need, polykern.backends): the fallback's bytes and sources, and
  the real or fallback module made on first ``is_runnable`` / ``get_function`` (:meth:`realize`).
- :class:`UnavailableModule` is what *loading* produces for a kind with no registered
  loader (also a kind this build has never heard of): it keeps the raw bytes (re-export is
  lossless) and says why it cannot run and which backend to install.
- :class:`RootModule` holds the launchable functions and imports one module per target;
  :meth:`RootModule.export` writes the ``.kbin`` container.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import backends, registry
from .kbin import file as kbin_file, wire
from .backends import FORCE_FALLBACK_ENV
from .runtime.aligned_launch import wrap_if_aligned
from .runtime.checked_launch import user_visible, wrap_if_checked
from .runtime.launch_proof import wrap_if_proven
from .runtime.lazy import Lazy
from .runtime.shared_launch import dynamic_shared_of, wrap_if_dynamic
from .errors import ArtifactError, LaunchError, PolykernError, RuntimeNotLinkedError
from .kbin.function_info import ArgInfo, FunctionInfo
from .user_tracebacks import entry_point
from .version import compiler_version

__all__ = [
    "ArgInfo", "FunctionInfo", "Module", "DeviceModule", "FallbackModule", "DeferredModule", "UnavailableModule",
    "RootModule", "Launcher", "create_with_fallback", "force_fallback_enabled", "payload_text",
    "FORCE_FALLBACK_ENV", "wrap_launch",
]



# ------------------------------------------------------------------ helpers


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
    #: The FallbackModule class ``create_with_fallback`` was given for this module (the compile cache
    #: makes the module again with it); None for modules made otherwise.
    fallback_cls: Optional[type] = None

    def __init__(self) -> None:
        self.functions: Dict[str, FunctionInfo] = {}
        self.imports: List[Module] = []
        self.sources: Dict[str, str] = {}

    # -- abstract
    def save_to_bytes(self) -> bytes:
        raise NotImplementedError(f"{type(self).__name__} does not implement save_to_bytes")

    def get_function(self, name: str):
        raise NotImplementedError(f"{type(self).__name__} does not implement get_function")

    def realize(self) -> "Module":
        """The module that runs this one's kernels: itself (a :class:`DeferredModule` imports its runtime
        and answers the real or fallback module)."""
        return self

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
        wire.check_kind(kind)
        if not isinstance(fmt, str) or not fmt:
            raise ValueError(f"{kind} module: fmt must be a non-empty string, got {fmt!r}")
        if wire.payload_layout(payload) == "bytes":
            payload = bytes(payload)  # type: ignore[arg-type]
        else:
            payload = {k: bytes(v) for k, v in sorted(payload.items())}  # type: ignore[union-attr]
        self.kind = kind
        self.fmt = fmt
        self.payload: Payload = payload
        self.functions = _check_fmap(fmap)
        self.sources = _check_sources(sources)

    @property
    def layout(self) -> str:
        """The payload layout (``wire.LAYOUTS``): "bytes" (one blob) or "smap" (named sections)."""
        return wire.payload_layout(self.payload)

    def save_to_bytes(self) -> bytes:
        return wire.encode_device_payload(self.kind, self.fmt, self.functions, self.payload)

    def get_function(self, name: str):
        info = self.function_info(name)
        return self.launcher(name, lambda: wrap_launch(info, self._get_function(info)))

    def launcher(self, key, make):
        """One launchable object per ``key``: ``make()`` the first time (``m["k"] is m["k"]``)."""
        made = self.__dict__.setdefault("_launchers", {})
        got = made.get(key)
        return got if got is not None else made.setdefault(key, make())

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


def wrap_launch(info: FunctionInfo, raw):
    """A runtime's kernel ``raw`` for ``info`` as the caller launches it: launch-time bounds conditions,
    checked mode's hidden arguments, the dynamic shared size, alignment checks."""
    checked = wrap_if_proven(info, user_visible(info), wrap_if_checked(info, raw))
    return wrap_if_aligned(info, wrap_if_dynamic(info, checked, raw))


class FallbackModule(DeviceModule):
    """What a host without the runtime builds: same bytes as the real module, cannot run."""

    is_runnable = False

    def _get_function(self, info: FunctionInfo):
        raise RuntimeNotLinkedError(self.not_runnable_reason(info.name))

    def not_runnable_reason(self, name: str) -> str:
        return backends.runtime_missing_message(self.kind, name)


class DeferredModule(Module):
    """A device module compiled while its kind's runtime was not imported yet. Everything that needs no
    runtime (kind, fmt, functions, payload, sources, ``save_to_bytes``, ``inspect_source``) is the
    fallback's — the same bytes as the real module by construction; ``is_runnable``, ``get_function``
    and ``not_runnable_reason`` (and any other attribute) are those of :meth:`realize`'s module: the
    runtime is imported then, and the real module made if it registered (else the fallback)."""

    def __init__(self, kind: str, payload: "Payload", fmt: str, fmap: Mapping[str, FunctionInfo],
                 sources: Optional[Mapping[str, str]], fallback_cls: type):
        fallback = fallback_cls(kind, payload, fmt, fmap, sources)
        self.__dict__["fallback"] = fallback
        super().__init__()
        self.kind, self.fmt, self.functions = kind, fmt, fallback.functions
        self.source_preference = fallback.source_preference
        self._module = Lazy(lambda: _create(kind, payload, fmt, fmap, sources, fallback_cls, fallback))

    @property
    def sources(self) -> Dict[str, str]:  # type: ignore[override]
        return self.fallback.sources

    @sources.setter
    def sources(self, value: Mapping[str, str]) -> None:
        if "_module" in self.__dict__:  # Module.__init__'s empty map is not the codegen's
            self.fallback.sources = value

    def realize(self) -> Module:
        """The real module (the runtime imported and registered) or the fallback; made once."""
        return self._module.get()

    @property
    def is_runnable(self) -> bool:  # type: ignore[override]
        return self.realize().is_runnable

    def save_to_bytes(self) -> bytes:
        return self.fallback.save_to_bytes()

    def inspect_source(self, fmt: str = "") -> str:
        return self.fallback.inspect_source(fmt)

    def source_formats(self) -> List[str]:
        return self.fallback.source_formats()

    def get_function(self, name: str):
        self.function_info(name)  # the name is checked before the runtime is imported
        return self.realize().get_function(name)

    def not_runnable_reason(self, name: str) -> str:
        return self.realize().not_runnable_reason(name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "fallback" not in self.__dict__:
            raise AttributeError(name)
        fallback = self.__dict__["fallback"]
        return getattr(fallback, name) if hasattr(fallback, name) else getattr(self.realize(), name)


class UnavailableModule(DeviceModule):
    """A loaded module whose kind has no registered loader here, or a kind no installed backend
    provides. Keeps the raw (format version 2) payload bytes: re-export gives them back."""

    is_runnable = False

    def __init__(self, kind: str, data: bytes, sources: Optional[Mapping[str, str]], reason: str,
                 origin: str = "the artifact", decoded: Optional[Tuple[str, Dict[str, FunctionInfo], Payload]] = None):
        fmt, fmap, payload = decoded if decoded is not None else wire.decode_device_payload(kind, data)
        super().__init__(kind, payload, fmt, fmap, sources)
        self.raw = bytes(data)
        self.reason = reason
        self.origin = origin

    def save_to_bytes(self) -> bytes:
        return self.raw

    def message(self) -> str:
        display = backends.display_name(self.kind)
        install = ""
        if backends.record_for_kind(self.kind) is None:  # a kind no installed backend declares
            install = (f" To run it, install the polykern backend that provides the '{self.kind}' module kind "
                       f"(a distribution registered in the '{backends.ENTRY_POINT_GROUP}' entry-point group).")
        return (f"{self.origin} contains a module of kind '{self.kind}' but no {display} runtime is registered "
                f"here (reason: {self.reason}).{install} `polykern inspect` can read it without one.")

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

    @entry_point
    def __call__(self, *args, grid=None, block=None, **launch):
        if launch:  # shared_size= of a kernel with a pk.shared_dynamic array (shared_launch.py)
            extra = sorted(k for k in launch if k != "shared_size" or dynamic_shared_of(self.info) is None)
            if extra:
                raise LaunchError(f"kernel '{self.name}' takes grid=, block= and its arguments; it has no "
                                  f"launch option {extra[0]}= (shared_size= is for kernels with a "
                                  "pk.shared_dynamic array)")
        resolved = self._resolved  # set once, under the lock; read without it afterwards
        return (resolved or self.resolve())[1](*args, grid=grid, block=block, **launch)

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
        #: Set by ``artifact.load``: the loaded artifact's metadata (``None``: not loaded), and whether its
        #: sources were stripped; ``export`` keeps both, so a loaded artifact exports again to the same bytes.
        self.metadata: Optional[Dict[str, str]] = None
        self.sources_stripped = False
        #: Build options that change results, written into a new artifact's metadata (``fast-math``).
        self.build_options: Dict[str, str] = {}

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
        return wire.encode_root_payload(self.functions, self.targets)

    def get_function(self, name: str) -> Launcher:
        return Launcher(self, self.function_info(name))

    def on(self, kind: str) -> Module:
        """The first imported module of module kind ``kind`` (a target kind such as 'nvptx' also works);
        a :class:`DeferredModule` is realized (its runtime imported): the real or fallback module."""
        mods = self.device_modules()
        for m in mods:
            if m.kind == kind:
                return m.realize()
        tk = registry.get(f"target.kind.{kind}")
        if tk is not None:
            for m in mods:
                if m.kind == tk.module_kind:
                    return m.realize()
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

    def export(self, path: Union[str, "os.PathLike[str]", None] = None, strip_sources: Optional[bool] = None,
               metadata: Optional[Mapping[str, str]] = None) -> bytes:
        """The ``.kbin`` bytes of this tree (format version 2), also written to ``path`` (atomically)
        when given. Deterministic: no timestamps, no paths, sorted maps; modules in preorder, root first.

        Metadata: the metadata of the artifact this root was loaded from (as it was), else the
        defaults (compiler, targets, the build options that change results: ``fast-math``); then
        ``metadata`` on top. ``strip_sources=None`` keeps what was loaded (a stripped
        artifact stays stripped), so a loaded artifact exports again to the same bytes."""
        modules: List[Module] = []
        index: Dict[int, int] = {}
        for m in self.walk():
            if id(m) in index:
                raise PolykernError(f"the {m.kind} module is imported twice; an artifact holds a tree of modules")
            index[id(m)] = len(modules)
            modules.append(m)
        provided = {name for m in modules[1:] for name in m.functions}
        missing = sorted(set(self.functions) - provided)
        if missing:
            raise PolykernError(f"the root lists kernels no imported module provides: {', '.join(missing)}")
        for m in modules:
            for info in m.functions.values():
                wire.check_function_info(info)
        children = [[index[id(c)] for c in m.imports] for m in modules]
        payloads = [(m.kind, m.save_to_bytes()) for m in modules]
        strip = self.sources_stripped if strip_sources is None else strip_sources
        sources = None if strip else [dict(m.sources) for m in modules]
        meta = {"compiler": f"polykern {compiler_version()}", "targets": "\n".join(self.targets),
                **self.build_options} if self.metadata is None else {}
        for k, v in {**(self.metadata or {}), **dict(metadata or {})}.items():
            if not isinstance(k, str) or not k or not isinstance(v, str):
                raise PolykernError(f"artifact metadata maps non-empty strings to strings, got {k!r}: {v!r}")
            meta[k] = v
        data = wire.encode_container(payloads, children, sources, meta)
        if path is not None:
            kbin_file.write_atomic(os.fspath(path), data)
        return data


# ------------------------------------------------------------------ create_with_fallback


def create_with_fallback(kind: str, payload: Payload, fmt: str, fmap: Mapping[str, FunctionInfo],
                         sources: Optional[Mapping[str, str]] = None, *, fallback_cls: Optional[type] = None
                         ) -> Module:
    """The real module if its runtime is registered, else a fallback (docs/internals.md "Modules").

    ``POLYKERN_COMPILE_FORCE_FALLBACK`` is read on every call. ``fallback_cls`` lets a
    backend use its own :class:`FallbackModule` subclass (e.g. for ``source_preference``).
    """
    cls = fallback_cls or FallbackModule
    if not (isinstance(cls, type) and issubclass(cls, FallbackModule)):
        raise TypeError("fallback_cls must be a FallbackModule subclass")
    if force_fallback_enabled():
        m = cls(kind, payload, fmt, fmap, sources)
    elif backends.runtime_pending(kind):  # not imported yet: on first use (DeferredModule.realize)
        m = DeferredModule(kind, payload, fmt, fmap, sources, cls)
    else:
        m = _create(kind, payload, fmt, fmap, sources, cls)
    m.fallback_cls = cls
    return m


def _create(kind: str, payload: Payload, fmt: str, fmap: Mapping[str, FunctionInfo],
            sources: Optional[Mapping[str, str]], cls: type, fallback: Optional[Module] = None) -> Module:
    """The real module if ``module.create.<kind>`` is registered (importing a pending runtime), else
    ``fallback`` or a new ``cls``."""
    factory = registry.get(f"module.create.{kind}")
    if factory is None:
        return fallback if fallback is not None else cls(kind, payload, fmt, fmap, sources)
    m = factory(payload, fmt, fmap, dict(sources or {}))
    if not isinstance(m, Module) or m.kind != kind:
        raise PolykernError(f"module.create.{kind} returned {m!r}, not a {kind!r} Module")
    return m

