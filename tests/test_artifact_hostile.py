"""Loading hostile .kbin bytes: every malformed input is an ArtifactError, raised quickly,
with an offset, and without allocating memory sized by a field the file controls."""
import struct
import time
import tracemalloc
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polykern import artifact, wire
from polykern.errors import ArtifactError
from polykern.testing.isolation import isolated
from polykern.testing.synthetic import device_module, synthetic_root


@pytest.fixture(autouse=True)
def _no_backends():
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
    bumped = data[:8] + struct.pack("<I", 2) + data[12:]
    with pytest.raises(ArtifactError, match="version 2") as e:
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
    with pytest.raises(ArtifactError, match="unknown kind 'cudx'") as e:
        wire.decode_container(_raw_container(_mods("cudx"), [0, 1, 1], [1]))
    assert e.value.offset > 0
    with pytest.raises(ArtifactError, match="second root"):
        wire.decode_container(_raw_container([("root", b""), ("root", b"")], [0, 1, 1], [1]))
    with pytest.raises(ArtifactError, match="must be the root"):
        wire.decode_container(_raw_container([("cuda", b"")], [0, 0], []))
    with pytest.raises(ArtifactError, match="no modules"):
        wire.decode_container(_raw_container([], [0], []))


def test_unknown_kind_by_patching_a_valid_artifact():
    data = base()
    cuda = wire.decode_container(data).modules[1]
    assert cuda.kind == "cuda"
    at = cuda.offset - 8 - 4 - 8  # kind length, "cuda", payload length, payload
    bad = recrc(data[:at + 8] + b"cudx" + data[at + 12:])
    with pytest.raises(ArtifactError, match="unknown kind") as e:
        artifact.load(bad)
    assert e.value.offset == at


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
    garbage = b"\x05\x00\x00\x00\x00\x00\x00\x00ptx"  # fmt claims 5 bytes, 3 remain
    data = _raw_container([("root", root_payload), ("cuda", garbage)], [0, 1, 1], [1])
    c = wire.decode_container(data)  # the container itself is fine
    with pytest.raises(ArtifactError, match="cuda module fmt") as e:
        artifact.load(data)
    assert e.value.offset == c.modules[1].offset


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
