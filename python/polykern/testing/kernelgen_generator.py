"""kernelgen's generator state: :class:`Generator` holds what a program being generated has so far (its
types, names, buffers, lines, random streams) and the small helpers every part uses (fresh names,
emitting a line, new buffers, alignment, whether a section is drawn). Its expressions and statements
are :class:`~polykern.testing.kernelgen_exprs.ExprGen` and :class:`~polykern.testing.kernelgen_stmts.StmtGen`;
the sections (kernelgen_memory, kernelgen_matrix, kernelgen_funcs, kernelgen_subgroups) are functions of it.
"""
from __future__ import annotations

import random
from typing import Dict, List, Optional, Tuple

from .kernelgen_exprs import ExprGen
from .kernelgen_stmts import StmtGen
from .kernelgen_values import ALL, INTS, N_IN, N_LOCAL, PORTABLE, TYPE_ORDER, itemsize

__all__ = ["Generator"]


class Generator(ExprGen, StmtGen):
    """One program being generated: ``probability`` is every section's chance (kernelgen.PROBABILITY with
    ``generate()``'s overrides)."""

    n_in, n_local = N_IN, N_LOCAL

    def __init__(self, seed: int, name: str, probability: Dict[str, float], avoid=frozenset(), checked: bool = False,
                 fast_math: bool = False):
        self.avoid = frozenset(avoid)
        self.fast_math = fast_math
        self.checked = checked
        self.probability = dict(probability)
        self.rng = random.Random(seed)
        self.seed = seed
        self.name = name
        r = self.rng
        self.portable = r.random() < 0.5
        pool = tuple(t for t in (PORTABLE if self.portable else ALL) if t not in self.avoid)
        k = r.randint(2, min(6, len(pool)))
        types = set(r.sample(pool, k)) | {"i32"}
        if "bf16" not in self.avoid and random.Random(f"bf16-{seed}").random() < 0.3:
            types.add("bf16")
        self.types = sorted(types, key=TYPE_ORDER.index)
        self.vars: Dict[str, List[str]] = {t: [] for t in TYPE_ORDER}
        self.fixed: set = set()  # readable but not assignable: parameters, ids, loop variables
        self.readonly: Dict[str, str] = {}  # type -> input buffer name
        self.outs: Dict[str, str] = {}  # type -> output buffer name
        self.out_slots: Dict[str, int] = {}
        self.maths: Dict[str, str] = {}
        self.math_slots: Dict[str, int] = {}
        self.local_arrays: Dict[str, str] = {}
        self.shared: Optional[Tuple[str, str]] = None
        self.counter = 0
        self.lines: List[str] = []
        self.loop_depth = 0
        self.budget = r.randint(8, 28)
        self.uses_inexact_f64 = False
        self.block = r.choice([4, 8, 16])
        self.groups = r.choice([1, 2, 3])
        self.helpers: List[Tuple[str, str, List[Tuple[str, str]]]] = []  # (name, return type, params)
        self.constexprs: Dict[str, int] = {}  # pk.constexpr names visible here -> value
        self.call_depth = 0
        # Whether a program has device functions or a constexpr comes from a second generator, so the
        # programs of seeds without them are the ones this generator made before they existed.
        self.frng = random.Random(f"features-{seed}")
        self.sgrng = random.Random(f"subgroups-{seed}")  # likewise for the subgroup section
        self.cprng = random.Random(f"copies-{seed}")  # likewise for the asynchronous-copy section
        self.uses_barrier = False
        self.uses_subgroups = False
        # the sections added on 2026-11-28, each from a random stream of its own (kernelgen.PROBABILITY)
        self.streams = {k: random.Random(f"{k}-{seed}") for k in self.probability}
        self.shared_size: Optional[int] = None
        self.violation = ""
        self.extra_types: set = set()  # types a section uses beyond self.types (features)
        self.extra_sizes: Dict[str, int] = {}
        self.align: Dict[str, int] = {}
        self.mem_call: Optional[Tuple[str, str]] = None
        self.params: List[Tuple[str, str, Optional[str]]] = []

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, depth: int, text: str):
        self.lines.append("    " * (depth + 1) + text)

    def types_of(self, pred) -> List[str]:
        return [t for t in self.types if pred(t)]

    def int_types(self) -> List[str]:
        return self.types_of(lambda x: x in INTS)

    def add_buffer(self, t: str, role: str, size: int) -> str:
        """A new buffer parameter (after the others: earlier arguments keep their values) of ``size``."""
        name = self.fresh("mo" if role == "out" else "ma")
        self.params.append((name, t, role))
        self.extra_sizes[name] = size
        return name

    def need_align(self, buf: str, n: int, t: str):
        """Record that a group of ``n`` elements of ``t`` accesses kernel buffer ``buf`` (docs/language.md 6.1)."""
        size = itemsize(t)
        if n * size > size:
            self.align[buf] = max(self.align.get(buf, 0), min(n * size, 16))

    def wants(self, section: str, needs=()) -> bool:
        """Whether this program gets ``section`` (its own stream's first draw; not when avoided)."""
        if section in self.avoid or set(needs) & self.avoid:
            return False
        return self.streams[section].random() < self.probability[section]
