"""The compile cache (polykern.build_cache, docs/language.md "Compile cache"): hits and misses, what the
key covers, entries that are damaged or hostile, two processes at once, the switch, and artifacts that
are byte-identical to an uncached build. The suite runs with the cache off (conftest.py); these tests
turn it on in a folder of their own."""
import hashlib
import os
import subprocess
import sys
import textwrap

import pytest

import polykern as pk
from polykern import Buffer, build_cache, f32, i32
from polykern.kbin import wire

TARGETS = ["llvm", "cuda -arch=sm_90", "vulkan", "opencl", "webgpu", "metal"]


def make_scale(factor, plus_one=False):
    if plus_one:
        @pk.kernel
        def scale(n: i32, x: Buffer[f32]):
            i = pk.global_id(0)
            if i < n:
                x[i] = x[i] * factor + 1.0
    else:
        @pk.kernel
        def scale(n: i32, x: Buffer[f32]):
            i = pk.global_id(0)
            if i < n:
                x[i] = x[i] * factor
    return scale


@pk.kernel
def fill(N: pk.constexpr, x: Buffer[f32]):
    i = pk.global_id(0)
    if i < N:
        x[i] = 1.0


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The cache on, in a fresh folder; returns the folder of its entries."""
    monkeypatch.setenv("POLYKERN_CACHE", "1")
    monkeypatch.setenv("POLYKERN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("POLYKERN_CACHE_MAX_MB", raising=False)
    build_cache.clear_memory()
    yield tmp_path / "cache" / "build"
    build_cache.clear_memory()


def delta(before):
    after = build_cache.stats()
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


def entries(folder):
    return sorted(p for p in folder.glob("*/*") if not p.name.startswith(".tmp-"))


def test_a_second_build_hits_memory_then_disk(cache):
    k = make_scale(2.0)
    s = build_cache.stats()
    first = pk.build([k], targets=["llvm"])
    assert delta(s) == {"misses": 1, "stores": 1}
    assert len(entries(cache)) == 1
    assert [oct(d.stat().st_mode & 0o777) for d in (cache, entries(cache)[0].parent)] == ["0o700", "0o700"]
    s = build_cache.stats()
    second = pk.build([k], targets=["llvm"])
    assert delta(s) == {"memory_hits": 1}
    build_cache.clear_memory()
    s = build_cache.stats()
    third = pk.build([k], targets=["llvm"])
    assert delta(s) == {"disk_hits": 1}
    assert first.export() == second.export() == third.export()
    assert third.on("llvm") is not first.on("llvm")  # every build gets modules of its own


def test_artifacts_are_byte_identical_with_and_without_the_cache(cache, monkeypatch):
    kernels = [make_scale(3.0), fill.specialize(N=16)]
    built = pk.build(kernels, targets=TARGETS).export()
    build_cache.clear_memory()
    s = build_cache.stats()
    cached = pk.build(kernels, targets=TARGETS)
    assert delta(s) == {"disk_hits": len(TARGETS)}
    monkeypatch.setenv("POLYKERN_CACHE", "0")
    uncached = pk.build(kernels, targets=TARGETS).export()
    assert cached.export() == built == uncached
    for kind in ("llvm", "vulkan"):  # sources too (the CPU's assembly listing is rendered on read)
        assert cached.on(kind).inspect_source() == pk.build(kernels, targets=[kind]).on(kind).inspect_source()


def test_a_cached_module_runs(cache):
    import numpy as np

    k = make_scale(2.5)
    pk.build([k], targets=["llvm"])
    build_cache.clear_memory()
    mod = pk.build([k], targets=["llvm"])
    x = np.arange(10, dtype=np.float32)
    mod["scale"](10, x, grid=1, block=16)
    np.testing.assert_array_equal(x, np.arange(10, dtype=np.float32) * 2.5)


@pytest.mark.parametrize("change", ["target", "body", "closure constant", "constexpr", "hook", "environment",
                                    "toolchain"])
def test_what_changes_the_output_changes_the_key(cache, monkeypatch, change):
    base = (make_scale(2.0), "cuda -arch=sm_90")
    other = {"target": (make_scale(2.0), "cuda -arch=sm_80"), "body": (make_scale(2.0, plus_one=True), base[1]),
             "closure constant": (make_scale(4.0), base[1])}
    if change == "constexpr":
        base, other[change] = (fill.specialize(N=4), base[1]), (fill.specialize(N=8), base[1])
    pk.build([base[0]], targets=[base[1]])
    if change in ("hook", "toolchain"):
        monkeypatch.setattr(pk.registry, "_entries", dict(pk.registry._entries))  # undone after the test
        other[change] = base
    if change == "hook":
        pk.registry.register("polykern.hook.cuda.postproc", lambda source, target: "// hooked\n" + source)
    if change == "toolchain":  # e.g. another NVRTC installed: the backend's toolchain identity changes
        old = pk.registry.get(build_cache.TOOLCHAIN_KEY + "cuda")
        pk.registry.register(build_cache.TOOLCHAIN_KEY + "cuda", lambda t: old(t) + "\nlibnvrtc.so.14", override=True)
    if change == "environment":
        monkeypatch.setenv("POLYKERN_CUDA_COMPILER", "none")
        other[change] = base
    s = build_cache.stats()
    mod = pk.build([other[change][0]], targets=[other[change][1]])
    assert delta(s) == {"misses": 1, "stores": 1}
    if change == "hook":
        assert mod.on("cuda").sources["cuda"].startswith("// hooked\n")


def test_the_key_is_the_same_in_another_process(cache):
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        import polykern as pk, test_build_cache as t
        from polykern import build_cache
        data = pk.build([t.make_scale(2.0)], targets=["llvm", "vulkan"]).export()
        import hashlib
        print(build_cache.stats()["disk_hits"], hashlib.sha256(data).hexdigest())
    """)
    here = os.path.dirname(__file__)
    outs = [subprocess.run([sys.executable, "-c", code, here], capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    assert all(o.returncode == 0 for o in outs), [o.stderr for o in outs]
    (hits1, digest1), (hits2, digest2) = (o.stdout.split() for o in outs)
    assert (hits1, hits2) == ("0", "2") and digest1 == digest2
    data = pk.build([make_scale(2.0)], targets=["llvm", "vulkan"]).export()
    assert hashlib.sha256(data).hexdigest() == digest1


def _one_entry(cache):
    k = make_scale(5.0)
    good = pk.build([k], targets=["llvm"]).export()
    (path,) = entries(cache)
    build_cache.clear_memory()
    return k, good, path


@pytest.mark.parametrize("damage", ["truncated", "garbage", "one bit", "empty", "another key's entry", "huge",
                                    "symlink", "folder", "fifo", "checksummed garbage", "foreign fallback class"])
def test_a_damaged_or_hostile_entry_is_rebuilt(cache, monkeypatch, tmp_path, damage):
    k, good, path = _one_entry(cache)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[:len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif damage == "one bit":
        path.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "another key's entry":  # a valid entry under the wrong name
        pk.build([make_scale(6.0)], targets=["llvm"])
        other = next(p for p in entries(cache) if p != path)
        path.write_bytes(other.read_bytes())
    elif damage == "huge":
        monkeypatch.setenv("POLYKERN_CACHE_MAX_MB", "1")
        with open(path, "ab") as f:
            f.truncate(2 * 1024 * 1024)
    elif damage == "symlink":  # to a copy of the good entry elsewhere: still not trusted
        elsewhere = tmp_path / "elsewhere.kbin"
        elsewhere.write_bytes(data)
        path.unlink()
        path.symlink_to(elsewhere)
    elif damage == "folder":
        path.unlink()
        path.mkdir()
    elif damage == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif damage in ("checksummed garbage", "foreign fallback class"):  # a well-formed container, bad inside
        c = wire.decode_container(data)
        device = os.urandom(len(c.modules[1].payload)) if damage == "checksummed garbage" else c.modules[1].payload
        fallback = "os:system" if damage == "foreign fallback class" else c.meta["fallback"]
        path.write_bytes(wire.encode_container([("root", c.modules[0].payload), ("llvm", device)], c.children,
                                               c.sources, {**c.meta, "fallback": fallback}))
    s = build_cache.stats()
    rebuilt = pk.build([k], targets=["llvm"]).export()
    assert rebuilt == good
    d = delta(s)
    assert d.get("disk_hits", 0) == 0 and d["misses"] == 1
    if damage != "folder":  # the bad entry was replaced by a good one
        assert path.is_file() and not path.is_symlink()
        build_cache.clear_memory()
        s = build_cache.stats()
        assert pk.build([k], targets=["llvm"]).export() == good and delta(s) == {"disk_hits": 1}
    if damage == "symlink":
        assert (tmp_path / "elsewhere.kbin").read_bytes() == data  # the link's target was not written


def test_two_processes_building_at_once(cache):
    code = textwrap.dedent("""
        import sys, hashlib
        sys.path.insert(0, sys.argv[1])
        import polykern as pk, test_build_cache as t
        from polykern import build_cache
        for round in range(3):
            build_cache.clear_memory()
            data = pk.build([t.make_scale(7.0), t.fill.specialize(N=32)], targets=t.TARGETS).export()
            print(hashlib.sha256(data).hexdigest())
        print("rejected", build_cache.stats()["rejected"])  # no partial entry was ever read
    """)
    here = os.path.dirname(__file__)
    procs = [subprocess.Popen([sys.executable, "-c", code, here], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    assert [out.split("\n")[3] for out, _ in outs] == ["rejected 0", "rejected 0"]
    digests = {d for out, _ in outs for d in out.split("\n")[:3]}
    assert len(digests) == 1
    assert len(entries(cache)) == len(TARGETS) and not list(cache.glob("*/.tmp-*"))


def test_the_switch_turns_it_off(cache, monkeypatch):
    monkeypatch.setenv("POLYKERN_CACHE", "0")
    s = build_cache.stats()
    k = make_scale(8.0)
    pk.build([k], targets=["llvm"])
    pk.build([k], targets=["llvm"])
    assert delta(s) == {} and not cache.exists()


def test_least_recently_used_entries_go_past_the_limit(cache, monkeypatch):
    pk.build([make_scale(1.5)], targets=["llvm"])
    (old,) = entries(cache)
    size = old.stat().st_size
    os.utime(old, (1, 1))
    monkeypatch.setenv("POLYKERN_CACHE_MAX_MB", str(1.5 * size / 2 ** 20))  # room for one entry, not two
    s = build_cache.stats()
    pk.build([make_scale(2.5)], targets=["llvm"])
    assert delta(s) == {"misses": 1, "stores": 1, "evicted": 1}
    assert not old.exists() and len(entries(cache)) == 1


def test_an_unusable_cache_folder_never_fails_a_build(cache, monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a folder")
    monkeypatch.setenv("POLYKERN_CACHE_DIR", str(blocker))
    k = make_scale(9.0)
    s = build_cache.stats()
    data = pk.build([k], targets=["llvm"]).export()
    assert delta(s) == {"misses": 1} and blocker.read_bytes() == b"not a folder"
    assert pk.build([k], targets=["llvm"]).export() == data  # kept in memory


@pytest.mark.parametrize("value", ["lots", "-1", "nan"])
def test_a_bad_size_limit_is_named(cache, monkeypatch, value):
    monkeypatch.setenv("POLYKERN_CACHE_MAX_MB", value)
    with pytest.raises(pk.errors.PolykernError, match=f"POLYKERN_CACHE_MAX_MB='{value}'.*number of MiB"):
        pk.build([make_scale(9.5)], targets=["llvm"])
