"""What the GPU benchmarks share (gpu_peers.py, gpu_matrix.py, gpu_attention.py, matrix_bench.py): where
arrays live (CuPy, Vulkan DeviceArrays, the host), the ``Contender`` record, interleaved timing rounds
(CUDA events, Vulkan timestamp queries, the host clock), the machine description and ``ptxas -v``.
"""
import os
import platform
import sys
import time

import numpy as np

import common
import tuned_problems as tp


def log(msg: str) -> None:
    print(msg, flush=True)


def short(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:400] if lines else ''}"


# ------------------------------------------------------------------ where arrays live

class CupyPlace(tp.Place):
    name = "cuda"

    def __init__(self):
        import cupy

        self.cp = cupy

    def put(self, host):
        return self.cp.asarray(np.ascontiguousarray(host).ravel())

    def empty(self, n):
        return self.cp.zeros(n, self.cp.float32)

    def sync(self):
        self.cp.cuda.runtime.deviceSynchronize()


class VulkanPlace(tp.Place):
    """Vulkan DeviceArrays; launches timed on the device with timestamp queries where the queue has
    them (``clock`` "vk-gpu": the counterpart of CUDA events; the host time is kept beside it).
    ``clock_note`` says which clock, ``timestamp_error`` why not the GPU's (for the report)."""
    name = "vulkan"

    def __init__(self):
        from polykern.errors import DeviceError
        from polykern_vulkan.runtime import device, device_array

        self.da = device_array
        self.dev, self.clock, self.timestamp_error = None, "wall", None
        try:
            self.dev = device.get()
            self.dev.set_timestamps(True)
            self.clock = "vk-gpu"
        except DeviceError as e:  # no device (the launches will say so) or no timestamps on its queue
            self.timestamp_error = short(e)
        self.clock_note = ("GPU timestamps (vkCmdWriteTimestamp, timestampPeriod "
                           f"{self.dev.timestamp_period_ns} ns); host clock beside" if self.clock == "vk-gpu"
                           else "host clock (submit + fence wait per launch)")

    def gpu_seconds(self) -> float:
        return self.dev.gpu_seconds

    def put(self, host):
        return self.da.to_device(np.ascontiguousarray(host).ravel())

    def empty(self, n):
        return self.da.zeros(n, np.float32)

    def sync(self):
        pass  # launches are synchronous


class HostPlace(tp.Place):
    name = "host"

    def sync(self):
        pass


def to_host(v) -> np.ndarray:
    """A contender's output on the host, whatever it is (CuPy, torch, DeviceArray, NumPy, scalar)."""
    if hasattr(v, "detach"):
        return v.detach().float().cpu().numpy()
    if hasattr(v, "get") and hasattr(v, "__cuda_array_interface__"):
        return v.get()
    if hasattr(v, "numpy") and not isinstance(v, np.ndarray):
        return v.numpy()
    return np.asarray(v)


# ------------------------------------------------------------------ contenders and timing

class Contender:
    """A callable returning its outputs; ``clock`` says how it is timed; ``place`` syncs its device;
    ``outputs``: how many of the problem's outputs it computes (None: all; torch's layer_norm gives
    y without the row statistics)."""

    def __init__(self, label, fn, clock, place, kind, launches=1, outputs=None):
        self.label, self.fn, self.clock, self.place, self.kind, self.launches = label, fn, clock, place, kind, launches
        self.outputs = outputs
        self.host_rounds: list = []  # clock "vk-gpu": the host's seconds per call, one per round


def _events():
    import cupy as cp

    return cp.cuda.Event(), cp.cuda.Event(), cp.cuda.Stream.null


def time_rounds(contenders, rounds: int, target_s: float, status=None) -> dict:
    """label -> [seconds per call, one per round]: round-robin over the contenders, a batch of
    back-to-back calls each (sized to ``target_s`` from a first timed call). A contender that raises is
    dropped, its error put in ``status`` (when given), and the others go on."""
    ev = _events() if any(c.clock == "events" for c in contenders) else None
    batch = {}
    for c in contenders:
        try:
            c.fn()
            c.place.sync()
            t0 = time.perf_counter()
            c.fn()
            c.place.sync()
        except Exception as e:  # noqa: BLE001
            if status is None:
                raise
            status[c.label] = f"FAILED while timing: {short(e)}"
            continue
        batch[c.label] = max(1, min(500, int(target_s / max(time.perf_counter() - t0, 1e-6))))
    contenders = [c for c in contenders if c.label in batch]
    out = {c.label: [] for c in contenders}
    for _ in range(rounds):
        for c in list(contenders):
            n = batch[c.label]
            try:
                _timed_batch(c, n, ev, out)
            except Exception as e:  # noqa: BLE001
                if status is None:
                    raise
                status[c.label] = f"FAILED while timing: {short(e)}"
                contenders.remove(c)
                del out[c.label]
    return out


def _timed_batch(c, n: int, ev, out: dict) -> None:
    """One round of ``c``: ``n`` back-to-back calls, seconds per call appended to ``out[c.label]``."""
    c.place.sync()
    if c.clock == "events":
        import cupy as cp

        start, end, null = ev
        start.record(null)
        for _ in range(n):
            c.fn()
        end.record(null)
        end.synchronize()
        out[c.label].append(cp.cuda.get_elapsed_time(start, end) / 1e3 / n)
    elif c.clock == "vk-gpu":  # device time from timestamp queries; the host's time kept beside it
        g0, t0 = c.place.gpu_seconds(), time.perf_counter()
        for _ in range(n):
            c.fn()
        host = time.perf_counter() - t0
        out[c.label].append((c.place.gpu_seconds() - g0) / n)
        c.host_rounds.append(host / n)
    else:
        t0 = time.perf_counter()
        for _ in range(n):
            c.fn()
        c.place.sync()
        out[c.label].append((time.perf_counter() - t0) / n)


def med(xs):
    return float(np.median(xs)) if len(xs) else float("nan")


def device_info(dry: bool) -> dict:
    info = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "host": platform.node(),
            "python": sys.version.split()[0], "polykern_git": common.machine().get("git")}
    for mod in ("polykern", "cupy", "triton", "torch", "pycuda", "vulkan", "numpy"):
        try:
            m = __import__(mod)
            info[mod] = getattr(m, "__version__", None) or getattr(m, "VERSION_TEXT", "?")
        except Exception as e:  # noqa: BLE001
            info[mod] = f"missing ({type(e).__name__})"
    if not dry:
        import cupy as cp

        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        info.update(device=name, cc=f"{props['major']}{props['minor']}", sms=props["multiProcessorCount"],
                    cuda_runtime=cp.cuda.runtime.runtimeGetVersion(), cuda_driver=cp.cuda.runtime.driverGetVersion(),
                    cupy_accelerators=os.environ.get("CUPY_ACCELERATORS"))
        try:
            from cupy._core import _accelerator

            info["cupy_reduction_accelerators"] = list(_accelerator.get_reduction_accelerators())  # 1 = CUB
        except Exception as e:  # noqa: BLE001 - informational
            info["cupy_reduction_accelerators"] = f"unknown ({type(e).__name__})"
        try:
            import subprocess

            info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                            capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception as e:  # noqa: BLE001
            info["driver"] = f"unknown ({type(e).__name__})"
    return info


def ptxas_info(mod, arch: int):
    """(assembled, {kernel: "Used N registers, ... smem"} or ptxas's error): ``ptxas -v`` on the module's PTX
    (registers, spills and shared memory of every kernel, for reading the timings)."""
    import re
    import subprocess

    ptx = mod.on("cuda").inspect_source("ptx")
    r = subprocess.run(["ptxas", "-v", f"-arch=sm_{arch}", "-o", os.devnull, "-"], input=ptx.encode(),
                       capture_output=True, timeout=300)
    err = r.stderr.decode()
    if r.returncode:
        return False, err[:400]
    info, cur = {}, None
    for line in err.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?(\w+)'?", line)
        if m:
            cur = m.group(1)
        elif cur and ("Used" in line or "spill" in line):
            info[cur] = (info.get(cur, "") + " " + line.split(":", 1)[-1].strip()).strip()
    return True, info
