"""Just enough ELF64 to check a linked hsaco before it ships: header and dynamic symbols.

Every offset is checked against the data; a malformed file is a :class:`CompileError` (the linker
produced it, so it is a tool failure, not an artifact problem).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Dict, Iterable

from polykern.errors import CompileError

EM_AMDGPU = 224
ET_DYN = 3
SHT_DYNSYM = 11


@dataclass(frozen=True)
class Hsaco:
    e_type: int
    machine: int
    flags: int
    symbols: Dict[str, int]  # dynamic symbol name -> st_info (type in the low 4 bits)


def _bad(msg: str) -> CompileError:
    return CompileError(f"rocm: the linked hsaco is malformed: {msg}")


def read_hsaco(data: bytes) -> Hsaco:
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise _bad("not a little-endian ELF64 file")
    e_type, machine = struct.unpack_from("<HH", data, 16)
    flags, = struct.unpack_from("<I", data, 48)
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    if shentsize != 64 or shoff + shnum * 64 > len(data):
        raise _bad("section headers out of range")
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * 64) for i in range(shnum)]
    symbols: Dict[str, int] = {}
    for _name, sh_type, _fl, _addr, off, size, link, _info, _align, entsize in sections:
        if sh_type != SHT_DYNSYM:
            continue
        if entsize != 24 or off + size > len(data) or link >= shnum:
            raise _bad("dynamic symbol table out of range")
        str_off, str_size = sections[link][4], sections[link][5]
        if str_off + str_size > len(data):
            raise _bad("dynamic string table out of range")
        for k in range(size // 24):
            st_name, st_info = struct.unpack_from("<IB", data, off + k * 24)
            if st_name >= str_size:
                raise _bad("symbol name out of range")
            end = data.find(b"\0", str_off + st_name, str_off + str_size)
            if end < 0:
                raise _bad("unterminated symbol name")
            name = data[str_off + st_name:end].decode("utf-8", "replace")
            if name:
                symbols[name] = st_info
    return Hsaco(e_type, machine, flags, symbols)


def check_hsaco(data: bytes, kernels: Iterable[str]) -> Hsaco:
    """The hsaco must be an AMDGPU shared object exporting each kernel and its descriptor."""
    h = read_hsaco(data)
    if h.e_type != ET_DYN or h.machine != EM_AMDGPU:
        raise _bad(f"e_type {h.e_type}, e_machine {h.machine} (want {ET_DYN}, {EM_AMDGPU})")
    missing = sorted(s for k in kernels for s in (k, f"{k}.kd") if s not in h.symbols)
    if missing:
        raise _bad(f"missing kernel symbols {', '.join(missing)}")
    return h
