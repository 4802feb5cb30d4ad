"""The oracle's memory (``polykern.interpreter``): buffers and shared arrays with, per element, who
touched it in which barrier interval (for the race checks) and what fed its value (inexact operations,
float operations that saw a NaN/inf, add/sub chains, a*b+c); and the ``Result`` of a launch."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Optional, Tuple

import numpy as np


class Mem:
    """A buffer or shared array: values, and who last wrote/read each element in which interval."""

    __slots__ = ("name", "data", "wr", "rd", "taint", "sites", "pending")

    def __init__(self, name: str, data: list):
        self.name = name
        self.data = data
        self.wr: list = [None] * len(data)  # (epoch, work-item id, or the commutative atomic op)
        self.rd: list = [None] * len(data)  # (epoch, work-item id); id -2: several readers
        self.taint: Optional[list] = None
        self.sites: Optional[list] = None  # per element: the float operations (sites) that fed it
        self.pending: Optional[dict] = None  # elements a pending pk.copy_async reads (copies)


@dataclass
class Result:
    """Buffers after the launch (every buffer parameter, by name) and, per element, what inexact
    operations fed it: ``None`` (exact), or ``(direct, tags, operands)`` with ``direct`` the one
    inexact ``(op, dtype)`` that computed it from exact ``operands``, or None for a composition of
    several. ``contractible``: the program has a float add/sub of a product (directly or through a
    variable), which a backend in ``numerics.MAY_CONTRACT`` may fuse; ``contracted`` and
    ``contracted_anywhere``: per buffer, the elements such an a*b+c may have fed, and whether one reached
    control flow or an index (see ``sites``; a fused a*b+c changes only what it feeds). ``subnormal``: the float types (f16/f32) in which some operation produced a subnormal
    (a backend that may flush subnormals can then differ anywhere). ``special``: per buffer, the
    elements whose value a float operation that saw or made a NaN/inf may have fed (a backend or device
    without ``numerics.specials_promised`` may give anything there); ``special_anywhere``: such an
    operation reached control flow or an index (then any element may differ). ``chained`` and
    ``chained_anywhere``: the same for float add/sub chains, which a backend in
    ``numerics.MAY_REASSOCIATE`` may evaluate in another association (see ``sites``).
    ``unspecified`` and ``unspecified_anywhere``: the same for operations whose result no backend
    promises: ``pk.min``/``pk.max`` of a +0 and a -0 (the zero's sign, C99 F.9.9.2), which a later
    ``1 / x`` turns into +inf or -inf. ``written``: per buffer, the elements a store, an atomic or a
    fragment/warpgroup store wrote (what a launch on the interpreter copies back to the caller's arrays)."""

    buffers: Dict[str, np.ndarray]
    taint: Dict[str, list] = field(default_factory=dict)
    subnormal: FrozenSet[str] = frozenset()
    contractible: bool = False  # some float a*b+c a backend allowed to contract could compute fused
    special: Dict[str, np.ndarray] = field(default_factory=dict)
    special_anywhere: bool = False
    chained: Dict[str, np.ndarray] = field(default_factory=dict)
    chained_anywhere: bool = False
    unspecified: Dict[str, np.ndarray] = field(default_factory=dict)
    unspecified_anywhere: bool = False
    contracted: Dict[str, np.ndarray] = field(default_factory=dict)
    contracted_anywhere: bool = False
    written: Dict[str, np.ndarray] = field(default_factory=dict)  # per buffer: the elements the launch wrote


def mark(mem: Mem, i: int, tags):
    if mem.taint is None:
        mem.taint = [None] * len(mem.data)
    mem.taint[i] = tags


_NO_SITES = (False, frozenset(), False, False, False)


def mark_sites(mem: Mem, i: int, rec, accumulate: bool):
    """Record what fed element ``i`` (see Program._store_sites; None: no float operation)."""
    if mem.sites is None:
        mem.sites = [_NO_SITES] * len(mem.data)
    rec = rec or _NO_SITES
    if accumulate:
        old = mem.sites[i]
        rec = (old[0] or rec[0], old[1] | rec[1], old[2] or rec[2], old[3] or rec[3], old[4] or rec[4])
    mem.sites[i] = rec


def loose(mems, seen, unspecified_seen):
    """Per buffer with a site recorded: the elements a float operation that saw a NaN/inf may have
    fed (an own site in the storing work-item, a memory site in any: ``seen``), those an add/sub
    chain fed, those an operation with an unspecified result fed (``unspecified_seen``), and those an
    a*b+c fed."""
    special, chained, unspecified, contracted = {}, {}, {}, {}
    for name, mem in mems.items():
        if mem.sites is not None:
            special[name] = np.array([hit or not m.isdisjoint(seen) for hit, m, _, _, _ in mem.sites], bool)
            chained[name] = np.array([c for _, _, c, _, _ in mem.sites], bool)
            unspecified[name] = np.array([u or not m.isdisjoint(unspecified_seen) for _, m, _, u, _ in mem.sites],
                                         bool)
            contracted[name] = np.array([f for _, _, _, _, f in mem.sites], bool)
    return special, chained, unspecified, contracted
