"""Asynchronous copies (docs/language.md "Asynchronous copies") on sm_80 and later: ``pk.copy_async``
is one ``cp.async`` from global to shared memory (``.cg``, which bypasses L1, for 16 bytes; ``.ca``
for 4 and 8, the sizes ``.cg`` lacks), ``pk.copy_commit`` is ``cp.async.commit_group`` and
``pk.copy_wait(n)`` ``cp.async.wait_group n``, for the cuda (CUDA C inline PTX) and nvptx (LLVM
inline PTX) targets. Every access is aligned to its size: the group indices make each side a multiple
of the copy's size from its array's start, shared arrays are 16-byte aligned (``__align__(16)``,
``align 16``) and every runtime refuses a buffer less aligned than the kernel's ``vector_align``
attribute at launch. Below sm_80 the pipeline lowers the copies to plain ones
(passes/async_copy.py): ``native`` says which targets do not need it.
"""
from __future__ import annotations

import re

from llvmlite import ir as ll

from polykern.codegen.llvm_types import I64, VOID
from polykern.ir import nodes as N

#: The first architecture with cp.async.
FIRST_SM = 80
#: The largest count ``cp.async.wait_group`` is given: its operand is an integer constant (the NVVM
#: intrinsic's is an ``i32``); ``pk.copy_wait(p)`` with a larger ``p`` (any constant >= 0 is valid) waits
#: with this count instead, which retires at least the groups ``p`` asks for (fewer stay pending).
WAIT_GROUP_MAX = 2 ** 31 - 1


def native(target) -> bool:
    """Whether ``target`` (cuda or nvptx) compiles asynchronous copies to cp.async."""
    m = re.match(r"sm_(\d+)", target.attrs["arch"])
    return bool(m) and int(m.group(1)) >= FIRST_SM


def ptx(s: N.Stmt, dst: str, src: str) -> str:
    """The PTX of ``s`` with operands ``dst`` and ``src`` (CopyAsync: a shared and a global address)."""
    if isinstance(s, N.CopyCommit):
        return "cp.async.commit_group;"
    if isinstance(s, N.CopyWait):
        return f"cp.async.wait_group {min(s.pending, WAIT_GROUP_MAX)};"
    size = s.count * s.dst.type.elem.nbytes
    return f"cp.async.{'cg' if size == 16 else 'ca'}.shared.global [{dst}], [{src}], {size};"


def emit_c(em, s: N.Stmt) -> None:
    """``s`` as CUDA C (``em``: the c_source KernelEmitter of the cuda dialect). The shared address
    is converted from generic with ``cvta.to.shared`` in the same asm (NVRTC without headers has no
    ``__cvta_generic_to_shared``); the asm clobbers memory, so no access moves across it."""
    if not isinstance(s, N.CopyAsync):
        em.line(f'asm volatile("{ptx(s, "", "")}" ::: "memory");')
        return
    n = s.count
    dst = f"&{em.names[s.dst.name]}[{n} * (long long)({em.expr(s.dst_k)})]"
    src = f"&{em.names[s.src.name]}[{n} * (long long)({em.expr(s.src_k)})]"
    em.line(f'asm volatile("{{ .reg .u64 pk_s; cvta.to.shared.u64 pk_s, %0; {ptx(s, "pk_s", "%1")} }}" '
            f':: "l"({dst}), "l"({src}) : "memory");')


class NVPTXCopies:
    """Mixin of NVPTXEmitter: ``stmt_CopyAsync``, ``stmt_CopyCommit``, ``stmt_CopyWait``."""

    def _copy_asm(self, s: N.Stmt, args) -> None:
        text = ptx(s, "$0", "$1")
        cons = ",".join(["l"] * len(args) + ["~{memory}"])
        self.builder.asm(ll.FunctionType(VOID, [a.type for a in args]), text, cons, args, True)

    def stmt_CopyAsync(self, s: N.CopyAsync) -> None:
        b = self.builder
        n = N.Const(s.count, s.dst_k.type)
        addrs = []
        for base, k in ((s.dst, s.dst_k), (s.src, s.src_k)):
            ptr, _ = self.element_ptr(base, N.BinOp("mul", k, n))
            addrs.append(b.ptrtoint(ptr, I64))  # a shared (addrspace 3) and a global (1) address
        self._copy_asm(s, addrs)

    def stmt_CopyCommit(self, s: N.CopyCommit) -> None:
        self._copy_asm(s, [])

    def stmt_CopyWait(self, s: N.CopyWait) -> None:
        self._copy_asm(s, [])
