"""GPU check of the wide access, dynamic shared memory and autotuning on CUDA (and NVPTX).

    python tools/gpu/wide_probe.py [--arch sm_90]

Prints one line per check and exits 1 if any fails:
1. wide access: the PTX of ``pk.vload``/``pk.vstore`` (CUDA C and NVPTX) has ``ld.global.v4`` /
   ``st.global.v4``; results against NumPy with NumPy arrays and with device arrays; a misaligned view
   is refused; the time of the vector kernel and of the same kernel with scalar accesses (64M f32).
2. dynamic shared memory above 48 KiB: ``shared_size`` of 200 KiB runs (polykern opts in with
   cuFuncSetAttribute) and gives NumPy's result; over the device's opt-in limit is a LaunchError.
3. autotune on CUDA: a fresh cache is written, a second TunedKernel reuses it without measuring, and
   the device description in the record names the GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time

import numpy as np

import polykern as pk
from polykern import Buffer, f32, i32

FAILED = []


def check(name: str, ok: bool, detail: str = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        FAILED.append(name)


@pk.kernel
def scale4(n4: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    k = pk.global_id(0)
    if k < n4:
        x0, x1, x2, x3 = pk.vload(x, k, 4)
        pk.vstore(y, k, (a * x0 + 1.0, a * x1 + 1.0, a * x2 + 1.0, a * x3 + 1.0))


@pk.kernel
def scale1(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + 1.0


@pk.kernel
def rev_tile(n: i32, per: i32, x: Buffer[f32], y: Buffer[f32]):
    tile = pk.shared_dynamic(f32)
    l = pk.local_id(0)
    b = pk.local_size(0)
    base = pk.group_id(0) * b * per
    for j in range(per):
        tile[l * per + j] = x[base + l * per + j]
    pk.barrier()
    t = b * per
    for j in range(per):
        y[base + l * per + j] = tile[t - 1 - (l * per + j)]


def _time(fn, reps=20) -> float:
    from polykern_cuda import synchronize

    fn()
    synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    synchronize()
    return (time.perf_counter() - t0) / reps


def wide(arch: str) -> None:
    from polykern_cuda.runtime import to_device, empty

    for target in (f"cuda -arch={arch}", f"nvptx -arch={arch}"):
        mod = pk.build([scale4, scale1], [target])
        ptx = mod.on("cuda").inspect_source("ptx")
        check(f"{target}: PTX ld.global.v4", bool(re.search(r"ld\.global(\.nc)?\.v4\.(f32|b32)", ptx)))
        check(f"{target}: PTX st.global.v4", bool(re.search(r"st\.global\.v4\.(f32|b32)", ptx)))
        n = 1 << 26
        x = np.random.default_rng(0).random(n, dtype=np.float32)
        y = np.zeros(n, np.float32)
        mod["scale4"](n // 4, np.float32(2.0), x, y, grid=n // 4 // 256, block=256)
        check(f"{target}: numpy result", np.array_equal(y, np.float32(2.0) * x + np.float32(1.0)))
        dx, dy = to_device(x), empty(n, np.float32)
        mod["scale4"](n // 4, np.float32(2.0), dx, dy, grid=n // 4 // 256, block=256)
        check(f"{target}: device array result", np.array_equal(dy.numpy(), np.float32(2.0) * x + np.float32(1.0)))
        try:
            mod["scale4"](4, np.float32(1.0), x[1:17], y[:16], grid=1, block=4)
            check(f"{target}: misaligned view refused", False)
        except pk.errors.LaunchError as e:
            check(f"{target}: misaligned view refused", "not aligned to 16 bytes" in str(e))
        t4 = _time(lambda: mod["scale4"](n // 4, np.float32(2.0), dx, dy, grid=n // 4 // 256, block=256))
        t1 = _time(lambda: mod["scale1"](n, np.float32(2.0), dx, dy, grid=n // 256, block=256))
        gbs = 2 * 4 * n / 1e9
        check(f"{target}: timing", True, f"vload4 {t4 * 1e3:.3f} ms ({gbs / t4:.0f} GB/s), scalar "
                                          f"{t1 * 1e3:.3f} ms ({gbs / t1:.0f} GB/s)")


def dynamic_shared(arch: str) -> None:
    mod = pk.build([rev_tile], [f"cuda -arch={arch}"])
    k = mod["rev_tile"]
    block, per = 256, 200           # 51200 f32 = 200 KiB of dynamic shared memory per block
    tile = block * per
    groups = 8
    x = np.arange(groups * tile, dtype=np.float32)
    y = np.zeros_like(x)
    k(groups * tile, per, x, y, grid=groups, block=block, shared_size=tile)
    check("dynamic shared 200 KiB: result", np.array_equal(y, x.reshape(groups, tile)[:, ::-1].reshape(-1)))
    small = np.zeros(256, np.float32)
    k(256, 1, np.arange(256, dtype=np.float32), small, grid=1, block=256, shared_size=256)
    check("dynamic shared 1 KiB after 200 KiB: result", np.array_equal(small, np.arange(256)[::-1]))
    try:
        k(256, 1, x, y, grid=1, block=256, shared_size=1 << 20)
        check("dynamic shared 4 MiB refused", False)
    except pk.errors.LaunchError as e:
        check("dynamic shared 4 MiB refused", "the device's limit" in str(e), str(e))
    for target in (f"nvptx -arch={arch}",):
        k2 = pk.build([rev_tile], [target])["rev_tile"]
        y2 = np.zeros_like(x)
        k2(groups * tile, per, x, y2, grid=groups, block=block, shared_size=tile)
        check(f"{target}: dynamic shared 200 KiB", np.array_equal(y2, y))


def autotune(arch: str) -> None:
    from polykern_cuda.runtime import to_device

    with tempfile.TemporaryDirectory() as d:
        os.environ["POLYKERN_CACHE_DIR"] = d
        tuned = pk.autotune(configs=[{"block": b} for b in (64, 128, 256, 512, 1024)], key=["n"])(scale1)
        n = 1 << 24
        x = to_device(np.random.default_rng(1).random(n, dtype=np.float32))
        y = to_device(np.zeros(n, np.float32))
        k = tuned.build(targets=[f"cuda -arch={arch}"])
        grid = lambda cfg: ((n + cfg["block"] - 1) // cfg["block"],)  # noqa: E731
        k(n, np.float32(2.0), x, y, grid=grid)
        check("autotune: result", np.array_equal(y.numpy(), np.float32(2.0) * x.numpy() + np.float32(1.0)))
        files = os.listdir(os.path.join(d, "autotune"))
        check("autotune: cache written", len(files) == 1, str(files))
        rec = json.load(open(os.path.join(d, "autotune", files[0])))
        check("autotune: device recorded", bool(rec["identity"]["device"]), str(rec["identity"]["device"]))
        print("     medians (s):", rec["median_seconds"], "choice", rec["config"])
        fresh = tuned.build(targets=[f"cuda -arch={arch}"])
        fresh._time = lambda *a: (_ for _ in ()).throw(AssertionError("measured again"))
        fresh(n, np.float32(2.0), x, y, grid=grid)
        check("autotune: cache reused", len(os.listdir(os.path.join(d, "autotune"))) == 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    for part in (wide, dynamic_shared, autotune):
        try:
            part(args.arch)
        except Exception as e:  # noqa: BLE001 - report and go on with the other parts
            check(f"{part.__name__}", False, f"{type(e).__name__}: {e}")
    print("FAILED: " + ", ".join(FAILED) if FAILED else "all checks passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
