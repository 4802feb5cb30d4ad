"""Loading hostile .kbin bytes: every malformed input is an ArtifactError, raised quickly,
with an offset, and without allocating memory sized by a field the file controls."""
import struct
import time
import tracemalloc
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polykern as pk
from polykern import artifact
from polykern.kbin import wire
from polykern.errors import ArtifactError
from polykern.testing.isolation import isolated
from polykern.testing.synthetic import device_module, synthetic_root
from polykern.testing import tier_skip
from growing import growing


@pytest.fixture(autouse=True)
def _no_backends(request):
    if request.node.name in _REAL_BACKEND_TESTS:
        yield
        return
    with isolated():
        yield


def _base() -> bytes:
    root = synthetic_root(("cuda", "vulkan", "webgpu"), names=("saxpy", "scale"))
    root.imports[0].import_module(device_module("opencl", names=("saxpy",)))
    return root.export(metadata={"compiler": "polykern hostile-test", "note": "x" * 40})


BASE = None


def base() -> bytes:
    global BASE
    if BASE is None:
        with isolated():
            BASE = _base()
    return BASE


def recrc(data: bytes) -> bytes:
    """Fix the checksum so that the structural checks, not the CRC, must catch the damage."""
    return data[:-4] + struct.pack("<I", zlib.crc32(data[:-4]))


def _all_readers(data: bytes):
    """Every public entry point that parses artifact bytes must raise ArtifactError."""
    for fn in (wire.decode_container, artifact.read_artifact, artifact.load):
        with pytest.raises(ArtifactError) as e:
            fn(data)
        assert isinstance(e.value.offset, int) or "checksum" in str(e.value)


def test_base_is_valid():
    data = base()
    desc = artifact.read_artifact(data)
    assert [m["kind"] for m in desc["modules"]] == ["root", "cuda", "opencl", "vulkan", "webgpu"]
    root = artifact.load(data)
    assert artifact.export(root, metadata={"compiler": "polykern hostile-test", "note": "x" * 40}) == data


def test_truncated_at_every_offset():
    data = base()
    t0 = time.perf_counter()
    for i in range(len(data)):
        with pytest.raises(ArtifactError) as e:
            wire.decode_container(data[:i])
        assert e.value.offset is not None and 0 <= e.value.offset <= i
        assert "truncated" in str(e.value) or "is empty" in str(e.value) or "claims" in str(e.value) \
            or "needs an import index" in str(e.value)
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("cut", [0, 1, 7, 8, 11, 12, 19, 20, 100, -5, -4, -1])
def test_truncated_through_every_reader(cut):
    _all_readers(base()[:cut])


def test_bad_magic_and_version():
    data = base()
    with pytest.raises(ArtifactError, match="bad magic") as e:
        wire.decode_container(b"ELF" + data[3:])
    assert e.value.offset == 0
    with pytest.raises(ArtifactError, match="not a polykern artifact: the data is empty"):
        wire.decode_container(b"")
    with pytest.raises(ArtifactError, match="truncated magic"):
        wire.decode_container(data[:5])
    bumped = data[:8] + struct.pack("<I", 3) + data[12:]
    with pytest.raises(ArtifactError, match="version 3; this reader supports versions 1 to 2") as e:
        wire.decode_container(recrc(bumped))
    assert e.value.offset == 8


def test_every_single_bit_flip_is_detected():
    data = base()
    for byte in range(len(data)):
        for bit in range(8):
            bad = bytearray(data)
            bad[byte] ^= 1 << bit
            with pytest.raises(ArtifactError):
                wire.decode_container(bytes(bad))


@settings(max_examples=300, deadline=1000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_damage_with_fixed_crc_never_crashes(data_st):
    """With the CRC recomputed, damage must still be caught structurally or load cleanly."""
    data = bytearray(base())
    for _ in range(data_st.draw(st.integers(1, 4))):
        pos = data_st.draw(st.integers(0, len(data) - 5))
        data[pos] = data_st.draw(st.integers(0, 255))
    bad = recrc(bytes(data))
    for fn in (artifact.read_artifact, artifact.load):
        try:
            fn(bad)
        except ArtifactError:
            pass


def _length_field_offsets(data: bytes):
    """Offsets of u64 length/count fields in the container and module payloads (walked by hand)."""
    c = wire.decode_container(data)
    out = [12]  # module count
    pos = 20 + 8 * (len(c.modules) + 1) + 8 * sum(len(k) for k in c.children)
    for m in c.modules:
        out.append(pos)  # kind length
        pos += 8 + len(m.kind)
        out.append(pos)  # payload length
        pos += 8 + len(m.payload)
        out.append(m.offset)  # first field inside the payload (fmt length / fmap count)
    out.append(pos + 1)  # sources: first map count, after the flag
    out.append(len(data) - 4 - 8 - sum(16 + len(k) + len(v) for k, v in c.meta.items()))  # meta count
    return out


@pytest.mark.parametrize("value", [1 << 63, (1 << 64) - 1, 1 << 32, 10 ** 9])
def test_huge_length_fields_fail_fast_without_allocating(value):
    data = base()
    offsets = _length_field_offsets(data)
    assert len(offsets) > 10
    for off in offsets:
        bad = recrc(data[:off] + struct.pack("<Q", value) + data[off + 8:])
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            for fn in (artifact.read_artifact, artifact.load):
                with pytest.raises(ArtifactError):
                    fn(bad)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 2 * len(data) + (1 << 20), f"field at {off}: peak {peak} bytes"
        assert time.perf_counter() - t0 < 2


def _raw_container(kinds_payloads, indptr, child, sources=None, meta=None):
    """Container bytes with a valid CRC but no validation of the tree or kinds."""
    w = wire.Writer()
    w.raw(wire.MAGIC)
    w.u32(wire.VERSION)
    w.u64(len(kinds_payloads))
    for x in indptr + child:
        w.u64(x)
    for k, p in kinds_payloads:
        w.str_(k)
        w.bytes_(p)
    w.u8(0)
    w.map_str_str(meta or {})
    w.u32(zlib.crc32(w.getvalue()))
    return w.getvalue()


def _mods(*kinds):
    root = wire.encode_root_payload({}, [])
    dev = device_module("cuda", names=("k",))
    return [("root", root)] + [(k, dev.save_to_bytes() if k == "cuda" else b"") for k in kinds]


@pytest.mark.parametrize("indptr,child,match", [
    ([0, 3, 3, 3], [1, 2, 1], "edges for 3 modules"),
    ([0, 1, 1, 1], [5], "out of range"),
    ([0, 1, 1, 1], [0], "out of range"),
    ([0, 2, 2, 2], [1, 1], "imported twice"),
    ([0, 0, 1, 2], [2, 1], "not reachable"),
    ([0, 0, 0, 0], [], "not reachable"),
    ([1, 1, 1, 1], [], "start at 0"),
    ([0, 1, 0, 0], [1], "decreases"),
])
def test_bad_import_trees(indptr, child, match):
    data = _raw_container(_mods("cuda", "cuda"), indptr, child)
    with pytest.raises(ArtifactError, match=match):
        wire.decode_container(data)


def test_unknown_kind_second_root_and_missing_root():
    assert wire.decode_container(_raw_container(_mods("cudx"), [0, 1, 1], [1])).modules[1].kind == "cudx"
    v1 = _raw_container(_mods("cudx"), [0, 1, 1], [1])
    v1 = recrc(v1[:8] + struct.pack("<I", 1) + v1[12:])
    with pytest.raises(ArtifactError, match="unknown kind 'cudx'; known kinds: cuda, hexagon, llvm") as e:
        wire.decode_container(v1)  # version 1 knows only its nine kinds
    assert e.value.offset > 0
    for bad in ("Cudx", "cu-dx", "9cuda", "x" * 65, ""):
        with pytest.raises(ArtifactError, match="is not a module kind name") as e:
            wire.decode_container(_raw_container(_mods(bad), [0, 1, 1], [1]))
        assert e.value.offset == 20 + 32 + 12 + 8 + len(_mods()[0][1])
    with pytest.raises(ArtifactError, match="second root"):
        wire.decode_container(_raw_container([("root", b""), ("root", b"")], [0, 1, 1], [1]))
    with pytest.raises(ArtifactError, match="must be the root"):
        wire.decode_container(_raw_container([("cuda", b"")], [0, 0], []))
    with pytest.raises(ArtifactError, match="no modules"):
        wire.decode_container(_raw_container([], [0], []))


def test_unknown_kind_by_patching_a_valid_artifact():
    """Version 2: a kind this build never heard of loads (unavailable) and re-exports as it was."""
    data = base()
    cuda = wire.decode_container(data).modules[1]
    assert cuda.kind == "cuda"
    at = cuda.offset - 8 - 4 - 8  # kind length, "cuda", payload length, payload
    other = recrc(data[:at + 8] + b"cudx" + data[at + 12:])
    root = artifact.load(other)
    assert [m.kind for m in root.device_modules()][:2] == ["cudx", "opencl"]
    assert "install the polykern backend that provides the 'cudx' module kind" in root.on("cudx").message()
    assert root.export() == other
    with pytest.raises(ArtifactError, match="install the polykern backend that provides the .cudx. module kind"):
        artifact.load(other, strict=True)


def test_trailing_bytes_and_bad_checksum():
    data = base()
    with pytest.raises(ArtifactError, match="trailing") as e:
        wire.decode_container(data + b"\x00")
    assert e.value.offset == len(data)
    with pytest.raises(ArtifactError, match="checksum mismatch") as e:
        wire.decode_container(data[:-1] + bytes([data[-1] ^ 0xFF]))
    assert e.value.offset == len(data) - 4


def test_malformed_payload_inside_valid_container():
    root_payload = wire.encode_root_payload({}, [])
    garbage = b"\x01\x05\x00\x00\x00\x00\x00\x00\x00ptx"  # layout 1 (bytes); fmt claims 5 bytes, 3 remain
    data = _raw_container([("root", root_payload), ("cuda", garbage)], [0, 1, 1], [1])
    c = wire.decode_container(data)  # the container itself is fine
    with pytest.raises(ArtifactError, match="cuda module fmt") as e:
        artifact.load(data)
    assert e.value.offset == c.modules[1].offset + 1


def test_root_listing_a_kernel_nobody_provides():
    info = device_module("cuda", names=("k",)).functions["k"]
    root_payload = wire.encode_root_payload({"k": info, "ghost": info.__class__("ghost")}, [])
    data = _raw_container([("root", root_payload), ("cuda", device_module("cuda", names=("k",)).save_to_bytes())],
                          [0, 1, 1], [1])
    with pytest.raises(ArtifactError, match="ghost"):
        artifact.load(data)


@settings(max_examples=200, deadline=1000)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_after_a_valid_header(tail):
    data = wire.MAGIC + struct.pack("<I", 1) + tail
    with pytest.raises(ArtifactError):
        wire.decode_container(data)  # the last 4 bytes are not the CRC of the rest
    try:  # with a matching CRC, random bytes may (very rarely) form a valid container; never a crash
        wire.decode_container(recrc(data + b"\x00\x00\x00\x00"))
    except ArtifactError:
        pass


# ------------------------------------------------------------------ load time is linear


def _flat_artifact(n: int) -> bytes:
    """A valid artifact whose root imports ``n`` small modules directly."""
    root = wire.encode_root_payload({}, [])
    dev = device_module("cuda", names=("k",)).save_to_bytes()
    return wire.encode_container([("root", root)] + [("cuda", dev)] * n, [list(range(1, n + 1))] + [[]] * n,
                                 None, {})


def test_load_time_is_linear_in_the_number_of_modules():
    """8x the modules may cost about 8x the time, not 64x (linking the import tree was quadratic:
    every import walked the whole tree to look for cycles)."""
    small, big = _flat_artifact(2000), _flat_artifact(16000)

    def seconds(data):
        t0 = time.perf_counter()
        root = artifact.load(data)
        elapsed = time.perf_counter() - t0
        assert len(root.device_modules()) == (len(data) > len(small)) * 14000 + 2000
        return elapsed

    t_small = sorted(seconds(small) for _ in range(3))[1]
    t_big = seconds(big)
    assert t_big < 24 * t_small, f"2000 modules: {t_small:.3f} s, 16000: {t_big:.3f} s (linear would be ~8x)"


# ------------------------------------------------------------------ only regular files


def _finishes(fn, seconds: float = 20.0):
    """Run ``fn`` in a thread; return what it raised (it must finish: a blocked read is a failure)."""
    import threading

    box = {}

    def run():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still reading after {seconds} s"
    return box.get("error")


@pytest.mark.parametrize("reader", [artifact.load, artifact.read_artifact])
def test_fifo_dev_zero_and_directory_are_refused(tmp_path, reader):
    import os

    fifo = tmp_path / "pipe\x1b.kbin"
    os.mkfifo(fifo)
    for path, what in ((fifo, "a FIFO (named pipe)"), ("/dev/zero", "a character device"),
                       (tmp_path, "a directory")):
        err = _finishes(lambda: reader(path))
        assert isinstance(err, ArtifactError), err
        shown = str(path).replace("\x1b", "\\x1b")
        assert str(err) == f"cannot read {shown}: it is {what}, not a regular file"


def test_a_file_that_grows_while_read_is_refused_and_reading_is_bounded(tmp_path):
    path = tmp_path / "growing.kbin"
    path.write_bytes(base())
    assert artifact.load(path).functions  # the file itself is fine
    with growing(path):
        for _ in range(5):
            err = _finishes(lambda: artifact.load(path))
            assert isinstance(err, ArtifactError), err
            assert "changed size while being read" in str(err) or "trailing bytes" in str(err), str(err)


# ------------------------------------------------------------------ attribute schema


def _with_info(info) -> bytes:
    """An artifact describing ``info`` (written with wire directly: export refuses bad ones)."""
    dev = wire.encode_device_payload("llvm", "src", {info.name: info}, b"// k\n")
    return wire.encode_container([("root", wire.encode_root_payload({info.name: info}, ["llvm"])), ("llvm", dev)],
                                 [[1], []], None, {})


def _info(tags=("global_id.0",), **attrs):
    from polykern.testing.synthetic import saxpy_info

    info = saxpy_info("k\x1bk", **attrs)
    return info.__class__(info.name, info.args, tags, info.shared_bytes, info.attrs)


BAD_ATTRS = [
    ("private_bytes", "x", "a decimal integer from 0 to 1099511627776"),
    ("private_bytes", "-1", "a decimal integer"),
    ("private_bytes", "01", "a decimal integer"),
    ("private_bytes", " 1", "a decimal integer"),
    ("private_bytes", "1\n", "a decimal integer"),
    ("private_bytes", str((1 << 40) + 1), "a decimal integer"),
    ("item_bytes", "1e3", "a decimal integer"),
    ("params_size", str(1 << 32), "a decimal integer from 0 to 4294967295"),
    ("uses_barrier", "2", "0 or 1"),
    ("uses_atomics", "yes", "0 or 1"),
    ("entry", "", "a non-empty name"),
    ("entry", "k x", "a non-empty name"),
    ("entry", "k\x00", "a non-empty name"),
    ("entry", "k" * 1025, "at most 1024 bytes"),
    ("features", "a\x1b[2J", "text without control characters"),
    ("zz_unknown", "\u202e", "text without control characters"),
    ("zz_unknown", "x" * 4097, "at most 4096 bytes"),
]


@pytest.mark.parametrize("name,value,expect", BAD_ATTRS)
def test_bad_attribute_values_are_refused_at_load(name, value, expect):
    data = _with_info(_info(**{name: value}))
    for fn in (artifact.load, artifact.read_artifact):
        with pytest.raises(ArtifactError) as e:
            fn(data)
        msg = str(e.value)
        assert msg.startswith(f"function 'k\\x1bk' attribute '{name}' has an invalid value "), msg
        assert "(expected " in msg and expect in msg and e.value.offset is not None


@pytest.mark.parametrize("name", ["Bad", "a-b", "9a", "a" * 65, "é"])
def test_attribute_names_must_be_lowercase_identifiers(name):
    with pytest.raises(ArtifactError, match="has an attribute with an invalid name"):
        artifact.load(_with_info(_info(**{name: "1"})))


@pytest.mark.parametrize("tag", ["global_id.3", "global_id", "foo.0", ".0", "global_id.0\n", "local_size.-1"])
def test_unknown_launch_tags_are_refused(tag):
    with pytest.raises(ArtifactError) as e:
        artifact.load(_with_info(_info(tags=(tag,))))
    assert "has an unknown launch tag" in str(e.value) and "KIND one of global_id, group_id" in str(e.value)


def test_valid_edge_values_load():
    info = _info(("global_id.2", "num_groups.0"), private_bytes=str(1 << 40), item_bytes="0", uses_barrier="0",
                 params_size=str((1 << 32) - 1), entry="k" * 1024, features="", zz_new="é ok, 1")
    root = artifact.load(_with_info(info))
    assert root.functions[info.name] == info


_REAL_BACKEND_TESTS = {"test_llvm_artifact_with_a_non_numeric_private_bytes_fails_at_load_not_at_launch"}


@pk.kernel
def _double(n: pk.i32, x: pk.Buffer[pk.f32]):
    i = pk.global_id(0)
    if i < n:
        x[i] = x[i] * 2.0


def test_llvm_artifact_with_a_non_numeric_private_bytes_fails_at_load_not_at_launch():
    """Was: pk.load accepted it and the first launch raised a bare ValueError in the llvm runtime."""
    if pk.backends.runtime_reason("llvm"):
        tier_skip.skip("llvm", f"no llvm runtime here: {pk.backends.runtime_reason('llvm')}")
    data = pk.build([_double], targets=["llvm"]).export()
    key = b"\x0d\x00\x00\x00\x00\x00\x00\x00private_bytes\x01\x00\x00\x00\x00\x00\x00\x00"
    at = data.index(key) + len(key)
    bad = recrc(data[:at] + b"x" + data[at + 1:])
    with pytest.raises(ArtifactError) as e:
        pk.load(bad)
    assert str(e.value).startswith("function '_double' attribute 'private_bytes' has an invalid value 'x' "
                                   "(expected a decimal integer from 0 to 1099511627776)")


def test_export_refuses_what_load_would_refuse():
    """Never write what we would refuse to read: a backend bug shows at build, not at the user's load."""
    from polykern.errors import PolykernError
    from polykern.module import RootModule

    info = _info(private_bytes="lots")
    dev = device_module("llvm", names=(info.name,))
    dev.functions = {info.name: info}
    with pytest.raises(PolykernError, match=r"cannot export: function 'k\\x1bk' attribute 'private_bytes' has an "
                                            r"invalid value 'lots'"):
        RootModule({info.name: info}, [dev], ["llvm"]).export()
