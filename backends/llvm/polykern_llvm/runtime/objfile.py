"""The checked structure of a 64-bit little-endian ELF relocatable object, before it is loaded.

:func:`parse_object` reads everything polykern's loader (loader.py) will trust and checks it
first: the header, every section header (type, flags, offset, size, alignment, links),
the symbol table and its string table, and every relocation (section, symbol, type, place).
Damage is an :class:`ArtifactError` naming what is wrong and where; nothing after this point
reads the object without a checked bound. The result also says how the object is laid out in
memory: text (and call trampolines) read+execute, read-only data (and the GOT) read-only,
writable data read+write, each group on its own pages.

What is *not* checked is what the object means: instruction bytes, and where in-range symbol
values, relocation places and addends point. Those are the program, as with a shared library.
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from polykern.errors import ArtifactError

from .elf import ET_REL, SHN_UNDEF, SHT_SYMTAB
from .relocs import RELOCATORS, RF_GOT, RF_STUB, Relocator

__all__ = ["Section", "Symbol", "Rela", "ObjectPlan", "parse_object", "PAGE", "STUB_SIZE", "MAX_IMAGE"]

PAGE = max(4096, mmap.PAGESIZE)  # protection granule: groups start on pages of this host (16/64 KiB on some arm64)
STUB_SIZE = 16
MAX_ALIGN = 4096  # the same verdict on every host, whatever its page size
MAX_IMAGE = 1 << 30

SHT_NULL, SHT_PROGBITS, SHT_STRTAB, SHT_RELA = 0, 1, 3, 4
SHT_NOTE, SHT_NOBITS, SHT_REL = 7, 8, 9
SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY, SHT_GROUP, SHT_SYMTAB_SHNDX = 14, 15, 16, 17, 18
SHT_X86_64_UNWIND = 0x70000001
_LOADABLE_TYPES = (SHT_PROGBITS, SHT_NOBITS, SHT_NOTE, SHT_X86_64_UNWIND)
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS, SHF_COMPRESSED = 0x1, 0x2, 0x4, 0x400, 0x800
SHN_LORESERVE, SHN_ABS, SHN_COMMON = 0xFF00, 0xFFF1, 0xFFF2
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE = 0, 1, 2, 3, 4
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")


@dataclass
class Section:
    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int
    group: int = -1  # 0 text, 1 read-only, 2 writable; -1 not loaded
    image_offset: int = -1

    @property
    def loaded(self) -> bool:
        return self.group >= 0


@dataclass(frozen=True)
class Symbol:
    index: int
    name: str
    type: int
    bind: int
    shndx: int
    value: int
    size: int

    @property
    def external(self) -> bool:
        return self.shndx == SHN_UNDEF and self.index != 0


@dataclass(frozen=True)
class Rela:
    section: int  # the section it patches
    offset: int
    type: int
    symbol: int
    addend: int
    where: int  # byte offset of the entry in the object (for messages)


@dataclass
class ObjectPlan:
    """A checked object and its memory layout (offsets from the image base)."""

    machine: int
    relocator: Relocator
    sections: List[Section]
    symbols: List[Symbol]
    relocations: List[Rela]
    got: Dict[int, int] = field(default_factory=dict)  # symbol index -> image offset of its GOT slot
    stubs: Dict[int, int] = field(default_factory=dict)  # symbol index -> image offset of its trampoline
    got_offset: int = 0
    group_ends: Tuple[int, int, int] = (0, 0, 0)
    size: int = 0  # bytes of the mapping
    content_size: int = 0  # bytes of it that are not zero-filled (NOBITS) at the end

    @property
    def external_names(self) -> Tuple[str, ...]:
        return tuple(sorted({s.name for s in self.symbols if s.external and s.name != "_GLOBAL_OFFSET_TABLE_"}))

    def exported(self) -> Dict[str, Symbol]:
        """Global/weak functions defined in the object, by name."""
        return {s.name: s for s in self.symbols
                if s.bind in (STB_GLOBAL, STB_WEAK) and s.type == STT_FUNC and s.shndx not in (SHN_UNDEF, SHN_ABS)}


def _bad(msg: str, offset: Optional[int] = None):
    raise ArtifactError(f"llvm payload: malformed ELF object: {msg}", offset)


def _cstr(table: bytes, start: int, what: str, where: int) -> str:
    if start >= len(table):
        _bad(f"{what}: name offset {start} is outside its string table ({len(table)} bytes)", where)
    end = table.find(b"\x00", start)
    if end < 0:
        _bad(f"{what}: name is not NUL-terminated", where)
    return table[start:end].decode("utf-8", "backslashreplace")


def _strtab(data: bytes, s: Section, what: str) -> bytes:
    if s.type != SHT_STRTAB or s.size == 0:
        _bad(f"{what} (section {s.index}) is not a string table")
    table = data[s.offset:s.offset + s.size]
    if table[0] != 0 or table[-1] != 0:
        _bad(f"{what} (section {s.index}) does not start and end with NUL", s.offset)
    return table


def _read_header(data: bytes, machine: int):
    if len(data) < _EHDR.size or data[:4] != b"\x7fELF":
        _bad("missing ELF magic or truncated header", 0)
    (ident, e_type, e_machine, e_version, _entry, phoff, shoff, _flags, ehsize, phentsize, phnum,
     shentsize, shnum, shstrndx) = _EHDR.unpack_from(data, 0)
    if ident[4] != 2 or ident[5] != 1:
        _bad(f"only 64-bit little-endian objects load here (class {ident[4]}, data {ident[5]})", 4)
    if ident[6] != 1 or e_version != 1:
        _bad(f"unknown ELF version {ident[6]}/{e_version}", 6)
    if e_type != ET_REL:
        _bad(f"ELF type {e_type} is not a relocatable object (ET_REL)", 16)
    if e_machine != machine:
        _bad(f"ELF machine {e_machine} is not {machine}", 18)
    if ehsize != _EHDR.size:
        _bad(f"ELF header size {ehsize} is not {_EHDR.size}", 52)
    if phnum or phoff:
        _bad(f"a relocatable object has no program headers (offset {phoff}, {phnum} entries)", 32)
    if shentsize != _SHDR.size:
        _bad(f"section header size {shentsize} is not {_SHDR.size}", 58)
    if shnum == 0 or shoff % 8 or shoff < _EHDR.size or shoff + shnum * _SHDR.size > len(data):
        _bad(f"section header table ({shnum} entries at offset {shoff}) is empty, misaligned or outside "
             f"the {len(data)}-byte object", 40)
    if shstrndx == 0 or shstrndx >= shnum:
        _bad(f"section name table index {shstrndx} is not a section (there are {shnum})", 62)
    del phentsize
    return shoff, shnum, shstrndx


def _read_sections(data: bytes, shoff: int, shnum: int, shstrndx: int) -> List[Section]:
    raw = [_SHDR.unpack_from(data, shoff + i * _SHDR.size) for i in range(shnum)]
    if any(raw[0]):
        _bad("section header 0 is not all zeros (extended numbering is not supported)", shoff)
    sections = [Section(i, "", f[1], f[2], *f[4:]) for i, f in enumerate(raw)]
    n = len(data)
    used = [(0, _EHDR.size, "the ELF header"), (shoff, shoff + shnum * _SHDR.size, "the section headers")]
    for s in sections[1:]:
        where = shoff + s.index * _SHDR.size
        if s.link >= shnum:
            _bad(f"section {s.index} links to section {s.link} of {shnum}", where + 40)
        if s.align & (s.align - 1):
            _bad(f"section {s.index} alignment {s.align} is not a power of two", where + 48)
        if s.type not in (SHT_NOBITS, SHT_NULL) and s.size:
            if s.offset > n or s.size > n - s.offset:
                _bad(f"section {s.index} (offset {s.offset}, {s.size} bytes) lies outside the {n}-byte object",
                     where + 24)
            if s.align > 1 and s.offset % s.align:
                _bad(f"section {s.index} offset {s.offset} is not a multiple of its alignment {s.align}",
                     where + 24)
            used.append((s.offset, s.offset + s.size, f"section {s.index}"))
    used.sort()
    for (a0, a1, an), (b0, b1, bn) in zip(used, used[1:]):
        if b0 < a1:
            _bad(f"{bn} (bytes {b0}..{b1}) overlaps {an} (bytes {a0}..{a1})", b0)
    names = _strtab(data, sections[shstrndx], "the section name table")
    for s in sections[1:]:
        s.name = _cstr(names, raw[s.index][0], f"section {s.index}", shoff + s.index * _SHDR.size)
    return sections


def _check_section_kinds(sections: List[Section], shoff: int) -> Section:
    """Checks what each section's type and flags promise; returns the symbol table."""
    symtabs = [s for s in sections if s.type == SHT_SYMTAB]
    if len(symtabs) != 1:
        _bad(f"expected one symbol table, found {len(symtabs)}")
    for s in sections[1:]:
        where = shoff + s.index * _SHDR.size
        named = s.name
        if (named == ".symtab") != (s.type == SHT_SYMTAB) or (named == ".strtab" and s.type != SHT_STRTAB):
            _bad(f"section {s.index} {named!r} has type {s.type}, which its name does not allow", where + 4)
        if named.startswith(".rela") != (s.type == SHT_RELA) or (named.startswith(".rel.") and s.type != SHT_REL):
            _bad(f"section {s.index} {named!r}: relocation name and type {s.type} disagree", where + 4)
        if s.type in (SHT_SYMTAB, SHT_RELA, SHT_REL):
            want = 24 if s.type != SHT_REL else 16
            if s.entsize != want or s.size % want or s.flags & SHF_ALLOC:
                _bad(f"section {s.index} {named!r}: entry size {s.entsize}, size {s.size}, flags {s.flags:#x} "
                     f"are not those of a {'symbol' if s.type == SHT_SYMTAB else 'relocation'} table", where + 8)
        if not s.flags & SHF_ALLOC:
            continue
        if s.type not in _LOADABLE_TYPES:
            what = "constructors/destructors" if s.type in (SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY) \
                else f"type {s.type}"
            _bad(f"section {s.index} {named!r}: loaded section of unsupported {what}", where + 4)
        if s.flags & (SHF_TLS | SHF_COMPRESSED):
            _bad(f"section {s.index} {named!r}: thread-local or compressed sections are not supported", where + 8)
        if s.flags & SHF_WRITE and s.flags & SHF_EXECINSTR:
            _bad(f"section {s.index} {named!r} is both writable and executable", where + 8)
        if s.type == SHT_NOBITS and (s.flags & SHF_EXECINSTR or not s.flags & SHF_WRITE):
            _bad(f"section {s.index} {named!r}: a zero-filled (NOBITS) section must be writable data", where + 4)
        if s.align > MAX_ALIGN or s.size > MAX_IMAGE:
            _bad(f"section {s.index} {named!r}: alignment {s.align} or size {s.size} is unsupported", where + 32)
        s.group = 0 if s.flags & SHF_EXECINSTR else 2 if s.flags & SHF_WRITE else 1
    return symtabs[0]


def _read_symbols(data: bytes, sections: List[Section], symtab: Section) -> List[Symbol]:
    strs = _strtab(data, sections[symtab.link], "the symbol string table")
    count = symtab.size // _SYM.size
    if count == 0 or not 0 < symtab.info <= count:
        _bad(f"symbol table: {count} symbols, first global {symtab.info}", symtab.offset)
    symbols = []
    for i in range(count):
        where = symtab.offset + i * _SYM.size
        name_off, info, other, shndx, value, size = _SYM.unpack_from(data, where)
        if i == 0:
            if any((name_off, info, other, shndx, value, size)):
                _bad("symbol 0 is not all zeros", where)
            symbols.append(Symbol(0, "", 0, 0, 0, 0, 0))
            continue
        name = _cstr(strs, name_off, f"symbol {i}", where)
        typ, bind = info & 0xF, info >> 4
        if bind not in (STB_LOCAL, STB_GLOBAL, STB_WEAK) or (bind == STB_LOCAL) != (i < symtab.info):
            _bad(f"symbol {i} {name!r}: binding {bind} (locals come first: the table says {symtab.info})", where + 4)
        if typ not in (STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE):
            _bad(f"symbol {i} {name!r}: unsupported type {typ} (thread-local, common or indirect)", where + 4)
        if shndx == SHN_UNDEF:
            if bind == STB_LOCAL or value or typ not in (STT_NOTYPE, STT_OBJECT, STT_FUNC) or not name:
                _bad(f"symbol {i} {name!r}: malformed undefined symbol", where)
        elif shndx == SHN_ABS:
            pass
        elif shndx >= len(sections):
            _bad(f"symbol {i} {name!r} is in section {shndx}, but there are {len(sections)}"
                 + (" (special section indices other than ABS are not supported)" if shndx >= SHN_LORESERVE else ""),
                 where + 6)
        else:
            sec = sections[shndx]
            if value > sec.size or size > sec.size - value:
                _bad(f"symbol {i} {name!r} (value {value}, size {size}) lies outside its section {shndx} "
                     f"({sec.size} bytes)", where + 8)
            if typ == STT_FUNC and (not sec.loaded or sec.group != 0):
                _bad(f"function {name!r} is in section {shndx} {sec.name!r}, which is not loaded executable", where + 6)
            if typ == STT_SECTION and value:
                _bad(f"section symbol {i} has value {value}", where + 8)
        if typ == STT_FILE and (shndx != SHN_ABS or bind != STB_LOCAL):
            _bad(f"file symbol {i} {name!r} is not a local absolute symbol", where + 4)
        symbols.append(Symbol(i, name, typ, bind, shndx, value, size))
    return symbols


def _read_relocations(data: bytes, sections: List[Section], symtab: Section, symbols: List[Symbol],
                      relocator: Relocator) -> List[Rela]:
    out: List[Rela] = []
    seen_targets = set()
    referenced = set()
    for s in sections:
        if s.type == SHT_REL:
            _bad(f"section {s.index} {s.name!r}: REL relocations are not supported (RELA expected)")
        if s.type != SHT_RELA:
            continue
        if s.link != symtab.index or not 0 < s.info < len(sections) or s.info == s.index:
            _bad(f"relocation section {s.index} {s.name!r} links symbols {s.link} and patches section {s.info}")
        target = sections[s.info]
        if s.name != ".rela" + target.name or s.info in seen_targets:
            _bad(f"relocation section {s.index} {s.name!r} does not match the section it patches "
                 f"({s.info} {target.name!r})")
        seen_targets.add(s.info)
        sites = []
        for k in range(s.size // _RELA.size):
            where = s.offset + k * _RELA.size
            r_offset, r_info, addend = _RELA.unpack_from(data, where)
            sym, typ = r_info >> 32, r_info & 0xFFFFFFFF
            if sym >= len(symbols):
                _bad(f"relocation {k} of {s.name!r} names symbol {sym} of {len(symbols)}", where + 8)
            referenced.add(sym)
            if not target.loaded:
                continue  # debug information and the like: never applied
            width = relocator.width(typ)
            if width is None:
                _bad(f"relocation {k} of {s.name!r}: unsupported {relocator.name} relocation type {typ}"
                     + (" (absolute 32-bit: build position-independent)" if typ in relocator.abs32 else ""),
                     where + 8)
            if target.type == SHT_NOBITS or r_offset > target.size or width > target.size - r_offset:
                _bad(f"relocation {k} of {s.name!r} patches bytes {r_offset}..{r_offset + width} outside "
                     f"section {target.name!r} ({target.size} bytes)", where)
            if width:
                sites.append((r_offset, width, k, where))
            symbol = symbols[sym]
            if typ == relocator.none or sym == 0:
                _bad(f"relocation {k} of {s.name!r} has type NONE or no symbol", where + 8)
            if target.group == 0 and width > 4:
                _bad(f"relocation {k} of {s.name!r}: {width}-byte relocation type {typ} in code (large code "
                     "model objects are not supported)", where + 8)
            if relocator.flags(typ) & RF_STUB and not (symbol.external or symbol.type == STT_FUNC):
                _bad(f"relocation {k} of {s.name!r}: a call or jump to {symbol.name or 'a symbol'!r}, which is not "
                     "a function", where + 8)
            if symbol.shndx not in (SHN_UNDEF, SHN_ABS) and not sections[symbol.shndx].loaded:
                _bad(f"relocation {k} of {s.name!r} refers to {symbol.name or 'a symbol'!r} in section "
                     f"{symbol.shndx}, which is not loaded", where + 8)
            out.append(Rela(s.info, r_offset, typ, sym, addend, where))
        sites.sort()
        for (a, aw, ak, _), (b, _, bk, bwhere) in zip(sites, sites[1:]):
            if b < a + aw:
                _bad(f"relocations {ak} and {bk} of {s.name!r} patch overlapping bytes ({a} and {b})", bwhere)
    for symbol in symbols:
        if symbol.index in referenced:
            continue
        if symbol.external:
            _bad(f"undefined symbol {symbol.name!r} is never relocated (is a relocation section missing?)")
        if _relocation_only(symbol, sections):
            _bad(f"local label {symbol.name!r} of section {symbol.shndx} is never relocated (is a relocation "
                 "section missing or shortened?)")
    return out


def _relocation_only(symbol: Symbol, sections: List[Section]) -> bool:
    """Whether ``symbol`` is one an assembler writes to the symbol table only for relocations to use: a
    local ``.L`` label (a constant-pool entry of a mergeable section) of a loaded section. One that no
    relocation uses means relocations were lost (an emptied ``.rela.text`` of an object without
    externals), and its code would run unpatched. native/src/elf_check.c checks the same."""
    return (symbol.bind == STB_LOCAL and symbol.type == STT_NOTYPE and symbol.name.startswith(".L")
            and 0 < symbol.shndx < len(sections) and sections[symbol.shndx].loaded)


def _layout(plan: ObjectPlan) -> None:
    def up(v: int, a: int) -> int:
        return (v + a - 1) & ~(a - 1)

    for r in plan.relocations:
        flags = plan.relocator.flags(r.type)
        if flags & RF_GOT and r.symbol not in plan.got:
            plan.got[r.symbol] = len(plan.got)
        if flags & RF_STUB and plan.symbols[r.symbol].external and r.symbol not in plan.stubs:
            plan.stubs[r.symbol] = len(plan.stubs)
    off, ends = 0, []
    for group in range(3):
        for s in plan.sections:
            if s.group == group:
                off = up(off, max(s.align, 1))
                s.image_offset = off
                off += s.size
        if group == 0:
            off = up(off, STUB_SIZE)
            plan.stubs = {k: off + v * STUB_SIZE for k, v in plan.stubs.items()}
            off += len(plan.stubs) * STUB_SIZE
        elif group == 1:
            off = up(off, 8)
            plan.got_offset = off
            plan.got = {k: off + v * 8 for k, v in plan.got.items()}
            off += len(plan.got) * 8
        off = up(off, PAGE)
        ends.append(off)
        if off > MAX_IMAGE:
            _bad(f"the image would be larger than {MAX_IMAGE >> 20} MiB")
    plan.group_ends = (ends[0], ends[1], ends[2])
    plan.size = max(off, PAGE)
    plan.content_size = max([plan.got_offset + 8 * len(plan.got)]
                            + [s.image_offset + s.size for s in plan.sections if s.loaded and s.type != SHT_NOBITS])


def parse_object(data: bytes, machine: int) -> ObjectPlan:
    """Check ``data`` as an ELF relocatable object for ``machine`` (e_machine) and lay it out."""
    relocator = RELOCATORS.get(machine)
    if relocator is None:
        raise ArtifactError(f"llvm payload: polykern cannot load objects for ELF machine {machine}")
    shoff, shnum, shstrndx = _read_header(data, machine)
    sections = _read_sections(data, shoff, shnum, shstrndx)
    symtab = _check_section_kinds(sections, shoff)
    symbols = _read_symbols(data, sections, symtab)
    relocations = _read_relocations(data, sections, symtab, symbols, relocator)
    plan = ObjectPlan(machine, relocator, sections, symbols, relocations)
    _layout(plan)
    return plan
