"""kernelgen's matrix-fragment section (docs/language.md 5.2): A and B loaded from a new input buffer
(row or column major, a leading dimension a little larger than the tile, an offset that depends on the
work-group), an accumulator filled or loaded, one or two ``pk.mma``, maybe ``pk.frag_scale``, and the
result stored by each subgroup into its own tile of a new output buffer.

Every operand is the same in all work-items of a subgroup (literals, ``pk.group_id(0)``,
``pk.subgroup_id()``), the section is at the top level (uniform control flow), and it is generated only
for blocks of a whole number of CPU subgroups (``CPU_SUBGROUP_SIZE``), where the CPU backends and the oracle
compute the reference arithmetic exactly. Backends without a matrix engine refuse the program (the
program's feature ``matrix``; their conformance settings say so). In a checked program one load's
offset may point past its buffer for the last work-group (``g.violation``).
"""
from __future__ import annotations

from ..codegen.cpu.subgroup_size import CPU_SUBGROUP_SIZE

#: (input type, accumulator type) pairs of docs/language.md 5.2 (the CPU backends compile them all)
COMBOS = (("f16", "f32"), ("f16", "f16"), ("bf16", "f32"), ("f32", "f32"), ("i8", "i32"), ("u8", "i32"))


def matrix_possible(g) -> bool:
    return g.block % CPU_SUBGROUP_SIZE == 0 and any(not ({a, c} & g.avoid) for a, c in COMBOS)


def _span(rows: int, cols: int, ld: int, layout: str) -> int:
    """Elements from a fragment's offset to one past its last element."""
    return (rows - 1) * ld + cols if layout == "row" else (cols - 1) * ld + rows


def matrix_section(g):
    r = g.streams["matrix"]
    ta, tc = r.choice([(a, c) for a, c in COMBOS if not ({a, c} & g.avoid)])
    m, n, k = (r.choice([8, 16]) for _ in range(3))
    g.extra_types.update((ta, tc))
    g.uses_subgroups = True
    fa, fb, fc = g.fresh("fa"), g.fresh("fb"), g.fresh("fc")
    g.emit(0, f"{fa} = pk.frag_a({ta}, {m}, {n}, {k})")
    g.emit(0, f"{fb} = pk.frag_b({ta}, {m}, {n}, {k})")
    g.emit(0, f"{fc} = pk.frag_acc({tc}, {m}, {n}, {k})")
    loads = []  # (fragment, rows, cols) in A's, B's and maybe C's order
    loads.append((fa, m, k, ta))
    loads.append((fb, k, n, ta))
    if r.random() < 0.5:
        loads.append((fc, m, n, tc))
    else:
        lit = r.choice(["0", "1", "-2", "3"]) if tc[0] == "i" else r.choice(["0.0", "1.5", "-0.25", "2.0"])
        g.emit(0, f"pk.frag_fill({fc}, {lit})")
    for frag, rows, cols, t in loads:
        layout = r.choice(["row", "col"])
        ld = (cols if layout == "row" else rows) + r.randint(0, 3)
        span = _span(rows, cols, ld, layout)
        step = r.randint(0, 5)  # each group's tile starts `step` elements further
        length = span + step * (g.groups - 1) + r.randint(0, 3)
        buf = g.add_buffer(t, "in", length)
        off = f"pk.group_id(0) * {step}"
        if g.checked and not g.violation and r.random() < 0.3:
            g.violation = "matrix fragment"
            if "matrix_huge_ld" not in g.avoid and r.random() < 0.5:
                # ld * (rows - 1) in 2^31 .. 2^32 - 1 (negative in i32), or just past 2^32 (small in i32)
                mult = (rows if layout == "row" else cols) - 1
                if r.random() < 0.5:
                    huge = r.randint((1 << 31) // mult + 1, ((1 << 32) - 1) // mult)
                else:
                    huge = -(-(1 << 32) // mult)
                ld = f"pk.select(pk.group_id(0) == {g.groups - 1}, {huge}, {ld})"
            else:
                off += f" + pk.select(pk.group_id(0) == {g.groups - 1}, {length}, 0)"
        lay = "" if layout == "row" and r.random() < 0.5 else f', "{layout}"'
        g.emit(0, f"pk.frag_load({frag}, {buf}, {off}, {ld}{lay})")
    for _ in range(r.choice([1, 1, 2])):
        if r.random() < 0.5:
            d = g.fresh("fd")
            g.emit(0, f"{d} = pk.mma({fa}, {fb}, {fc})")
            fc = d
        else:
            g.emit(0, f"{fc} = pk.mma({fa}, {fb}, {fc})")
    if tc[0] == "f" and r.random() < 0.4:  # frag_scale scales float accumulators only
        g.emit(0, f"pk.frag_scale({fc}, {r.choice(['0.5', '-2.0', '0.75'])})")
    layout = r.choice(["row", "col"])
    ld = n if layout == "row" else m
    per_group = g.block // CPU_SUBGROUP_SIZE
    out = g.add_buffer(tc, "out", g.groups * per_group * m * n)
    g.emit(0, f'pk.frag_store({out}, (pk.group_id(0) * {per_group} + pk.subgroup_id()) * {m * n}, {ld}, {fc}, '
              f'"{layout}")')


__all__ = ["COMBOS", "matrix_possible", "matrix_section"]
