"""The compile cache: what a target's code generator produced for a list of kernels, kept in the
process and on disk, so building the same kernels again skips the code generator (docs/language.md
"Building": the compile cache).

The key is a SHA-256 of everything the output depends on: the IR the code generator is given (its
canonical form, ``ir.canonical``), the target string, the compiler (its version and a digest of the
sources of polykern and of the backend package whose code generator runs), llvmlite's version, the
backend's toolchain identity (``target.cache_key.<target kind>``: CUDA's NVRTC/nvcc files; LLVM's version
and the host CPU for the LLVM-based targets, ``codegen.llvm_target.cache_identity``), every registered build hook
(``hooks.identity``) and every ``POLYKERN_*`` environment variable but the cache's own. The value is
the module's payload (``save_to_bytes``: the bytes an artifact holds) and its sources; a hit makes
the module again through ``create_with_fallback``, so the artifact is byte-identical to an uncached
build.

On disk an entry is a ``.kbin`` container (the one format, ``wire``; its checksum covers every byte)
holding the key in its metadata, under ``cache_root()/build/<2 hex>/<key>.kbin``. An entry is written
to a temporary file in the same folder and renamed into place, so a reader never sees a partial one;
an entry that is not a regular file (a symlink), is larger than the limit, does not decode, or does
not match its key is ignored (removed) and rebuilt. Past ``POLYKERN_CACHE_MAX_MB`` (default 512) the
least recently used entries (by mtime; a hit touches its entry) are removed. ``POLYKERN_CACHE=0``
turns the cache off (memory and disk). A cache that cannot be read or written never fails a build.
"""
from __future__ import annotations

import collections
import hashlib
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import llvmlite
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import hooks, registry
from .kbin import wire
from .cache import cache_root
from .errors import PolykernError
from .ir.canonical import NotCanonical, canonical_bytes
from .module import FallbackModule, Module, create_with_fallback
from .kbin.payload_formats import check_registered
from .user_files import read_regular
from .version import compiler_version

__all__ = ["ENABLE_ENV", "MAX_MB_ENV", "DEFAULT_MAX_MB", "TOOLCHAIN_KEY", "enabled", "folder", "cached_codegen",
           "key_for", "files_identity", "clear_memory", "stats"]

ENABLE_ENV = "POLYKERN_CACHE"
MAX_MB_ENV = "POLYKERN_CACHE_MAX_MB"
DEFAULT_MAX_MB = 512
#: The key's first part: changes whenever what an entry holds changes meaning.
_FORMAT = "polykern build cache 1"
#: Environment variables that do not change what a code generator produces.
#: ``target.cache_key.<target kind>`` -> ``fn(target) -> str``: the identity of the external tools a code
#: generator runs (a backend registers it; :func:`files_identity` helps), part of the key.
TOOLCHAIN_KEY = "target.cache_key."
_NOT_IN_KEY = ("POLYKERN_CACHE", "POLYKERN_CACHE_DIR", "POLYKERN_CACHE_MAX_MB", "POLYKERN_COMPILE_FORCE_FALLBACK")
_MEMORY_ENTRIES = 256
_TMP_PREFIX = ".tmp-"

_lock = threading.Lock()
_memory: "collections.OrderedDict[str, _Entry]" = collections.OrderedDict()
_digests: Dict[str, str] = {}
_counts = {"memory_hits": 0, "disk_hits": 0, "misses": 0, "stores": 0, "rejected": 0, "evicted": 0}

_Entry = Tuple[str, str, Dict[str, Any], Any, Dict[str, str], type]  # kind, fmt, fmap, payload, sources, fallback cls


def enabled() -> bool:
    """``POLYKERN_CACHE`` unset or anything but "0", "false", "no", "off" (any case)."""
    return os.environ.get(ENABLE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def folder() -> Path:
    """Where the entries are: ``cache_root()/build``."""
    return cache_root() / "build"


def _max_bytes() -> int:
    text = os.environ.get(MAX_MB_ENV, "").strip()
    try:
        mb = float(text) if text else DEFAULT_MAX_MB
    except ValueError:
        mb = -1.0
    if not 0 <= mb < 2 ** 40:  # also NaN
        raise PolykernError(f"{MAX_MB_ENV}={text!r}: the compile cache's size limit is a number of MiB, 0 or more "
                            f"(default {DEFAULT_MAX_MB}); POLYKERN_CACHE=0 turns the cache off")
    return int(mb * 1024 * 1024)


def stats() -> Dict[str, int]:
    """Counters of this process: memory_hits, disk_hits, misses, stores, rejected (bad entries), evicted."""
    with _lock:
        return dict(_counts)


def clear_memory() -> None:
    """Forget the in-process entries (the disk entries stay)."""
    with _lock:
        _memory.clear()


def _count(what: str) -> None:
    with _lock:
        _counts[what] += 1


# ------------------------------------------------------------------ the key


def _tree_digest(directory: str) -> str:
    """SHA-256 of the ``.py`` files under ``directory`` (names and contents; tests/ left out), once per process."""
    with _lock:
        if directory in _digests:
            return _digests[directory]
    h = hashlib.sha256()
    for base, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in ("tests", "__pycache__"))
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(base, name)
                h.update(os.path.relpath(path, directory).encode("utf-8", "surrogateescape") + b"\0")
                with open(path, "rb") as f:
                    h.update(f.read())
                h.update(b"\0")
    digest = h.hexdigest()
    with _lock:
        _digests[directory] = digest
    return digest


def files_identity(paths: Sequence[str]) -> str:
    """Each of ``paths`` (a tool, a library) as "path size mtime" (the file it links to; "missing" if
    absent): a stand-in for the tool's version that costs a ``stat``, not a run or a ``dlopen``."""
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append(f"{p} -> {os.path.realpath(p)} {st.st_size} {st.st_mtime_ns}")
        except OSError:
            out.append(f"{p} missing")
    return "\n".join(out)


def _package_dir(fn: Any) -> Optional[str]:
    fn = getattr(fn, "__func__", fn)
    top = (getattr(fn, "__module__", None) or type(fn).__module__ or "").split(".")[0]
    mod = sys.modules.get(top)
    path = getattr(mod, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) if path else None


def key_for(plugin: Any, funcs: Sequence[Any], target: Any, also: Sequence[Any] = ()) -> Optional[str]:
    """The cache key (64 hex) of running code generator ``plugin`` on ``funcs`` (and the functions
    ``also``, e.g. the CPU runtimes' safe variants) for ``target``, or None when the build cannot be
    cached (IR without a canonical form, a hook that cannot be identified)."""
    try:
        ir = canonical_bytes(funcs) + b"\0also\0" + canonical_bytes(also)
        hook_ids = [f"{name}={hooks.identity(fn)}" for name in registry.names(hooks.PREFIX)
                    for fn in [registry.get(name)] if callable(fn)]
    except (NotCanonical, PolykernError):
        return None
    toolchain = registry.get(TOOLCHAIN_KEY + target.kind)
    where = _package_dir(plugin)
    parts = [
        _FORMAT, f"polykern {compiler_version()} {_tree_digest(os.path.dirname(os.path.abspath(__file__)))}",
        f"backend {where} {_tree_digest(where) if where else ''}", f"llvmlite {llvmlite.__version__}",
        f"python {platform.python_implementation()} {sys.version_info[:3]} {platform.machine()}",
        f"target {target.kind} {target}", "toolchain " + (str(toolchain(target)) if callable(toolchain) else ""),
        "hooks " + "\n".join(hook_ids),
        "env " + "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                           if k.startswith("POLYKERN_") and k not in _NOT_IN_KEY),
    ]
    h = hashlib.sha256("\n\0".join(parts).encode("utf-8", "surrogateescape"))
    h.update(b"\0ir\0" + ir)
    return h.hexdigest()


# ------------------------------------------------------------------ entries


def _fallback_class(m: Module) -> Optional[type]:
    cls = getattr(m, "fallback_cls", None)
    return cls if isinstance(cls, type) and issubclass(cls, FallbackModule) else None


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _find_class(name: str) -> Optional[type]:
    """A FallbackModule subclass named ``module:qualname`` among the modules already imported (an entry
    never makes anything be imported)."""
    modname, _, qual = name.partition(":")
    obj: Any = sys.modules.get(modname)
    for part in qual.split("."):
        obj = getattr(obj, part, None) if obj is not None and part else None
    return obj if isinstance(obj, type) and issubclass(obj, FallbackModule) else None


def _encode(key: str, entry: _Entry) -> bytes:
    kind, fmt, fmap, payload, sources, cls = entry
    root = wire.encode_root_payload(fmap, [])
    device = wire.encode_device_payload(kind, fmt, fmap, payload)
    return wire.encode_container([("root", root), (kind, device)], [[1], []], [{}, sources],
                                 {"cache-key": key, "fallback": _class_name(cls)})


def _decode(key: str, data: bytes, kind: str) -> Optional[_Entry]:
    try:
        c = wire.decode_container(data)
        if c.meta.get("cache-key") != key or len(c.modules) != 2 or c.modules[1].kind != kind or c.sources is None:
            return None
        fmt, fmap, payload = wire.decode_device_payload(kind, c.modules[1].payload)
        check_registered(kind, fmt, fmap, payload)
    except (PolykernError, ValueError, OverflowError):  # ArtifactError for all the format knows
        return None
    cls = _find_class(c.meta.get("fallback", ""))
    return None if cls is None else (kind, fmt, fmap, payload, c.sources[1], cls)


def _path(key: str) -> Optional[Path]:
    try:
        return folder() / key[:2] / f"{key}.kbin"
    except (RuntimeError, KeyError, OSError):  # no home folder to put the default cache in: memory only
        return None


def _read(key: str, kind: str) -> Optional[_Entry]:
    path = _path(key)
    if path is None:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    entry = None
    if path.is_file() and not path.is_symlink() and st.st_size <= _max_bytes():
        try:
            entry = _decode(key, read_regular(path, limit=_max_bytes()), kind)
        except (OSError, PolykernError):
            entry = None
    if entry is None:  # a damaged, foreign or oversized entry: never trusted, rebuilt
        _count("rejected")
        _remove(path)
        return None
    try:
        os.utime(path, follow_symlinks=False)  # recently used
    except OSError:
        pass
    return entry


def _remove(path: Path) -> None:
    try:
        if path.is_symlink() or path.is_file():
            path.unlink()
    except OSError:
        pass


def _write(key: str, entry: _Entry) -> None:
    data = _encode(key, entry)
    limit = _max_bytes()
    if len(data) > limit:
        return
    path = _path(key)
    if path is None:
        return
    try:
        for d in (path.parent.parent, path.parent):  # new folders only for this user: entries are code
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)  # atomic: readers see the old entry, none, or this complete one
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return
    _count("stores")
    _evict(limit)


def _evict(limit: int) -> None:
    """Remove the least recently used entries (oldest mtime first) while the folder holds more than
    ``limit`` bytes; temporary files of writers that died an hour ago go too."""
    entries = []
    now = time.time()
    try:
        for sub in folder().iterdir():
            if not sub.is_dir() or sub.is_symlink():
                continue
            for p in sub.iterdir():
                try:
                    st = p.lstat()
                except OSError:
                    continue
                if p.name.startswith(_TMP_PREFIX):
                    if now - st.st_mtime > 3600:
                        _remove(p)
                    continue
                entries.append((st.st_mtime, st.st_size, p))
    except (OSError, RuntimeError, KeyError):
        return
    total = sum(size for _, size, _ in entries)
    for _, size, p in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        _remove(p)
        total -= size
        _count("evicted")


def _remember(key: str, entry: _Entry) -> None:
    with _lock:
        _memory[key] = entry
        _memory.move_to_end(key)
        while len(_memory) > _MEMORY_ENTRIES:
            _memory.popitem(last=False)


def cached_codegen(make: Callable[[], Module], plugin: Any, funcs: Sequence[Any], target: Any,
                   also: Sequence[Any] = ()) -> Module:
    """``make()`` (run the code generator ``plugin`` on ``funcs`` and ``also`` for ``target``; it returns
    the checked device module), or the module it made before for the same key."""
    key = key_for(plugin, funcs, target, also) if enabled() else None
    if key is None:
        return make()
    _max_bytes()  # a bad limit is named before anything is built
    kind = target.module_kind
    with _lock:
        entry = _memory.get(key)
        if entry is not None:
            _memory.move_to_end(key)
            _counts["memory_hits"] += 1
    if entry is None:
        entry = _read(key, kind)
        if entry is not None:
            _count("disk_hits")
            _remember(key, entry)
    if entry is not None and all(f.name in entry[2] for f in funcs):
        k, fmt, fmap, payload, sources, cls = entry
        return create_with_fallback(k, payload, fmt, fmap, sources, fallback_cls=cls)
    _count("misses")
    m = make()
    cls = _fallback_class(m)
    if cls is not None and m.kind == kind:
        fmt, fmap, payload = wire.decode_device_payload(kind, m.save_to_bytes())
        entry = (kind, fmt, fmap, payload, dict(m.sources), cls)
        _remember(key, entry)
        _write(key, entry)
    return m
