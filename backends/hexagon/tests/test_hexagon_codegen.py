"""The hexagon target: every conformance and corpus kernel becomes a relocatable Hexagon ELF object
(e_machine 164, EM_QDSP6) exporting the CPU-style range entry ``K__range`` per kernel; the
assembly names each one; output is deterministic and the fallback contract holds."""
from __future__ import annotations

import copy
import pathlib
import re
import struct
import sys

import pytest

import polykern as pk
from polykern import Buffer, backends, f16, f32, i32, registry
from polykern.testing.c_corpus import NAMES, corpus
from polykern.errors import TargetError
from polykern.passes import run_default_passes
from polykern.passes.legalize_target import legalize_for_target
from polykern.target import Target
from polykern.testing.fallback_contract import check_fallback_contract
from polykern_hexagon.codegen import MCPUS

try:
    from conformance import ALL_CASES
except ImportError:  # plain pytest: the suite lives in the repository's tests/
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests"))
    from conformance import ALL_CASES

EM_QDSP6 = 164


def build(funcs, target="hexagon"):
    backends.load_all()
    return registry.get("target.build.hexagon")(funcs, Target(target))


def ir_of(*kernels):
    return [legalize_for_target(run_default_passes(copy.deepcopy(k.ir)), "hexagon") for k in kernels]


def elf32_symbols(data: bytes):
    """{name: (st_info, st_shndx)} of a little-endian ELF32 relocatable object's symbol table."""
    assert data[:4] == b"\x7fELF" and data[4] == 1 and data[5] == 1, "not a little-endian ELF32 file"
    shoff, = struct.unpack_from("<I", data, 32)
    shentsize, shnum = struct.unpack_from("<HH", data, 46)
    sections = [struct.unpack_from("<IIIIIIIIII", data, shoff + i * shentsize) for i in range(shnum)]
    out = {}
    for _n, sh_type, _f, _a, off, size, link, _i, _al, entsize in sections:
        if sh_type != 2:  # SHT_SYMTAB
            continue
        stroff = sections[link][4]
        for k in range(size // entsize):
            name, _value, _size, info, _other, shndx = struct.unpack_from("<IIIBBH", data, off + k * entsize)
            end = data.index(b"\0", stroff + name)
            out[data[stroff + name:end].decode()] = (info, shndx)
    return out


def check_object(data: bytes, kernels) -> None:
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    assert (e_type, e_machine) == (1, EM_QDSP6)  # ET_REL, Hexagon
    syms = elf32_symbols(data)
    for k in kernels:
        info, shndx = syms[f"{k}__range"]
        assert info >> 4 == 1 and info & 0xF == 2 and shndx != 0  # GLOBAL FUNC, defined here


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.name for c in ALL_CASES])
def test_conformance_kernels(case):
    (dev,) = pk.build(case.kernels, targets=["hexagon"]).imports
    assert dev.kind == "hexagon" and dev.fmt == "o"
    check_object(dev.payload, [k.name for k in case.kernels])
    for k in case.kernels:
        assert f"{k.name}__range:" in dev.sources["asm"]


@pytest.mark.parametrize("name", NAMES)
def test_corpus_kernels(name):
    fn = corpus()[name]
    dev = build([fn])
    check_object(dev.payload, [fn.name])
    assert f".globl\t{fn.name}__range" in dev.sources["asm"]


@pk.kernel
def staged(n: i32, x: Buffer[f32], h: Buffer[f16]):
    s = pk.shared(f32, 64)
    t = pk.local_id(0)
    i = pk.global_id(0)
    v = x[i] if i < n else 0.0
    s[t] = v
    pk.barrier()
    if t == 0:
        pk.atomic_add(x, 0, s[63] + pk.exp(s[1]))
    h[i] = f16(s[(t + 1) % 64] - v) * h[i]


def test_module_shape_and_abi():
    dev = build(ir_of(staged))
    info = dev.functions["staged"]
    assert info.attrs["entry"] == "staged__range"
    assert info.attrs["triple"] == "hexagon-unknown-elf" and info.attrs["cpu"] == "hexagonv68"
    assert int(info.attrs["item_bytes"]) > 0  # v lives across the barrier, per work-item
    assert re.search(r"define void @staged__range\(ptr [^,]*%args, ptr [^,]*%launch, i64 %group_begin, "
                     r"i64 %group_end\)", dev.sources["llvm"])
    assert set(dev.sources) == {"asm", "llvm"} and dev.inspect_source() == dev.sources["asm"]
    # f16 conversions are defined in the object (hidden); exp is expanded in it by the portable
    # device math (no libm on a DSP), so only the runtime's builtins stay undefined.
    syms = elf32_symbols(dev.payload)
    assert syms["__extendhfsf2"][1] != 0 and "expf" not in syms


@pytest.mark.parametrize("mcpu", MCPUS)
def test_every_mcpu(mcpu):
    dev = build(ir_of(staged), f"hexagon -mcpu={mcpu}")
    check_object(dev.payload, ["staged"])
    flags, = struct.unpack_from("<I", dev.payload, 36)
    assert flags == int(mcpu[len("hexagonv"):], 16)  # e_flags: EF_HEXAGON_MACH_V68 = 0x68, ...


def test_unknown_mcpu_lists_choices():
    with pytest.raises(TargetError, match="hexagonv68"):
        Target("hexagon -mcpu=hexagonv99")


def test_deterministic_and_fallback_contract():
    report = check_fallback_contract("hexagon", lambda: build(ir_of(staged)))
    assert report["source_formats"] == ["asm", "llvm"]
    assert pk.build([staged], targets=["hexagon"]).export() == pk.build([staged], targets=["hexagon"]).export()


def test_runtime_state_is_reported():
    """Available where qemu-hexagon-static, clang and ld.lld are (the emulated runtime); otherwise
    the reason names what to install (test_hexagon_runtime.py checks that message without QEMU)."""
    import shutil

    backends.load_all()
    rec = backends.record_for_kind("hexagon")
    assert rec.codegen_ok
    have = shutil.which("qemu-hexagon-static") or shutil.which("qemu-hexagon")
    if have and shutil.which("clang") and shutil.which("ld.lld"):
        assert rec.runtime_available and "emulated" in rec.devices()["devices"][0]
    else:
        assert not rec.runtime_available and "qemu-user-static" in rec.runtime_reason
