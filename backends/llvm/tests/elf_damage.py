"""A generated corpus of ELF-structure damage to an llvm module's object.

Every field of the ELF header, of every section header, of every symbol and of every
relocation entry is set to a list of hostile values (0, 1, +-1, all ones, the sign bit, and
for index fields every valid index). Values that only change *what the program means* are left
out, because no structural check can tell them from a different program (they choose which
instruction, constant or function is used, as instruction bytes do): an in-range symbol value or
relocation place, an addend, a data symbol moved to another loaded section, a relocation naming
another symbol of the same kind (data or code for data, function for function), or one GOT-relative
relocation type swapped for another of the same width. Out-of-range and wrong-kind values of those
fields are in the corpus.

``mutants(obj)`` yields ``(label, offset, size, value)``; ``apply(obj, m)`` returns the damaged
bytes. The artifact's CRC is recomputed by the test, so only the structural checks stand
between the damage and the loader.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterator, List, Tuple

import polykern as pk
from polykern import Buffer, f16, f32, f64, i32

Mutant = Tuple[str, int, int, int]

_EHDR = [("e_ident.class", 4, 1), ("e_ident.data", 5, 1), ("e_ident.version", 6, 1), ("e_ident.osabi", 7, 1),
         ("e_ident.abiversion", 8, 1), ("e_type", 16, 2), ("e_machine", 18, 2), ("e_version", 20, 4),
         ("e_entry", 24, 8), ("e_phoff", 32, 8), ("e_shoff", 40, 8), ("e_flags", 48, 4), ("e_ehsize", 52, 2),
         ("e_phentsize", 54, 2), ("e_phnum", 56, 2), ("e_shentsize", 58, 2), ("e_shnum", 60, 2),
         ("e_shstrndx", 62, 2)]
_SHDR = [("sh_name", 0, 4), ("sh_type", 4, 4), ("sh_flags", 8, 8), ("sh_addr", 16, 8), ("sh_offset", 24, 8),
         ("sh_size", 32, 8), ("sh_link", 40, 4), ("sh_info", 44, 4), ("sh_addralign", 48, 8),
         ("sh_entsize", 56, 8)]
_SYM = [("st_name", 0, 4), ("st_info", 4, 1), ("st_other", 5, 1), ("st_shndx", 6, 2), ("st_value", 8, 8),
        ("st_size", 16, 8)]
_RELA = [("r_offset", 0, 8), ("r_type", 8, 4), ("r_sym", 12, 4), ("r_addend", 16, 8)]
_FLAG_BITS = (0x1, 0x2, 0x4, 0x10, 0x20, 0x40, 0x80, 0x200, 0x400, 0x800)
_TYPES = (0, 1, 2, 3, 4, 7, 8, 9, 11, 14, 17, 18, 0x70000001, 0x6FFF4C03)
_X86_RELOCS = tuple(range(0, 44))
_X86_SAME_WIDTH_GOT_FORMS = (9, 26, 41, 42)  # GOTPCREL, GOTPC32, GOTPCRELX, REX_GOTPCRELX: semantic swaps


# The two kernels whose object the corpus damages: a libm call (f64 exp, through a trampoline; f32
# exp is inline arithmetic on the CPU, codegen/cpu/vector_exp.py) and the object's own __truncsfhf2 (f16).
@pk.kernel
def exp_axpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + f32(pk.exp(f64(y[i] * 0.25))) * 0.5


@pk.kernel
def inline_exp_axpy(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    """No external symbol (f32 exp is inline arithmetic): only its constant-pool labels are relocated."""
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i] + pk.exp(y[i] * 0.25) * 0.5


def empty_rela_text(art: bytes, obj: bytes) -> bytes:
    """``art`` (holding ``obj``) with the first relocation section's size set to 0, checksum redone."""
    shoff, = struct.unpack_from("<Q", obj, 40)
    shnum, = struct.unpack_from("<H", obj, 60)
    rela = next(i for i in range(shnum) if struct.unpack_from("<I", obj, shoff + 64 * i + 4)[0] == 4)
    off = art.find(obj) + shoff + 64 * rela + 32  # sh_size
    bad = art[:off] + bytes(8) + art[off + 8:]
    return bad[:-4] + struct.pack("<I", zlib.crc32(bad[:-4]))


@pk.kernel
def half_round(n: i32, x: Buffer[f32, "readonly"], y: Buffer[f16]):
    i = pk.global_id(0)
    if i < n:
        y[i] = f16(x[i] * 3.0 + 0.1)


def _kind(info: int, shndx: int) -> str:
    t = info & 0xF
    return "ext" if shndx == 0 else "func" if t == 2 else "file" if t == 4 else "data"


def _get(obj: bytes, off: int, size: int) -> int:
    return int.from_bytes(obj[off:off + size], "little")


def _generic(v: int, size: int) -> List[int]:
    top = (1 << (8 * size)) - 1
    return [0, 1, (v + 1) & top, (v - 1) & top, top, top >> 1, v ^ (1 << (8 * size - 1))]


def mutants(obj: bytes) -> Iterator[Mutant]:
    shoff, = struct.unpack_from("<Q", obj, 40)
    shnum, = struct.unpack_from("<H", obj, 60)
    secs = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + 64 * i) for i in range(shnum)]
    for name, off, size in _EHDR:
        v = _get(obj, off, size)
        extra = list(range(shnum + 1)) if name == "e_shstrndx" else [2, 3] if name.startswith("e_ident.") else []
        for value in dict.fromkeys(_generic(v, size) + extra):
            if value != v:
                yield (f"ehdr.{name}={value:#x}", off, size, value)
    symtab = next(i for i, s in enumerate(secs) if s[1] == 2)
    for i, sec in enumerate(secs):
        base = shoff + 64 * i
        for name, off, size in _SHDR:
            v = _get(obj, base + off, size)
            extra: List[int] = []
            if name in ("sh_link", "sh_info"):
                extra = list(range(shnum + 1))
            elif name == "sh_type":
                extra = list(_TYPES)
            elif name == "sh_flags":
                extra = [v ^ b for b in _FLAG_BITS]
            elif name == "sh_addralign":
                extra = [2, 3, 8, 32, 4096, 8192]
            elif name == "sh_size":
                extra = [sec[5] + 16, len(obj)]
            for value in dict.fromkeys(_generic(v, size) + extra):
                if value != v:
                    yield (f"shdr[{i}].{name}={value:#x}", base + off, size, value)
    _, _, _, _, sym_off, sym_size, _, _, _, _ = secs[symtab]
    nsyms = sym_size // 24
    kinds = [_kind(obj[sym_off + 24 * k + 4], _get(obj, sym_off + 24 * k + 6, 2)) for k in range(nsyms)]
    loaded = {i for i, sec in enumerate(secs) if sec[2] & 2}
    for k in range(sym_size // 24):
        base = sym_off + 24 * k
        shndx = _get(obj, base + 6, 2)
        room = secs[shndx][5] if 0 < shndx < shnum else None
        for name, off, size in _SYM:
            v = _get(obj, base + off, size)
            values = _generic(v, size)
            if name == "st_shndx":
                values += list(range(shnum + 1)) + [0xFFF1, 0xFFF2, 0xFF00, 0xFFFF]
                if kinds[k] == "data":  # a data symbol in another loaded section: semantic
                    values = [x for x in values if x not in loaded]
            elif name == "st_info":
                values += [(b << 4) | t for b in (0, 1, 2, 3) for t in (0, 1, 2, 3, 4, 5, 6, 10)]
            elif name == "st_value":  # in-range values choose which byte is meant: semantic, left out
                values = [x for x in values if room is None or x > room] + ([room + 1] if room is not None else [])
            for value in dict.fromkeys(values):
                if value != v:
                    yield (f"sym[{k}].{name}={value:#x}", base + off, size, value)
    for i, sec in enumerate(secs):
        if sec[1] != 4:
            continue
        target = secs[sec[7]]
        for k in range(sec[5] // 24):
            base = sec[4] + 24 * k
            for name, off, size in _RELA:
                v = _get(obj, base + off, size)
                values = _generic(v, size)
                if name == "r_offset":  # in-range places are semantic
                    values = [x for x in values if x + 4 > target[5]] + [target[5], target[5] - 2]
                elif name == "r_addend":  # only addends no image can reach
                    values = [1 << 40, (-(1 << 40)) & ((1 << 64) - 1), (1 << 63) - 1, 1 << 63]
                elif name == "r_type":
                    values = [x for x in values + list(_X86_RELOCS) if x not in _X86_SAME_WIDTH_GOT_FORMS]
                elif name == "r_sym":  # another symbol of the same kind is semantic
                    same = {"data": ("data", "func"), "func": ("func", "ext"), "ext": ("func", "ext")}.get(kinds[v], ())
                    values = [x for x in values + list(range(nsyms + 1)) if x >= nsyms or kinds[x] not in same]
                for value in dict.fromkeys(values):
                    if value != v:
                        yield (f"rela[{i}][{k}].{name}={value:#x}", base + off, size, value)


def apply(obj: bytes, m: Mutant) -> bytes:
    _, off, size, value = m
    return obj[:off] + value.to_bytes(size, "little") + obj[off + size:]
