"""benchmarks/gpu_attention.py (the matrix-engine attention benchmark) without a GPU: the dry run builds the
GPU kernels for cuda, nvptx and vulkan (ptxas, spirv-val where present), compiles the Triton peer
where Triton is importable, runs the kernel on llvm against the float64 reference and writes the
report; a polykern kernel that fails is the exit status."""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_dry_run_builds_checks_and_reports(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu_attention.py"), "--dry-run", "--out",
                        str(tmp_path), "--rounds", "2", "--target-s", "0.01"], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = json.loads((tmp_path / "gpu_attention.json").read_text())
    for key in ("d64", "d128"):
        mine = res["contenders"][key]["polykern-llvm"]
        assert mine["check"] == "ok" and mine["error_of_bound"] <= 1.0 and mine["median_s"] > 0, mine
        peer = [v for k, v in res["contenders"][key].items() if k.startswith("numpy")]
        assert peer and peer[0]["check"] == "ok"
    assert set(res["dry_run"]["build_s"]) >= {"polykern-cuda", "polykern-nvptx", "polykern-vulkan", "polykern-llvm"}
    assert not str(res["dry_run"].get("triton", "")).startswith("FAILED"), res["dry_run"]["triton"]
    if shutil.which("ptxas"):
        for label in ("polykern-cuda", "polykern-nvptx"):
            assert res["dry_run"][label]["ptxas"] == "ok", res["dry_run"][label]
            kernels = res["dry_run"][label]["kernels"]
            # d = 64 and 128; cuda also the sync-staging variant
            want = 4 if label == "polykern-cuda" else 2
            assert sum("attention_f16" in k and "smem" in v for k, v in kernels.items()) == want, kernels


def test_tiles_option_is_checked(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu_attention.py"), "--dry-run", "--out",
                        str(tmp_path), "--tiles", "64=32"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--tiles takes d=BMxBN" in r.stderr, r.stderr
