"""benchmarks/gpu_matrix.py (the matrix-engine GEMM benchmark) without a GPU: the dry run builds the full-size
GEMM for cuda, nvptx and vulkan (ptxas, spirv-val where present), runs it on llvm against NumPy and
writes the report; a polykern kernel that fails is the exit status."""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_dry_run_builds_checks_and_reports(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu_matrix.py"), "--dry-run", "--out",
                        str(tmp_path), "--rounds", "2", "--target-s", "0.01"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = json.loads((tmp_path / "gpu_matrix.json").read_text())
    assert res["contenders"]["polykern-llvm"]["check"] == "ok"
    assert res["contenders"]["polykern-llvm"]["error_of_bound"] <= 1.0
    assert res["contenders"]["polykern-llvm"]["median_s"] > 0
    # the pipelined variant (gemm_f16 with STAGES=2: a pk.copy_async ring) is checked and timed beside it
    assert res["contenders"]["polykern-llvm-async"]["check"] == "ok"
    assert res["contenders"]["polykern-llvm-async"]["error_of_bound"] <= 1.0
    assert res["contenders"]["polykern-llvm-async"]["median_s"] > 0
    assert res["contenders"]["polykern-llvm-async4"]["check"] == "ok"
    assert "polykern-llvm-async4 / polykern-llvm" in res["ratios"]
    assert res["contenders"]["polykern-llvm-async64"]["check"] == "ok"
    # the rings in dynamic shared memory (gemm_f16_dyn): checked, timed, compared with the baseline
    for v in ("dyn3", "dyn4", "dyn3bk64", "dyn4wide"):
        assert res["contenders"][f"polykern-llvm-{v}"]["check"] == "ok"
        assert res["contenders"][f"polykern-llvm-{v}"]["median_s"] > 0
        assert f"polykern-llvm-{v} / polykern-llvm" in res["ratios"]
        assert res["config"]["variants"][v][1] == int(v[3])  # STAGES
    assert not any(k.startswith("gemm_f16_dyn") for k in res["dry_run"]["polykern-vulkan"].get("spirv-val", {}))
    assert set(res["dry_run"]["build_s"]) >= {"polykern-cuda", "polykern-nvptx", "polykern-vulkan", "polykern-llvm"}
    if shutil.which("ptxas"):
        for label in ("polykern-cuda", "polykern-nvptx"):
            assert res["dry_run"][label]["ptxas"] == "ok", res["dry_run"][label]
            assert any("smem" in v for v in res["dry_run"][label]["kernels"].values())
            assert any(k.endswith("BK_32__STAGES_2__WM_32") for k in res["dry_run"][label]["kernels"])
            assert any("BK_16__STAGES_4" in k for k in res["dry_run"][label]["kernels"])
            assert any(k.endswith("STAGES_2__WM_64") for k in res["dry_run"][label]["kernels"])
            kernels = res["dry_run"][label]["kernels"]
            for name in ("gemm_f16_dyn__BM_128__BN_128__BK_32__STAGES_3__WM_32",
                         "gemm_f16_dyn__BM_128__BN_128__BK_32__STAGES_4__WM_32",
                         "gemm_f16_dyn__BM_128__BN_128__BK_64__STAGES_3__WM_32",
                         "gemm_f16_dyn__BM_128__BN_256__BK_32__STAGES_4__WM_32"):
                assert "0 bytes spill stores" in kernels[name], (name, kernels[name])
