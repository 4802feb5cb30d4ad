"""Shared helpers of the benchmarks: timing, machine description, result rows.

Every figure is a ratio against a reference measured in the same run, interleaved with it
(round-robin over the contenders, repeated, medians), because the hosts these run on are
shared and their absolute speed drifts from minute to minute.
"""
from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
#: Compile times measure the compiler, not the compile cache (docs/language.md section 10): off for every
#: benchmark and the processes it starts, unless the caller set POLYKERN_CACHE.
os.environ.setdefault("POLYKERN_CACHE", "0")
ROOT = os.path.dirname(HERE)
# A bare checkout works: the examples and the core first, then the backends (found as top-level
# polykern_* packages when polykern is not pip-installed).
for _p in (os.path.join(ROOT, "python"), os.path.join(ROOT, "examples")):
    if _p not in sys.path:
        sys.path.insert(0, _p)
for _d in sorted(os.listdir(os.path.join(ROOT, "backends"))):
    _p = os.path.join(ROOT, "backends", _d)
    if os.path.isdir(os.path.join(_p, f"polykern_{_d}")) and _p not in sys.path:
        sys.path.append(_p)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _fail_output(e: Exception) -> "SystemExit":
    return SystemExit(f"{os.path.basename(sys.argv[0]) or 'benchmark'}: error: {e}")


def check_output(path: str) -> str:
    """``path`` when :func:`write_output` may write it (polykern.user_files' rules), else exit with the
    reason, before a long run is spent on a result that cannot be written."""
    from polykern.errors import PolykernError
    from polykern.user_files import check_destination

    try:
        check_destination(path)
    except PolykernError as e:
        raise _fail_output(e) from None
    return path


def output_folder(path: str) -> str:
    """Create the output folder ``path`` (and its parents), or exit saying why it cannot be."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise _fail_output(f"cannot create the output folder {path}: {e.strerror or e}") from None
    return path


def write_output(path: str, data) -> None:
    """Write a result (text or bytes) to ``path`` through polykern.user_files.write_atomic: regular files
    only, atomically, through symlinks, keeping the mode; exit with the reason when it is refused."""
    from polykern.errors import PolykernError
    from polykern.user_files import write_atomic

    try:
        write_atomic(path, data.encode() if isinstance(data, str) else data)
    except PolykernError as e:
        raise _fail_output(e) from None


def figure_bytes(fig, **savefig) -> bytes:
    """A matplotlib figure as PNG bytes (for :func:`write_output`)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", **savefig)
    return buf.getvalue()


def interleaved(fns: Dict[str, Callable[[], None]], repeat: int, warmup: int = 1,
                min_time: float = 0.0) -> Dict[str, List[float]]:
    """Wall-clock seconds of each ``fns[name]()``, measured round-robin ``repeat`` times (after
    ``warmup`` untimed calls each). A call shorter than ``min_time`` is repeated in a batch and
    the batch average is recorded, so tiny kernels are not dominated by the timer."""
    for f in fns.values():
        for _ in range(warmup):
            f()
    batch = {}
    for name, f in fns.items():
        n = 1
        if min_time > 0:
            t0 = time.perf_counter()
            f()
            dt = time.perf_counter() - t0
            n = max(1, int(min_time / max(dt, 1e-7)))
        batch[name] = n
    out: Dict[str, List[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, f in fns.items():
            n = batch[name]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            out[name].append((time.perf_counter() - t0) / n)
    return out


def median(xs: List[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def machine() -> Dict[str, str]:
    """The host, as precisely as /proc and LLVM can tell."""
    info = {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": str(os.cpu_count())}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import llvmlite.binding as llvm

        from polykern.codegen.llvm_target import ensure_initialized

        ensure_initialized()
        info["llvm_host_cpu"] = llvm.get_host_cpu_name()
        info["llvmlite"] = __import__("llvmlite").__version__
    except Exception as e:  # noqa: BLE001 - informational only
        info["llvm_host_cpu"] = f"unknown ({e})"
    try:
        info["loadavg_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    info["date"] = time.strftime("%Y-%m-%d")
    info["git"] = tree_commit()
    return info


def tree_commit() -> str:
    """The commit of the tree these benchmarks run from: POLYKERN_TREE if set (a `git archive` copy has no
    .git: say which commit it was made from), else git's HEAD where ROOT is itself a checkout's top (not a
    folder inside another checkout, whose HEAD would be someone else's)."""
    if os.environ.get("POLYKERN_TREE"):
        return os.environ["POLYKERN_TREE"]
    try:
        def git(*a):
            return subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True, timeout=10).stdout.strip()
        top = git("rev-parse", "--show-toplevel")
        if not top or os.path.realpath(top) != os.path.realpath(ROOT):
            return "unknown (not a git checkout; set POLYKERN_TREE)"
        return git("rev-parse", "--short", "HEAD")
    except Exception as e:  # noqa: BLE001
        return f"unknown ({type(e).__name__})"


def versions(*mods: str) -> Dict[str, Optional[str]]:
    out = {}
    for m in mods:
        try:
            out[m] = __import__(m).__version__
        except Exception as e:  # noqa: BLE001
            out[m] = None if isinstance(e, ImportError) else f"error: {e}"
    return out
