"""Hopper GEMM (examples/gemm_hopper.py, cuda -arch=sm_90a) against cuBLAS (torch.mm) and Triton's tutorial
matmul, on the GPU machine: every result checked against float64 first, then interleaved timing rounds
(CUDA events), the median ratio with its spread, and the cold compile time of the kernel (a fresh process,
import included).

    python benchmarks/gpu_hopper.py --out DIR [--sizes 4096,4096,4096 8192,8192,8192] [--dtypes f16 bf16]
    python benchmarks/gpu_hopper.py --dry-run      # no GPU: build the kernels and print their CUDA C size
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

import common  # noqa: E402
import gemm_hopper as G  # noqa: E402

import polykern as pk  # noqa: E402

TARGET = "cuda -arch=sm_90a"


INFLIGHT = 1


KERNELS = {"tiles": (G.make_gemm, "gemm_hopper"), "persistent": (G.make_gemm_persistent, "gemm_hopper_persistent")}


def build(dtype: str, bn: int, stages: int, fmt: str = "ptx", kernel: str = "tiles"):
    t = {"f16": pk.f16, "bf16": pk.bf16}[dtype]
    make, _ = KERNELS[kernel]
    return pk.build(make(BN=bn, STAGES=stages, dtype=t, INFLIGHT=INFLIGHT), f"{TARGET} -fmt={fmt}")


def cold_compile_seconds(dtype: str, bn: int, stages: int) -> float:
    """Seconds for a fresh Python process to import polykern and build the kernel (median of 3)."""
    code = ("import sys, time; t = time.perf_counter(); sys.path[:0] = [%r, %r]; import gpu_hopper as b; "
            "b.build(%r, %d, %d); print(time.perf_counter() - t)" % (HERE, os.path.join(HERE, "..", "examples"),
                                                                    dtype, bn, stages))
    out = []
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        if r.returncode:
            raise RuntimeError(r.stderr[-2000:])
        out.append(float(r.stdout.strip().splitlines()[-1]))
    return statistics.median(out)


def rounds_timing(fns: dict, rounds: int, target_s: float = 0.25) -> dict:
    """label -> [seconds per call per round]: round-robin, a batch of back-to-back calls each."""
    import torch

    batch = {}
    for k, f in fns.items():
        f()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        batch[k] = max(2, min(400, int(target_s / max(time.perf_counter() - t0, 1e-6))))
    out = {k: [] for k in fns}
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(rounds):
        for k, f in fns.items():
            torch.cuda.synchronize()
            s.record()
            for _ in range(batch[k]):
                f()
            e.record()
            e.synchronize()
            out[k].append(s.elapsed_time(e) / 1e3 / batch[k])
    return out


def run_size(M, N, K, dtype, bn, stages, rounds, triton_mm, log, kernels=("tiles",)):
    import torch

    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    A = (torch.randint(-8, 9, (M, K), device="cuda", generator=g).to(tdt) / 8)
    B = (torch.randint(-8, 9, (N, K), device="cuda", generator=g).to(tdt) / 8)
    A += torch.randn(M, K, device="cuda", generator=g).to(tdt) * 0.01
    B += torch.randn(N, K, device="cuda", generator=g).to(tdt) * 0.01
    outs, fns = {}, {}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shared = G.shared_elems(bn, stages)
    for kernel in kernels:
        C = outs[f"polykern-{kernel}"] = torch.empty(M, N, device="cuda", dtype=torch.float16)
        k = build(dtype, bn, stages, kernel=kernel)[KERNELS[kernel][1]]
        tiles = (M // G.BM) * (N // bn)
        grid = (M // G.BM, N // bn, 1) if kernel == "tiles" else (min(sms, tiles), 1, 1)

        def ours(k=k, C=C, grid=grid):
            k(M, N, K, A, B, C, grid=grid, block=(384, 1, 1), shared_size=shared)
        fns[f"polykern-{kernel}"] = ours

    def cublas():
        return torch.mm(A, B.t())

    fns["cublas"] = cublas
    if triton_mm is not None:
        Ct = torch.empty(M, N, device="cuda", dtype=torch.float16)

        def triton():
            grid_t = lambda meta: (((M + meta["BLOCK_SIZE_M"] - 1) // meta["BLOCK_SIZE_M"])  # noqa: E731
                                   * ((N + meta["BLOCK_SIZE_N"] - 1) // meta["BLOCK_SIZE_N"]),)
            triton_mm[grid_t](A, B, Ct, M, N, K, A.stride(0), A.stride(1), B.stride(1), B.stride(0), Ct.stride(0),
                              Ct.stride(1))
        fns["triton"] = triton
    # check first: every contender against float64
    ref = (A.double() @ B.double().t())
    errs = {}
    for name, f in fns.items():
        out = f()
        torch.cuda.synchronize()
        got = outs[name] if name in outs else (out if name == "cublas" else Ct)
        errs[name] = float((got.double() - ref).abs().max())
    scale = float(ref.abs().max())
    ok = all(errs[n] <= max(2 * errs["cublas"], 1e-3 * scale) for n in outs)
    log(f"check {dtype} {M}x{N}x{K}: max |err| vs float64: " + ", ".join(f"{k} {v:.4g}" for k, v in errs.items())
        + f" (|ref| max {scale:.4g}) -> {'OK' if ok else 'WRONG'}")
    if not ok:
        return {"size": [M, N, K], "dtype": dtype, "error": errs, "ok": False}
    times = rounds_timing(fns, rounds)
    flop = 2.0 * M * N * K
    res = {"size": [M, N, K], "dtype": dtype, "bn": bn, "stages": stages, "ok": True, "errors": errs,
           "tflops": {k: flop / statistics.median(v) / 1e12 for k, v in times.items()}, "ratios": {}}
    for mine in outs:
        for ref_name in ("cublas", "triton"):
            if ref_name in times:
                r = sorted(times[ref_name][i] / times[mine][i] for i in range(rounds))
                res["ratios"][f"{mine}/{ref_name}"] = {"median": statistics.median(r), "min": r[0], "max": r[-1]}
    log(f"{dtype} {M}x{N}x{K} BN={bn} STAGES={stages}: " + ", ".join(f"{k} {v:.0f}" for k, v in res["tflops"].items())
        + " TFLOP/s; " + ", ".join(f"{k} {v['median']:.3f} ({v['min']:.3f}-{v['max']:.3f})"
                                  for k, v in res["ratios"].items()))
    return res


def device_log():
    """(log, lines): ``log(m)`` prints ``m`` and keeps it in ``lines``; the first line names the device, its
    driver, torch and the date (what every GPU figure is recorded with)."""
    import torch

    lines = []

    def log(m):
        print(m, flush=True)
        lines.append(m)
    props = torch.cuda.get_device_properties(0)
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip()
    log(f"device {props.name} (sm_{props.major}{props.minor}), driver {drv}, torch {torch.__version__}, "
        f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    return log, lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--sizes", nargs="*", default=["4096,4096,4096", "8192,8192,8192", "8192,8192,512",
                                                    "8192,8192,16384"])
    ap.add_argument("--dtypes", nargs="*", default=["f16", "bf16"])
    ap.add_argument("--bn", type=int, default=256)
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--inflight", type=int, default=1, choices=(0, 1), help="wgmma groups left running (example)")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--kernels", nargs="*", default=["tiles", "persistent"], choices=sorted(KERNELS))
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args(argv)
    global INFLIGHT
    INFLIGHT = a.inflight
    if a.dry_run:
        for dt in a.dtypes:
            src = build(dt, a.bn, a.stages, fmt="cuda").imports[0].inspect_source("cuda")
            print(f"{dt}: {len(src)} bytes of CUDA C, wgmma: {'wgmma.mma_async' in src}")
        return 0
    log, lines = device_log()
    triton_mm = None
    if not a.no_triton:
        try:
            import peers_triton

            triton_mm = peers_triton.tutorial_defs()["matmul"]
        except Exception as e:  # noqa: BLE001
            log(f"triton unavailable: {type(e).__name__}: {e}")
    results = []
    for dt in a.dtypes:
        for s in a.sizes:
            M, N, K = map(int, s.split(","))
            try:
                results.append(run_size(M, N, K, dt, a.bn, a.stages, a.rounds, triton_mm, log, a.kernels))
            except Exception as e:  # noqa: BLE001
                log(f"{dt} {s}: FAILED {type(e).__name__}: {str(e)[:800]}")
                results.append({"size": [M, N, K], "dtype": dt, "failed": f"{type(e).__name__}: {e}"})
    try:
        cold = cold_compile_seconds(a.dtypes[0], a.bn, a.stages)
        log(f"cold compile (fresh process, import included, NVRTC/nvcc to PTX): {cold:.2f} s")
    except Exception as e:  # noqa: BLE001
        cold = None
        log(f"cold compile failed: {type(e).__name__}: {str(e)[:400]}")
    if a.out:
        common.write_output(os.path.join(common.output_folder(a.out), "gpu_hopper.json"),
                            json.dumps({"results": results, "cold_compile_s": cold, "log": lines}, indent=1))
    return 0 if all(r.get("ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
