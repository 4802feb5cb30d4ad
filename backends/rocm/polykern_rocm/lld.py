"""Linking an AMDGPU relocatable object into an hsaco (an ELF shared object) with ld.lld.

The HIP runtime loads only linked code objects, so the codegen needs ``ld.lld``. Candidates, in
order: ``$POLYKERN_LD_LLD`` (a path; when set, nothing else is tried), ``ld.lld`` on PATH, then
``ld.lld-NN`` on PATH and ``/usr/lib/llvm-NN/bin/ld.lld`` by descending NN. A linker that rejects
the object's code object version (ld.lld 14 knows only v4) is skipped for the next one; when none
links, :class:`CompileError` says what to install.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from typing import List, Optional, Tuple

from polykern.build_cache import files_identity
from polykern.codegen.llvm_target import cache_identity
from polykern.errors import CompileError

ENV = "POLYKERN_LD_LLD"
INSTALL_HINT = ("install LLVM's linker: Debian/Ubuntu `apt-get install lld` (ld.lld 14 links code object v4; "
                "`lld-19` or newer also v5 and v6), or set POLYKERN_LD_LLD to an ld.lld binary")


def _version_key(path: str) -> int:
    m = re.search(r"(?:ld\.lld-|llvm-)(\d+)", path)
    return int(m.group(1)) if m else 0


def candidates() -> List[str]:
    """ld.lld binaries to try, best first (see the module docstring)."""
    explicit = os.environ.get(ENV)
    if explicit:
        return [explicit]
    found: List[str] = []
    plain = shutil.which("ld.lld")
    if plain:
        found.append(plain)
    versioned = set()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        versioned.update(p for p in glob.glob(os.path.join(d or ".", "ld.lld-[0-9]*")) if os.access(p, os.X_OK))
    versioned.update(p for p in glob.glob("/usr/lib/llvm-[0-9]*/bin/ld.lld") if os.access(p, os.X_OK))
    for p in sorted(versioned, key=lambda p: (-_version_key(p), p)):
        if os.path.realpath(p) not in {os.path.realpath(f) for f in found}:
            found.append(p)
    return found


def identity(target=None) -> str:
    """The ld.lld binaries :func:`link_hsaco` may run, as files, and LLVM (``target.cache_key.rocm``, the
    compile cache)."""
    return f"{cache_identity(target)}\n{ENV}={os.environ.get(ENV, '')}\n" + files_identity(candidates())


def link_hsaco(obj: bytes, linkers: Optional[List[str]] = None) -> Tuple[bytes, str]:
    """(hsaco bytes, the linker used) for one AMDGPU object; :class:`CompileError` if none links."""
    linkers = candidates() if linkers is None else linkers
    if not linkers:
        raise CompileError(f"rocm: no ld.lld found to link the AMDGPU code object into an hsaco; {INSTALL_HINT}")
    failures = []
    with tempfile.TemporaryDirectory(prefix="polykern-rocm-") as d:
        src, out = os.path.join(d, "kernels.o"), os.path.join(d, "kernels.hsaco")
        with open(src, "wb") as fh:
            fh.write(obj)
        for ld in linkers:
            try:
                r = subprocess.run([ld, "-shared", "--no-undefined", "-o", out, src], capture_output=True,
                                   text=True, timeout=120)
            except OSError as e:
                failures.append(f"{ld}: {e}")
                continue
            if r.returncode == 0:
                with open(out, "rb") as fh:
                    return fh.read(), ld
            failures.append(f"{ld}: {(r.stderr or r.stdout).strip()}")
    raise CompileError(f"rocm: ld.lld could not link the AMDGPU code object; {INSTALL_HINT}, or pick a code object "
                       "version the installed linker knows (-code_object=4)", log="\n".join(failures))
