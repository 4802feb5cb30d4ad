"""polykern's relocations (relocs.py) agree byte for byte with LLVM's linker, on x86-64 and on
AArch64 (which this host cannot run): each object is laid out by objfile.py, relocated by the
loader at a fixed base, and linked by ``ld.lld`` with a linker script that puts every section at
the same address and each external function at its trampoline; the bytes must be identical."""
from __future__ import annotations

import copy
import shutil
import subprocess

import pytest

from polykern import backends, registry
from polykern.testing.c_corpus import corpus
from polykern.target import Target
from polykern_llvm.runtime.loader import build_image
from polykern_llvm.runtime.objfile import SHT_NOBITS, parse_object

LLD, OBJCOPY = shutil.which("ld.lld"), shutil.which("llvm-objcopy")
pytestmark = pytest.mark.skipif(not (LLD and OBJCOPY), reason="needs ld.lld and llvm-objcopy")
KERNELS = ("casts", "double_math", "float_math", "half_math", "main", "small_ints")
TRIPLES = {"x86_64-linux-gnu": (62, "elf_x86_64"), "aarch64-linux-gnu": (183, "aarch64linux")}
BASE = 0x40000000


@pytest.mark.parametrize("triple", sorted(TRIPLES))
def test_relocated_image_matches_ld_lld(triple, tmp_path):
    backends.load_all()
    machine, emulation = TRIPLES[triple]
    fns = corpus()
    build = registry.get("target.build.llvm")
    kinds = set()
    for name in KERNELS:
        obj = build([copy.deepcopy(fns[name])], Target(f"llvm -mtriple={triple}")).payload
        plan = parse_object(obj, machine)
        kinds.update(r.type for r in plan.relocations)
        externals = {s.index: 0x7F0000000000 + 16 * s.index for s in plan.symbols if s.external}
        image = build_image(plan, obj, BASE, externals)
        script = ["SECTIONS {"] + [f"  {s.name} 0x{BASE + s.image_offset:x} : {{ *({s.name}) }}"
                                   for s in plan.sections if s.loaded] + ["}"]
        script += [f"{s.name} = 0x{BASE + plan.stubs[s.index]:x};" for s in plan.symbols if s.index in plan.stubs]
        (tmp_path / "k.o").write_bytes(obj)
        (tmp_path / "k.ld").write_text("\n".join(script) + "\n")
        # -O0: no merging of constant sections, so lld keeps the layout given
        subprocess.run([LLD, "-m", emulation, "-static", "-O0", "--no-relax", "-T", str(tmp_path / "k.ld"),
                        str(tmp_path / "k.o"), "-o", str(tmp_path / "k.elf")], check=True, capture_output=True)
        for s in plan.sections:
            if not (s.loaded and s.size and s.type != SHT_NOBITS):
                continue
            subprocess.run([OBJCOPY, "-O", "binary", f"--only-section={s.name}", str(tmp_path / "k.elf"),
                            str(tmp_path / "s.bin")], check=True)
            want = (tmp_path / "s.bin").read_bytes()
            assert bytes(image[s.image_offset:s.image_offset + s.size]) == want, (name, s.name)
    expected = {62: {2, 4}, 183: {275, 283, 286, 299}}[machine]  # PC32 PLT32 | ADRP CALL26 LDST64/128_LO12
    assert expected <= kinds, kinds
