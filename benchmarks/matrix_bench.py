"""What the matrix-engine benchmarks share (gpu_matrix.py: the f16 GEMM, gpu_attention.py: the
attention forward): building the polykern contenders, the dry run's validation of what a driver would
be given, the subgroup-size query, checking contenders before timing, time ratios and the report's
closing lines. ``results`` is the calling benchmark's RESULTS dict (keys contenders, errors, ratios,
targets, dry_run)."""
import os
import subprocess
import time
import traceback

from gpu_timing import log, med, ptxas_info, short


def build(targets: dict, kernels_for, results: dict) -> dict:
    """label -> the module of ``kernels_for(label)`` built for ``targets[label]``; a failure is
    recorded in results["errors"] (that label is left out), the build time in results["dry_run"]."""
    import polykern as pk

    mods = {}
    for label, target in targets.items():
        t0 = time.perf_counter()
        try:
            mods[label] = pk.build(kernels_for(label), targets=[target])
            results["dry_run"].setdefault("build_s", {})[label] = round(time.perf_counter() - t0, 2)
        except Exception as e:  # noqa: BLE001
            results["errors"][label] = f"build: {short(e)}"
            log(f"{label}: build failed: {short(e)}")
    return mods


def validate(label, mod, arch):
    """What a driver would be given: PTX through ptxas -v, SPIR-V through spirv-val."""
    if label != "polykern-vulkan":
        ok, info = ptxas_info(mod, arch)
        return {"ptxas": "ok" if ok else "FAILED", "kernels": info}
    tool = os.environ.get("POLYKERN_SPIRV_VAL") or "spirv-val"
    out = {}
    for name, spv in mod.on("vulkan").payload.items():
        try:
            r = subprocess.run([tool, "--target-env", "vulkan1.1", "-"], input=spv, capture_output=True, timeout=120)
        except FileNotFoundError:
            return {"spirv-val": "not found"}
        err = r.stderr.decode()
        out[name] = "ok" if r.returncode == 0 else (
            "spirv-val predates SPV_KHR_cooperative_matrix" if "6022" in err else f"FAILED: {err[:300]}")
    return {"spirv-val": out}


def validate_all(mods: dict, arch: int, results: dict) -> None:
    for label, mod in mods.items():
        try:
            results["dry_run"][label] = validate(label, mod, arch)
        except Exception as e:  # noqa: BLE001
            results["dry_run"][label] = f"FAILED: {short(e)}"
        log(f"{label}: {results['dry_run'][label]}")


def subgroup_sizes(mods: dict, width, results: dict) -> dict:
    """label -> ``width(mod)``, the device's subgroup size; a module that cannot launch it is removed
    from ``mods`` and its error recorded."""
    out = {}
    for label, mod in list(mods.items()):
        try:
            out[label] = width(mod)
        except Exception as e:  # noqa: BLE001
            results["errors"][label] = f"launch: {short(e)}"
            mods.pop(label)
    return out


def checked(items, row: dict, prefix: str = "") -> list:
    """The contenders that compute the right result: ``items`` are (Contender, error() -> its worst
    error in units of the bound after one call, the error allowed); ``row[label]`` gets the verdict."""
    good = []
    for c, error, allowed in items:
        try:
            c.fn()
            c.place.sync()
            err = error()
            ok = err <= allowed
            row[c.label] = {"check": "ok" if ok else "WRONG", "error_of_bound": round(err, 4)}
            if allowed != 1.0:
                row[c.label]["allowed"] = allowed
            log(f"{prefix}{c.label}: check {'ok' if ok else 'WRONG'} (error {err:.3g} of the bound"
                f"{f', allowed {allowed}' if allowed != 1.0 else ''})")
            if ok:
                good.append(c)
        except Exception as e:  # noqa: BLE001
            row[c.label] = {"check": f"FAILED: {short(e)}"}
            log(f"{prefix}{c.label}: FAILED {short(e)}\n{traceback.format_exc(limit=3)}")
    return good


def ratio(xs, ys) -> dict:
    """Per-round ratios x / y: median and spread."""
    r = [x / y for x, y in zip(xs, ys)]
    return {"median": med(r), "min": min(r), "max": max(r)} if r else {}


def time_cells(r: dict) -> str:
    """A contender's median milliseconds and TFLOP/s as two table cells ("-" where not timed)."""
    ms = f"{r['median_s'] * 1e3:10.3f}" if "median_s" in r else f"{'-':>10s}"
    tf = f"{r['tflops']:9.1f}" if "tflops" in r else f"{'-':>9s}"
    return f"{ms} {tf}"


def closing_lines(results: dict) -> list:
    """The report's last lines: each target, met or missed, and each error."""
    lines = []
    for t in results["targets"]:
        v = t["value"]
        lines.append(f"target {t['what']}: {v.get('median', float('nan')):.3f} (spread {v.get('min', 0):.3f}-"
                     f"{v.get('max', 0):.3f}), want {t['target']}: {'met' if t['met'] else 'MISSED'}")
    for k, v in results["errors"].items():
        lines.append(f"error {k}: {v}")
    return lines
