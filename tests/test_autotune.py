"""pk.autotune (polykern/autotuning.py) on the CPU runtime, with real measurements: which configuration
wins is not asserted (timings), but the cache file's creation, reuse, key and robustness are, and the
results of every launch."""
import json
import os

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import KernelTypeError, LaunchError, PolykernError
from polykern.testing import tier_skip
from autotune_support import CONFIGS, cache_dir, cache_files, grid_for, run_checked, scaled_add  # noqa: F401 (fixture)


def test_tunes_once_caches_per_key_and_reuses(cache_dir):
    tuned = pk.autotune(configs=CONFIGS, key=["n", "x"], reps=3)(scaled_add)
    k = tuned.build(targets=["llvm"])
    run_checked(k, 4000)
    files = cache_files(cache_dir)
    assert len(files) == 1 and files[0].startswith("scaled_add-")
    record = json.loads((cache_dir / files[0]).read_text())
    assert record["identity"]["key"] == [["n", 4000], ["x", [4000], "float32"]]
    assert record["identity"]["module"] == "llvm" and record["identity"]["device"]
    assert record["identity"]["compiler"] == pk.__version__
    assert 0 <= record["choice"] < 3 and len(record["median_seconds"]) == 3
    assert all(t > 0 for t in record["median_seconds"])
    run_checked(k, 4000, seed=1)          # same key: no new file
    assert cache_files(cache_dir) == files
    run_checked(k, 1000)                  # new key: a second file
    assert len(cache_files(cache_dir)) == 2

    # A new process (a fresh TunedKernel) reads the choice instead of measuring: make the record
    # choose config 2 and check that it is used.
    record["choice"] = 2
    (cache_dir / files[0]).write_text(json.dumps(record))
    fresh = tuned.build(targets=["llvm"])
    calls = []
    fresh._time = lambda *a: calls.append(a) or 1.0  # noqa: E731 - measuring would be a failure here
    assert fresh.config([4000, np.float32(3), np.zeros(4000, np.float32), np.zeros(4000, np.float32)]) == CONFIGS[2]
    run_checked(fresh, 4000)
    assert calls == []


def test_corrupt_cache_is_ignored_with_a_warning_and_rewritten(cache_dir):
    k = pk.autotune(configs=CONFIGS, key=["n"], reps=1)(scaled_add).build(targets=["llvm"])
    run_checked(k, 512)
    (path,) = cache_dir.glob("*.json")
    for garbage in (b"\xff\x00 not json", b'{"choice": 7}', b'[1, 2]', b'{"choice": true}'):
        path.write_bytes(garbage)
        fresh = pk.autotune(configs=CONFIGS, key=["n"], reps=1)(scaled_add).build(targets=["llvm"])
        with pytest.warns(RuntimeWarning, match="ignoring"):
            run_checked(fresh, 512)
        assert json.loads(path.read_text())["choice"] in (0, 1, 2)


def test_disabled_picks_the_pinned_config_without_cache(cache_dir, monkeypatch):
    monkeypatch.setenv("POLYKERN_AUTOTUNE", "0")
    k = pk.autotune(configs=CONFIGS, key=["n"], pinned=1)(scaled_add).build(targets=["llvm"])
    run_checked(k, 700)
    assert cache_files(cache_dir) == []
    assert k.config([700, 3.0, None, None]) == CONFIGS[1]
    monkeypatch.delenv("POLYKERN_AUTOTUNE")
    k2 = pk.autotune(configs=CONFIGS, key=["n"], enabled=False)(scaled_add).build(targets=["llvm"])
    run_checked(k2, 700)
    assert cache_files(cache_dir) == [] and k2.config([700]) == CONFIGS[0]


def test_unwritable_cache_warns_and_keeps_working(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("POLYKERN_CACHE_DIR", str(blocker))  # a file, not a folder
    k = pk.autotune(configs=CONFIGS[:2], key=["n"], reps=1)(scaled_add).build(targets=["llvm"])
    with pytest.warns(RuntimeWarning, match="cannot write the cache file"):
        run_checked(k, 300)


def test_a_failing_config_is_skipped(cache_dir):
    configs = [{"block": 2 ** 31, "PER": 1}, {"block": 64, "PER": 1}]  # a block over the language's limit
    k = pk.autotune(configs=configs, key=["n"], reps=1)(scaled_add).build(targets=["llvm"])
    with pytest.warns(RuntimeWarning, match="config 0 .* skipped"):
        run_checked(k, 256)
    (path,) = cache_dir.glob("*.json")
    assert json.loads(path.read_text())["choice"] == 1


def test_launch_only_configs_of_a_plain_kernel(cache_dir):
    @pk.kernel
    def inc(n: i32, y: Buffer[i32]):
        i = pk.global_id(0)
        if i < n:
            y[i] = y[i] + 1

    k = pk.autotune(configs=[{"block": 16}, {"block": 256}], key=["n"])(inc).build(targets=["llvm"])
    y = np.zeros(1000, np.int32)
    k(1000, y, grid=lambda cfg: ((1000 + cfg["block"] - 1) // cfg["block"],))
    assert (y == 1).all()


def test_errors():
    with pytest.raises(PolykernError, match="non-empty list of dicts"):
        pk.autotune(configs=[], key=["n"])(scaled_add)
    with pytest.raises(PolykernError, match="key names 'm'"):
        pk.autotune(configs=CONFIGS, key=["m"])(scaled_add)
    with pytest.raises(KernelTypeError, match="no pk.constexpr or pk.dtype parameter 'BLOCK'"):
        pk.autotune(configs=[{"BLOCK": 4}], key=["n"])(scaled_add)
    with pytest.raises(PolykernError, match="build it first"):
        pk.autotune(configs=CONFIGS)(scaled_add)(1)
    k = pk.autotune(configs=CONFIGS, key=["n"], enabled=False)(scaled_add).build(targets=["llvm"])
    with pytest.raises(LaunchError, match="grid= is required"):
        k(4, 1.0, np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_foreign_written_array_needs_restore_false(cache_dir):
    class Foreign:  # an array type tuning cannot copy back
        def __init__(self, a):
            self.__array_interface__ = a.__array_interface__
            self._a = a

    k = pk.autotune(configs=CONFIGS, key=["n"], reps=1)(scaled_add).build(targets=["llvm"])
    y = np.zeros(64, np.float32)
    with pytest.raises(LaunchError, match=r"argument 3 \('y'\) is written by the kernel.*restore=False"):
        k(64, 1.0, np.ones(64, np.float32), Foreign(y), grid=grid_for(64))
    k2 = pk.autotune(configs=CONFIGS, key=["n"], reps=1, restore=False)(scaled_add).build(targets=["llvm"])
    k2(64, 1.0, np.ones(64, np.float32), Foreign(y), grid=grid_for(64))
    assert (y >= 1).all()
    assert os.listdir(cache_dir)


def test_dynamic_shared_size_is_a_configuration(cache_dir):
    @pk.kernel
    def block_sum(n: i32, x: Buffer[f32], out: Buffer[f32]):
        tile = pk.shared_dynamic(f32)
        l = pk.local_id(0)
        g = pk.global_id(0)
        tile[l] = x[g] if g < n else f32(0.0)
        pk.barrier()
        if l == 0:
            s = f32(0.0)
            for j in range(pk.local_size(0)):
                s += tile[j]
            out[pk.group_id(0)] = s

    configs = [{"block": 32, "shared_size": 32}, {"block": 64, "shared_size": lambda cfg: cfg["block"]}]
    k = pk.autotune(configs=configs, key=["n"], reps=2)(block_sum).build(targets=["llvm"])
    n = 4096
    x = np.ones(n, np.float32)
    out = np.zeros(n // 32, np.float32)
    k(n, x, out, grid=lambda cfg: (n // cfg["block"],))
    b = k.config([n, x, out])["block"]
    np.testing.assert_array_equal(out[:n // b], np.full(n // b, b, np.float32))


def test_the_cache_key_is_the_same_in_another_process(cache_dir, tmp_path):
    """The identity (and so the file name) must not depend on addresses: a second Python process finds
    the first one's file (configurations holding functions included)."""
    script = tmp_path / "tune.py"
    script.write_text(
        "import sys, numpy as np, polykern as pk\n"
        "from polykern import Buffer, f32, i32\n"
        "@pk.kernel\n"
        "def inc(n: i32, y: Buffer[f32]):\n"
        "    t = pk.shared_dynamic(f32)\n"
        "    i = pk.global_id(0)\n"
        "    t[pk.local_id(0)] = 1.0\n"
        "    if i < n:\n"
        "        y[i] = y[i] + t[pk.local_id(0)]\n"
        "cfgs = [{'block': 32, 'shared_size': 32}, {'block': 64, 'shared_size': lambda cfg: cfg['block']}]\n"
        "k = pk.autotune(configs=cfgs, key=['n'], reps=1)(inc).build(targets=['llvm'])\n"
        "y = np.zeros(256, np.float32)\n"
        "k(256, y, grid=lambda cfg: (256 // cfg['block'],))\n"
        "assert (y == 1).all()\n"
        "print(k.last_cache_path)\n")
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=dict(os.environ))
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.strip().endswith(".json")
    assert len(cache_files(cache_dir)) == 1


def test_webgpu_registers_a_synchronize_that_waits():
    """Launches with WebGPU device arrays return once submitted: autotune's timing needs the queue's wait."""
    from polykern import backends, registry

    backends.load_all()
    rec = backends.record_for_kind("webgpu")
    if rec is None or not rec.runtime_available:
        tier_skip.skip("wgpu", "no WebGPU runtime here")
    sync = registry.get("runtime.synchronize.webgpu")
    assert sync is not None

    @pk.kernel
    def inc(n: i32, y: Buffer[f32]):
        i = pk.global_id(0)
        if i < n:
            y[i] = y[i] + 1.0

    from polykern_webgpu.runtime.device_array import to_device
    y = to_device(np.zeros(1 << 16, np.float32))
    k = pk.autotune(configs=[{"block": 64}, {"block": 128}], key=["n"], reps=2)(inc).build(targets=["webgpu"])
    k(1 << 16, y, grid=lambda cfg: ((1 << 16) // cfg["block"],))
    sync()
    assert (y.numpy() == 1).all()


def test_a_tuned_key_launches_without_printing_ir_or_asking_the_device(cache_dir, monkeypatch):
    """The identity's fixed part (device, the kernels' IR hash, hooks) is computed once per built kernel:
    a launch of an already tuned key is a dictionary lookup (printing the IR of a 4096^3 matmul's six
    configurations took ~13 ms a launch on an H200, more than the kernel)."""
    import polykern.autotuning as at

    printed = []
    real = at.function_str
    monkeypatch.setattr(at, "function_str", lambda f: printed.append(f) or real(f))
    k = pk.autotune(configs=CONFIGS, key=["n"], reps=1)(scaled_add).build(targets=["llvm"])
    run_checked(k, 2000)
    first = len(printed)
    assert first == len(CONFIGS)          # once per configuration, at the first launch
    for seed in range(3):
        run_checked(k, 2000, seed=seed)
    run_checked(k, 3000)                  # a new key tunes again, but the fixed part is kept
    assert len(printed) == first
