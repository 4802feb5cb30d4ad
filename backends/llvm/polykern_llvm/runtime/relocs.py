"""RELA relocations polykern's object loader applies, per machine (x86-64 and AArch64).

Names as in the psABIs: S the symbol's address, A the addend, P the place patched, G the
address of the symbol's GOT slot, Page(x) = x & ~0xFFF. Calls to functions outside the
image go through a trampoline (stub) inside it, and GOT loads through a slot inside it, so
every 32-bit (or narrower) field the object asks for points inside the image, which is at
most 1 GiB: nothing depends on where the process's libraries happen to be mapped.

``apply`` patches a bytearray and returns None, or why the value does not fit (the loader
turns that into an :class:`ArtifactError`). Absolute 32-bit relocations are not supported
(they need the image in the low 2 GiB): build position-independent, as polykern does.
"""
from __future__ import annotations

import struct
from typing import Dict, FrozenSet, Optional

from .elf import EM_AARCH64, EM_X86_64

__all__ = ["Relocator", "RELOCATORS", "RF_GOT", "RF_STUB", "X86_64", "AARCH64"]

RF_GOT = 1  # needs a GOT slot for its symbol
RF_STUB = 2  # a call or jump: goes through a trampoline when the target is outside the image

_U32, _I32, _U64 = struct.Struct("<I"), struct.Struct("<i"), struct.Struct("<Q")
_MASK64 = (1 << 64) - 1


def _s64(v: int) -> int:
    v &= _MASK64
    return v - (1 << 64) if v >> 63 else v


def _fits(v: int, bits: int) -> bool:
    return -(1 << (bits - 1)) <= v < (1 << (bits - 1))


class Relocator:
    """The relocation types of one machine: ``width`` (bytes patched, None = unsupported),
    ``flags`` (RF_GOT/RF_STUB), ``apply`` and the trampoline ``stub``."""

    name = ""
    none = 0
    abs32: FrozenSet[int] = frozenset()
    _widths: Dict[int, int] = {}
    _flags: Dict[int, int] = {}

    def width(self, typ: int) -> Optional[int]:
        return self._widths.get(typ)

    def flags(self, typ: int) -> int:
        return self._flags.get(typ, 0)

    def apply(self, buf: bytearray, pos: int, typ: int, S: int, A: int, P: int, G: Optional[int],
              got: int, stub: Optional[int]) -> Optional[str]:
        raise NotImplementedError

    def stub(self, target: int) -> bytes:
        raise NotImplementedError


class X86_64(Relocator):
    name = "x86_64"
    NONE, R64, PC32, PLT32, GOTPCREL, PC64, GOTOFF64, GOTPC32, GOTPC64, GOTPCRELX, REX_GOTPCRELX = \
        0, 1, 2, 4, 9, 24, 25, 26, 29, 41, 42
    abs32 = frozenset((10, 11))  # R_X86_64_32, R_X86_64_32S
    _widths = {NONE: 0, R64: 8, PC64: 8, GOTOFF64: 8, GOTPC64: 8,
               PC32: 4, PLT32: 4, GOTPCREL: 4, GOTPCRELX: 4, REX_GOTPCRELX: 4, GOTPC32: 4}
    _flags = {PLT32: RF_STUB, GOTPCREL: RF_GOT, GOTPCRELX: RF_GOT, REX_GOTPCRELX: RF_GOT}

    def apply(self, buf, pos, typ, S, A, P, G, got, stub):
        if typ == self.NONE:
            return None
        if typ == self.R64:
            v = S + A
        elif typ == self.PC64:
            v = S + A - P
        elif typ == self.GOTOFF64:
            v = S + A - got
        elif typ == self.GOTPC64:
            v = got + A - P
        else:
            if typ == self.PLT32 and stub is not None:
                S = stub
            elif typ in (self.GOTPCREL, self.GOTPCRELX, self.REX_GOTPCRELX):
                S = G  # type: ignore[assignment]
            elif typ == self.GOTPC32:
                S = got
            v = _s64(S + A - P)
            if not _fits(v, 32):
                return ("target is further than +-2 GiB (an address outside the image: "
                        "build position-independent)")
            _I32.pack_into(buf, pos, v)
            return None
        _U64.pack_into(buf, pos, v & _MASK64)
        return None

    def stub(self, target: int) -> bytes:
        return b"\xff\x25\x00\x00\x00\x00" + _U64.pack(target) + b"\xcc\xcc"  # jmp *0(%rip); .quad target


class AArch64(Relocator):
    name = "aarch64"
    NONE, ABS64, ABS32, PREL64, PREL32 = 0, 257, 258, 260, 261
    MOVW = {263: 0, 264: 0, 265: 16, 266: 16, 267: 32, 268: 32, 269: 48}  # MOVW_UABS_G0..G3: shift
    ADR_PREL_LO21, ADR_PREL_PG_HI21, ADR_PREL_PG_HI21_NC, ADD_ABS_LO12_NC = 274, 275, 276, 277
    LDST_LO12 = {278: 0, 284: 1, 285: 2, 286: 3, 299: 4}  # LDST8/16/32/64/128_ABS_LO12_NC: scale
    TSTBR14, CONDBR19, JUMP26, CALL26, ADR_GOT_PAGE, LD64_GOT_LO12_NC = 279, 280, 282, 283, 311, 312
    abs32 = frozenset((ABS32,))
    _widths = {NONE: 0, ABS64: 8, PREL64: 8, PREL32: 4, ADR_PREL_LO21: 4, ADR_PREL_PG_HI21: 4,
               ADR_PREL_PG_HI21_NC: 4, ADD_ABS_LO12_NC: 4, TSTBR14: 4, CONDBR19: 4, JUMP26: 4, CALL26: 4,
               ADR_GOT_PAGE: 4, LD64_GOT_LO12_NC: 4, **{t: 4 for t in MOVW}, **{t: 4 for t in LDST_LO12}}
    _flags = {JUMP26: RF_STUB, CALL26: RF_STUB, ADR_GOT_PAGE: RF_GOT, LD64_GOT_LO12_NC: RF_GOT}

    @staticmethod
    def _field(buf, pos, value, shift, bits):
        mask = ((1 << bits) - 1) << shift
        insn = _U32.unpack_from(buf, pos)[0]
        _U32.pack_into(buf, pos, (insn & ~mask & 0xFFFFFFFF) | ((value << shift) & mask))

    @staticmethod
    def _adr(buf, pos, imm21):
        insn = _U32.unpack_from(buf, pos)[0]
        insn &= ~((3 << 29) | (0x7FFFF << 5)) & 0xFFFFFFFF
        insn |= ((imm21 & 3) << 29) | (((imm21 >> 2) & 0x7FFFF) << 5)
        _U32.pack_into(buf, pos, insn)

    def apply(self, buf, pos, typ, S, A, P, G, got, stub):
        X = (S + A) & _MASK64
        if typ == self.NONE:
            return None
        if typ == self.ABS64:
            _U64.pack_into(buf, pos, X)
        elif typ == self.PREL64:
            _U64.pack_into(buf, pos, (X - P) & _MASK64)
        elif typ == self.PREL32:
            v = _s64(X - P)
            if not -(1 << 31) <= v < (1 << 32):
                return "target is further than +-2 GiB"
            _U32.pack_into(buf, pos, v & 0xFFFFFFFF)
        elif typ in self.MOVW:
            shift = self.MOVW[typ]
            if typ in (263, 265, 267) and X >> (shift + 16):
                return "value does not fit the MOVW group"
            self._field(buf, pos, (X >> shift) & 0xFFFF, 5, 16)
        elif typ == self.ADR_PREL_LO21:
            v = _s64(X - P)
            if not _fits(v, 21):
                return "target is further than +-1 MiB"
            self._adr(buf, pos, v)
        elif typ in (self.ADR_PREL_PG_HI21, self.ADR_PREL_PG_HI21_NC, self.ADR_GOT_PAGE):
            base = G if typ == self.ADR_GOT_PAGE else X
            v = _s64((base & ~0xFFF) - (P & ~0xFFF)) >> 12  # type: ignore[operator]
            if typ != self.ADR_PREL_PG_HI21_NC and not _fits(v, 21):
                return "target page is further than +-4 GiB"
            self._adr(buf, pos, v)
        elif typ == self.LD64_GOT_LO12_NC:
            self._field(buf, pos, (G & 0xFFF) >> 3, 10, 12)  # type: ignore[operator]
        elif typ == self.ADD_ABS_LO12_NC:
            self._field(buf, pos, X & 0xFFF, 10, 12)
        elif typ in self.LDST_LO12:
            self._field(buf, pos, (X & 0xFFF) >> self.LDST_LO12[typ], 10, 12)
        elif typ in (self.TSTBR14, self.CONDBR19):
            bits = 16 if typ == self.TSTBR14 else 21
            v = _s64(X - P)
            if not _fits(v, bits) or v & 3:
                return "branch target out of range"
            self._field(buf, pos, (v >> 2) & ((1 << (bits - 2)) - 1), 5, bits - 2)
        else:  # JUMP26, CALL26
            if stub is not None:
                X = (stub + A) & _MASK64
            v = _s64(X - P)
            if not _fits(v, 28) or v & 3:
                return "branch target is further than +-128 MiB"
            self._field(buf, pos, (v >> 2) & 0x3FFFFFF, 0, 26)
        return None

    def stub(self, target: int) -> bytes:
        return _U32.pack(0x58000050) + _U32.pack(0xD61F0200) + _U64.pack(target)  # ldr x16, #8; br x16


RELOCATORS: Dict[int, Relocator] = {EM_X86_64: X86_64(), EM_AARCH64: AArch64()}
