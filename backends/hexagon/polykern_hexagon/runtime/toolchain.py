"""The host tools of the emulated Hexagon runtime, and the harness objects built with them.

``find_tools()`` locates ``qemu-hexagon-static`` (or ``qemu-hexagon``; ``POLYKERN_HEXAGON_QEMU``
names another), ``clang`` and ``ld.lld``, or raises :class:`BackendUnavailableError` naming the
Debian packages to install. ``support_objects()`` compiles ``harness.c`` and ``builtins.c`` (this
folder) freestanding for Hexagon with clang, once per user: the objects are cached under
``$POLYKERN_CACHE_DIR`` (default ``$XDG_CACHE_HOME/polykern`` or ``~/.cache/polykern``) in a folder
named by a hash of the sources, the clang version and the flags, written atomically so that
concurrent processes never see half a file.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple

from polykern.cache import cache_root
from polykern.errors import BackendUnavailableError, CompileError

__all__ = ["Tools", "find_tools", "support_objects", "cache_root", "QEMU_CPU", "HARNESS_CPU", "DEBIAN_PACKAGES",
           "SOURCES"]

HERE = Path(__file__).resolve().parent
SOURCES = ("harness.c", "builtins.c")
#: qemu-hexagon 7.x emulates the V67 scalar core; objects for v67 and later run on it.
QEMU_CPU = "v67"
HARNESS_CPU = "hexagonv67"
DEBIAN_PACKAGES = "qemu-user-static clang lld"
CFLAGS = ("--target=hexagon-unknown-elf", f"-mcpu={HARNESS_CPU}", "-O2", "-G0", "-ffreestanding", "-fno-builtin",
          "-nostdlib", "-fno-pic", "-std=c99", "-Wall", "-Werror")
QEMU_ENV = "POLYKERN_HEXAGON_QEMU"


@dataclass(frozen=True)
class Tools:
    qemu: str
    clang: str
    lld: str


def _which(names) -> Optional[str]:
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return None


def find_tools() -> Tools:
    """The emulator, compiler and linker, or BackendUnavailableError saying what to install."""
    override = os.environ.get(QEMU_ENV, "")
    qemu = (shutil.which(override) if override else None) or (None if override else
                                                              _which(("qemu-hexagon-static", "qemu-hexagon")))
    clang = _which(("clang", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"))
    lld = _which(("ld.lld", "ld.lld-18", "ld.lld-17", "ld.lld-16", "ld.lld-15", "ld.lld-14"))
    missing = []
    if not qemu:
        missing.append(f"{QEMU_ENV}={override!r} is not an executable" if override
                       else "qemu-hexagon-static (Debian/Ubuntu package qemu-user-static)")
    if not clang:
        missing.append("clang (package clang)")
    if not lld:
        missing.append("ld.lld (package lld)")
    if missing:
        raise BackendUnavailableError(
            "the Hexagon runtime runs kernels under QEMU user-mode emulation and needs "
            + ", ".join(missing) + f"; on Debian/Ubuntu: apt-get install {DEBIAN_PACKAGES}")
    return Tools(qemu, clang, lld)


_lock = threading.Lock()
_objects: Dict[Tools, Tuple[str, ...]] = {}


def _clang_version(clang: str) -> str:
    r = subprocess.run([clang, "--version"], capture_output=True, text=True)
    return r.stdout


def _compile(tools: Tools, src: Path, out: Path) -> None:
    tmp = out.with_name(f".{out.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    r = subprocess.run([tools.clang, *CFLAGS, "-c", str(src), "-o", str(tmp)], capture_output=True, text=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise CompileError(f"hexagon runtime: clang could not compile {src.name} for the harness", log=r.stderr)
    os.replace(tmp, out)


def support_objects(tools: Tools) -> Tuple[str, ...]:
    """Paths of the compiled harness and builtins objects (built on first use, cached per user)."""
    with _lock:
        if tools in _objects:
            return _objects[tools]
        h = hashlib.sha256()
        for name in SOURCES:
            h.update(name.encode() + b"\0" + (HERE / name).read_bytes() + b"\0")
        h.update(" ".join(CFLAGS).encode() + _clang_version(tools.clang).encode())
        key = h.hexdigest()[:20]
        folder = cache_root() / "hexagon" / key
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / f".w{os.getpid()}"
            probe.touch()
            probe.unlink()
        except OSError:  # an unwritable cache: build into a private folder for this process
            folder = Path(tempfile.mkdtemp(prefix="polykern-hexagon-"))
        outs = []
        for name in SOURCES:
            out = folder / (Path(name).stem + ".o")
            if not out.exists():
                _compile(tools, HERE / name, out)
            outs.append(str(out))
        _objects[tools] = tuple(outs)
        return _objects[tools]
