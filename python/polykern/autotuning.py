"""``pk.autotune``: pick the fastest of a list of launch/constexpr configurations, measured on the device.

::

    @pk.autotune(configs=[{"block": 64}, {"block": 256}, {"block": 256, "UNROLL": 4}], key=["n"])
    @pk.kernel
    def saxpy(n: i32, a: f32, x: Buffer[f32], y: Buffer[f32], UNROLL: pk.constexpr): ...

    k = saxpy.build(targets=["cuda -arch=sm_90", "llvm"])      # builds each configuration once, lazily
    k(n, 2.0, x, y, grid=lambda cfg: ((n + cfg["block"] - 1) // cfg["block"],))

A configuration is a dict: ``"block"`` (the launch's block, an int or a tuple), ``"shared_size"`` (the
length of a ``pk.shared_dynamic`` array, or a function of the configuration) and the values of the
kernel's ``pk.constexpr``/``pk.dtype`` parameters (``kernel.specialize(**values)``). ``grid`` may be a
function of the configuration. ``key`` names kernel parameters whose values form the tuning key: a
buffer's shape and dtype, a scalar's value.

The first call with a new key runs every configuration on the caller's arguments (``warmup`` runs, then
``reps`` timed runs, each followed by the runtime's synchronize when it registers
``runtime.synchronize.<kind>``), takes the median, and caches the fastest on disk in
``cache.cache_root()/autotune`` (``$POLYKERN_CACHE_DIR``), in one JSON file per kernel, configuration
list, kernel IR, device (the runtime's device description, with the driver it reports), compiler
version, build hooks (their records, ``hooks.identity``) and key; written atomically (``polykern.user_files``). A corrupt or foreign cache file is
ignored with a warning and rewritten; so is one over ``CACHE_FILE_LIMIT`` (1 MiB), and a path that is not a regular file
(a FIFO, a device) is neither read nor replaced. A configuration that fails to build or launch (a block over the device's limit ...) is
skipped with a warning; if every one fails, the first error is raised. The written buffers are copied
before tuning and restored before the real launch (``restore=True``; NumPy arrays and polykern device
arrays; any other array needs ``restore=False``, for kernels that may run repeatedly).

Tuning reports on stderr what it tried and chose (``autotune_report.py``): by default when it takes longer
than a second, always with ``verbose=True``, never with ``verbose=False`` or, ``verbose=`` not given,
``POLYKERN_AUTOTUNE_VERBOSE=0``.

``POLYKERN_AUTOTUNE=0`` (read on every call; also ``false``/``off``) or ``enabled=False`` turns
measuring off: the configuration ``pinned`` (default the first) is used, and the cache is neither
read nor written, so builds and launches are reproducible.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import backends, hooks, registry
from .cache import cache_root
from .runtime.device_array import DeviceArrayBase
from .errors import LaunchError, PolykernError
from .ir.printer import function_str
from .lang.kernel import Kernel
from .pipeline import build
from .autotune_report import TuningReport, report_cached, verbosity
from .user_files import read_regular, write_atomic
from .user_tracebacks import entry_point, user_stacklevel
from .version import compiler_version

__all__ = ["autotune", "Autotuned", "TunedKernel", "AUTOTUNE_ENV", "autotune_enabled"]

AUTOTUNE_ENV = "POLYKERN_AUTOTUNE"
CACHE_VERSION = 1
#: The largest autotune cache file read (a record is a few KiB); a larger one is ignored and rewritten.
CACHE_FILE_LIMIT = 1 << 20
LAUNCH_KEYS = ("block", "shared_size")
#: The clock of the tuning reports (autotune_report.py): how long a tuning has taken.
_clock = time.perf_counter


def autotune_enabled(flag: Optional[bool] = None) -> bool:
    """``enabled=`` when given, else ``POLYKERN_AUTOTUNE`` (off for "0", "false", "off", "no")."""
    if flag is not None:
        return bool(flag)
    return os.environ.get(AUTOTUNE_ENV, "").strip().lower() not in ("0", "false", "off", "no")


def autotune(configs: Sequence[Dict[str, Any]], key: Sequence[str] = (), *, warmup: int = 1, reps: int = 5,
             enabled: Optional[bool] = None, pinned: int = 0, restore: bool = True,
             verbose: Optional[bool] = None) -> Callable[[Kernel], "Autotuned"]:
    """Decorator for a ``@pk.kernel``: see the module docstring."""
    @entry_point
    def deco(k: Kernel) -> Autotuned:
        return Autotuned(k, configs, key, warmup=warmup, reps=reps, enabled=enabled, pinned=pinned,
                         restore=restore, verbose=verbose)
    return deco


def _canon(v: Any) -> Any:
    """A JSON-able, deterministic form of a configuration value (types by name)."""
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (tuple, list)):
        return [_canon(x) for x in v]
    code = getattr(v, "__code__", None)
    if code is not None:  # a function of the configuration: by name and code, not by address
        body = hashlib.sha256(code.co_code + repr(code.co_consts).encode()).hexdigest()[:16]
        return f"function {getattr(v, '__qualname__', '?')} {body}"
    return str(v)


class Autotuned:
    """A kernel with its configurations; ``.build(targets)`` gives the launchable :class:`TunedKernel`."""

    def __init__(self, k: Kernel, configs, key, *, warmup=1, reps=5, enabled=None, pinned=0, restore=True,
                 verbose=None):
        if not isinstance(k, Kernel):
            raise PolykernError(f"pk.autotune(...) decorates a @pk.kernel, got {k!r}")
        if not isinstance(configs, (list, tuple)) or not configs or not all(isinstance(c, dict) for c in configs):
            raise PolykernError("pk.autotune: configs must be a non-empty list of dicts, e.g. "
                                "[{'block': 128}, {'block': 256}]")
        if isinstance(key, str) or not all(isinstance(n, str) for n in key):
            raise PolykernError(f"pk.autotune: key must be a list of parameter names, got {key!r}")
        params = list(k.pyfunc.__code__.co_varnames[:k.pyfunc.__code__.co_argcount])
        unknown = [n for n in key if n not in params]
        if unknown:
            raise PolykernError(f"pk.autotune of '{k.name}': key names {unknown[0]!r}, which is not a parameter "
                                f"(parameters: {', '.join(params)})")
        if not isinstance(pinned, int) or not 0 <= pinned < len(configs):
            raise PolykernError(f"pk.autotune: pinned must index the {len(configs)} configs, got {pinned!r}")
        if warmup < 0 or reps < 1:
            raise PolykernError("pk.autotune: warmup must be >= 0 and reps >= 1")
        self.kernel, self.key = k, list(key)
        self.configs = [dict(c) for c in configs]
        self.warmup, self.reps, self.enabled, self.pinned, self.restore = warmup, reps, enabled, pinned, restore
        self.verbose = verbose  # autotune_report.verbosity: True, False, or None (report a slow tuning)
        # Fail early on a bad constexpr name or value (the same KernelTypeError specialize gives).
        self.kernels = [self._specialize(c) for c in self.configs]

    @property
    def name(self) -> str:
        return self.kernel.name

    def _specialize(self, cfg: Dict[str, Any]) -> Kernel:
        values = {k: v for k, v in cfg.items() if k not in LAUNCH_KEYS}
        return self.kernel.specialize(**values) if values else self.kernel

    def build(self, targets=("llvm",), **build_kw) -> "TunedKernel":
        return TunedKernel(self, targets, build_kw)

    def __repr__(self) -> str:
        return f"<polykern autotuned kernel {self.name} ({len(self.configs)} configs)>"

    def __call__(self, *args, **kwargs):
        raise PolykernError(f"autotuned kernel '{self.name}' runs on a device: build it first, e.g. "
                            f"k = {self.name}.build(targets=['llvm']); k(..., grid=...)")


class TunedKernel:
    """``k(*args, grid=..., block=None)``: launches the configuration tuned for ``args``' key."""

    def __init__(self, tuned: Autotuned, targets, build_kw):
        self.tuned, self.targets, self.build_kw = tuned, targets, dict(build_kw)
        self._launchers: Dict[int, Any] = {}
        self._chosen: Dict[str, int] = {}     # the key's JSON -> the chosen configuration
        self._fixed: Optional[Dict[str, Any]] = None
        self._lock = threading.RLock()
        self.last_cache_path: Optional[str] = None

    # ---------------------------------------------------------------- building
    def launcher(self, i: int):
        """The launcher of configuration ``i`` (built on first use)."""
        with self._lock:
            if i not in self._launchers:
                k = self.tuned.kernels[i]
                self._launchers[i] = build([k], self.targets, **self.build_kw)[k.name]
            return self._launchers[i]

    # ---------------------------------------------------------------- the key
    def _info(self):
        return self.launcher(self.tuned.pinned).info

    def key_of(self, args: Sequence[Any]) -> List[Any]:
        names = [a.name for a in self._info().args]
        out = []
        for n in self.tuned.key:
            if n not in names:
                raise LaunchError(f"autotuned kernel '{self.tuned.name}': key parameter {n!r} is fixed at build "
                                  "time, not a launch argument")
            i = names.index(n)
            if i >= len(args):
                raise LaunchError(f"autotuned kernel '{self.tuned.name}' takes {len(names)} arguments, got "
                                  f"{len(args)}")
            v = args[i]
            if isinstance(v, (bool, int, float, np.generic)):
                out.append([n, _canon(v.item() if isinstance(v, np.generic) else v)])
            else:
                shape = getattr(v, "shape", None)
                out.append([n, _canon(tuple(shape) if shape is not None else None),
                            str(getattr(v, "dtype", type(v).__name__))])
        return out

    def _fixed_identity(self) -> Dict[str, Any]:
        """The part of :meth:`identity` that no launch argument changes (the device, the kernels' IR, the
        hooks): computed once per built kernel, so a launch of an already tuned key costs a dictionary
        lookup, not an IR print and a device query (those took ~13 ms a launch of a 4096^3 matmul)."""
        with self._lock:
            if self._fixed is None:
                module = self.launcher(self.tuned.pinned).resolve()[0]
                rec = backends.record_for_kind(module.kind)
                device = rec.devices()["devices"] if rec is not None else []
                self._fixed = {
                    "version": CACHE_VERSION, "kernel": self.tuned.name, "compiler": compiler_version(),
                    "module": module.kind,
                    "targets": [str(t) for t in ([self.targets] if isinstance(self.targets, str) else self.targets)],
                    "device": device, "configs": [_canon(sorted(c.items())) for c in self.tuned.configs],
                    "ir": hashlib.sha256("\n".join(function_str(k.ir) for k in self.tuned.kernels).encode()).hexdigest(),
                    # the build hooks that made the measured code (docs/backends.md "Hooks"): another hook, another
                    # choice
                    "hooks": [list(kv) for kv in sorted({(k, v) for f in module.functions.values()
                                                         for k, v in f.attrs.items()
                                                         if k.startswith(hooks.ATTR_PREFIX)})],
                }
            return self._fixed

    def identity(self, args: Sequence[Any]) -> Dict[str, Any]:
        """Everything the cached choice depends on (its hash names the cache file)."""
        return dict(self._fixed_identity(), key=self.key_of(args))

    def cache_path(self, args: Sequence[Any]) -> str:
        ident = self.identity(args)
        digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]
        return str(cache_root() / "autotune" / f"{self.tuned.name}-{digest}.json")

    # ---------------------------------------------------------------- choosing
    def choose(self, args: Sequence[Any], grid: Any = None, block: Any = None, shared_size: Any = None) -> int:
        """The index of the configuration used for ``args`` (tuning on first use of the key)."""
        if not autotune_enabled(self.tuned.enabled):
            return self.tuned.pinned
        with self._lock:
            started = _clock()  # identity() builds the first configuration: part of a tuning
            memo = json.dumps(self.key_of(args), sort_keys=True)
            if memo in self._chosen:
                return self._chosen[memo]
            ident = self.identity(args)
            path = self.cache_path(args)
            self.last_cache_path = path
            i = self._read_cache(path, ident)
            if i is None:
                i, times = self._measure(args, (grid, block, shared_size), ident["key"], started)
                self._write_cache(path, ident, i, times)
            else:
                report_cached(self.tuned.name, i, self.tuned.configs[i], path, verbosity(self.tuned.verbose))
            self._chosen[memo] = i
            return i

    def config(self, args: Sequence[Any], grid: Any = None, block: Any = None, shared_size: Any = None
               ) -> Dict[str, Any]:
        return dict(self.tuned.configs[self.choose(args, grid, block, shared_size)])

    def _read_cache(self, path: str, ident: Dict[str, Any]) -> Optional[int]:
        if not os.path.lexists(path):
            return None
        try:  # a regular file of at most CACHE_FILE_LIMIT bytes (a FIFO, /dev/zero ... are refused)
            data = json.loads(read_regular(path, limit=CACHE_FILE_LIMIT).decode("utf-8"))
        except (PolykernError, ValueError, RecursionError) as e:
            why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
            warnings.warn(f"polykern autotune: ignoring unreadable cache file {path} ({why}); tuning again",
                          RuntimeWarning, stacklevel=user_stacklevel())
            return None
        i = data.get("choice") if isinstance(data, dict) else None
        if not (isinstance(data, dict) and data.get("identity") == ident and isinstance(i, int)
                and not isinstance(i, bool) and 0 <= i < len(self.tuned.configs)):
            warnings.warn(f"polykern autotune: ignoring cache file {path} (not a valid record for this kernel, "
                          "device and key); tuning again", RuntimeWarning, stacklevel=user_stacklevel())
            return None
        return i

    def _write_cache(self, path: str, ident: Dict[str, Any], i: int, times: List[Optional[float]]) -> None:
        record = {"identity": ident, "choice": i, "config": _canon(sorted(self.tuned.configs[i].items())),
                  "median_seconds": times}
        try:
            write_atomic(path, (json.dumps(record, sort_keys=True, indent=1) + "\n").encode(), make_parents=True)
        except PolykernError as e:
            warnings.warn(f"polykern autotune: cannot write the cache file ({e}); the choice is kept for this "
                          "process only", RuntimeWarning, stacklevel=user_stacklevel())

    def _launch_options(self, i: int, call: Tuple[Any, Any, Any]) -> Dict[str, Any]:
        """grid=, block= (and shared_size=) of configuration ``i``: from the configuration, else the call's;
        a function of the configuration is called with it."""
        cfg = self.tuned.configs[i]
        grid, block, shared = call
        b = cfg.get("block", block)
        if b is None:
            raise LaunchError(f"autotuned kernel '{self.tuned.name}': config {i} has no 'block' and the call gave "
                              "none")
        g = grid(dict(cfg)) if callable(grid) else grid
        if g is None:
            raise LaunchError(f"autotuned kernel '{self.tuned.name}': grid= is required (a tuple, or a function of "
                              "the configuration)")
        out = {"grid": g, "block": b}
        shared = cfg.get("shared_size", shared)
        if shared is not None:  # a pk.shared_dynamic array's length (docs/language.md 6.2)
            out["shared_size"] = shared(dict(cfg)) if callable(shared) else shared
        return out

    def _snapshot(self, args: Sequence[Any]) -> List[Tuple[int, Any]]:
        if not self.tuned.restore:
            return []
        saved = []
        for idx, a in enumerate(self._info().args):
            if not a.is_buffer or a.readonly or idx >= len(args):
                continue
            v = args[idx]
            if isinstance(v, np.ndarray):
                saved.append((idx, v.copy()))
            elif isinstance(v, DeviceArrayBase):
                saved.append((idx, v.numpy()))
            else:
                raise LaunchError(
                    f"autotuned kernel '{self.tuned.name}': argument {idx} ('{a.name}') is written by the kernel "
                    f"and is a {type(v).__name__}, which tuning cannot restore after its trial runs; pass a NumPy "
                    "or polykern device array, or pk.autotune(..., restore=False) if running the kernel several "
                    "times gives the same result")
        return saved

    @staticmethod
    def _restore(args: Sequence[Any], saved: List[Tuple[int, Any]]) -> None:
        for idx, copy in saved:
            v = args[idx]
            if isinstance(v, np.ndarray):
                v[...] = copy
            else:
                v.copy_from_host(copy)

    def _measure(self, args: Sequence[Any], call: Tuple[Any, Any, Any], key: List[Any], started: float
                 ) -> Tuple[int, List[Optional[float]]]:
        saved = self._snapshot(args)
        times: List[Optional[float]] = []
        first_error: Optional[BaseException] = None
        report = TuningReport(self.tuned.name, self.tuned.configs, key, verbosity(self.tuned.verbose), clock=_clock,
                              start=started)
        try:
            for i in range(len(self.tuned.configs)):
                report.trying(i)
                try:
                    times.append(self._time(i, args, call))
                    report.tried(i, times[-1])
                except PolykernError as e:
                    first_error = first_error or e
                    times.append(None)
                    report.tried(i, None, e)
                    warnings.warn(f"polykern autotune: '{self.tuned.name}' config {i} "
                                  f"{self.tuned.configs[i]!r} skipped: {e}", RuntimeWarning,
                                  stacklevel=user_stacklevel())
        finally:
            self._restore(args, saved)
        ok = [(t, i) for i, t in enumerate(times) if t is not None]
        if not ok:
            raise first_error
        best = min(ok)[1]
        report.chose(best, times[best], self.tuned.reps)
        return best, times

    def _time(self, i: int, args: Sequence[Any], call: Tuple[Any, Any, Any]) -> float:
        launcher = self.launcher(i)
        options = self._launch_options(i, call)
        sync = registry.get(f"runtime.synchronize.{launcher.resolve()[0].kind}")
        for _ in range(self.tuned.warmup):
            launcher(*args, **options)
        if sync is not None:
            sync()
        samples = []
        for _ in range(self.tuned.reps):
            t0 = time.perf_counter()
            launcher(*args, **options)
            if sync is not None:
                sync()
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples)

    # ---------------------------------------------------------------- launching
    @entry_point
    def __call__(self, *args, grid: Any = None, block: Any = None, shared_size: Any = None):
        i = self.choose(args, grid, block, shared_size)
        return self.launcher(i)(*args, **self._launch_options(i, (grid, block, shared_size)))
