"""The C runtime's ELF loader (native/src/elf_loader.c, elf_check.c) never crashes or
silently misruns on a damaged llvm object.

The damaged-object corpus of the Python loader (backends/llvm/tests/elf_damage.py: every field of
the ELF header, section headers, symbols and relocations set to hostile values; the artifact's
CRC recomputed) is run through the C runner ``kbin-run``, one process per damaged artifact. Each
one must be refused with an error naming the problem ("CPU object: ..."), or run with results
bit-identical to the undamaged artifact's; never a signal death, a hang or a different result.
The whole corpus runs on x86-64 (about 4,600 objects, ~30 s on two cores: most are refused at
load); the aarch64 corpus (about 1,300 objects) runs under qemu-aarch64, every 10th object (plus
the relocation type swaps that once crashed), as a qemu start costs ~40 ms.
"""
from __future__ import annotations

import os
import platform
import shutil
import struct
import subprocess
import sys
import zlib
from collections import Counter
from typing import List, Optional

import numpy as np
import pytest

import polykern as pk
from polykern.runtime import launch_stream as ls

from native_support import MAKE, NATIVE, QEMU_AARCH64, make_native, native_build  # noqa: F401 (fixture)

# The corpus generator lives beside the llvm backend's tests; a run without it (a sandbox holding only
# this file) skips.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "backends", "llvm", "tests"))
elf_damage = pytest.importorskip("elf_damage", reason="backends/llvm/tests/elf_damage.py is not here")
exp_axpy, half_round = elf_damage.exp_axpy, elf_damage.half_round

needs_x86_64 = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64")),
    reason="the x86-64 corpus is run by the host's C loader")
needs_qemu = pytest.mark.skipif(
    not (shutil.which("aarch64-linux-gnu-gcc") and QEMU_AARCH64 and MAKE),
    reason="no aarch64 cross compiler (gcc-aarch64-linux-gnu) or qemu-user(-static) here")
A64 = "llvm -mtriple=aarch64-linux-gnu"

N = 200



_X = np.linspace(-2, 2, N).astype(np.float32)
_Y = np.linspace(0, 1, N).astype(np.float32)
# (kernel, stdin): exp_axpy calls libm's exp (a trampoline), half_round the object's own
# __truncsfhf2; both read constants from .rodata sections.
_LAUNCHES = (
    ("exp_axpy", ls.encode([(ls.SCALAR, struct.pack("<i", N)), (ls.SCALAR, struct.pack("<f", 1.5)),
                            (ls.READ, _X.tobytes()), (ls.WRITE, _Y.tobytes())], (2, 1, 1, 128, 1, 1))),
    ("half_round", ls.encode([(ls.SCALAR, struct.pack("<i", N)), (ls.READ, _X.tobytes()),
                              (ls.WRITE, bytes(2 * N))], (4, 1, 1, 64, 1, 1))),
)


def _recrc(data: bytes) -> bytes:
    return data[:-4] + struct.pack("<I", zlib.crc32(data[:-4]))


class _Runner:
    def __init__(self, command, tmp_path):
        self.command = command
        self.path = tmp_path / "damaged.kbin"

    def run(self, art: bytes):
        """('refused', message) | ('died', rc) | ('hung', '') | ('ran', outputs of both kernels)."""
        self.path.write_bytes(art)
        outs = []
        for kernel, stdin in _LAUNCHES:
            try:
                p = subprocess.run([*self.command, str(self.path), kernel], input=stdin, capture_output=True,
                                   timeout=60)
            except subprocess.TimeoutExpired:
                return "hung", ""
            if p.returncode < 0 or b"uncaught target signal" in p.stderr:  # qemu reports the guest's
                return "died", p.returncode
            if p.returncode != 0:
                return "refused", p.stderr.decode("utf-8", "backslashreplace").strip()
            outs.append(p.stdout)
        return "ran", tuple(outs)


def _artifact(target: str):
    mod = pk.build([exp_axpy, half_round], targets=[target])
    art, obj = mod.export(), mod.on("llvm").payload
    assert art.count(obj) == 1
    return art, obj


@pytest.fixture(scope="module")
def artifact():
    return _artifact("llvm")


@pytest.fixture(scope="module")
def runner(native_build, tmp_path_factory):  # noqa: F811
    return _Runner([str(native_build / "kbin-run")], tmp_path_factory.mktemp("elf_damage"))


@pytest.fixture(scope="module")
def a64_runner(tmp_path_factory):
    make_native("CC=aarch64-linux-gnu-gcc", "BUILD=build-aarch64", "KOBJ_CLANG=", "all")
    return _Runner([QEMU_AARCH64, "-L", "/usr/aarch64-linux-gnu", str(NATIVE / "build-aarch64" / "kbin-run")],
                   tmp_path_factory.mktemp("elf_damage_a64"))


def _damaged(art: bytes, obj: bytes, m) -> bytes:
    at = art.find(obj)
    return _recrc(art[:at] + elf_damage.apply(obj, m) + art[at + len(obj):])


@needs_x86_64
def test_lost_relocations_of_an_object_without_externals_are_refused(runner):
    """libpolykern's check of elf_check.c, as the Python loader's (backends/llvm/tests/test_elf_damage.py):
    an emptied .rela.text of an object with no external symbol left its constant-pool labels unused; it
    was loaded and its unpatched code killed the process."""
    mod = pk.build([elf_damage.inline_exp_axpy], targets=["llvm"])
    runner.path.write_bytes(elf_damage.empty_rela_text(mod.export(), mod.on("llvm").payload))
    p = subprocess.run([*runner.command, str(runner.path), "inline_exp_axpy"], input=_LAUNCHES[0][1],
                       capture_output=True, timeout=60)
    assert p.returncode > 0 and b"never relocated" in p.stderr, (p.returncode, p.stderr[-500:])


@needs_x86_64
def test_undamaged_artifact_runs_correctly(artifact, runner):
    verdict, outs = runner.run(artifact[0])
    assert verdict == "ran", outs
    y = np.frombuffer(outs[0][:4 * N], np.float32)
    h = np.frombuffer(outs[1][:2 * N], np.float16)
    np.testing.assert_allclose(y, 1.5 * _X + np.exp(_Y * 0.25) * 0.5, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(h, (_X * np.float32(3.0) + np.float32(0.1)).astype(np.float16))
    assert all(o.endswith(ls.DONE) for o in outs)


def _section(obj: bytes, name: str) -> int:
    shoff, = struct.unpack_from("<Q", obj, 40)
    shnum, shstrndx = struct.unpack_from("<HH", obj, 60)
    names_at = struct.unpack_from("<Q", obj, shoff + 64 * shstrndx + 24)[0]
    for i in range(shnum):
        start = names_at + struct.unpack_from("<I", obj, shoff + 64 * i)[0]
        if obj[start:obj.index(b"\0", start)].decode() == name:
            return i
    raise AssertionError(f"no section {name}")


def _symbol(obj: bytes, name: str) -> int:
    shoff, = struct.unpack_from("<Q", obj, 40)
    symtab = _section(obj, ".symtab")
    off, size, link = struct.unpack_from("<QQI", obj, shoff + 64 * symtab + 24)
    strs = struct.unpack_from("<Q", obj, shoff + 64 * link + 24)[0]
    for k in range(size // 24):
        start = strs + struct.unpack_from("<I", obj, off + 24 * k)[0]
        if obj[start:obj.index(b"\0", start)].decode() == name:
            return k
    raise AssertionError(f"no symbol {name}")


def _first_rela(obj: bytes, rela: int, rtype: int, sym_section: Optional[int] = None) -> int:
    """The index of the first relocation of ``rela`` of type ``rtype`` against a symbol in ``sym_section``."""
    shoff, = struct.unpack_from("<Q", obj, 40)
    off, size, link = struct.unpack_from("<QQI", obj, shoff + 64 * rela + 24)
    syms = struct.unpack_from("<Q", obj, shoff + 64 * link + 24)[0]
    for k in range(size // 24):
        info, = struct.unpack_from("<Q", obj, off + 24 * k + 8)
        if info & 0xFFFFFFFF == rtype and sym_section in (
                None, struct.unpack_from("<H", obj, syms + 24 * (info >> 32) + 6)[0]):
            return k
    raise AssertionError("no such relocation")


@needs_x86_64
def test_damage_that_crashed_or_misran_the_c_loader_is_refused_by_name(artifact, runner):
    """Each of these once killed kbin-run (SIGSEGV) or ran with a wrong result."""
    art, obj = artifact
    text, rela, cst16 = _section(obj, ".text"), _section(obj, ".rela.text"), _section(obj, ".rodata.cst16")
    pc32 = _first_rela(obj, rela, 2, cst16)  # a load of a 16-byte constant
    cases = {
        f"shdr[{text}].sh_flags=0x2": "not loaded executable",          # .text not executable
        f"shdr[{rela}].sh_type=0x1": "relocation name and type 1 disagree",
        f"shdr[{rela}].sh_info=0x0": "links symbols",
        f"shdr[{cst16}].sh_type=0x8": "(NOBITS) section must be writable data",
        f"shdr[{cst16}].sh_offset=0x0": "overlaps",
        f"rela[{rela}][{pc32}].r_type=0x0": "type NONE",
        f"rela[{rela}][{pc32}].r_type=0x1d": "8-byte relocation type 29 in code",
        f"rela[{rela}][{pc32}].r_type=0xb": "absolute 32-bit: build position-independent",
        f"sym[3].st_shndx=0xfff2": "malformed COMMON symbol",
        f"sym[{_symbol(obj, 'half_round__range')}].st_shndx=0xfff1": "does not define 'half_round__range'",
    }
    mutants = {m[0]: m for m in elf_damage.mutants(obj)}
    for label, words in cases.items():
        verdict, msg = runner.run(_damaged(art, obj, mutants[label]))
        assert verdict == "refused" and "CPU object" in msg and words in msg, (label, verdict, msg)


def _data_offsets(obj: bytes) -> set:
    """Labels of damage that moves a non-executable section's file offset. The C loader accepts data at
    any in-bounds offset (GNU as leaves .data.rel.ro and .rodata.cst32 unaligned, which is legal), so
    such a move changes *which bytes are the constants*, like an addend: it may run differently, and
    must still never crash (docs/correctness.md, section 5.3)."""
    shoff, = struct.unpack_from("<Q", obj, 40)
    shnum, = struct.unpack_from("<H", obj, 60)
    out = set()
    for i in range(shnum):
        flags, = struct.unpack_from("<Q", obj, shoff + 64 * i + 8)
        if not flags & 0x4:  # SHF_EXECINSTR
            out.add(f"shdr[{i}].sh_offset")
    return out


def _verdicts(art: bytes, obj: bytes, runner: _Runner, mutants: List):
    verdict, want = runner.run(art)
    assert verdict == "ran", want
    counts, bad = Counter(), {}
    data_moves = _data_offsets(obj)
    for m in mutants:
        verdict, detail = runner.run(_damaged(art, obj, m))
        if verdict == "ran":
            verdict = "ran-identically" if detail == want else "ran-differently"
            if verdict == "ran-differently" and m[0].split("=")[0] in data_moves:
                verdict = "ran-data-moved"
        elif verdict == "refused" and "CPU object" not in detail:
            verdict = "refused-unnamed"
        counts[verdict] += 1
        if verdict not in ("refused", "ran-identically", "ran-data-moved"):
            bad[m[0]] = (verdict, detail)
    return counts, bad


@needs_x86_64
def test_every_structure_damage_is_refused_by_name_or_runs_identically(artifact, runner):
    art, obj = artifact
    mutants = list(elf_damage.mutants(obj))
    assert len(mutants) > 4000
    counts, bad = _verdicts(art, obj, runner, mutants)
    assert not bad, f"{len(bad)} of {len(mutants)} damaged objects: {dict(list(bad.items())[:20])}"
    assert counts["refused"] > len(mutants) // 2 and counts["ran-identically"] > 200, counts


@needs_qemu
def test_aarch64_structure_damage_under_qemu(a64_runner):
    """The aarch64 loader and relocator: a sample of the corpus, and a call's relocation type
    changed to a load's (CALL26 -> LDST16_ABS_LO12_NC patched the BL's offset bits: the kernel
    crashed) or to JUMP26 (a BL made a B) is refused by name."""
    art, obj = _artifact(A64)
    rela = _section(obj, ".rela.text")
    k = _first_rela(obj, rela, 283)  # R_AARCH64_CALL26
    mutants = {m[0]: m for m in elf_damage.mutants(obj)}
    for rtype, words in (("0x11c", "is not a load/store"), ("0x11a", "is not a B")):
        verdict, msg = a64_runner.run(_damaged(art, obj, mutants[f"rela[{rela}][{k}].r_type={rtype}"]))
        assert verdict == "refused" and words in msg, (rtype, verdict, msg)
    sample = list(mutants.values())[::10]
    counts, bad = _verdicts(art, obj, a64_runner, sample)
    assert not bad, f"{len(bad)} of {len(sample)} damaged objects: {dict(list(bad.items())[:20])}"
    assert counts["refused"] > len(sample) // 2 and counts["ran-identically"] > 10, counts
