"""Backend discovery and status (docs/backends.md "Discovery" and "Module, registry and fallback").

Backends are found in exactly two ways, never by guessing from importable names:

1. the entry-point group ``polykern.backends`` of the installed distributions (``pip install``;
   under Bazel each backend's ``:codegen`` target carries a generated ``.dist-info`` with the same
   entry point, so discovery is the same code path);
2. ``POLYKERN_BACKEND_PATH`` (for development): ``os.pathsep``-separated entries, each a module
   name (``polykern_mine``) or the path of a backend package directory (the folder holding its
   ``__init__.py``, imported from there without touching ``sys.path``). These load first, so a
   checkout under development wins over an installed copy of the same backend.

A folder named ``polykern_x`` that merely sits on ``sys.path`` (e.g. next to the user's script) is
never imported. ``POLYKERN_BACKEND_AUTOLOAD=0`` turns discovery off. Both settings are read by the
first :func:`load_all` of a process.

Each backend's ``register_backend()`` calls :func:`declare`, which registers its codegen
(always) and records its runtime module; that module is imported (and its ``register()`` called)
on first need only — a module built for its kind is launched or loaded, a ``module.*.<kind>`` or
``runtime.*.<kind>`` registry name is asked for, or the record's ``runtime_available`` /
``runtime_reason`` is read (:func:`status`) — so compiling never imports a device binding
(pycuda, vulkan, pyopencl, wgpu). A failure is recorded with its reason — never raised, never
silently lost — and shows up in :func:`status`, ``polykern backends`` and
:func:`runtime_missing_message`.

Registration is transactional: a backend owns its module kinds only once its codegen registered,
and a package whose ``register_backend()`` fails leaves nothing behind (registry entries, records
and kind ownership are put back as they were) but the record of its failure, which owns no kind.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import registry
from .errors import BackendUnavailableError

__all__ = [
    "BackendRecord", "declare", "load_all", "status", "records", "record_for_kind", "runtime_missing_message",
    "runtime_reason", "display_name", "owner_of", "describe_entry", "autoload_enabled", "path_entries",
    "AUTOLOAD_ENV", "PATH_ENV", "ENTRY_POINT_GROUP", "runtime_pending", "load_runtime",
]

AUTOLOAD_ENV = "POLYKERN_BACKEND_AUTOLOAD"
#: Set (not "", "0", "false"): compiling makes fallback modules even where a runtime exists (module.py reads it).
FORCE_FALLBACK_ENV = "POLYKERN_COMPILE_FORCE_FALLBACK"
PATH_ENV = "POLYKERN_BACKEND_PATH"
ENTRY_POINT_GROUP = "polykern.backends"
REGISTER_FUNCTION = "register_backend"
_PKG_PREFIX = "polykern_"
#: What a failing plugin may raise without ending discovery: sys.exit() in a plugin (some packages
#: exit when a dependency is missing) is recorded like any other failure. KeyboardInterrupt is not.
_PLUGIN_FAILURES = (Exception, SystemExit)
_MODULE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def install_step(install: str, extra: str) -> str:
    """The command that installs a backend's runtime: its ``install`` step (an out-of-tree backend's), else
    ``pip install polykern[<extra>]``; "" when it has neither."""
    return install or (f"pip install polykern[{extra}]" if extra else "")


@dataclass
class BackendRecord:
    """What is known about one backend: where it came from, codegen and runtime state."""

    name: str
    module_kinds: tuple = ()
    display_name: str = ""
    extra: str = ""
    config: str = ""
    hint: str = ""
    install: str = ""
    origin: str = ""
    codegen_ok: bool = False
    codegen_error: str = ""
    #: what the runtime's import found (read ``runtime_available``/``runtime_reason``: they import it first)
    runtime_ok: bool = False
    runtime_why: str = ""
    #: the devices() function of declare() or of the runtime module (read ``devices_fn``)
    runtime_devices: Optional[Callable[[], Sequence[Any]]] = field(default=None, repr=False)
    #: the registry names its codegen and runtime registered (what :func:`owner_of` answers)
    registered: tuple = ()
    #: the runtime module given to declare() while it is not imported yet (None once it was tried)
    pending_runtime: Optional[str] = None

    @property
    def runtime_available(self) -> bool:
        """Whether the runtime imported and registered (imports a pending runtime first)."""
        with _lock:
            _load_pending(self)
            return self.runtime_ok

    @property
    def devices_fn(self) -> Optional[Callable[[], Sequence[Any]]]:
        """The runtime's ``devices()`` (None where it has none or is not available; imports a pending runtime)."""
        with _lock:
            _load_pending(self)
            return self.runtime_devices

    @property
    def runtime_reason(self) -> str:
        """Why the runtime is not available ("" if it is; imports a pending runtime first)."""
        with _lock:
            _load_pending(self)
            return self.runtime_why

    def devices(self) -> Dict[str, Any]:
        """``{"devices": [...], "error": str}``: asks the runtime only when it is available."""
        if not self.runtime_available or self.devices_fn is None:
            return {"devices": [], "error": ""}
        try:
            return {"devices": [str(d) for d in self.devices_fn()], "error": ""}
        except Exception as e:  # a runtime that imports but finds no device: report, do not crash status()
            return {"devices": [], "error": f"{type(e).__name__}: {e}"}

    def as_dict(self, with_devices: bool = True) -> Dict[str, Any]:
        out = {"name": self.name, "module_kinds": list(self.module_kinds), "display_name": self.display_name,
               "origin": self.origin, "codegen_ok": self.codegen_ok, "codegen_error": self.codegen_error,
               "runtime_available": self.runtime_available, "runtime_reason": self.runtime_reason,
               "extra": self.extra, "config": self.config, "install": self.install}
        if with_devices:
            d = self.devices()
            out["devices"] = d["devices"]
            out["devices_error"] = d["error"]
        return out


_lock = threading.RLock()
_records: Dict[str, BackendRecord] = {}
_kind_owner: Dict[str, str] = {}
_attempted_modules: set = set()
_state = {"loaded": False, "loading": False}


def autoload_enabled() -> bool:
    return os.environ.get(AUTOLOAD_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _reason(e: BaseException, modname: str) -> str:
    if isinstance(e, BackendUnavailableError):
        return str(e)
    if isinstance(e, ImportError):
        missing = e.name or ""
        if missing and missing != modname and not missing.startswith(modname + "."):
            return f"{missing.split('.')[0]} could not be imported: {e}"
        return f"{modname} could not be imported: {e}"
    return f"{modname} failed to initialize: {type(e).__name__}: {e}"


_nested = threading.local()  # .added: per plugin run in progress on this thread, the names runs inside it added


def _run_plugin(target: Union[str, Callable[[], Any], None], entry: str):
    """Import ``target`` (a module name) and call its ``entry`` if present, or call ``target``.
    Returns (the imported module or None, the registry names it added). A failed attempt is undone, but for
    what plugin runs inside it (a runtime its registration looked up: the registry's resolver) added: those
    stay, and are theirs, not this run's."""
    before = registry.snapshot()
    stack = _nested.__dict__.setdefault("added", [])
    stack.append(set())
    try:
        mod = None
        if callable(target):
            target()
        else:
            mod = importlib.import_module(target)
            fn = getattr(mod, entry, None)
            if callable(fn):
                fn()
    except BaseException:
        inner = stack.pop()
        now = registry.snapshot()
        registry.restore({**before, **{k: now[k] for k in inner if k in now}})
        if stack:
            stack[-1].update(inner)
        raise
    inner = stack.pop()
    added = tuple(n for n in registry.names() if n not in before and n not in inner)
    if stack:
        stack[-1].update(inner, added)
    return mod, added


def declare(name: str, module_kinds: Union[str, Sequence[str]], *, display_name: Optional[str] = None,
            extra: str = "", config: str = "", hint: str = "", install: str = "",
            codegen: Union[str, Callable[[], Any], None] = None, runtime: Union[str, Callable[[], Any], None] = None,
            devices: Optional[Callable[[], Sequence[Any]]] = None) -> BackendRecord:
    """Declare a backend (called from its ``register_backend()``).

    ``codegen``: module name (imported; its ``register()`` is called if it has one) or a
    callable that registers ``target.kind.*`` and ``target.build.*``. ``runtime``: module name
    (imported; its ``register()`` registers ``module.create.<kind>`` and
    ``module.load_from_bytes.<kind>``; an optional ``devices()`` in it lists devices) or a
    callable. ``display_name`` ("CUDA"), ``extra`` (the polykern pip extra that installs the
    runtime's binding), ``config`` (the Bazel config that adds the runtime), ``install`` (the
    install step of an out-of-tree backend, e.g. "pip install polykern-csrc"; used instead of
    ``extra``) and ``hint`` ("on a host with an NVIDIA driver") feed :func:`runtime_missing_message`;
    an empty ``extra``/``config``/``install`` means there is none, and the messages do not offer it.
    Declaring a name again returns the existing record.
    """
    kinds = (module_kinds,) if isinstance(module_kinds, str) else tuple(module_kinds)
    if not name or not kinds:
        raise ValueError("declare() needs a backend name and at least one module kind")
    with _lock:
        if name in _records and _records[name].codegen_ok:
            return _records[name]
        rec = BackendRecord(name, kinds, display_name or name, extra or "", config or "", hint, install or "",
                            origin=_records[name].origin if name in _records else "declared")
        _records[name] = rec
        try:
            if codegen is not None:
                rec.registered = _run_plugin(codegen, "register")[1]
            rec.codegen_ok = True
        except _PLUGIN_FAILURES as e:
            rec.codegen_error = _reason(e, codegen if isinstance(codegen, str) else f"{name} codegen")
            rec.runtime_why = "not attempted: the codegen failed to load"
            return rec
        for k in kinds:  # only a backend whose codegen registered owns its kinds
            _kind_owner.setdefault(k, name)
        if runtime is None:
            rec.runtime_why = "this backend has no runtime (compile-only)"
            return rec
        rec.runtime_devices = devices
        if isinstance(runtime, str):  # imported on first need (load_runtime)
            rec.pending_runtime = runtime
            return rec
        _load_runtime(rec, runtime)
        return rec


def _load_runtime(rec: BackendRecord, runtime: Union[str, Callable[[], Any]]) -> None:
    """Import ``runtime`` (a module name, or call it) and record what happened on ``rec`` (under _lock)."""
    try:
        mod, added = _run_plugin(runtime, "register")
    except _PLUGIN_FAILURES as e:
        if isinstance(e, ModuleNotFoundError) and isinstance(runtime, str) and e.name == runtime:
            # The runtime's own files are absent: a build without it (e.g. Bazel --config=cpu).
            fixes = [f"build with --config={rec.config}"] if rec.config else []
            if install_step(rec.install, rec.extra):
                fixes.append(install_step(rec.install, rec.extra))
            rec.runtime_why = (f"the {rec.display_name} runtime is not part of this build"
                               + (f" ({', or '.join(fixes)})" if fixes else ""))
        else:
            rec.runtime_why = _reason(e, runtime if isinstance(runtime, str) else f"{rec.name} runtime")
        rec.runtime_devices = None
        return
    rec.runtime_ok = True
    rec.registered += added
    rec.runtime_devices = rec.runtime_devices or (getattr(mod, "devices", None) if mod is not None else None)
    if rec.runtime_devices is not None and not callable(rec.runtime_devices):
        rec.runtime_devices = None


def _load_pending(rec: BackendRecord) -> None:
    """Import ``rec``'s runtime if it is still pending (under _lock; at most once: a runtime whose
    import asks for its own record again sees it as tried)."""
    runtime, rec.pending_runtime = rec.pending_runtime, None
    if runtime is not None:
        _load_runtime(rec, runtime)


def runtime_pending(kind: str) -> bool:
    """Whether the runtime of module kind ``kind`` has not been imported yet (compiling for ``kind``
    then makes a module that loads it on first use: ``polykern.module.DeferredModule``)."""
    with _lock:
        rec = _records.get(_kind_owner.get(kind, ""))
        return rec is not None and rec.pending_runtime is not None


def load_runtime(kind: str) -> None:
    """Import the runtime of module kind ``kind`` now if it is pending (no-op otherwise)."""
    with _lock:
        rec = _records.get(_kind_owner.get(kind, ""))
        if rec is not None:
            _load_pending(rec)


def _resolve_registry_name(name: str) -> None:
    """The registry asks before answering "nothing registered" for ``name``: a runtime's names
    (``module.<point>.<kind>``, ``runtime.<point>.<kind>``) discover the backends (once) and load that kind's
    pending runtime, so ``pk.zeros(..., device="vulkan")`` works as a process's first call."""
    parts = name.split(".")
    if len(parts) == 3 and parts[0] in ("module", "runtime"):
        load_all()
        load_runtime(parts[2])


registry.set_resolver(_resolve_registry_name)


def _backend_name(modname: str) -> str:
    """The name a failed package is listed under: its top-level module without ``polykern_``."""
    top = modname.split(".")[0]
    return top[len(_PKG_PREFIX):] if top.startswith(_PKG_PREFIX) and len(top) > len(_PKG_PREFIX) else top


def _import_package_dir(path: str):
    """Import the package whose folder is ``path`` under its folder name, without adding anything
    to ``sys.path`` (its submodules are found through the package's own search location)."""
    name = os.path.basename(os.path.normpath(path))
    init = os.path.join(path, "__init__.py")
    if not name.isidentifier() or not os.path.isfile(init):
        raise BackendUnavailableError(f"{PATH_ENV} entry {path!r} is neither a module name nor the path of a "
                                      "Python package folder (a folder named like an identifier, holding "
                                      "__init__.py)")
    loaded = sys.modules.get(name)
    if loaded is not None:
        where = os.path.dirname(os.path.realpath(getattr(loaded, "__file__", "") or ""))
        if where != os.path.realpath(path):
            raise BackendUnavailableError(f"{PATH_ENV} entry {path!r}: a module named {name!r} is already "
                                          f"imported from {where or 'elsewhere'}")
        return loaded
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[os.path.abspath(path)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[m]
        raise
    return mod


def _load_package(name: str, modname: str, attr: str, origin: str, path: str = "") -> None:
    """Import one backend package (by module name, or from the folder ``path``) and call its
    ``attr`` (``register_backend``); a failure becomes a record listed under ``name``."""
    key = os.path.abspath(path) if path else modname
    if key in _attempted_modules:
        return
    _attempted_modules.add(key)
    declared_before = set(_records)
    before = (registry.snapshot(), dict(_records), dict(_kind_owner))
    try:
        mod = _import_package_dir(path) if path else importlib.import_module(modname)
        fn = mod
        for part in attr.split("."):  # an entry point may name a dotted attribute (module:Class.method)
            fn = getattr(fn, part, None)
        if not callable(fn):
            raise BackendUnavailableError(f"{modname} has no callable {attr}()")
        fn()
    except _PLUGIN_FAILURES as e:
        # all or nothing: what the package declared or registered before failing is undone
        registry.restore(before[0])
        _records.clear()
        _records.update(before[1])
        _kind_owner.clear()
        _kind_owner.update(before[2])
        if name in _records and _records[name].codegen_ok:  # a working backend of that name stays listed
            name = f"{name} ({origin})"
        _records[name] = BackendRecord(name, (), name, origin=origin, codegen_error=_reason(e, modname),
                                       runtime_why="not attempted: the backend package failed to load")
        return
    new = set(_records) - declared_before
    for n in new | ({name} & set(_records)):
        if _records[n].origin in ("", "declared"):
            _records[n].origin = origin
    if not new and name not in _records:
        _records[name] = BackendRecord(name, (), name, origin=origin, codegen_ok=True,
                                       runtime_why=f"{modname}.{attr}() did not call polykern.backends.declare()")


def path_entries() -> List[str]:
    """The entries of ``POLYKERN_BACKEND_PATH`` (``os.pathsep``-separated, blanks dropped)."""
    return [e.strip() for e in os.environ.get(PATH_ENV, "").split(os.pathsep) if e.strip()]


def _is_path(entry: str) -> bool:
    seps = [os.sep] + ([os.altsep] if os.altsep else [])
    return any(s in entry for s in seps) or entry.startswith((".", "~"))


def _load_path_entry(entry: str) -> None:
    origin = f"{PATH_ENV} entry {entry!r}"
    if _is_path(entry):
        path = os.path.abspath(os.path.expanduser(entry))
        modname = os.path.basename(os.path.normpath(path))
        _load_package(_backend_name(modname) or entry, modname, REGISTER_FUNCTION, origin, path=path)
    elif _MODULE_RE.fullmatch(entry):
        _load_package(_backend_name(entry), entry, REGISTER_FUNCTION, origin)
    else:
        _load_package(entry, entry, REGISTER_FUNCTION, origin, path=entry)  # recorded as a bad entry


def _entry_points() -> List[importlib.metadata.EntryPoint]:
    try:
        return sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: (ep.name, ep.value))
    except Exception as e:  # broken dist metadata must not break the compiler: listed, and the path still works
        name = f"({ENTRY_POINT_GROUP} entry points)"
        _records[name] = BackendRecord(name, (), name, origin="importlib.metadata", codegen_error=(
            f"the installed distributions' metadata could not be read: {type(e).__name__}: {e}"),
            runtime_why="not attempted: no entry point could be read")
        return []


def load_all() -> List[BackendRecord]:
    """Discover and register every backend once (no-op when POLYKERN_BACKEND_AUTOLOAD=0):
    ``POLYKERN_BACKEND_PATH`` entries first, then the ``polykern.backends`` entry points."""
    if not autoload_enabled():
        return records()
    with _lock:
        if _state["loaded"] or _state["loading"]:
            return records()
        _state["loading"] = True
        try:
            for entry in path_entries():
                _load_path_entry(entry)
            for ep in _entry_points():
                modname, _, attr = ep.value.partition(":")
                _load_package(ep.name, modname.strip(), attr.strip() or REGISTER_FUNCTION,
                              f"entry point {ep.name} = {ep.value}")
            _state["loaded"] = True
        finally:
            _state["loading"] = False
    return records()


def records() -> List[BackendRecord]:
    with _lock:
        return [_records[n] for n in sorted(_records)]


def status() -> List[Dict[str, Any]]:
    """One dict per backend: name, codegen ok/error, runtime available/reason, devices."""
    return [r.as_dict() for r in load_all()]


def record_for_kind(kind: str) -> Optional[BackendRecord]:
    """The backend that owns module kind ``kind``: the first whose codegen registered (None if none did)."""
    with _lock:
        owner = _kind_owner.get(kind)
        return _records.get(owner) if owner else None


def owner_of(registry_name: str) -> Optional[BackendRecord]:
    """The backend whose codegen or runtime registered ``registry_name`` (None: registered otherwise)."""
    with _lock:
        return next((r for r in _records.values() if registry_name in r.registered), None)


def describe_entry(registry_name: str) -> str:
    """How messages name the plugin behind a registry entry: the function and the backend (with where it
    was loaded from) that registered it, e.g. ``target.build.zz (polykern_zz.codegen.build, backend 'zz',
    POLYKERN_BACKEND_PATH entry '/src/polykern_zz')``."""
    entry = registry.get(registry_name)
    fn = getattr(entry, "__func__", entry)
    where = [f"{getattr(fn, '__module__', None) or type(fn).__module__}."
             f"{getattr(fn, '__qualname__', None) or type(fn).__qualname__}"] if entry is not None else []
    rec = owner_of(registry_name)
    if rec is not None:
        where.append(f"backend '{rec.name}'" + (f", {rec.origin}" if rec.origin not in ("", "declared") else ""))
    return f"{registry_name} ({', '.join(where)})" if where else registry_name


def undeclare(name: str) -> None:
    """Forget a backend record (registry entries stay). For tests and plugin reloads."""
    with _lock:
        _records.pop(name, None)
        for k in [k for k, v in _kind_owner.items() if v == name]:
            del _kind_owner[k]


def _failed_declarations(kind: str) -> List[BackendRecord]:
    with _lock:
        return [r for r in _records.values() if kind in r.module_kinds and not r.codegen_ok]


def display_name(kind: str) -> str:
    load_all()
    rec = record_for_kind(kind)
    return rec.display_name if rec else kind


def runtime_reason(kind: str) -> str:
    """Why the runtime of module kind ``kind`` is not usable here ("" if it is)."""
    load_all()
    rec = record_for_kind(kind)
    if rec is None:
        if not autoload_enabled():
            return (f"backend autoload is disabled ({AUTOLOAD_ENV}=0) and no backend providing the '{kind}' "
                    "module kind was registered")
        failed = _failed_declarations(kind)  # they own nothing, but they are why nothing provides the kind
        if failed:
            return "; ".join(f"the {r.name} backend failed to load: {r.codegen_error}" for r in failed)
        return f"no installed polykern backend provides the '{kind}' module kind"
    if not rec.runtime_available:
        return rec.runtime_reason
    if registry.get(f"module.load_from_bytes.{kind}") is None and registry.get(f"module.create.{kind}") is None:
        return f"the {rec.name} runtime registered no loader for '{kind}' modules"
    return ""


def runnable_kinds() -> List[str]:
    """The module kinds that can launch on this host (each also a target kind): their backend's runtime
    imported and found at least one device, as ``polykern backends`` lists them.
    ``pk.build(kernels, targets=runnable_kinds())`` builds for every runtime present."""
    kinds = []
    for rec in load_all():
        if not rec.codegen_ok or not rec.runtime_available:
            continue
        found = rec.devices()
        if found["error"] or not found["devices"]:
            continue
        kinds.extend(k for k in rec.module_kinds
                     if registry.get(f"target.kind.{k}") is not None and not runtime_reason(k))
    return kinds


def runtime_missing_message(kind: str, func: str) -> str:
    """The message for launching ``func`` on a module that cannot run here (docs/backends.md
    "Module, registry and fallback"): why, then every fix that exists for this backend."""
    reason = runtime_reason(kind)  # loads backends first
    rec = record_for_kind(kind)
    display = rec.display_name if rec else kind
    if not reason:
        return (f"this {display} module is a compile-only fallback although the {display} runtime is available "
                f"here (it was built with {FORCE_FALLBACK_ENV} set, or before the runtime was registered); "
                f"cannot launch '{func}'. Export it and load the artifact with polykern.load() to run it, or "
                f"rebuild without {FORCE_FALLBACK_ENV}.")
    fixes = []
    if rec and (rec.install or rec.extra):
        fixes.append((f"run {rec.install}" if rec.install else f"install polykern[{rec.extra}]")
                     + (f" {rec.hint}" if rec.hint else ""))
    if rec and rec.config:
        fixes.append(f"build with --config={rec.config}")
    last = f"load this artifact where the {display} runtime exists"
    if rec and rec.hint and not (rec.install or rec.extra):  # no install step to carry the hint
        last += f" ({rec.hint})"
    fixes.append(last)
    text = fixes[0] if len(fixes) == 1 else ", ".join(fixes[:-1]) + ", or " + fixes[-1]
    return (f"{display} runtime is not available in this environment ({reason}); cannot launch '{func}'. "
            f"{text[0].upper()}{text[1:]}.")
