"""benchmarks/gpu_peers.py (the peers benchmark) without a GPU: the dry run builds every polykern
kernel of benchmarks/tuned_kernels.py for the GPU targets (full-size specializations, what the GPU
run builds), runs the tiny problems on the runtimes here (llvm; Vulkan on lavapipe) against NumPy
and goes through the whole report; and a wrong contender is reported, never timed."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from runtimes import runnable_targets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCH)

import gpu_peers  # noqa: E402
import tuned_problems as tp  # noqa: E402

KINDS = {kind for _, kind, _ in runnable_targets()}


def _cuda_compiler() -> bool:
    from polykern_cuda import toolchain

    try:
        toolchain.nvrtc_version()
        return True
    except Exception:  # noqa: BLE001 - no NVRTC: nvcc?
        return shutil.which("nvcc") is not None


def test_help_works():
    r = subprocess.run([sys.executable, os.path.join(BENCH, "gpu_peers.py"), "--help"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--dry-run" in r.stdout and "--rounds" in r.stdout


def test_dry_run_builds_and_checks_every_kernel(tmp_path):
    dry = ["nvptx", "vulkan"] + (["cuda"] if _cuda_compiler() else [])
    argv = ["--dry-run", "--out", str(tmp_path), "--rounds", "2", "--batch-s", "0.002", "--no-triton",
            "--dry-targets", ",".join(dry)]
    if "vulkan" not in KINDS:
        argv.append("--no-vulkan")
    gpu_peers.RESULTS.update(problems={}, errors={}, skipped=[])
    rc = gpu_peers.main(argv)
    res = json.loads((tmp_path / "gpu_peers.json").read_text())
    assert rc == 0, res["errors"]
    assert not [k for k in res["errors"] if k.startswith("build")], res["errors"]
    for t in dry:  # built, and assembled by ptxas / validated by spirv-val where those are installed
        assert res["dry_run"][f"build full polykern-{t}"].startswith(("ok", "built")), res["dry_run"]
    ran = ["polykern-llvm"] + (["polykern-vulkan"] if "vulkan" in KINDS else [])
    for name in gpu_peers.ORDER:
        row = res["problems"][name]
        for label in ran:
            assert row["status"][label] == "ok", (name, label, row["status"])
            assert len(row["seconds"][label]["rounds"]) == 2
        assert row["best_peer"].startswith("numpy")
        assert row["ratio_vs_best_peer"]["polykern-llvm"]["median"] > 0
    assert (tmp_path / "gpu_peers.txt").read_text().startswith("| problem |")
    sum_row = res["problems"]["sum"]
    for variant in tp.SUM_VARIANTS:  # each shape of the sum's first pass checked (exactly) and timed
        if variant:
            assert sum_row["status"][f"polykern-llvm [{variant}]"] == "ok", sum_row["status"]
            assert len(sum_row["seconds"][f"polykern-llvm [{variant}]"]["rounds"]) == 2
    if "vulkan" in KINDS:  # lavapipe has timestamp queries: Vulkan timed on the device, the host time beside
        vk = res["problems"]["sum"]["vulkan"]
        assert vk["clock"] == "vk-gpu" and vk["ratio_raw"]["median"] > 0 and vk["ratio_host"]["median"] > 0
        gpu, host = res["problems"]["sum"]["seconds"]["polykern-vulkan"], vk["host_seconds"]
        assert 0 < gpu["median"] < host["median"]
        assert 0 < res["vulkan_empty_launch_gpu_s"] < res["vulkan_empty_launch_s"]


def test_wrong_result_is_reported_and_not_timed():
    name = "sum"
    host = tp.PROBLEMS[name].make(np.random.default_rng(0), 1000)
    want = tp.PROBLEMS[name].reference(host)
    place = gpu_peers.HostPlace()
    good = gpu_peers.Contender("right", lambda: [host["x"].sum(dtype=np.float64)], "wall", place, "peer")
    bad = gpu_peers.Contender("off by one", lambda: [host["x"].sum() + 1.0], "wall", place, "peer")
    for c in (good, bad):
        c.arrays = {}
    gpu_peers.RESULTS["problems"][name] = {"status": {}}
    ok = gpu_peers.check_all(name, host, want, [good, bad])
    assert [c.label for c in ok] == ["right"]
    st = gpu_peers.RESULTS["problems"][name]["status"]
    assert st["right"] == "ok" and st["off by one"].startswith("WRONG RESULT")


@pytest.mark.parametrize("name", ["max", "softmax", "matmul"])
def test_check_catches_one_wrong_value(name):
    host = tp.PROBLEMS[name].make(np.random.default_rng(1), tp.TINY[name])
    want = tp.PROBLEMS[name].reference(host)
    outs = [np.array(w, dtype=np.float32) for w in want]
    if name == "matmul":  # the full product, as a contender returns it
        outs = [(host["a"].astype(np.float64) @ host["b"]).astype(np.float32)]
    assert tp.check(name, host, outs, want) is None
    outs[0].ravel()[-1] += np.float32(0.01) * (1 + abs(outs[0].ravel()[-1]))
    assert tp.check(name, host, outs, want).startswith("WRONG RESULT")


def test_cpu_tuned_contenders_are_checked_and_timed():
    import cpu

    res = cpu.tuned(repeat=2, quick=True, with_numba=False)
    labels = set()
    for row in res["rows"]:
        assert all(v == "ok" for v in row["status"].values()), row["status"]
        assert all(len(v) == 2 for v in row["rounds"].values())
        assert row["ratios"]  # polykern / numpy per round
        labels.update(row["seconds"])
    assert {"polykern tuned", "polykern chunks", "polykern row loops", "polykern example saxpy", "numpy"} <= labels


def test_contender_failing_while_timed_is_dropped_and_others_timed():
    place = gpu_peers.HostPlace()
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] > 3:
            raise RuntimeError("device lost")
        return []

    good = gpu_peers.Contender("steady", lambda: [], "wall", place, "peer")
    bad = gpu_peers.Contender("flaky", flaky, "wall", place, "peer")
    status = {}
    times = gpu_peers.time_rounds([bad, good], 3, 0.0, status)
    assert list(times) == ["steady"] and len(times["steady"]) == 3
    assert status["flaky"].startswith("FAILED while timing: RuntimeError: device lost")


def _loops_rebinding_closed_over_names(source: str) -> list:
    """(function, name) for every ``for`` loop of a function that rebinds a name which a lambda or nested
    function of it reads from the enclosing scope: the closure then sees the loop's last value, not the
    array it was made for. (Defaults such as ``lambda blk=blk:`` are evaluated at once and do not count.)"""
    import ast

    scopes = (ast.Lambda, ast.FunctionDef)

    def own_nodes(fn):  # the nodes of fn's own scope (not inside a nested function or lambda)
        todo = list(fn.body) if isinstance(fn.body, list) else [fn.body]
        while todo:
            n = todo.pop()
            yield n
            if not isinstance(n, scopes):
                todo.extend(ast.iter_child_nodes(n))

    def free_names(inner):
        body = list(own_nodes(inner))
        local = {a.arg for a in inner.args.args + inner.args.kwonlyargs}
        local |= {n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        free = {n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - local
        for n in body:
            if isinstance(n, scopes):
                free |= free_names(n) - local
        return free

    bad = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef):
            continue
        nodes = list(own_nodes(fn))
        captured = set().union(*[free_names(n) for n in nodes if isinstance(n, scopes)])
        for loop in nodes:
            if isinstance(loop, ast.For):
                bad += [(fn.name, t.id) for t in ast.walk(loop.target) if isinstance(t, ast.Name) and t.id in captured]
    return bad


def test_no_peer_builder_rebinds_what_its_closures_use():
    """The GPU run of 22:12 UTC: ``for x in out: x.arrays = d`` after ``lambda: torch.softmax(x)`` handed a
    Contender to torch.softmax / layer_norm, and ``for c in out`` did the same to cupy.matmul's ``out=c``."""
    src = open(os.path.join(BENCH, "gpu_peers.py")).read()
    assert _loops_rebinding_closed_over_names(src) == []
    # the check itself sees the 22:12 UTC shape
    demo = "def f(out, x):\n    out.append(lambda: g(x))\n    for x in out:\n        x.arrays = 1\n"
    assert _loops_rebinding_closed_over_names(demo) == [("f", "x")]


@pytest.mark.parametrize("name", ["softmax", "layernorm"])
def test_row_kernels_issue_every_row_load_before_any_branch(name):
    """Triton's shape (one work-group of 512 per 4096-column row, 2 float4 per work-item in registers): the
    nvptx PTX loads the row with ld.global.v4, all of them before the first branch (a guarded load per
    float4 made each wait for the last: 1.74x / 1.96x Triton at 22:12 UTC), reduces with shfl.sync, and keeps
    nothing in local memory."""
    import re

    import polykern as pk

    kern = tp.PROBLEMS[name].kernels(tp.FULL[name])[0]
    assert "BLOCK_512__VPT_2" in kern.name
    ptx = pk.build([kern], targets=["nvptx -arch=sm_90"]).on("cuda").inspect_source("ptx")
    body = ptx[ptx.index(".entry " + kern.name):]
    first_branch = body.index("bra")
    loads = [m.start() for m in re.finditer(r"ld\.global(\.nc)?\.v4", body)]
    assert len([p for p in loads if p < first_branch]) == 2, body[:first_branch]
    assert "shfl.sync" in body and ".local" not in body
    assert len(re.findall(r"st\.global\.v4", body)) == 2


def test_streamed_inputs_are_vector_only_so_vulkan_declares_arrays_of_vec4():
    """A scalar access anywhere (the n % 4 tail, layer norm's shift) made Vulkan/WebGPU declare a buffer as
    scalars and split every float4 into 4 loads; the tails now read an alias (xt) or run in saxpy_tail."""
    from polykern.ir.vector import vector_buffers

    want = {"sum_pass": {"x"}, "max_pass": {"x"}, "sqdev_pass": {"x"}, "saxpy_wide": {"x", "y"},
            "jacobi_wide": {"src", "dst"},
            "softmax_rows": {"x", "out"}, "layernorm_rows": {"x", "wt", "bias", "y"}}
    for kern in tp.all_kernels(tp.FULL):
        base = kern.name.split("__")[0]
        if base in want:
            vec = vector_buffers(kern.ir)
            assert want[base] <= set(vec) and set(vec[b] for b in want[base]) == {4}, (kern.name, vec)


def test_vulkan_matmul_can_take_the_devices_fused_fma():
    """Vulkan's f32 pk.fma was only computed in f64 (3 conversions, DMUL, DADD, 1 conversion): the 22:12 H100
    run's Vulkan matmul took 42 ms, 11x CUDA, and a * b + c (FUSED=0) was the way around it. Now the shader
    also holds GLSL Fma, chosen by specialization constant 4 where the device's Fma rounds once (NVIDIA), so
    every runtime runs the fused matmul."""
    import polykern as pk

    names = {k.name for k in tp.PROBLEMS["matmul"].kernels(tp.FULL["matmul"])}
    fused = tp._mm_kernel(tp.FULL["matmul"])
    assert names == {fused.name} and "FUSED_1" in fused.name
    asm = pk.build([fused], targets=["vulkan"]).inspect_source("spirv-asm")
    assert "OpDecorate %fma_fused SpecId 4" in asm and " Fma " in asm
