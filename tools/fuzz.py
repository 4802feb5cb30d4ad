"""Differential fuzzer: random kernels, every target, the IR interpreter as the oracle.

    python tools/fuzz.py --seed S --count N --targets llvm,opencl,vulkan,webgpu [--time-budget SEC]

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

Exit status 0 only when nothing disagreed; the last line is
``fuzz: N programs x K targets, D disagreements``.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))

import numpy as np  # noqa: E402

import polykern as pk  # noqa: E402
from polykern.testing import fuzzcase, kernelgen  # noqa: E402
from polykern.testing.reduce import reduce_source  # noqa: E402

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


def encode_args(params, args):
    out = []
    for (name, t, role), a in zip(params, args):
        if isinstance(a, np.ndarray):
            out.append({"name": name, "dtype": str(a.dtype), "values": [_enc(x) for x in a.tolist()]})
        else:
            out.append({"name": name, "dtype": str(np.asarray(a).dtype), "value": _enc(np.asarray(a).item())})
    return out


def _enc(x):
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return repr(x)  # "nan", "inf", "-inf": JSON has no spelling for them
    return x


def save_case(save_dir, prog, source, outcome, oracle, targets, args):
    os.makedirs(save_dir, exist_ok=True)
    kind = outcome.target.split()[0]
    base = f"{prog.name}_{kind}"
    path = os.path.join(save_dir, base + ".py")
    with open(path, "w") as f:
        f.write(source if source.endswith("\n") else source + "\n")
    meta = {
        "kernel": prog.name, "seed": prog.seed, "grid": list(prog.grid), "block": list(prog.block),
        "features": sorted(prog.features), "targets": targets,
        "args": encode_args(prog.params, args),
        "expected": {k: [_enc(x) for x in v.tolist()] for k, v in oracle.buffers.items()},
        "found": {"target": outcome.target, "kind": outcome.kind, "detail": outcome.detail[:2000]},
        "open_on": [kind],  # target kinds where it still disagrees; remove a kind once fixed
    }
    with open(os.path.join(save_dir, base + ".json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
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
    ap.add_argument("--bounds-check", action="store_true", help="build with pk.build(..., bounds_check=True)")
    ap.add_argument("--avoid", default="", help="comma-separated generator features to leave out while a "
                    "known bug is open: " + ", ".join(f"{k} ({v})" for k, v in kernelgen.AVOIDABLE.items()).replace("%", "%%"))
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return ap


def main(argv=None) -> int:
    """The supervisor: runs the programs in a worker process, so that a driver or compiler that kills
    the process (a segmentation fault in a runtime) is reported as that program's disagreement on that
    target, and the run goes on with the next program."""
    argv = list(sys.argv[1:] if argv is None else argv)
    a = _parser().parse_args(argv)
    if a.worker:
        return worker(a)
    targets = [t for spec in a.targets.split(",") if spec.strip() for t in target_strings(spec)]
    running = [t for t in targets if fuzzcase.runtime_present(t)]
    for t in targets:
        if t not in running:
            print(f"fuzz: {t}: skipped (no runtime here: only compiled, refusals checked)", flush=True)
    start_time = time.monotonic()
    n = disagreements = saves = 0
    per_target = {t: {} for t in targets}
    i, end = a.start, a.start + a.count
    while i < end:
        left = None if a.time_budget is None else a.time_budget - (time.monotonic() - start_time)
        if left is not None and left <= 0:
            break
        cmd = [sys.executable, os.path.abspath(__file__), *argv, "--worker", "--start", str(i),
               "--count", str(end - i), "--max-saves", str(max(0, a.max_saves - saves))]
        if left is not None:
            cmd += ["--time-budget", str(left)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
        begun = None
        stats = None
        partial = None  # totals after the last program the worker finished
        for line in proc.stdout:
            if line.startswith("@@BEGIN "):
                begun = line.split()[1:]  # index, seed, target
            elif line.startswith("@@PROGRESS "):
                partial = json.loads(line[len("@@PROGRESS "):])
            elif line.startswith("@@STATS "):
                stats = json.loads(line[len("@@STATS "):])
            else:
                print(line, end="", flush=True)
        rc = proc.wait()
        if stats is not None:
            n += stats["n"]
            disagreements += stats["disagreements"]
            saves += stats["saves"]
            for t, d in stats["per_target"].items():
                for k, v in d.items():
                    per_target[t][k] = per_target[t].get(k, 0) + v
            break
        # the worker died: blame the program and target it had begun, and go on after it
        if begun is None:
            print(f"fuzz: the worker exited with status {rc} before running a program", flush=True)
            return 2
        idx, seed, target = int(begun[0]), begun[1], " ".join(begun[2:])
        n += (partial["n"] if partial else 0) + 1
        disagreements += 1 + (partial["disagreements"] if partial else 0)
        if partial:
            saves += partial["saves"]
            for t, d in partial["per_target"].items():
                for k, v in d.items():
                    per_target[t][k] = per_target[t].get(k, 0) + v
        if target in per_target:
            per_target[target]["disagree"] = per_target[target].get("disagree", 0) + 1
        print(f"fuzz: DISAGREE seed={seed} target={target} process-crash: the process died "
              f"(status {rc}{', signal ' + str(-rc) if rc < 0 else ''}) while building or running it; "
              f"replay: python tools/fuzz.py --seed {a.seed} --start {idx} --count 1 --targets "
              f"'{target}' --no-save", flush=True)
        i = idx + 1
    elapsed = time.monotonic() - start_time
    for t in targets:
        stats_text = ", ".join(f"{k} {v}" for k, v in sorted(per_target[t].items()))
        print(f"fuzz: {t}: {stats_text or 'nothing run'}")
    first = a.seed * SEED_STRIDE + a.start
    print(f"fuzz: {elapsed:.1f} s, generator seeds {first}..{first + max(n - 1, 0)}")
    print(f"fuzz: {n} programs x {len(running)} targets, {disagreements} disagreements")
    return 1 if disagreements else 0


def worker(a) -> int:
    if a.bounds_check and "bounds_check" not in inspect.signature(pk.build).parameters:
        print("fuzz: --bounds-check ignored: this pk.build has no bounds_check parameter")
        a.bounds_check = False
    targets = [t for spec in a.targets.split(",") if spec.strip() for t in target_strings(spec)]
    start = time.monotonic()
    n = disagreements = saves = 0
    per_target = {t: {} for t in targets}

    def stats_line():
        print("@@STATS " + json.dumps({"n": n, "disagreements": disagreements, "saves": saves,
                                       "per_target": per_target}), flush=True)

    for i in range(a.start, a.start + a.count):
        if a.time_budget is not None and time.monotonic() - start > a.time_budget:
            break
        seed = a.seed * SEED_STRIDE + i
        print(f"@@BEGIN {i} {seed} oracle", flush=True)
        prog = kernelgen.generate(seed, avoid=frozenset(x for x in a.avoid.split(",") if x))
        args = prog.make_args()
        case = fuzzcase.Case(prog.name, prog.source, prog.grid, prog.block, args, prog.features)
        n += 1
        try:
            oracle = case.oracle()
        except Exception as e:  # noqa: BLE001 - a program the tools cannot judge is a bug in them
            disagreements += 1
            print(f"fuzz: DISAGREE seed={seed} oracle/frontend refused a generated program: "
                  f"{type(e).__name__}: {str(e)[:600]}", flush=True)
            continue
        for t in targets:
            print(f"@@BEGIN {i} {seed} {t}", flush=True)
            out = fuzzcase.check_target(case, oracle, t, bounds_check=a.bounds_check)
            per_target[t][out.status] = per_target[t].get(out.status, 0) + 1
            if a.verbose:
                print(f"fuzz: seed={seed} {t}: {out.status} {out.detail[:200]}", flush=True)
            if not out.bad:
                continue
            disagreements += 1
            print(f"fuzz: DISAGREE seed={seed} target={t} {out.kind}: {out.detail[:800]}", flush=True)
            if a.no_save or saves >= a.max_saves:
                continue
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
            small = fuzzcase.Case(prog.name, source, prog.grid, prog.block, args, prog.features)
            try:
                small_oracle = small.oracle()
                small_out = fuzzcase.check_target(small, small_oracle, t, bounds_check=a.bounds_check)
            except Exception:  # noqa: BLE001
                small, small_oracle, small_out, source = case, oracle, out, prog.source
            if not small_out.bad:
                small, small_oracle, small_out, source = case, oracle, out, prog.source
            path = save_case(a.save_dir, prog, source, small_out, small_oracle, [t], args)
            saves += 1
            print(f"fuzz: saved {os.path.relpath(path, os.getcwd())} ({len(source.splitlines())} lines)",
                  flush=True)
        print(f"@@PROGRESS {json.dumps({'n': n, 'disagreements': disagreements, 'saves': saves, 'per_target': per_target})}",
              flush=True)
    stats_line()
    return 0


def _still_fails(source, prog, args, target, kind, bounds_check) -> bool:
    case = fuzzcase.Case(prog.name, source, prog.grid, prog.block, args, prog.features)
    try:
        oracle = case.oracle()
        out = fuzzcase.check_target(case, oracle, target, bounds_check=bounds_check)
    except Exception:  # noqa: BLE001 - a variant that breaks the tools is not the failure being kept
        return False
    return out.bad and out.kind == kind


if __name__ == "__main__":
    sys.exit(main())
