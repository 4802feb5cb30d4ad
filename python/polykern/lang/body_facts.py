"""What a body records for the kernel it is compiled into, beyond its statements and declarations.

Translating a statement can leave a fact that belongs to the whole kernel: a ``pk.shared_dynamic``
array needs a hidden size parameter and the ``dynamic_shared`` attribute, a ``pk.vload`` /
``pk.vstore`` / ``pk.copy_async`` needs its buffer aligned (``vector_align``), every wide-access group
needs an id of its own in the kernel, arrays use up the kernel's shared and private memory, and a shared
array that a tensor copy writes or wgmma reads holds swizzled tiles (ir/hopper.py).

Each translator records such facts in its own :class:`BodyFacts` (``tr.facts``), never on its
``ir.Function`` directly: the kernel's translator, and one translator per inlined call of a device
function (lang/functions.py). The inliner merges a call's facts into its caller's (:meth:`merge`,
with the call's names renamed to the caller's), so a fact recorded two calls deep reaches the kernel;
the kernel's translator writes its facts onto the ``ir.Function`` when the body is done
(:meth:`apply`).

A fact is a field. :meth:`merge` and :meth:`apply` call ``_merge_<field>`` and ``_apply_<field>`` for
every field, so a fact without both fails on the first kernel compiled, and tests/test_func_facts.py
has a case for every field (a field without one fails there).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from ..errors import SourceLoc
from ..ir import nodes as ir
from ..ir import hopper as H
from ..ir.dynamic_shared import ATTR as DYNAMIC_ATTR
from ..ir.dynamic_shared import format_attr
from ..ir.types import ScalarType, i32
from ..ir.vector import ALIGN_ATTR, format_alignment, lane_of

__all__ = ["ARRAY_LIMITS", "BodyFacts"]

# The language's limits on array sizes, in bytes (a backend or device may allow less). 64 KiB of shared
# memory is more than any portable API guarantees (WebGPU 16 KiB, Vulkan 16 KiB, CUDA 48 KiB static),
# and 64 KiB of private arrays per work-item is what still fits the CPU backend's work-item stacks.
ARRAY_LIMITS = {"shared": 64 * 1024, "local": 64 * 1024}
_PER = {"shared": "per workgroup", "local": "per work-item"}

#: The base name of the hidden parameter holding the pk.shared_dynamic array's length (ir/dynamic_shared.py).
SIZE_PARAM = "shared_size"


@dataclass
class BodyFacts:
    #: The pk.shared_dynamic array: (its name, element type, where it is declared); at most one a kernel.
    dynamic_shared: Optional[Tuple[str, ScalarType, SourceLoc]] = None
    #: Buffer name -> the alignment in bytes its wide accesses and asynchronous copies need.
    vector_align: Dict[str, int] = field(default_factory=dict)
    #: Wide-access groups numbered so far: their ids (``VecLane.group``) are 0 .. vector_groups - 1.
    vector_groups: int = 0
    #: "shared" / "local" -> bytes of the static arrays declared (the language's limit is per kernel).
    array_bytes: Dict[str, int] = field(default_factory=dict)
    #: Shared array name -> the swizzle (bytes) of the tiles a tensor copy writes or wgmma reads in it: such an
    #: array is used only by those operations and is aligned to ``ir.hopper.SWIZZLE_ALIGN`` bytes.
    swizzled: Dict[str, int] = field(default_factory=dict)

    # ------------------------------------------------------------------ recording
    def declare_dynamic_shared(self, name: str, elem: ScalarType, loc: SourceLoc) -> None:
        self.dynamic_shared = (name, elem, loc)

    def require_alignment(self, buffer: str, nbytes: int) -> None:
        self.vector_align[buffer] = max(self.vector_align.get(buffer, 1), nbytes)

    def new_vector_group(self) -> int:
        self.vector_groups += 1
        return self.vector_groups - 1

    def swizzle(self, array: str, nbytes: int) -> None:
        self.swizzled[array] = nbytes

    def array_budget(self, scope: str, nbytes: int) -> Optional[str]:
        """Count ``nbytes`` more of ``scope`` arrays; the reason they do not fit the limit, or None."""
        used = self.array_bytes.get(scope, 0)
        limit = ARRAY_LIMITS[scope]
        if used + nbytes > limit:
            before = f" (with the {used} bytes of this kernel's other {scope} arrays)" if used else ""
            return (f"{nbytes} bytes{before}; the limit of {scope} arrays is {limit} bytes {_PER[scope]} "
                    "(devices may allow less: this is checked again at launch)")
        self.array_bytes[scope] = used + nbytes
        return None

    # ------------------------------------------------------------------ inlining
    def merge(self, call: "BodyFacts", rename: Callable[[str], str], body: List[ir.Stmt], where: str,
              error: Callable[[str], Exception]) -> None:
        """Fold the facts of an inlined call (``where``: "device function 'f'") into this body's.
        ``rename`` maps the call's names to the caller's; ``body`` is the call's inlined statements;
        ``error(message)`` is the exception to raise, located at the call."""
        for f in dataclasses.fields(self):
            getattr(self, f"_merge_{f.name}")(call, rename, body, where, error)

    def _merge_dynamic_shared(self, call, rename, body, where, error):
        if call.dynamic_shared is None:
            return
        name, elem, loc = call.dynamic_shared
        if self.dynamic_shared is not None:
            raise error(f"{where} declares a pk.shared_dynamic array (at {loc}, in it or in a function it calls), "
                        f"and the kernel already has one (declared at {self.dynamic_shared[2]}): a kernel has at "
                        "most one pk.shared_dynamic array; declare it once and pass it to device functions as a "
                        "pk.Shared[T] parameter")
        self.dynamic_shared = (rename(name), elem, loc)

    def _merge_vector_align(self, call, rename, body, where, error):
        for buffer, nbytes in call.vector_align.items():
            self.require_alignment(rename(buffer), nbytes)

    def _merge_vector_groups(self, call, rename, body, where, error):
        offset = self.vector_groups
        for s in ir.walk_stmts(body):
            lane = lane_of(s)
            if lane is not None:
                s.vec = dataclasses.replace(lane, group=lane.group + offset)
        self.vector_groups += call.vector_groups

    def _merge_array_bytes(self, call, rename, body, where, error):
        for scope, nbytes in call.array_bytes.items():
            over = self.array_budget(scope, nbytes)
            if over is not None:
                raise error(f"the {scope} arrays of {where} are too large for this kernel: {over}")

    def _merge_swizzled(self, call, rename, body, where, error):
        for array, nbytes in call.swizzled.items():
            self.swizzle(rename(array), nbytes)

    # ------------------------------------------------------------------ the kernel
    def apply(self, fn: ir.Function, taken) -> None:
        """Record the facts on the kernel ``fn`` (its body translated); ``taken``: names in use."""
        for f in dataclasses.fields(self):
            getattr(self, f"_apply_{f.name}")(fn, taken)

    def _apply_dynamic_shared(self, fn, taken):
        if self.dynamic_shared is None:
            return
        taken = set(taken) | {p.name for p in fn.params} | fn.locals.keys() | fn.arrays.keys() \
            | fn.fragments.keys()
        name, i = SIZE_PARAM, 0
        while name in taken:
            i += 1
            name = f"{SIZE_PARAM}_{i}"
        fn.attrs[DYNAMIC_ATTR] = format_attr(len(fn.params), self.dynamic_shared[1].nbytes)
        fn.params.append(ir.Param(name, i32))  # hidden: the kernel's source cannot name it

    def _apply_vector_align(self, fn, taken):
        if self.vector_align:
            fn.attrs[ALIGN_ATTR] = format_alignment(self.vector_align)

    def _apply_vector_groups(self, fn, taken):
        pass  # the ids are in the statements (VecLane.group)

    def _apply_array_bytes(self, fn, taken):
        pass  # the arrays are in fn.arrays; the limit was checked as they were declared and merged

    def _apply_swizzled(self, fn, taken):
        if self.swizzled:
            H.facts(fn).swizzled.update(self.swizzled)
