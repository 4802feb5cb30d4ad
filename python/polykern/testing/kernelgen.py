"""A seeded random kernel generator for differential testing (Csmith/YARPGen style, for polykern).

``generate(seed)`` returns a :class:`GenProgram`: the kernel's Python *source* (readable, savable,
compiled by the real frontend), its launch shape, the arguments (from the same seed), and the
features it uses (``f64``, ``i64``, ``i8`` ..., see ``FEATURES``) so a runner knows which refusals
a backend may answer with. The same seed gives the same program and the same inputs, on any host.

Programs are valid by construction, so the oracle (``polykern.testing.interp``) gives them one meaning:
- every index is masked into range (``e & (N - 1)`` on an i32, N a power of two); integer ``//`` and
  ``%`` divide by ``(d | 1)``, never zero;
- every work-item writes only its own output slots (``o[gid * K + c]``), reads inputs and its own
  slots, and meets the others only through shared memory between barriers (each work-item writes
  ``sh[lid]``, all read after ``barrier()``, at the top level where control flow is uniform) and
  through atomics whose result does not depend on order (integer add, min, max; the old value unused);
- ``while`` loops count a fresh counter first thing in their body, so ``continue`` cannot spin;
- inexact operations (math builtins, float ``/``) are applied to exact operands and stored directly
  into a "math" buffer nobody reads, so each is compared within its own ULP budget;
- float -> int casts see any value (NaN, infinities, out of range: they saturate, NaN -> 0);
- device functions (``@pk.func`` helpers ``h<k>``) take scalars, an input buffer and a ``pk.constexpr``,
  may return early (also from inside a loop) and are called from expressions; a kernel may have a
  ``pk.constexpr`` parameter (``range`` bounds, literals), fixed by ``.specialize`` at the module's end;
- vector groups, a ``pk.shared_dynamic`` array, rotates past the width (``kernelgen_memory``), matrix
  fragments (``kernelgen_matrix``), device functions with memory (``kernelgen_funcs``) and subgroup
  collectives under subgroup-uniform control flow (``kernelgen_subgroups``), each drawn from a random
  stream of its own with its ``PROBABILITY``.

The generator's parts: ``kernelgen_generator`` (the state of a program being generated, with
``kernelgen_exprs`` and ``kernelgen_stmts``), ``kernelgen_kernel`` (the kernel's parameters and body, the
sections in order), the sections (``kernelgen_memory``, ``kernelgen_matrix``, ``kernelgen_funcs``,
``kernelgen_subgroups``) and ``kernelgen_values`` (types, array lengths, input values); this module holds the
tables (:data:`FEATURES`, :data:`PROBABILITY`, :data:`AVOIDABLE`), :class:`GenProgram` and :func:`generate`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..ir.bfloat16 import bf16_array
from .kernelgen_generator import Generator
from .kernelgen_kernel import build_kernel
from .kernelgen_values import N_ACC, N_IN, TYPE_ORDER, annot
from .kernelgen_values import np_name as _np, rand_value as _rand_value

#: feature names a backend may refuse (backends declare theirs; see tests/runtimes.py)
FEATURES = ("f64", "f16", "i64", "u64", "i8", "u8", "i16", "u16", "bool_buffer", "math_f64", "subgroups", "barrier",
            "bf16", "matrix")
#: the chance that a program gets each section added on 2026-11-28 (memory, matrix, rotates, device functions; each drawn from its own random stream,
#: ``random.Random(f"{section}-{seed}")``, so a seed without them keeps its program of before)
PROBABILITY = {"vectors": 0.25, "shared_dynamic": 0.2, "matrix": 0.15, "rotates": 0.3, "memory_functions": 0.15,
               "subgroup_uniform": 0.25}


@dataclass
class GenProgram:
    seed: int
    name: str
    source: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    params: List[Tuple[str, str, Optional[str]]]  # (name, scalar type, "in"/"out"/"math"/"acc" or None)
    features: frozenset
    args_seed: int
    sizes: Dict[str, int] = field(default_factory=dict)
    finite: bool = False  # no NaN or infinity among the float inputs (avoid "specials")
    shared_size: Optional[int] = None  # the launch's shared_size= (the kernel has a pk.shared_dynamic array)
    #: in a checked program (generate(checked=True)): what one work-item accesses out of bounds ("" none)
    violation: str = ""
    #: buffer parameter -> the alignment (bytes) its pk.vload/vstore/copy_async groups need, where more
    #: than one element's: what the built kernel's FunctionInfo ``vector_align`` must record
    vector_align: Dict[str, int] = field(default_factory=dict)
    #: generate(fast_math=True): built with pk.build(..., fast_math=True), some math stores spelled with
    #: the pk.fast_* builtins; compared against the fast-math promises
    fast_math: bool = False

    def make_args(self) -> List:
        """The launch arguments (NumPy scalars and arrays), the same for the same program."""
        rng = np.random.default_rng(self.args_seed)
        out = []
        for name, t, role in self.params:
            if role is None:
                out.append(np.dtype(_np(t)).type(_rand_value(rng, t, self.finite)))
            elif t == "bf16":  # values rounded to bf16, passed as their bits (ir/bfloat16.py)
                out.append(bf16_array(np.array([_rand_value(rng, t, self.finite) for _ in range(self.sizes[name])],
                                               np.float32)))
            else:
                n = self.sizes[name]
                arr = np.array([_rand_value(rng, t, self.finite) for _ in range(n)], dtype=_np(t))
                out.append(arr)
        return out


def _program(g: Generator, helper_lines: List[str]) -> GenProgram:
    """The generated kernel ``g`` with its device functions ``helper_lines`` as a program: buffer sizes, the
    output slots filled in, signature, features and source."""
    params = g.params
    nthreads = g.block * g.groups
    sizes = {}
    slots = {}
    for name, t, role in params:
        if name in g.extra_sizes:
            sizes[name] = g.extra_sizes[name]
        elif role == "in":
            sizes[name] = N_IN
        elif role == "out":
            slots[name] = g.out_slots[t]
            sizes[name] = nthreads * g.out_slots[t]
        elif role == "math":
            slots[name] = g.math_slots[t]
            sizes[name] = nthreads * g.math_slots[t]
        elif role == "acc":
            sizes[name] = N_ACC
    body = "\n".join(g.lines)
    for name, k in slots.items():
        body = body.replace(f"{{K_{name}}}", str(k))
    sig = ", ".join([f"{c}: pk.constexpr" for c in g.constexprs] +
                    [f"{n}: {annot(t, role)}" for n, t, role in params])
    used = {t for _, t, _ in params} | set(g.types) | g.extra_types
    feats = {t for t in used if t in FEATURES}
    if any(t == "bool" and role is not None for _, t, role in params):
        feats.add("bool_buffer")
    if g.uses_inexact_f64:
        feats.add("math_f64")
    if g.uses_subgroups:
        feats.add("subgroups")
    if g.uses_barrier:  # shared memory between barriers: work-items that run together
        feats.add("barrier")
    if "pk.mma(" in body:
        feats.add("matrix")
    src = HEADER + "\n".join(helper_lines) + f"\n\n@pk.kernel\ndef {g.name}({sig}):\n{body}\n"
    if g.constexprs:  # the module's kernel is the specialized one (its .name says the values)
        values = ", ".join(f"{c}={v}" for c, v in g.constexprs.items())
        src += f"\n\n{g.name} = {g.name}.specialize({values})\n"
    return GenProgram(g.seed, g.name, src, (g.groups, 1, 1), (g.block, 1, 1), params,
                      frozenset(feats), g.seed * 7919 + 17, sizes, "specials" in g.avoid,
                      g.shared_size, g.violation, dict(g.align), g.fast_math)


HEADER = '''"""Generated by polykern.testing.kernelgen."""
import polykern as pk
from polykern import Buffer, bf16, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64  # noqa: F401

NAN = float("nan")
INF = float("inf")'''


#: what ``generate(avoid=...)`` can leave out: to keep fuzzing past a known open bug, and every name of
#: FEATURES, so that a program can be made for a target that refuses some (polykern.testing.fuzzprofile)
AVOIDABLE = {"float_mod": "no float % (C fmod)", "functions": "no @pk.func helpers",
             "constexpr": "no pk.constexpr kernel parameter", "subgroups": "no pk.subgroup_* section",
             "copies": "no pk.copy_async section", "bf16": "no bf16 values",
             **{t: f"no {t} values" for t in FEATURES if t in TYPE_ORDER and t != "bf16"},
             "bool_buffer": "no bool buffers (bool scalars and shared arrays stay)",
             "math_f64": "no f64 math beyond sqrt, fma and /",
             "barrier": "no shared memory between barriers (nor pk.copy_async, which needs one)",
             "specials": "no NaN or infinity among the literals and the inputs (arithmetic may still make one)",
             "vectors": "no pk.vload/pk.vstore section", "shared_dynamic": "no pk.shared_dynamic array",
             "matrix": "no matrix fragments", "rotates": "no rotate section (shift amounts past the width)",
             "memory_functions": "no @pk.func pair with shared memory, pk.vload/vstore and copies inside",
             "function_shared_dynamic": "no pk.shared_dynamic declared inside a device function",
             "matrix_huge_ld": "no checked-mode fragment violation by a leading dimension near 2^31 / rows",
             "subgroup_uniform": "no subgroup collectives under subgroup-uniform control flow"}
#: ``avoid`` that gives the programs of the generator before device functions and constexprs existed
#: (the seeds that regression tests name)
BEFORE_FUNCTIONS = frozenset(("functions", "constexpr", "subgroups", "copies", "bf16", "vectors", "shared_dynamic",
                              "matrix", "rotates", "memory_functions", "subgroup_uniform"))
#: ``avoid`` that gives the programs of the generator before its 2026-11-28 sections (vector groups, dynamic
#: shared memory, matrix fragments, rotates, device functions with memory): a seed's program of then
BEFORE_MEMORY = frozenset(("vectors", "shared_dynamic", "matrix", "rotates", "memory_functions", "subgroup_uniform"))


def generate(seed: int, name: Optional[str] = None, avoid=frozenset(), checked: bool = False,
             probability: Optional[Dict[str, float]] = None, fast_math: bool = False) -> GenProgram:
    """The program of ``seed`` (deterministic: the same seed and arguments give the same source and
    inputs). ``avoid``: names from ``AVOIDABLE``. ``checked``: for a checked-mode run
    (``bounds_check=True``): a share of the vector and fragment sections point one work-item's group
    or offset past its array (``GenProgram.violation`` says so; the launch must be a LaunchError).
    ``probability``: overrides of ``PROBABILITY`` (section -> chance a program gets it). ``fast_math``: the
    program is built with ``fast_math=True`` and half its math stores of ``numerics.FAST_MATH_OPS`` (and
    ``/``) call the ``pk.fast_*`` builtins (the same seed without it gives the program of before)."""
    bad = set(avoid) - set(AVOIDABLE)
    if bad:
        raise ValueError(f"kernelgen: unknown avoid {sorted(bad)}; known: {sorted(AVOIDABLE)}")
    unknown = set(probability or {}) - set(PROBABILITY)
    if unknown:
        raise ValueError(f"kernelgen: unknown probability {sorted(unknown)}; known: {sorted(PROBABILITY)}")
    g = Generator(seed, name or f"fz{seed}", dict(PROBABILITY, **(probability or {})), avoid, checked, fast_math)
    return _program(g, build_kernel(g))
