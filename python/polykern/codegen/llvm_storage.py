"""Where the LLVM emitter keeps values: a scalar variable's :class:`Slot` (an alloca, one value per
work-item on the CPU, or an immutable parameter), a shared or private array's :class:`ArrayStorage`,
a loop's :class:`LoopTarget` (where ``break`` and ``continue`` go), and :class:`AllocaInAS`, an
``alloca`` in a non-zero address space."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ..errors import CompileError
from ..ir.types import ScalarType

if TYPE_CHECKING:
    from .llvm_emitter import LLVMKernelEmitter

__all__ = ["Slot", "ArrayStorage", "LoopTarget", "AllocaInAS"]


class Slot:
    """Storage of one scalar variable.

    ``ptr`` is an alloca (one value) or, when ``per_item`` is true, the base of an array with one
    value per work-item that is indexed by the emitter's current ``item`` index. ``value`` (with
    ``ptr`` None) is an immutable value: a scalar parameter.
    """

    __slots__ = ("ptr", "ty", "per_item", "value", "name")

    def __init__(self, name: str, ty: ll.Type, ptr=None, per_item: bool = False, value=None):
        self.name, self.ty, self.ptr, self.per_item, self.value = name, ty, ptr, per_item, value

    def address(self, em: "LLVMKernelEmitter"):
        if not self.per_item:
            return self.ptr
        return em.builder.gep(self.ptr, [em.item], inbounds=True, source_etype=self.ty)

    def load(self, em: "LLVMKernelEmitter"):
        if self.ptr is None:
            return self.value
        return em.builder.load(self.address(em), typ=self.ty)

    def store(self, em: "LLVMKernelEmitter", value) -> None:
        if self.ptr is None:
            raise CompileError(f"cannot assign to kernel parameter {self.name!r}")
        em.builder.store(value, self.address(em))


class ArrayStorage:
    """A shared or private array: base pointer, element type, and (private arrays of the CPU
    work-item loops) whether each work-item owns a copy at ``item * size``."""

    __slots__ = ("ptr", "st", "size", "per_item")

    def __init__(self, ptr, st: ScalarType, size: int, per_item: bool = False):
        self.ptr, self.st, self.size, self.per_item = ptr, st, size, per_item


class LoopTarget:
    """Where ``break`` and ``continue`` go inside a loop."""

    def __init__(self, brk, cont):
        self.brk, self.cont = brk, cont

    def do_break(self, em: "LLVMKernelEmitter") -> None:
        em.builder.branch(self.brk)

    def do_continue(self, em: "LLVMKernelEmitter") -> None:
        em.builder.branch(self.cont)


class AllocaInAS(ll.instructions.Instruction):
    """``alloca`` in a non-zero address space (AMDGPU private memory is addrspace(5))."""

    def __init__(self, parent, typ, count, name, addrspace, align):
        super().__init__(parent, ll.PointerType(addrspace=addrspace), "alloca", [count] if count else (), name)
        self.allocated_type, self.addrspace, self.align = typ, addrspace, align

    def descr(self, buf):
        buf.append(f"alloca {self.allocated_type}")
        if self.operands:
            op, = self.operands
            buf.append(f", {op.type} {op.get_reference()}")
        if self.align:
            buf.append(f", align {self.align}")
        buf.append(f", addrspace({self.addrspace})\n")
