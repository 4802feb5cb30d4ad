"""polykern.kbin.wire: the byte format — round trips are byte-identical, output is deterministic,
the reader is strict and canonical."""
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polykern.kbin import wire
from polykern.errors import ArtifactError
from polykern.ir import nodes as n
from polykern.ir.types import SCALAR_TYPES, BufferType, f32, i32
from polykern.module import ArgInfo, FunctionInfo, RootModule
from polykern.testing.synthetic import device_module, saxpy_info, synthetic_root


def test_primitives_little_endian_and_lengths():
    w = wire.Writer()
    w.u8(1)
    w.u16(0x0203)
    w.u32(0x04050607)
    w.u64(0x08)
    w.str_("hé")
    w.bytes_(b"\x00\xff")
    assert w.getvalue() == (b"\x01" + b"\x03\x02" + b"\x07\x06\x05\x04" + struct.pack("<Q", 8)
                            + struct.pack("<Q", 3) + "hé".encode() + struct.pack("<Q", 2) + b"\x00\xff")
    r = wire.Reader(w.getvalue())
    assert (r.u8(), r.u16(), r.u32(), r.u64(), r.str_(), r.bytes_()) == (1, 0x0203, 0x04050607, 8, "hé", b"\x00\xff")
    r.expect_end("test")


@pytest.mark.parametrize("method,value", [("u8", 256), ("u16", -1), ("u32", 1 << 32), ("u64", 1 << 64), ("u8", True)])
def test_writer_rejects_out_of_range(method, value):
    with pytest.raises(ValueError):
        getattr(wire.Writer(), method)(value)


def test_map_sorted_by_utf8_key_regardless_of_insertion_order():
    a, b = wire.Writer(), wire.Writer()
    a.map_str_str({"b": "1", "a": "2", "é": "3", "Z": "4"})
    b.map_str_str({"é": "3", "Z": "4", "a": "2", "b": "1"})
    assert a.getvalue() == b.getvalue()
    assert list(wire.Reader(a.getvalue()).map_str_str("m")) == ["Z", "a", "b", "é"]


def test_reader_rejects_unsorted_or_duplicate_map_keys():
    raw = struct.pack("<Q", 2)
    for k in ("b", "a"):
        raw += struct.pack("<Q", 1) + k.encode() + struct.pack("<Q", 0)
    with pytest.raises(ArtifactError, match="not strictly sorted") as e:
        wire.Reader(raw).map_str_str("m")
    assert e.value.offset == 8 + 9 + 8
    dup = struct.pack("<Q", 2) + (struct.pack("<Q", 1) + b"a" + struct.pack("<Q", 0)) * 2
    with pytest.raises(ArtifactError, match="not strictly sorted"):
        wire.Reader(dup).map_str_str("m")


def test_reader_errors_carry_offsets():
    with pytest.raises(ArtifactError) as e:
        wire.Reader(b"\x01\x02").u32("thing")
    assert e.value.offset == 0 and "truncated thing" in str(e.value)
    huge = struct.pack("<Q", 1 << 62) + b"abc"
    with pytest.raises(ArtifactError, match="claims") as e:
        wire.Reader(huge).bytes_("blob")
    assert e.value.offset == 0
    bad_utf8 = struct.pack("<Q", 2) + b"\xc3\x28"
    with pytest.raises(ArtifactError, match="UTF-8") as e:
        wire.Reader(bad_utf8).str_("name")
    assert e.value.offset == 8


def test_function_info_exact_bytes():
    info = FunctionInfo("k", (ArgInfo.buffer("x", f32, True),), ("global_id.0",), 16, {"uses_barrier": "1"})
    s = lambda t: struct.pack("<Q", len(t)) + t.encode()  # noqa: E731
    expected = (s("k") + struct.pack("<Q", 1) + s("x") + bytes([1, 2, 32]) + struct.pack("<H", 1) + b"\x01"
                + struct.pack("<Q", 1) + s("global_id.0") + struct.pack("<Q", 16)
                + struct.pack("<Q", 1) + s("uses_barrier") + s("1"))
    assert wire.encode_function_info(info) == expected
    assert wire.decode_function_info(expected) == info


# Payloads go by layout, not by kind: one kind of each in-tree shape, and a kind no backend has.
@pytest.mark.parametrize("kind", ["llvm", "vulkan", "webgpu", "zz_future9"])
def test_device_payload_round_trip_byte_identical(kind):
    m = device_module(kind, names=("b_kernel", "a_kernel"))
    data = m.save_to_bytes()
    assert data[0] == wire.LAYOUTS.index(m.layout)
    fmt, fmap, payload = wire.decode_device_payload(kind, data)
    assert (fmt, fmap, payload) == (m.fmt, m.functions, m.payload)
    assert wire.encode_device_payload(kind, fmt, fmap, payload) == data
    assert list(fmap) == ["a_kernel", "b_kernel"]


def test_layout_comes_from_the_payload_not_the_kind():
    """Any kind may have either layout; the first byte says which (no per-kind table)."""
    s = lambda t: struct.pack("<Q", len(t)) + t  # noqa: E731
    blob = wire.encode_device_payload("webgpu", "spv", {}, b"\x01\x02")
    assert blob == b"\x01" + s(b"spv") + struct.pack("<Q", 0) + s(b"\x01\x02")
    sections = wire.encode_device_payload("llvm", "o", {}, {"b": b"2", "a": b"1"})
    assert sections == b"\x02" + s(b"o") + struct.pack("<Q", 0) + struct.pack("<Q", 2) + s(b"a") + s(b"1") \
        + s(b"b") + s(b"2")
    assert wire.decode_device_payload("anything", sections) == ("o", {}, {"a": b"1", "b": b"2"})
    assert wire.payload_layout(b"") == "bytes" and wire.payload_layout({}) == "smap"


def test_encode_refuses_what_a_reader_would_refuse():
    for kind in ("root", "Bad", "", "a-b", "x" * 65, 3):
        with pytest.raises(ValueError, match="module kind"):
            wire.encode_device_payload(kind, "x", {}, b"")
    with pytest.raises(ValueError, match="fmt"):
        wire.encode_device_payload("webgpu", "", {}, {})
    with pytest.raises(TypeError):
        wire.encode_device_payload("vulkan", "spirv", {}, ["not", "a", "map"])
    with pytest.raises(TypeError):
        wire.encode_device_payload("vulkan", "spirv", {}, {"k": "text, not bytes"})


@pytest.mark.parametrize("layout_id", [3, 4, 0x7F, 0xFF])
def test_unknown_layout_id_is_an_artifact_error(layout_id):
    data = bytearray(device_module("llvm").save_to_bytes())
    data[0] = layout_id
    with pytest.raises(ArtifactError, match=f"llvm module has unknown payload layout {layout_id}; known layouts: "
                                            r"0 \(root\), 1 \(bytes\), 2 \(smap\)") as e:
        wire.decode_device_payload("llvm", bytes(data))
    assert e.value.offset == 0


def test_root_layout_only_for_the_root():
    root = wire.encode_root_payload({}, ["llvm"])
    assert root[0] == 0
    with pytest.raises(ArtifactError, match=r"payload layout 0 \(root\), which only the root module may have"):
        wire.decode_device_payload("llvm", root)
    with pytest.raises(ArtifactError, match=r"the root module has payload layout 1 \(bytes\)"):
        wire.decode_root_payload(device_module("llvm").save_to_bytes())
    with pytest.raises(ArtifactError, match="truncated root module payload layout"):
        wire.decode_root_payload(b"")


def test_version_1_payloads_still_decode_by_kind():
    """Version 1 had no layout byte: the kind gave the layout, and webgpu had no fmt field."""
    m = device_module("webgpu")
    body = wire.encode_device_payload("webgpu", "wgsl", m.functions, m.payload)[1 + 8 + 4:]
    assert wire.decode_device_payload("webgpu", body, version=1) == ("wgsl", m.functions, m.payload)
    llvm = device_module("llvm")
    assert wire.decode_device_payload("llvm", llvm.save_to_bytes()[1:], version=1)[2] == llvm.payload
    with pytest.raises(ArtifactError, match="'zz' is not a device module kind of format version 1"):
        wire.decode_device_payload("zz", llvm.save_to_bytes()[1:], version=1)
    assert wire.decode_root_payload(wire.encode_root_payload({}, ["t"])[1:], version=1) == ({}, ["t"])


def test_root_payload_round_trip():
    fmap = {"b": saxpy_info("b"), "a": saxpy_info("a")}
    data = wire.encode_root_payload(fmap, ["cuda -arch=sm_90", "llvm"])
    assert wire.decode_root_payload(data) == ({"a": fmap["a"], "b": fmap["b"]}, ["cuda -arch=sm_90", "llvm"])


def test_container_round_trip_and_layout():
    root = synthetic_root(("cuda", "vulkan"))
    data = root.export(metadata={"compiler": "polykern test"})
    assert data[:8] == b"PKBIN\x00\r\n" and struct.unpack_from("<I", data, 8)[0] == 2
    assert struct.unpack_from("<Q", data, 12)[0] == 3
    assert struct.unpack_from("<4Q", data, 20) == (0, 2, 2, 2)  # indptr: root has children 1, 2
    assert struct.unpack_from("<2Q", data, 52) == (1, 2)
    assert struct.unpack_from("<I", data, len(data) - 4)[0] == zlib.crc32(data[:-4])
    c = wire.decode_container(data)
    assert [m.kind for m in c.modules] == ["root", "cuda", "vulkan"]
    assert c.children == [[1, 2], [], []]
    assert c.meta == {"compiler": "polykern test", "targets": "cuda\nvulkan"}
    again = wire.encode_container([(m.kind, m.payload) for m in c.modules], c.children, c.sources, c.meta)
    assert again == data
    for m in c.modules:
        assert data[m.offset:m.offset + len(m.payload)] == m.payload


def test_export_is_deterministic_independent_of_construction_order():
    def build(order):
        mods = [device_module(k, names=order) for k in ("cuda", "metal")]
        for m in mods:
            m.sources = dict(reversed(list({"z": "1", "a": "2"}.items())))
        return RootModule.collect(mods, ["cuda", "metal"]).export(metadata={"compiler": "c", "x": "y"})

    assert build(("k1", "k2")) == build(("k2", "k1"))


def test_nested_import_tree_round_trip():
    root = synthetic_root(("cuda",))
    child = device_module("opencl", names=("saxpy",))
    root.imports[0].import_module(child)
    data = root.export(metadata={"compiler": "c"})
    c = wire.decode_container(data)
    assert c.children == [[1], [2], []]


def test_from_ir():
    x = n.Var("x", BufferType(f32, readonly=True))
    y = n.Var("y", BufferType(f32))
    gid = n.SpecialReg("global_id", 0)
    lid = n.SpecialReg("local_id", 1)
    body = [n.Store(y, gid, n.Load(x, lid)), n.Barrier(),
            n.ExprStmt(n.Atomic("add", y, gid, n.Const(1.0, f32)))]
    fn = n.Function("k", [n.Param("n", i32), n.Param("x", x.vtype), n.Param("y", y.vtype)], body,
                    arrays={"tile": n.ArrayType(f32, 64, "shared"), "p": n.ArrayType(i32, 4, "local")})
    info = FunctionInfo.from_ir(fn)
    assert info.signature() == "k(n: i32, x: Buffer[f32, readonly], y: Buffer[f32])"
    assert info.launch_tags == ("global_id.0", "local_id.1")
    assert info.shared_bytes == 256
    assert info.attrs == {"uses_atomics": "1", "uses_barrier": "1"}
    assert wire.decode_function_info(wire.encode_function_info(info)) == info


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
# What function_schema accepts: KIND.DIM tags; lowercase attribute names (not in the schema: text).
_tags = st.builds("{}.{}".format, st.sampled_from(("global_id", "group_id", "local_id", "local_size", "num_groups")),
                  st.sampled_from("012"))
_attr_names = st.from_regex(r"zz[a-z0-9_]{0,8}", fullmatch=True)
_attr_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cf")), max_size=6)
_types = st.sampled_from(sorted(SCALAR_TYPES.values(), key=lambda t: t.name))


@st.composite
def _infos(draw):
    arg_names = draw(st.lists(_names, max_size=5, unique=True))
    args = []
    for a in arg_names:
        t = draw(_types)
        if draw(st.booleans()):
            args.append(ArgInfo.buffer(a, t, draw(st.booleans())))
        else:
            args.append(ArgInfo.scalar(a, t))
    return FunctionInfo(draw(_names), tuple(args), tuple(draw(st.lists(_tags, max_size=4))),
                        draw(st.integers(0, (1 << 64) - 1)), draw(st.dictionaries(_attr_names, _attr_text,
                                                                                    max_size=3)))


@settings(max_examples=150, deadline=None)
@given(_infos())
def test_function_info_round_trip_property(info):
    data = wire.encode_function_info(info)
    back = wire.decode_function_info(data)
    assert back == info
    assert wire.encode_function_info(back) == data
