"""The Vulkan runtime itself (polykern_vulkan.runtime) on the host's Vulkan device (lavapipe on CI):
registry/loader and byte identity, pooled buffers and cached pipelines (creation counters across
repeated launches), copy-in/copy-back rules, DeviceArray, LaunchError before any device work,
DeviceError with the VkResult, thread-safety under many concurrent launches (one compile; a failed
realization is retried), object lifetime, and the runtime's reasons in `polykern backends`.
"""
import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import polykern as pk
from polykern import backends, registry
from polykern.kbin import wire
from polykern.errors import ArtifactError, DeviceError, LaunchError
from polykern.module import FunctionInfo
from polykern.testing import tier_skip

import vulkan_kernels as K

RUNTIME_REASON = backends.runtime_reason("vulkan")
pytestmark = tier_skip.skipif("lavapipe", RUNTIME_REASON, reason=f"no Vulkan runtime here: {RUNTIME_REASON}")
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def pv():
    import polykern_vulkan

    return polykern_vulkan


def build(kernels, target="vulkan"):
    return pk.build(kernels if isinstance(kernels, list) else [kernels], targets=[target]).on("vulkan")


def delta(pv, before):
    after = pv.stats()
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}


def saxpy_args(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


# ---------------------------------------------------------------- module, registry, bytes


def test_real_module_registered_and_byte_identical_to_fallback(monkeypatch, pv):
    assert registry.get("module.create.vulkan") is not None
    assert registry.get("module.load_from_bytes.vulkan") is not None
    real = build([K.saxpy, K.shared_reduce])
    assert isinstance(real, pv.VulkanModule) and real.is_runnable
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    fb = build([K.saxpy, K.shared_reduce])
    assert not fb.is_runnable
    assert real.save_to_bytes() == fb.save_to_bytes()
    assert real.inspect_source() == fb.inspect_source()
    loaded = registry.get("module.load_from_bytes.vulkan")(fb.save_to_bytes(), dict(fb.sources))
    assert isinstance(loaded, pv.VulkanModule) and loaded.save_to_bytes() == real.save_to_bytes()
    x, y = saxpy_args(300)
    expect = 2 * x + y
    loaded["saxpy"](300, 2.0, x, y, grid=5, block=64)
    np.testing.assert_allclose(y, expect, rtol=1e-6)


def _payload(mutate_info=None, mutate_shader=None, fmt="spirv"):
    mod = build(K.saxpy)
    info = mod.functions["saxpy"]
    shader = mod.payload["saxpy"]
    if mutate_info:
        info = FunctionInfo(info.name, info.args, info.launch_tags, info.shared_bytes, mutate_info(dict(info.attrs)))
    if mutate_shader:
        shader = mutate_shader(shader)
    return wire.encode_device_payload("vulkan", fmt, {"saxpy": info}, {"saxpy": shader})


@pytest.mark.parametrize("case,match", [
    ("bad_magic", "not a little-endian SPIR-V"),
    ("truncated", "whole number of 32-bit words|truncated SPIR-V"),
    ("no_entry", "launch ABI attributes missing: entry"),
    ("bad_bindings", "bindings"),
    ("bad_push", "push constant"),
    ("fmt", r"vulkan module: payload layout 2 \(smap\) with fmt 'spirv-asm' is not one that vulkan modules hold; "
            r"they accept layout 2 \(smap\) with fmt 'spirv'"),
])
def test_loader_validates_before_trusting(case, match):
    load = registry.get("module.load_from_bytes.vulkan")
    data = {
        "bad_magic": lambda: _payload(mutate_shader=lambda s: b"\0\0\0\0" + s[4:]),
        "truncated": lambda: _payload(mutate_shader=lambda s: s[:-6]),
        "no_entry": lambda: _payload(mutate_info=lambda a: {k: v for k, v in a.items() if k != "entry"}),
        "bad_bindings": lambda: _payload(mutate_info=lambda a: {**a, "bindings": "x=0"}),
        "bad_push": lambda: _payload(mutate_info=lambda a: {**a, "push_constants": "n@2:i32,a@4:f32"}),
        "fmt": lambda: _payload(fmt="spirv-asm"),
    }[case]()
    with pytest.raises(ArtifactError, match=match):
        load(data, {})


# ---------------------------------------------------------------- pools and caches


def test_repeated_launches_reuse_buffers_and_pipelines(pv):
    mod = build(K.saxpy)
    x, y = saxpy_args(1000)
    mod["saxpy"](1000, 1.0, x, y, grid=16, block=64)  # warm: shader module, pipeline, pooled buffers
    before = pv.stats()
    for i in range(20):
        n = 1000 - i  # same size class: the pooled buffers fit
        xs, ys = saxpy_args(n, seed=i)
        expect = 0.5 * xs + ys
        mod["saxpy"](n, 0.5, xs, ys, grid=16, block=64)
        np.testing.assert_allclose(ys, expect, rtol=1e-6)
    d = delta(pv, before)
    assert d["launches"] == 20
    assert d.get("buffers_created", 0) == 0, d
    assert d.get("pipelines_created", 0) == 0 and d.get("shader_modules_created", 0) == 0, d
    assert d.get("command_contexts_created", 0) == 0, d
    assert d["buffers_reused"] >= 40, d

    before = pv.stats()
    mod["saxpy"](1000, 1.0, x, y, grid=32, block=32)  # a new block shape: one new pipeline, no new shader
    mod["saxpy"](1000, 1.0, x, y, grid=32, block=32)
    mod["saxpy"](1000, 1.0, x, y, grid=16, block=64)  # the first shape again: cached
    d = delta(pv, before)
    assert d.get("pipelines_created", 0) == 1 and d.get("shader_modules_created", 0) == 0, d


def test_size_classes():
    from polykern_vulkan.runtime.buffers import size_class

    assert size_class(0) == size_class(1) == size_class(256) == 256
    for n in (257, 1000, 4096, 4097, 10**6, 3 * 2**27 + 5):
        c = size_class(n)
        assert n <= c <= n * 1.25 + 1, (n, c)
    assert size_class(4000) == size_class(4096)  # neighbours share a class


def test_only_writable_buffers_are_copied_back(pv):
    mod = build(K.saxpy)
    n = 200
    x, y = saxpy_args(n)
    x.setflags(write=False)  # copying back into it would raise
    y_before = y.copy()
    mod["saxpy"](150, 3.0, x, y, grid=3, block=64)
    np.testing.assert_allclose(y[:150], 3 * x[:150] + y_before[:150], rtol=1e-6)
    np.testing.assert_array_equal(y[150:], y_before[150:])  # untouched elements keep the host values
    # the same array for a readonly and a writable parameter: one device buffer, the kernel's result wins
    z = x.copy()
    mod["saxpy"](n, 2.0, z, z, grid=4, block=64)
    np.testing.assert_allclose(z, 3 * x, rtol=1e-6)


# ---------------------------------------------------------------- device arrays


def test_device_arrays_stay_on_the_device(pv):
    mod = build(K.saxpy)
    n = 4096
    x, y = saxpy_args(n)
    dx, dy = mod.device_array(x), pv.to_device(y)
    assert isinstance(dx, pv.DeviceArray) and dx.shape == (n,) and dx.dtype == np.float32
    before = pv.stats()
    for _ in range(5):
        mod["saxpy"](n, 1.0, dx, dy, grid=64, block=64)  # y += x, five times, never leaving the device
    d = delta(pv, before)
    assert d.get("buffers_created", 0) == 0 and d.get("buffers_reused", 0) == 0, d  # nothing copied
    np.testing.assert_allclose(dy.numpy(), y + 5 * x, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(dx), x)
    out = pv.zeros((64, 64), np.float32)  # n-D: passed as its flat memory
    mod["saxpy"](n, 2.0, dx, out, grid=64, block=64)
    np.testing.assert_allclose(out.numpy(), (2 * x).reshape(64, 64), rtol=1e-6)
    e = mod.device_array(shape=10, dtype=np.int32).copy_from_host(np.arange(10, dtype=np.int32))
    np.testing.assert_array_equal(e.numpy(), np.arange(10))


def test_device_array_errors(pv):
    mod = build(K.saxpy)
    good = pv.zeros(16, np.float32)
    with pytest.raises(LaunchError, match="float32"):
        mod["saxpy"](16, 1.0, pv.zeros(16, np.float64), good, grid=1, block=16)
    freed = pv.zeros(16, np.float32)
    freed.free()
    with pytest.raises(LaunchError, match="freed"):
        mod["saxpy"](16, 1.0, freed, good, grid=1, block=16)
    with pytest.raises(LaunchError):
        good.copy_from_host(np.zeros(8, np.float32))
    limit = pv.get_device().limits.max_storage_range
    with pytest.raises(LaunchError, match="maxStorageBufferRange"):
        pv.empty(limit // 4 + 1, np.float32)

    class ForeignArray:  # device memory of another runtime
        def __polykern_buffer__(self):
            return {"ptr": 1234, "size": 16, "code": 2, "bits": 32, "device": ("cuda", 0)}

    with pytest.raises(LaunchError, match="'cuda'"):
        mod["saxpy"](16, 1.0, ForeignArray(), good, grid=1, block=16)


# ---------------------------------------------------------------- launch checks and device errors


@pytest.mark.parametrize("call,match", [
    (lambda k, x, y: k(16, 1.0, x, grid=1, block=16), "takes 4 arguments"),
    (lambda k, x, y: k(16, 1.0, x.astype(np.float64), y, grid=1, block=16), "float32"),
    (lambda k, x, y: k(16, 1.0, x, y[::2], grid=1, block=16), "C-contiguous"),
    (lambda k, x, y: k(1.5, 1.0, x, y, grid=1, block=16), "integer"),
    (lambda k, x, y: k(16, 1.0, x, y, block=16), "grid= is required"),
    (lambda k, x, y: k(16, 1.0, x, y, grid=1, block=2048), "maximum workgroup size"),
    (lambda k, x, y: k(16, 1.0, x, y, grid=1, block=(32, 32, 2)), "threads"),
    (lambda k, x, y: k(16, 1.0, x, y, grid=(1 << 20), block=16), "maximum workgroup count"),
])
def test_launch_errors_before_device_work(call, match, pv):
    mod = build(K.saxpy)
    x, y = saxpy_args(32)
    before = pv.stats()
    with pytest.raises(LaunchError, match=match):
        call(mod["saxpy"], x, y)
    d = delta(pv, before)
    assert d.get("launches", 0) == 0 and d.get("buffers_created", 0) == 0, d


def test_read_only_array_for_a_writable_parameter():
    mod = build(K.saxpy)
    x, y = saxpy_args(16)
    y.setflags(write=False)
    with pytest.raises(LaunchError, match="read-only"):
        mod["saxpy"](16, 1.0, x, y, grid=1, block=16)


def test_device_error_carries_the_vkresult(pv):
    with pytest.raises(DeviceError) as info:
        pv.get_device().pool.acquire(1 << 42)  # far beyond the heap: the driver refuses the allocation
    assert info.value.code in (-1, -2) and info.value.name.startswith("VK_ERROR_OUT_OF_"), info.value
    assert info.value.name in str(info.value)


# ---------------------------------------------------------------- threads


def _hammer(nthreads, work):
    start = threading.Barrier(nthreads)
    errors, results = [], [None] * nthreads

    def run(t):
        try:
            start.wait()
            results[t] = work(t)
        except BaseException as e:  # collected and re-raised below with the thread's context
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not any(th.is_alive() for th in threads), "a launching thread hung"
    return errors, results


def test_many_threads_launching_at_once_compile_once(pv):
    mod = build(K.saxpy)  # fresh module: nothing realized yet
    nthreads, iters = 12, 15
    before = pv.stats()

    def work(t):
        for i in range(iters):
            n = 300 + 17 * t + i
            block = 64 if (t + i) % 2 else 32
            x, y = saxpy_args(n, seed=t * 100 + i)
            expect = np.float32(t) * x + y
            mod["saxpy"](n, float(t), x, y, grid=(n + block - 1) // block, block=block)
            np.testing.assert_allclose(y, expect, rtol=1e-6, err_msg=f"thread {t} launch {i}")
        return True

    errors, results = _hammer(nthreads, work)
    assert not errors, errors[:3]
    assert all(results)
    d = delta(pv, before)
    assert d["launches"] == nthreads * iters
    assert d.get("shader_modules_created", 0) == 1, d
    assert d.get("pipelines_created", 0) == 2, d  # one per block shape, however many threads raced
    assert d.get("command_contexts_created", 0) <= nthreads, d


def test_failed_realization_is_retried(monkeypatch, pv):
    """One vkCreateComputePipelines fails (fault injected into the real call) while 8 threads launch:
    exactly one launch sees the DeviceError with the VkResult, the pipeline is created on retry."""
    import vulkan as vk

    real = vk.vkCreateComputePipelines
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise vk.VkErrorOutOfDeviceMemory()
        return real(*args, **kwargs)

    monkeypatch.setattr(vk, "vkCreateComputePipelines", flaky)
    mod = build(K.saxpy)
    before = pv.stats()

    def work(t):
        x, y = saxpy_args(64, seed=t)
        expect = x + y
        mod["saxpy"](64, 1.0, x, y, grid=1, block=64)
        np.testing.assert_allclose(y, expect, rtol=1e-6)
        return True

    errors, results = _hammer(8, work)
    assert len(errors) == 1 and isinstance(errors[0], DeviceError), errors
    assert errors[0].code == -2 and errors[0].name == "VK_ERROR_OUT_OF_DEVICE_MEMORY"
    assert sum(1 for r in results if r) == 7
    assert len(calls) == 2 and delta(pv, before).get("pipelines_created", 0) == 1


# ---------------------------------------------------------------- lifetime


def test_collected_module_releases_its_vulkan_objects(pv):
    dev = pv.get_device()
    mod = build(K.saxpy)
    x, y = saxpy_args(64)
    mod["saxpy"](64, 1.0, x, y, grid=1, block=64)
    mod["saxpy"](64, 1.0, x, y, grid=2, block=32)
    program = mod._programs.get("saxpy")
    tokens = list(program.tokens) + [token for _, token in program.pipelines.values()]
    assert len(tokens) == 5  # shader module, set layout, pipeline layout, 2 pipelines
    assert all(t in dev._owned for t in tokens)
    ref = weakref.ref(mod)
    del mod
    gc.collect()
    assert ref() is None
    assert not any(t in dev._owned for t in tokens)


# ---------------------------------------------------------------- in other processes


def _env(**extra):
    """This process' environment and import path (Bazel runfiles have no installed distribution)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **extra)


def _python(code, **env):
    full = _env(**env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full, cwd=HERE, timeout=300)


def test_polykern_backends_shows_the_device():
    r = subprocess.run([sys.executable, "-m", "polykern", "backends"], capture_output=True, text=True, timeout=300,
                       env=_env())
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("vulkan"))
    assert " yes " in line and "[selected]" in line, line
    if "lavapipe" in backends.record_for_kind("vulkan").devices()["devices"][0]:
        assert "llvmpipe" in line and "lavapipe" in line, line


def test_missing_icd_is_the_recorded_reason():
    r = _python("""
        import polykern as pk
        from polykern import backends
        import vulkan_kernels as K
        print("REASON:", backends.runtime_reason("vulkan"))
        print("MODULE:", type(pk.build([K.saxpy], targets=["vulkan"]).on("vulkan")).__name__)
    """, VK_ICD_FILENAMES="/nonexistent/polykern_icd.json", VK_DRIVER_FILES="/nonexistent/polykern_icd.json")
    assert r.returncode == 0, r.stderr
    assert "REASON: vkCreateInstance failed with VK_ERROR_INCOMPATIBLE_DRIVER" in r.stdout \
        or "REASON: the Vulkan loader found no physical device" in r.stdout, r.stdout
    assert "MODULE: VulkanFallbackModule" in r.stdout, r.stdout


def test_device_selection_that_matches_nothing():
    r = _python("""
        from polykern import backends
        print("REASON:", backends.runtime_reason("vulkan"))
    """, POLYKERN_VULKAN_DEVICE="no-such-gpu-anywhere")
    assert "REASON: POLYKERN_VULKAN_DEVICE='no-such-gpu-anywhere' matches no usable Vulkan device" in r.stdout, \
        r.stdout + r.stderr


def test_staging_path_and_clean_exit():
    """Device-local buffers + staging copies (what discrete GPUs use), forced on lavapipe."""
    r = _python("""
        import numpy as np, polykern as pk, polykern_vulkan as pv
        import vulkan_kernels as K
        mod = pk.build([K.saxpy], targets=["vulkan"]).on("vulkan")
        assert pv.get_device().staging
        x = np.arange(1000, dtype=np.float32); y = np.ones(1000, np.float32)
        mod["saxpy"](900, 2.0, x, y, grid=16, block=64)
        assert (y[:900] == 2 * x[:900] + 1).all() and (y[900:] == 1).all()
        dy = pv.to_device(y)
        mod["saxpy"](1000, 1.0, x, dy, grid=16, block=64)
        assert (dy.numpy() == y + x).all()
        assert pv.get_device().pool.acquire(10).mapped is None  # device-local, not mapped
        print("OK", pv.stats()["launches"])
    """, POLYKERN_VULKAN_STAGING="1")
    assert r.returncode == 0 and "OK 2" in r.stdout, r.stdout + r.stderr


def test_instance_close_destroys_the_device_first():
    """The instance closes what registered with before_close (the logical device) before it is
    destroyed, without importing device.py (no import cycle instance <-> device)."""
    r = _python("""
        import numpy as np, polykern as pk
        import vulkan_kernels as K
        from polykern_vulkan.runtime import device, instance
        mod = pk.build([K.saxpy], targets=["vulkan"]).on("vulkan")
        x = np.arange(64, dtype=np.float32); y = np.ones(64, np.float32)
        mod["saxpy"](64, 2.0, x, y, grid=1, block=64)
        dev, inst = device.get(), instance.instance()
        seen = []
        inst.before_close(lambda: seen.append((dev.closed, inst.closed)))  # runs first: newest first
        inst.close()
        print("SEEN", seen, "AFTER", dev.closed, inst.closed)
    """)
    assert r.returncode == 0 and "SEEN [(False, True)] AFTER True True" in r.stdout, r.stdout + r.stderr
