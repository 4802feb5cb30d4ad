"""polykern's own loader of relocatable ELF objects into this process (no JIT linker).

The object is checked and laid out by objfile.py; this module maps one private anonymous
region for it, builds the image (sections, trampolines for calls into libm/libc, GOT slots),
applies the relocations (relocs.py), copies it in and sets page protections: text read+execute,
read-only data and GOT read-only, writable data read+write (never writable and executable).
External symbols are looked up with ``dlsym`` in the process, then in libm and libgcc_s.

Every failure is an :class:`ArtifactError` (a malformed object or a relocation that does not
fit) or a :class:`DeviceError` (the operating system refused memory): nothing here can abort
the process, whatever the object and wherever the process's libraries are mapped. The
mapping is released when the :class:`Image` is garbage-collected.
"""
from __future__ import annotations

import ctypes
import mmap
import platform
import threading
import weakref
from typing import Dict, Optional, Sequence

from polykern.errors import ArtifactError, DeviceError

from .objfile import SHT_NOBITS, SHN_ABS, SHN_UNDEF, ObjectPlan

__all__ = ["Image", "load_image", "build_image", "check_relocations", "resolve_external", "unresolved"]

_libc = ctypes.CDLL(None, use_errno=True)
_mmap = _libc.mmap
_mmap.restype, _mmap.argtypes = ctypes.c_void_p, (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                                  ctypes.c_int, ctypes.c_long)
_munmap = _libc.munmap
_munmap.restype, _munmap.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_size_t)
_mprotect = _libc.mprotect
_mprotect.restype, _mprotect.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_dlsym = _libc.dlsym
_dlsym.restype, _dlsym.argtypes = ctypes.c_void_p, (ctypes.c_void_p, ctypes.c_char_p)
_MAP_FAILED = ctypes.c_void_p(-1).value
_OS_PAGE = mmap.PAGESIZE
_EXTRA_LIBS = ("libm.so.6", "libgcc_s.so.1")
_handles: list = []
_resolved: Dict[str, int] = {}
_lock = threading.Lock()


def resolve_external(name: str) -> int:
    """The address of ``name`` in this process (then libm, libgcc_s), or 0."""
    with _lock:
        addr = _resolved.get(name)
        if addr is not None:
            return addr
        if not _handles:
            for lib in _EXTRA_LIBS:
                try:
                    _handles.append(ctypes.CDLL(lib))  # kept open: kernels keep calling into them
                except OSError:
                    continue
        key = name.encode("utf-8", "surrogateescape")
        addr = _dlsym(None, key) or 0
        for h in _handles:
            if addr:
                break
            addr = _dlsym(h._handle, key) or 0
        _resolved[name] = addr
        return addr


def unresolved(names: Sequence[str]) -> list:
    return [n for n in names if not resolve_external(n)]


def _up(v: int, a: int) -> int:
    return (v + a - 1) & ~(a - 1)


class Image:
    """An object loaded into this process; ``symbols`` maps exported function names to addresses."""

    def __init__(self, base: int, size: int, symbols: Dict[str, int]):
        self.base = base
        self.size = size
        self.symbols = symbols
        self._release = weakref.finalize(self, _munmap, base, size)
        self._release.atexit = False  # at exit a daemon worker may still be inside the code

    def close(self) -> None:
        """Unmap now (only when nothing can call into the image any more)."""
        self._release()


def build_image(plan: ObjectPlan, data: bytes, base: int, externals: Dict[int, int]) -> bytearray:
    """The image bytes for ``base``: sections, trampolines, GOT, relocations applied."""
    img = bytearray(plan.content_size)  # the rest of the mapping is zero-filled already
    for s in plan.sections:
        if s.loaded and s.type != SHT_NOBITS and s.size:
            img[s.image_offset:s.image_offset + s.size] = data[s.offset:s.offset + s.size]
    addr = {}
    for sym in plan.symbols:
        if sym.shndx == SHN_UNDEF:
            addr[sym.index] = externals.get(sym.index, 0)
        elif sym.shndx == SHN_ABS:
            addr[sym.index] = sym.value
        elif plan.sections[sym.shndx].loaded:
            addr[sym.index] = base + plan.sections[sym.shndx].image_offset + sym.value
    for idx, off in plan.stubs.items():
        img[off:off + 16] = plan.relocator.stub(addr[idx])
    for idx, off in plan.got.items():
        img[off:off + 8] = addr[idx].to_bytes(8, "little")
    got = base + plan.got_offset
    relocator = plan.relocator
    for r in plan.relocations:
        target = plan.sections[r.section]
        pos = target.image_offset + r.offset
        slot = plan.got.get(r.symbol)
        stub = plan.stubs.get(r.symbol)
        why = relocator.apply(img, pos, r.type, addr[r.symbol], r.addend, base + pos,
                              None if slot is None else base + slot, got, None if stub is None else base + stub)
        if why:
            name = plan.symbols[r.symbol].name or f"symbol {r.symbol}"
            raise ArtifactError(f"llvm payload: {relocator.name} relocation type {r.type} against {name!r} in "
                                f"{target.name!r}: {why}", r.where)
    return img


def check_relocations(plan: ObjectPlan, data: bytes) -> None:
    """Apply every relocation to a scratch image placed far from everything it calls: a
    relocation that fits only for some placement of the image or of the libraries is an
    :class:`ArtifactError` now (at load), and the real mapping cannot fail on range later
    (distances inside the image do not depend on where it is mapped)."""
    base, far = 1 << 32, 1 << 46
    externals = {s.index: (base + plan.got_offset if s.name == "_GLOBAL_OFFSET_TABLE_" else far + 16 * s.index)
                 for s in plan.symbols if s.external}
    build_image(plan, data, base, externals)


def _protect(addr: int, size: int, prot: int) -> None:
    if size and _mprotect(addr, size, prot) != 0:
        raise DeviceError(f"CPU runtime: mprotect({prot}) of the loaded kernel code failed "
                          f"(errno {ctypes.get_errno()}); is W^X enforced differently here?")


def load_image(plan: ObjectPlan, data: bytes, wanted: Sequence[str]) -> Image:
    """Map and relocate a checked object; ``wanted`` names the functions to export."""
    externals = {}
    for sym in plan.symbols:
        if sym.external and sym.name == "_GLOBAL_OFFSET_TABLE_":
            continue
        if sym.external:
            externals[sym.index] = resolve_external(sym.name)
            if not externals[sym.index]:
                raise DeviceError(f"CPU runtime: the object needs symbol {sym.name!r}, which this process, libm "
                                  "and libgcc_s do not provide")
    exported = plan.exported()
    offsets = {}
    for name in wanted:
        sym = exported.get(name)
        if sym is None:
            raise ArtifactError(f"llvm payload: the object does not define function {name!r}")
        offsets[name] = plan.sections[sym.shndx].image_offset + sym.value
    size = _up(plan.size, _OS_PAGE)
    base = _mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base is None or base == _MAP_FAILED:
        raise DeviceError(f"CPU runtime: cannot map {size} bytes for a kernel module (errno {ctypes.get_errno()})")
    try:
        for sym in plan.symbols:  # _GLOBAL_OFFSET_TABLE_ is the image's own GOT
            if sym.external and sym.name == "_GLOBAL_OFFSET_TABLE_":
                externals[sym.index] = base + plan.got_offset
        img = build_image(plan, data, base, externals)
        ctypes.memmove(base, bytes(img), len(img))
        text_end, ro_end, _ = plan.group_ends
        _protect(base, text_end, mmap.PROT_READ | mmap.PROT_EXEC)
        _protect(base + text_end, ro_end - text_end, mmap.PROT_READ)
        if platform.machine().lower() in ("aarch64", "arm64") and text_end:
            _clear_cache(base, base + text_end)
    except BaseException:
        _munmap(base, size)
        raise
    return Image(base, size, {name: base + off for name, off in offsets.items()})


def _clear_cache(begin: int, end: int) -> None:
    fn: Optional[int] = resolve_external("__clear_cache") or resolve_external("__aarch64_sync_cache_range")
    if not fn:
        raise DeviceError("CPU runtime: no __clear_cache in this process to flush the instruction cache")
    ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(fn)(begin, end)
