"""Checks a target's ``-mcpu``/``-mattr`` (and triple) against what LLVM knows, without risking
the process.

LLVM handles a bad processor or feature name by printing a warning and going on with
defaults, and some combinations then end in ``LLVM ERROR: ...`` and ``abort()`` (e.g. a 32-bit
CPU for a 64-bit triple: "64-bit code requested on a subtarget that doesn't support it!").
So the check runs in a child interpreter: it prints LLVM's own lists of CPUs and features for
the triple (``-mcpu=help``), then generates code for a small module that uses what polykern
kernels use (float/double/half arithmetic, 64-bit integer division, vectors, atomics, a libm
call) with the requested CPU and features. A name LLVM does not list is a
:class:`TargetError` with the closest valid names; a child that dies is a :class:`TargetError`
with LLVM's message. Verdicts are cached per process.
"""
from __future__ import annotations

import difflib
import os
import subprocess
import sys
import threading
from typing import Dict, Optional, Tuple

from ...errors import TargetError
from ..llvm_target import ensure_initialized

__all__ = ["check_cpu_and_features", "llvm_choices", "PROBE_IR"]

#: What the probe compiles: the operations every polykern LLVM backend emits.
PROBE_IR = r"""
declare float @expf(float)
define void @polykern_probe(ptr %p, float %a, double %b, i64 %c, i64 %d, <4 x float> %v) {
  %e = call float @expf(float %a)
  %q = sdiv i64 %c, %d
  %r = srem i64 %c, %d
  %qf = sitofp i64 %q to float
  %h = fptrunc float %e to half
  %h2 = fpext half %h to float
  %bf = fptrunc double %b to float
  %s1 = fadd float %h2, %bf
  %s2 = fmul float %s1, %qf
  %rf = uitofp i64 %r to double
  %bd = fdiv double %b, %rf
  %vv = fmul <4 x float> %v, %v
  %v0 = extractelement <4 x float> %vv, i32 0
  %s3 = fadd float %s2, %v0
  %x = atomicrmw add ptr %p, i32 1 seq_cst
  %xf = sitofp i32 %x to float
  %s4 = fadd float %s3, %xf
  store float %s4, ptr %p
  %p2 = getelementptr double, ptr %p, i64 1
  store double %bd, ptr %p2
  ret void
}
"""

_CHILD = r"""
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
triple, cpu, features, ir = sys.argv[1:5]
target = llvm.Target.from_triple(triple)
empty = llvm.parse_assembly("")
empty.triple = triple
target.create_target_machine(cpu="help").emit_assembly(empty)  # LLVM prints its lists on stderr
sys.stderr.write("\n@@polykern-probe@@\n")
sys.stderr.flush()
tm = target.create_target_machine(cpu=cpu, features=features, opt=2, reloc="pic")
mod = llvm.parse_assembly(ir)
mod.triple = triple
mod.data_layout = str(tm.target_data)
tm.emit_object(mod)
print("polykern-probe-ok")
"""

_MARK = "@@polykern-probe@@"
_lock = threading.Lock()
_choices: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {}
_verdicts: Dict[Tuple[str, str, str], Optional[str]] = {}


def _parse_lists(text: str) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    cpus, feats, cur = [], [], None
    for line in text.splitlines():
        if line.startswith("Available CPUs"):
            cur = cpus
        elif line.startswith("Available features"):
            cur = feats
        elif line.startswith("Use +feature") or line.startswith(_MARK):
            cur = None
        elif cur is not None and line.startswith("  ") and line.strip():
            cur.append(line.split()[0])
    return tuple(cpus), tuple(feats)


def _run_child(triple: str, cpu: str, features: str) -> Tuple[bool, str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, triple, cpu, features, PROBE_IR], env=env,
                              capture_output=True, text=True, timeout=120, errors="replace")
    except (OSError, subprocess.SubprocessError) as e:
        raise TargetError(f"could not check LLVM target {triple} -mcpu={cpu} -mattr={features} in a child "
                          f"process: {e}") from None
    return proc.returncode == 0 and "polykern-probe-ok" in proc.stdout, proc.stderr


def llvm_choices(triple: str) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(CPU names, feature names) LLVM knows for ``triple``, from LLVM itself (cached)."""
    with _lock:
        if triple not in _choices:
            _, err = _run_child(triple, "generic", "")
            _choices[triple] = _parse_lists(err.split(_MARK)[0])
        return _choices[triple]


def _unknown(kind: str, what: str, name: str, valid: Tuple[str, ...], triple: str) -> TargetError:
    close = difflib.get_close_matches(name, valid, n=5, cutoff=0.5)
    hint = f"; closest: {', '.join(close)}" if close else ""
    listing = ", ".join(valid) if len(valid) <= 40 else ", ".join(valid[:40]) + f", ... ({len(valid)} in all)"
    return TargetError(f"target '{kind}': LLVM knows no {what} {name!r} for {triple}{hint}; valid: {listing}")


def _known_triple(kind: str, triple: str) -> None:
    import llvmlite.binding as llvm

    ensure_initialized()
    try:
        llvm.Target.from_triple(triple)  # safe in-process: an unknown triple is a RuntimeError
    except RuntimeError as e:
        raise TargetError(f"target '{kind}': LLVM has no target for triple {triple!r}: {str(e).strip()}") from None


def check_cpu_and_features(kind: str, triple: str, cpu: str, features: str) -> None:
    """Raise :class:`TargetError` unless LLVM knows ``cpu`` and every ``features`` item for
    ``triple`` and generates code with them without dying."""
    items = [f.strip() for f in features.split(",") if f.strip()]
    for item in items:
        if item[0] not in "+-" or len(item) < 2:
            raise TargetError(f"target '{kind}': -mattr items are +feature or -feature, got {item!r}")
    _known_triple(kind, triple)
    key = (triple, cpu, ",".join(items))
    with _lock:
        verdict = _verdicts.get(key, False)
    if verdict is False:
        ok, err = _run_child(triple, cpu, key[2])
        before, _, after = err.partition(_MARK)
        cpus, feats = _parse_lists(before)
        with _lock:
            _choices.setdefault(triple, (cpus, feats))
        if cpus and cpu not in cpus:
            verdict = str(_unknown(kind, "-mcpu", cpu, cpus, triple))
        else:
            bad = [i for i in items if feats and i[1:] not in feats]
            if bad:
                verdict = str(_unknown(kind, "-mattr feature", bad[0][1:], feats, triple))
            elif not ok:
                lines = [ln.strip() for ln in (after or before).splitlines() if ln.strip()]
                msg = next((ln for ln in lines if "LLVM ERROR" in ln), lines[-1] if lines else "the compiler died")
                verdict = (f"target '{kind}': LLVM cannot generate code for {triple} with -mcpu={cpu}"
                           f"{' -mattr=' + key[2] if key[2] else ''}: {msg}")
            else:
                verdict = None
        with _lock:
            _verdicts[key] = verdict
    if verdict is not None:
        raise TargetError(verdict)
