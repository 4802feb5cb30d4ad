"""Differential fuzzer: random kernels, every target, the IR interpreter as the oracle.

    python tools/fuzz.py --seed S --count N --targets llvm,opencl,vulkan,webgpu [--time-budget SEC]
                         [--jobs J] [--program-timeout SEC]

For each program (``polykern.testing.kernelgen``, seeded: the same --seed gives the same programs) it
runs the oracle (``polykern.testing.interp``), builds the program once per target, launches it where the
target's runtime exists, and compares (``polykern.testing.compare``, within ``polykern.numerics``
promises). A disagreement (a wrong value, a crash, a refusal the backend does not declare) is shrunk
(``polykern.testing.reduce``) and saved under tests/fuzz_regressions/ (``--save-dir``), where
tests/fuzz_regressions/test_replay.py replays it on every runtime present.

Targets: a target kind (``llvm``, ``opencl``, ``vulkan``, ``webgpu``, ``cuda``, ``nvptx`` ...) runs the
target strings its backend's conformance settings give (e.g. ``webgpu -shader_f16=true``); a full
target string (``"llvm -mtriple=aarch64-linux-gnu"``, ``"hexagon -mcpu=hexagonv68"``) runs as given,
which is the hook for emulated targets: they run wherever their runtime registers. A target whose
runtime is absent is still compiled (refusals are checked) and is named as skipped.

Refusal profiles (``polykern.testing.fuzzprofile``, ``--profile``, ``--profile-every``): one program in
``--profile-every`` (default 2) leaves out what one target of the run declares it refuses (its target kind's
declared ``Capabilities.refuses``), in turn per refusing target, decided by the program's index alone (``--start``
replays it; replay lines name ``--profile``). The summary says per target how many programs were
compared with the oracle, and how many of those were made for its profile.

Checked mode (``--checked``, alias ``--bounds-check``): every target builds with ``bounds_check=True``, and
the programs whose generator pointed a vector group or a matrix fragment out of bounds on one work-item
(``kernelgen.generate(checked=True)``, ``GenProgram.violation``) must be refused by the oracle and stop
with a LaunchError on every target (``fuzzcase.check_violation``); the summary counts them as
``violation ok`` / ``violation disagree``. On every build the FunctionInfo ``vector_align`` must record the
alignment the program's vector groups and copies need (an ``alignment`` disagreement otherwise).

Programs run in worker processes (``--jobs`` at once); a program that kills its worker (a driver's
segmentation fault) or takes longer than ``--program-timeout`` seconds on one target (a hanging
compiler: the worker and what it started are killed) is a disagreement of that program on that
target ("process-crash", "timeout"), and the run goes on with the next target.

Exit status 0 only when nothing disagreed; the last line is
``fuzz: N programs x K targets, D disagreements``.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import queue as queue_mod
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))

import numpy as np  # noqa: E402

import polykern as pk  # noqa: E402
from polykern.ir.bfloat16 import is_bf16_dtype  # noqa: E402
from polykern.testing import fuzzcase, fuzzprofile, kernelgen  # noqa: E402
from polykern.target import Target  # noqa: E402
from polykern.testing.reduce import reduce_source  # noqa: E402
from polykern.user_files import write_atomic  # noqa: E402

SEED_STRIDE = 1_000_000  # program i of --seed S has generator seed S * SEED_STRIDE + i


def target_strings(spec: str):
    """Target strings for one --targets entry (a kind expands to its backend's conformance targets)."""
    from polykern import backends, registry

    spec = spec.strip()
    if " " in spec or "-" in spec:
        return [spec]
    backends.load_all()
    tk = registry.get(f"target.kind.{spec}")
    if tk is None:
        return [spec]
    rec = backends.record_for_kind(tk.module_kind)
    try:
        conf = importlib.import_module(f"polykern_{rec.name}.conformance") if rec else None
    except ModuleNotFoundError:
        conf = None
    return list(getattr(conf, "TARGETS", {}).get(spec, [spec]))


def _values(a: np.ndarray) -> list:
    """An array's values for JSON; bf16 (a record dtype, ir/bfloat16.py) as its bits, dtype "bf16"."""
    return (a.view(np.uint16) if is_bf16_dtype(a.dtype) else a).tolist()


def encode_args(params, args):
    out = []
    for (name, t, role), a in zip(params, args):
        if isinstance(a, np.ndarray):
            dtype = "bf16" if is_bf16_dtype(a.dtype) else str(a.dtype)
            out.append({"name": name, "dtype": dtype, "values": [_enc(x) for x in _values(a)]})
        else:
            out.append({"name": name, "dtype": str(np.asarray(a).dtype), "value": _enc(np.asarray(a).item())})
    return out


def _enc(x):
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return repr(x)  # "nan", "inf", "-inf": JSON has no spelling for them
    return x


def save_case(save_dir, prog, source, outcome, oracle, targets, args, profile=None):
    os.makedirs(save_dir, exist_ok=True)
    kind = outcome.target.split()[0]
    base = f"{prog.name}_{kind}"
    path = os.path.join(save_dir, base + ".py")
    write_atomic(path, (source if source.endswith("\n") else source + "\n").encode())
    meta = {
        "kernel": prog.name, "seed": prog.seed, "grid": list(prog.grid), "block": list(prog.block),
        "features": sorted(prog.features), "targets": targets,
        "args": encode_args(prog.params, args),
        "expected": {k: [_enc(x) for x in _values(v)] for k, v in oracle.buffers.items()},
        "found": {"target": outcome.target, "kind": outcome.kind, "detail": outcome.detail[:2000]},
        "open_on": [kind],  # target kinds where it still disagrees; remove a kind once fixed
    }
    if profile is not None:  # made for that target kind's refusal profile (tools/fuzz.py --profile)
        meta["profile"] = profile
    if prog.shared_size is not None:  # the launch's shared_size= (a pk.shared_dynamic array)
        meta["shared_size"] = prog.shared_size
    if prog.vector_align:  # what the build's FunctionInfo vector_align must record
        meta["vector_align"] = prog.vector_align
    if prog.fast_math:  # built with fast_math=True, judged against the fast-math promises
        meta["fast_math"] = True
    write_atomic(os.path.join(save_dir, base + ".json"), (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode())
    return path


def _parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--start", type=int, default=0, help="index of the first program (to replay one)")
    ap.add_argument("--targets", default="llvm,opencl,vulkan,webgpu")
    ap.add_argument("--time-budget", type=float, default=None, help="stop starting programs after SEC seconds")
    ap.add_argument("--save-dir", default=os.path.join(REPO, "tests", "fuzz_regressions"))
    ap.add_argument("--no-save", action="store_true", help="report disagreements, save nothing")
    ap.add_argument("--no-reduce", action="store_true", help="save disagreements unshrunk")
    ap.add_argument("--max-saves", type=int, default=5)
    ap.add_argument("--reduce-budget", type=float, default=120.0, help="seconds to shrink one disagreement")
    ap.add_argument("--bounds-check", "--checked", action="store_true", help="build with pk.build(..., "
                    "bounds_check=True); a share of the programs then access a vector group or a matrix fragment "
                    "out of bounds on one work-item, and their launch must be a LaunchError")
    ap.add_argument("--fast-math", action="store_true", help="build with pk.build(..., fast_math=True); half the "
                    "math stores of exp exp2 log log2 rsqrt and / call pk.fast_*; results are judged against the "
                    "fast-math promises (polykern.numerics.FAST_MATH)")
    ap.add_argument("--avoid", default="", help="comma-separated generator features to leave out while a "
                    "known bug is open: " + ", ".join(f"{k} ({v})" for k, v in kernelgen.AVOIDABLE.items()).replace("%", "%%"))
    ap.add_argument("--probability", default="", help="comma-separated SECTION=P: the chance a program gets a "
                    "generator section, instead of kernelgen.PROBABILITY (e.g. subgroup_uniform=1 to fuzz one "
                    "section): " + ", ".join(f"{k}={v}" for k, v in kernelgen.PROBABILITY.items()))
    ap.add_argument("--profile", default="auto", help="which programs leave out what a target refuses "
                    "(its declared Capabilities.refuses): 'auto' (default): one in --profile-every, in turn for "
                    "each target of --targets that refuses something; 'none': no program; a target kind "
                    "('webgpu'): every program (how a replay names the profile of the program it replays)")
    ap.add_argument("--profile-every", type=int, default=2, help="with --profile auto, program i is profiled "
                    "when i %% N == N - 1 (default 2: every second program; 0: none)")
    ap.add_argument("--program-timeout", type=float, default=60.0,
                    help="seconds one program may take on one target (build and run) before its worker is "
                    "killed and a 'timeout' disagreement is counted for that target (default 60)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes running programs at once (the "
                    "report stays in program order; --max-saves is shared out between them)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--stride", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--first-target", type=int, default=0, help=argparse.SUPPRESS)
    return ap


def run_profiles(a):
    """The run's refusal profiles and how often they apply (polykern.testing.fuzzprofile), from
    --profile and --profile-every; a ValueError names a bad --profile."""
    if a.profile == "none":
        return [], 0
    if a.profile == "auto":
        targets = [t for spec in a.targets.split(",") if spec.strip() for t in target_strings(spec)]
        return fuzzprofile.profiles(targets), a.profile_every
    avoid = fuzzprofile.profile_features(a.profile)
    if not avoid:
        raise ValueError(f"--profile {a.profile}: that target kind declares no refusals (or is unknown); "
                         f"'auto', 'none' or a kind whose Capabilities.refuses names features")
    return [(a.profile, avoid)], 1


def program_for(a, i, profs, every):
    """Program ``i`` of the run (generator seed --seed * SEED_STRIDE + i, --avoid and its profile's
    refusals left out) and the profile's target kind (None: not profiled)."""
    prof = fuzzprofile.profile_for(i, profs, every)
    avoid = frozenset(x for x in a.avoid.split(",") if x) | (prof[1] if prof else frozenset())
    return (kernelgen.generate(a.seed * SEED_STRIDE + i, avoid=avoid, checked=a.bounds_check,
                               probability=_probability(a.probability),
                               **({"fast_math": True} if a.fast_math else {})),
            prof[0] if prof else None)


def _probability(spec: str):
    """--probability's SECTION=P list as generate()'s ``probability`` (it refuses an unknown section)."""
    out = {}
    for item in (x for x in spec.split(",") if x):
        name, _, value = item.partition("=")
        out[name.strip()] = float(value)
    return out


def _add(into, stats):
    """Add a worker's counters (``@@PROGRESS``/``@@STATS``) to the run's totals."""
    into["n"] += stats["n"]
    into["disagreements"] += stats["disagreements"]
    into["saves"] += stats["saves"]
    for key in ("per_target", "compared"):
        for t, d in stats[key].items():
            slot = into[key].setdefault(t, {})
            for k, v in d.items():
                slot[k] = slot.get(k, 0) + v


class _Lane:
    """One worker process at a time for the programs ``first, first + stride, ... < end``. When a worker
    dies or is killed, the next one starts after the program/target it had begun."""

    def __init__(self, lane_id, first, end, stride, max_saves):
        self.id, self.next, self.end, self.stride, self.max_saves = lane_id, first, end, stride, max_saves
        self.first_target = 0  # target index to start the next worker's first program at
        self.proc = None
        self.done = first >= end
        self.current = first  # program index begun last (its output is buffered under it)

    def start(self, argv, queue, left, saves_left):
        cmd = [sys.executable, os.path.abspath(__file__), *argv, "--worker", "--start", str(self.next),
               "--count", str(self.end - self.next), "--stride", str(self.stride),
               "--first-target", str(self.first_target), "--max-saves", str(max(0, saves_left))]
        if left is not None:
            cmd += ["--time-budget", str(left)]
        # its own session: a timeout kills the worker and whatever it started (a compiler it runs)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=os.getcwd(),
                                     start_new_session=True)
        self.begun = None  # (index, seed, phase) of the last @@BEGIN
        self.deadline = None
        self.reducing = False
        self.timed_out = False
        self.partial = None
        self.stats = None
        threading.Thread(target=_pump, args=(self.proc.stdout, queue, self.id), daemon=True).start()

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _pump(stream, queue, lane_id):
    for line in stream:
        queue.put((lane_id, line))
    queue.put((lane_id, None))


def main(argv=None) -> int:
    """The supervisor: runs the programs in worker processes (``--jobs`` of them at once, program i in
    worker lane i mod jobs), so that a driver or compiler that kills the process (a segmentation fault
    in a runtime) or hangs (longer than ``--program-timeout`` on one program and target) is reported as
    that program's disagreement on that target, and the run goes on. The workers' output is printed in
    program order, so the same seed gives the same report whatever ``--jobs`` is."""
    argv = list(sys.argv[1:] if argv is None else argv)
    a = _parser().parse_args(argv)
    if a.worker:
        return worker(a)
    if a.jobs < 1 or a.program_timeout <= 0:
        print("fuzz: --jobs must be >= 1 and --program-timeout > 0", file=sys.stderr)
        return 2
    try:
        profs, every = run_profiles(a)
    except ValueError as e:
        print(f"fuzz: {e}", file=sys.stderr)
        return 2
    targets = [t for spec in a.targets.split(",") if spec.strip() for t in target_strings(spec)]
    running = [t for t in targets if fuzzcase.runtime_present(t)]
    for t in targets:
        if t not in running:
            print(f"fuzz: {t}: skipped (no runtime here: only compiled, refusals checked)", flush=True)
    print(f"fuzz: profiles: {fuzzprofile.describe(profs, every)}", flush=True)
    start_time = time.monotonic()
    totals = {"n": 0, "disagreements": 0, "saves": 0, "per_target": {t: {} for t in targets},
              "compared": {t: {} for t in targets}}
    end = a.start + a.count
    jobs = max(1, min(a.jobs, a.count))
    # each lane saves at most its share, so which cases are saved does not depend on timing
    share = -(-a.max_saves // jobs)
    lanes = [_Lane(k, a.start + k, end, jobs, share) for k in range(jobs)]
    out = {}  # program index -> its report lines, printed in program order
    printed = [a.start]
    q = queue_mod.Queue()

    def left():
        return None if a.time_budget is None else a.time_budget - (time.monotonic() - start_time)

    def launch(lane):
        rest = left()
        if lane.next >= lane.end or (rest is not None and rest <= 0):
            lane.done, lane.current = True, lane.end
            return
        lane.start(argv, q, rest, lane.max_saves)

    def flush():
        while printed[0] < end:
            i = printed[0]
            owner = lanes[(i - a.start) % jobs]
            if not (owner.done or owner.current > i):
                return
            for line in out.pop(i, []):
                print(line, end="", flush=True)
            printed[0] += 1

    def report(lane, line):
        out.setdefault(lane.current, []).append(line)

    def worker_ended(lane, rc, timed_out):
        if lane.stats is not None:
            _add(totals, lane.stats)
            lane.max_saves -= lane.stats["saves"]
            lane.done, lane.current = True, lane.end
            return
        if lane.partial:
            _add(totals, lane.partial)
            lane.max_saves -= lane.partial["saves"]
        if lane.begun is None:
            report(lane, f"fuzz: the worker exited with status {rc} before running a program\n")
            totals["disagreements"] += 1
            lane.done, lane.current = True, lane.end
            return
        idx, seed, phase = lane.begun
        replay = _replay(a, idx, phase if phase != "oracle" else a.targets, profs, every)
        if timed_out:
            what = (f"timeout: building or running it took more than {a.program_timeout:g} s; "
                    f"the worker was killed")
        else:
            what = (f"process-crash: the process died (status {rc}{', signal ' + str(-rc) if rc < 0 else ''}) "
                    f"while building or running it")
        if lane.reducing:  # the disagreement is counted already; a variant of it hung or crashed
            report(lane, f"fuzz: seed={seed} target={phase}: shrinking stopped ({what.split(':')[0]} of a "
                         f"variant); nothing saved; {replay}\n")
        else:
            totals["disagreements"] += 1
            if phase in totals["per_target"]:
                key = "timeout" if timed_out else "disagree"
                slot = totals["per_target"][phase]
                slot[key] = slot.get(key, 0) + 1
            report(lane, f"fuzz: DISAGREE seed={seed} target={phase} {what}; {replay}\n")
        k = targets.index(phase) + 1 if phase in targets else len(targets)
        if k < len(targets):
            lane.next, lane.first_target = idx, k
        else:
            lane.next, lane.first_target = idx + lane.stride, 0
        launch(lane)

    for lane in lanes:
        if not lane.done:
            launch(lane)
    while not all(lane.done for lane in lanes):
        now = time.monotonic()  # checked on every line: another lane's output must not delay a kill
        for lane in lanes:
            if not lane.done and lane.deadline is not None and now > lane.deadline:
                lane.deadline = None
                lane.timed_out = True
                lane.kill()
        try:
            lane_id, line = q.get(timeout=0.5)
        except queue_mod.Empty:
            continue
        lane = lanes[lane_id]
        if line is None:
            rc = lane.proc.wait()
            worker_ended(lane, rc, lane.timed_out)
        elif line.startswith("@@BEGIN "):
            f = line.split()
            lane.begun = (int(f[1]), f[2], " ".join(f[3:]))
            lane.current, lane.reducing = int(f[1]), False
            lane.deadline = time.monotonic() + a.program_timeout
        elif line.startswith("@@REDUCE"):
            lane.reducing = True
            lane.deadline = time.monotonic() + a.reduce_budget + a.program_timeout
        elif line.startswith("@@PROGRESS "):
            lane.partial = json.loads(line[len("@@PROGRESS "):])
        elif line.startswith("@@STATS "):
            lane.stats = json.loads(line[len("@@STATS "):])
        else:
            report(lane, line)
        flush()
    flush()
    for i in sorted(out):
        for line in out[i]:
            print(line, end="", flush=True)
    elapsed = time.monotonic() - start_time
    n, per_target = totals["n"], totals["per_target"]
    for t in targets:
        stats_text = ", ".join(f"{k} {v}" for k, v in sorted(per_target[t].items()))
        print(f"fuzz: {t}: {stats_text or 'nothing run'}{_compared_text(totals['compared'][t], n)}")
    first = a.seed * SEED_STRIDE + a.start
    print(f"fuzz: {elapsed:.1f} s, generator seeds {first}..{first + max(n - 1, 0)}")
    print(f"fuzz: {n} programs x {len(running)} targets, {totals['disagreements']} disagreements")
    return 1 if totals["disagreements"] else 0


def _replay(a, idx, targets, profs, every):
    """The command that runs program ``idx`` of this run again (with its profile named)."""
    prof = fuzzprofile.profile_for(idx, profs, every)
    return (f"replay: python tools/fuzz.py --seed {a.seed} --start {idx} --count 1 --targets '{targets}' "
            f"--profile {prof[0] if prof else 'none'}{' --avoid ' + a.avoid if a.avoid else ''}"
            f"{' --probability ' + a.probability if a.probability else ''}"
            f"{' --bounds-check' if a.bounds_check else ''}{' --fast-math' if a.fast_math else ''} --no-save")


def _compared_text(compared, n):
    """"; compared C of N (P%), K of them made for its profile": the programs whose outputs a target's run was
    compared with the oracle's (status ok, or a mismatch), of the N programs of the run."""
    if not n:
        return ""
    c = compared.get("all", 0)
    own = compared.get("own profile", 0)
    return (f"; compared {c} of {n} ({100.0 * c / n:.0f}%)"
            + (f", {own} of them made for its profile" if own else ""))


def worker(a) -> int:
    if a.bounds_check and "bounds_check" not in inspect.signature(pk.build).parameters:
        print("fuzz: --bounds-check ignored: this pk.build has no bounds_check parameter")
        a.bounds_check = False
    targets = [t for spec in a.targets.split(",") if spec.strip() for t in target_strings(spec)]
    profs, every = run_profiles(a)
    start = time.monotonic()
    n = disagreements = saves = 0
    per_target = {t: {} for t in targets}
    compared = {t: {} for t in targets}  # "all": programs compared; "own profile": of them made for it

    def progress(tag="@@PROGRESS "):
        print(tag + json.dumps({"n": n, "disagreements": disagreements, "saves": saves,
                                "per_target": per_target, "compared": compared}), flush=True)

    for i in range(a.start, a.start + a.count, a.stride):
        if a.time_budget is not None and time.monotonic() - start > a.time_budget:
            break
        first_target = a.first_target if i == a.start else 0  # a resumed program was counted already
        seed = a.seed * SEED_STRIDE + i
        print(f"@@BEGIN {i} {seed} oracle", flush=True)
        prog, made_for = program_for(a, i, profs, every)
        args = prog.make_args()
        case = fuzzcase.Case(prog.name, prog.source, prog.grid, prog.block, args, prog.features, prog.shared_size,
                             prog.vector_align, prog.fast_math)
        if first_target == 0:
            n += 1
            progress()
        if prog.violation:  # a checked program that accesses out of bounds: every launch must stop
            disagreements += _check_violation(a, i, seed, prog, case, targets[first_target:], per_target,
                                              profs, every)
            progress()
            continue
        try:
            oracle = case.oracle()
        except Exception as e:  # noqa: BLE001 - a program the tools cannot judge is a bug in them
            if first_target == 0:
                disagreements += 1
                print(f"fuzz: DISAGREE seed={seed} oracle/frontend refused a generated program: "
                      f"{type(e).__name__}: {str(e)[:600]}", flush=True)
                progress()
            continue
        for t in targets[first_target:]:
            print(f"@@BEGIN {i} {seed} {t}", flush=True)
            out = fuzzcase.check_target(case, oracle, t, bounds_check=a.bounds_check)
            per_target[t][out.status] = per_target[t].get(out.status, 0) + 1
            if out.status == "ok" or out.kind == "mismatch":
                slot = compared[t]
                slot["all"] = slot.get("all", 0) + 1
                if made_for is not None and made_for == Target.parse(t).kind:
                    slot["own profile"] = slot.get("own profile", 0) + 1
            if a.verbose:
                print(f"fuzz: seed={seed} {t}: {out.status} {out.detail[:200]}"
                      f"{f'  [made for {made_for}]' if made_for else ''}", flush=True)
            if out.bad:
                disagreements += 1
                print(f"fuzz: DISAGREE seed={seed} target={t} {out.kind}: {out.detail[:800]}; "
                      f"{_replay(a, i, t, profs, every)}", flush=True)
            progress()
            if not out.bad or a.no_save or saves >= a.max_saves:
                continue
            print("@@REDUCE", flush=True)
            source = prog.source
            if not a.no_reduce:
                # Variants are built checked where pk.build can: a shrink that drops an index mask then
                # faults on the target instead of reading out of bounds on a path the oracle never took
                # (unless the checked build no longer shows the disagreement).
                checked = ("bounds_check" in inspect.signature(pk.build).parameters
                           and _still_fails(prog.source, prog, args, t, out.kind, True))
                source = reduce_source(prog.source, prog.name,
                                       lambda src, t=t, k=out.kind: _still_fails(src, prog, args, t, k, checked),
                                       time_budget=a.reduce_budget)
            small = fuzzcase.Case(prog.name, source, prog.grid, prog.block, args, prog.features, prog.shared_size,
                                  prog.vector_align, prog.fast_math)
            try:
                small_oracle = small.oracle()
                small_out = fuzzcase.check_target(small, small_oracle, t, bounds_check=a.bounds_check)
            except Exception:  # noqa: BLE001
                small, small_oracle, small_out, source = case, oracle, out, prog.source
            if not small_out.bad:
                small, small_oracle, small_out, source = case, oracle, out, prog.source
            path = save_case(a.save_dir, prog, source, small_out, small_oracle, [t], args, made_for)
            saves += 1
            print(f"fuzz: saved {os.path.relpath(path, os.getcwd())} ({len(source.splitlines())} lines)",
                  flush=True)
            progress()
    progress("@@STATS ")
    return 0


def _check_violation(a, i, seed, prog, case, targets, per_target, profs, every) -> int:
    """A checked program with an out-of-bounds access (``prog.violation``): the oracle must refuse it
    and every target's checked launch must be a LaunchError naming it; the disagreements (not saved:
    the replay command reproduces one)."""
    bad = 0
    try:
        case.oracle()
        bad += 1
        print(f"fuzz: DISAGREE seed={seed} oracle: ran a program with an out-of-bounds {prog.violation} "
              f"without refusing it; {_replay(a, i, a.targets, profs, every)}", flush=True)
    except fuzzcase.OracleError as e:
        if "out of bounds" not in str(e) and "do not fit" not in str(e) and "out-of-bounds" not in str(e):
            bad += 1
            print(f"fuzz: DISAGREE seed={seed} oracle refused a checked program for another reason: "
                  f"{str(e)[:600]}", flush=True)
    except Exception as e:  # noqa: BLE001
        bad += 1
        print(f"fuzz: DISAGREE seed={seed} oracle/frontend refused a generated program: {type(e).__name__}: "
              f"{str(e)[:600]}", flush=True)
    for t in targets:
        print(f"@@BEGIN {i} {seed} {t}", flush=True)
        out = fuzzcase.check_violation(case, t)
        status = "violation " + out.status
        per_target[t][status] = per_target[t].get(status, 0) + 1
        if a.verbose:
            print(f"fuzz: seed={seed} {t}: {status} {out.detail[:200]}", flush=True)
        if out.bad:
            bad += 1
            print(f"fuzz: DISAGREE seed={seed} target={t} {out.kind} (out-of-bounds {prog.violation}): "
                  f"{out.detail[:800]}; {_replay(a, i, t, profs, every)}", flush=True)
    return bad


def _still_fails(source, prog, args, target, kind, bounds_check) -> bool:
    case = fuzzcase.Case(prog.name, source, prog.grid, prog.block, args, prog.features, prog.shared_size,
                         prog.vector_align, prog.fast_math)
    try:
        oracle = case.oracle()
        out = fuzzcase.check_target(case, oracle, target, bounds_check=bounds_check)
    except Exception:  # noqa: BLE001 - a variant that breaks the tools is not the failure being kept
        return False
    return out.bad and out.kind == kind


if __name__ == "__main__":
    sys.exit(main())
