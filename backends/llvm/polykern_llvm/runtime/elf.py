"""Just enough ELF to decide, before loading, whether an object can run on this host.

The runtime reads the header (class, byte order, type, machine) and the undefined
symbols of the symbol table of any object, whatever it was built for; every offset is checked
against the data, so a corrupt payload is an :class:`ArtifactError`. Objects polykern can load
(x86_64, aarch64) are then checked in full by objfile.py.
"""
from __future__ import annotations

import platform
import struct
import sys
from dataclasses import dataclass
from typing import List, Tuple

from polykern.errors import ArtifactError

__all__ = ["ElfObject", "read_elf", "check_matches_triple", "host_machine", "MACHINE_NAMES", "EM_X86_64", "EM_AARCH64",
           "ET_REL", "SHT_SYMTAB", "SHN_UNDEF"]

EM_X86_64 = 62
EM_AARCH64 = 183
MACHINE_NAMES = {3: "x86", 8: "mips", 20: "ppc", 21: "ppc64", 22: "s390x", 40: "arm", 62: "x86_64",
                 164: "hexagon", 183: "aarch64", 243: "riscv", 247: "bpf", 258: "loongarch"}
_HOST_MACHINES = {"x86_64": 62, "amd64": 62, "i386": 3, "i486": 3, "i586": 3, "i686": 3, "x86": 3,
                  "aarch64": 183, "arm64": 183, "armv7l": 40, "armv8l": 40, "arm": 40, "ppc64le": 21,
                  "ppc64": 21, "s390x": 22, "riscv64": 243, "loongarch64": 258}
# Triple architecture -> (e_machine, bits, little-endian) an object for it must have.
_TRIPLE_HEADERS = {"x86_64": (62, 64, True), "aarch64": (183, 64, True), "aarch64_be": (183, 64, False),
                   "riscv64": (243, 64, True), "riscv32": (243, 32, True), "i386": (3, 32, True),
                   "i486": (3, 32, True), "i586": (3, 32, True), "i686": (3, 32, True),
                   "powerpc64le": (21, 64, True), "powerpc64": (21, 64, False), "s390x": (22, 64, False),
                   "loongarch64": (258, 64, True), "hexagon": (164, 32, True)}
ET_REL = 1
SHT_SYMTAB = 2
SHN_UNDEF = 0


@dataclass(frozen=True)
class ElfObject:
    bits: int  # 32 | 64
    little: bool
    e_type: int
    machine: int
    undefined: Tuple[str, ...]  # global/weak symbols the object needs from outside

    @property
    def machine_name(self) -> str:
        return MACHINE_NAMES.get(self.machine, f"e_machine {self.machine}")

    def describe(self) -> str:
        return f"{self.machine_name} ({self.bits}-bit, {'little' if self.little else 'big'}-endian)"


def host_machine() -> Tuple[int, int, bool]:
    """(e_machine, bits, little-endian) of this process."""
    m = _HOST_MACHINES.get(platform.machine().lower(), -1)
    return m, 64 if sys.maxsize > 2 ** 32 else 32, sys.byteorder == "little"


def _bad(msg: str, offset: int):
    raise ArtifactError(f"llvm payload is not a valid ELF object: {msg}", offset)


def read_elf(data: bytes) -> ElfObject:
    n = len(data)
    if n < 52 or data[:4] != b"\x7fELF":
        _bad("missing ELF magic" if data[:4] != b"\x7fELF" else "truncated header", 0)
    cls, enc = data[4], data[5]
    if cls not in (1, 2) or enc not in (1, 2):
        _bad(f"bad class/encoding bytes {cls}/{enc}", 4)
    bits, little = (32 if cls == 1 else 64), enc == 1
    e = "<" if little else ">"
    if bits == 64 and n < 64:
        _bad("truncated header", 0)
    e_type, machine = struct.unpack_from(e + "HH", data, 16)
    if bits == 64:
        shoff, = struct.unpack_from(e + "Q", data, 40)
        shentsize, shnum = struct.unpack_from(e + "HH", data, 58)
        sh_fmt, sym_size = e + "IIQQQQIIQQ", 24
    else:
        shoff, = struct.unpack_from(e + "I", data, 32)
        shentsize, shnum = struct.unpack_from(e + "HH", data, 46)
        sh_fmt, sym_size = e + "IIIIIIIIII", 16
    if shnum and (shentsize < struct.calcsize(sh_fmt) or shoff + shnum * shentsize > n):
        _bad("section headers lie outside the data", shoff)
    sections = []
    for i in range(shnum):
        f = struct.unpack_from(sh_fmt, data, shoff + i * shentsize)
        # (type, offset, size, link) for both layouts
        sections.append((f[1], f[4], f[5], f[6]))
    undefined: List[str] = []
    for stype, off, size, link in sections:
        if stype != SHT_SYMTAB:
            continue
        if off + size > n or link >= len(sections):
            _bad("symbol table lies outside the data", off)
        _, stroff, strsize, _ = sections[link]
        if stroff + strsize > n:
            _bad("string table lies outside the data", stroff)
        for k in range(size // sym_size):
            base = off + k * sym_size
            if bits == 64:
                name, info, _, shndx = struct.unpack_from(e + "IBBH", data, base)
            else:
                name, _, _, info, _, shndx = struct.unpack_from(e + "IIIBBH", data, base)
            bind = info >> 4
            if shndx != SHN_UNDEF or bind not in (1, 2) or name == 0:
                continue
            if name >= strsize:
                _bad("symbol name lies outside the string table", base)
            end = data.find(b"\x00", stroff + name, stroff + strsize)
            if end < 0:
                _bad("unterminated symbol name", stroff + name)
            undefined.append(data[stroff + name:end].decode("utf-8", "replace"))
    return ElfObject(bits, little, e_type, machine, tuple(sorted(set(undefined))))


def check_matches_triple(obj: ElfObject, triple: str) -> None:
    """An object whose header contradicts the triple its functions were compiled for is damaged."""
    want = _TRIPLE_HEADERS.get(triple.split("-")[0])
    if want and (obj.machine, obj.bits, obj.little) != want:
        machine, bits, little = want
        raise ArtifactError(f"llvm payload: the ELF header says {obj.describe()} but the functions were compiled "
                            f"for {triple} ({MACHINE_NAMES.get(machine, machine)}, {bits}-bit, "
                            f"{'little' if little else 'big'}-endian)", 4)
