"""kernelgen's memory sections: ``pk.vload``/``pk.vstore`` groups, a ``pk.shared_dynamic`` array sized at
launch, and variable rotates whose amounts reach past the type's width (docs/language.md 6.1, 6.2, 7.1).

Each section is a function of the generator (``kernelgen_generator.Generator``) and draws from its own random stream
(``g.streams[name]``), so a seed that does not get the section keeps the program it had before the
section existed. Every index stays in range: a group index is masked to the groups that fit, each
work-item stores only its own group of a dedicated output buffer, and shared memory is read only
after a barrier, at elements some work-item wrote. In a checked program (``generate(checked=True)``)
one group index may instead point past its buffer on one work-item (``g.violation``): checked mode must
stop that launch with a LaunchError, and the oracle refuses the program.
"""
from __future__ import annotations

from typing import List

from .kernelgen_values import N_IN, RANGES, itemsize

#: element types a vector group may have (not bool: docs/language.md 6.1)
_NOT_VECTOR = ("bool",)


def _oob_offset(g, r, groups: int, t: str = "i32") -> str:
    """"" or, in a checked program that has no violation yet (one in 4 of its sections), `` + X`` that
    takes the last work-item's group index ``groups`` past the end of an array of ``groups`` groups."""
    if not g.checked or g.violation or r.random() >= 0.25:
        return ""
    last = g.block * g.groups - 1
    g.violation = "vector group"
    return f" + {t}(pk.select(g == {last}, {groups}, 0))"


def _keep(g, t: str, name: str):
    """Store a value an out-of-bounds load gave into a new output buffer: a load nobody uses is dead code,
    which the passes may remove (and the oracle, which runs the IR after them, then sees no violation)."""
    buf = g.add_buffer(t, "out", g.block * g.groups)
    g.emit(0, f"{buf}[g] = {name}")


def vector_section(g):
    """``pk.vload`` from an input buffer or a ``pk.local`` array into fresh names, and ``pk.vstore`` of
    each work-item's own group (index ``g``, in a random integer type) into a new output buffer."""
    r = g.streams["vectors"]
    saved, g.rng = g.rng, r  # the section's expressions come from its stream too
    try:
        ins = [t for t in g.types if t in g.readonly and t not in _NOT_VECTOR]
        for t in r.sample(ins, min(len(ins), r.randint(1, 2))):
            n = r.choice([2, 4])
            names = [g.fresh("x") for _ in range(n)]
            groups = g.n_in // n
            idx = f"({g.expr(r.choice(g.int_types()), 2)}) & {groups - 1}"
            oob = _oob_offset(g, r, groups)
            idx = f"(i32({idx}){oob})"
            g.emit(0, f"{', '.join(names)} = pk.vload({g.readonly[t]}, {idx}, {n})")
            if oob:
                _keep(g, t, names[0])
            g.need_align(g.readonly[t], n, t)
            g.vars[t].extend(names)
        for t in r.sample([t for t in g.types if t not in _NOT_VECTOR], r.randint(1, 2)):
            n = r.choice([2, 4])
            buf = g.add_buffer(t, "out", g.block * g.groups * n)
            g.need_align(buf, n, t)
            last = (g.block * g.groups + 1) * n + n - 1  # the last element a group (or a violation) reaches
            it = r.choice([x for x in g.int_types() if RANGES[x][1] >= last])
            vals = ", ".join(g.expr(t, 2) for _ in range(n))
            g.emit(0, f"pk.vstore({buf}, {it}(g){_oob_offset(g, r, g.block * g.groups, it)}, ({vals}))")
        locs = [t for t in g.local_arrays if t not in _NOT_VECTOR]
        if locs and r.random() < 0.5:
            t = r.choice(locs)
            n = r.choice([2, 4])
            groups = g.n_local // n
            g.emit(0, f"pk.vstore({g.local_arrays[t]}, ({g.expr('i32', 1)}) & {groups - 1}, "
                      f"({', '.join(g.expr(t, 1) for _ in range(n))}))")
            names = [g.fresh("x") for _ in range(n)]
            g.emit(0, f"{', '.join(names)} = pk.vload({g.local_arrays[t]}, ({g.expr('i32', 1)}) & {groups - 1}, {n})")
            g.vars[t].extend(names)
    finally:
        g.rng = saved


def copy_counts(g, t: str) -> List[int]:
    """The element counts ``pk.copy_async`` allows for ``t`` (4, 8 or 16 bytes) that fit an input buffer."""
    size = itemsize(t)
    return [b // size for b in (4, 8, 16) if b % size == 0 and b // size <= g.n_in]


def shared_dynamic_section(g):
    """The kernel's ``pk.shared_dynamic`` array (length ``block * n + extra``, given at launch): each
    work-item fills its group of ``n`` (plain stores, one ``pk.vstore`` or a ``pk.copy_async`` from an
    input buffer), a barrier, then it reads a group another work-item filled (``pk.vload`` or plain)."""
    r = g.streams["shared_dynamic"]
    saved, g.rng = g.rng, r
    try:
        pool = [t for t in g.types if t not in _NOT_VECTOR]
        t = r.choice(pool)
        copyable = t in g.readonly and bool(copy_counts(g, t)) and "copies" not in g.avoid
        how = r.choice(["copy"] * copyable + ["vstore", "plain", "plain"])
        n = r.choice(copy_counts(g, t)) if how == "copy" else r.choice([2, 4])
        tile = g.fresh("dyn")
        g.shared_size = g.block * n + r.randint(0, 5)
        g.uses_barrier = True
        g.emit(0, f"{tile} = pk.shared_dynamic({'bool_' if t == 'bool' else t})")
        if how == "copy":
            groups = g.n_in // n
            g.need_align(g.readonly[t], n, t)
            g.emit(0, f"pk.copy_async({tile}, lid, {g.readonly[t]}, (lid + {r.randint(0, groups - 1)}) & "
                      f"{groups - 1}, {n})")
            g.emit(0, "pk.copy_commit()")
            g.emit(0, "pk.copy_wait(0)")
        elif how == "vstore":
            g.emit(0, f"pk.vstore({tile}, lid, ({', '.join(g.expr(t, 2) for _ in range(n))}))")
        else:
            for c in range(n):
                g.emit(0, f"{tile}[lid * {n} + {c}] = {g.expr(t, 2)}")
        g.emit(0, "pk.barrier()")
        other = f"(lid + {r.randint(0, g.block - 1)}) & {g.block - 1}"
        if n in (2, 4) and r.random() < 0.6:  # a copy's n may be 1, 8 or 16: no vector group
            names = [g.fresh("x") for _ in range(n)]
            oob = _oob_offset(g, r, -(-g.shared_size // n))  # the first group that starts past the end
            g.emit(0, f"{', '.join(names)} = pk.vload({tile}, (({other}){oob}), {n})")
            if oob:
                _keep(g, t, names[0])
        else:
            names = [g.fresh("v")]
            g.emit(0, f"{names[0]} = {tile}[({other}) * {n} + {r.randint(0, n - 1)}]")
        g.emit(0, "pk.barrier()")
        g.vars[t].extend(names)
    finally:
        g.rng = saved


def rotate_section(g):
    """Rotates written with shifts, ``(v << k) | (v >> (W - k))`` (and the right-hand form), on an integer
    type of any width, with a run-time amount ``k`` in 0 .. 2W+3 that differs between work-items: the
    amounts reach and pass the width and ``W - k`` goes negative, all taken modulo W (docs/language.md
    7.1). The result is stored, as its type or as i32 halves, in a new output buffer."""
    r = g.streams["rotates"]
    saved, g.rng = g.rng, r
    try:
        pool = [t for t in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64") if t not in g.avoid]
        for _ in range(r.randint(1, 3)):
            t = r.choice(pool)
            g.extra_types.add(t)
            w = int(t[1:])
            span = 2 * w + 4
            k, v = g.fresh("k"), g.fresh("r")
            src = r.choice([x for x in g.types if x in g.int_types()])
            g.emit(0, f"{k} = {t}((g * {r.choice([1, 3, 5, 7])} + {r.randint(0, span - 1)}) % {span})")
            x = f"{t}({g.expr(src, 2)})"
            if r.random() < 0.5:
                g.emit(0, f"{v} = ({x} << {k}) | ({x} >> ({w} - {k}))")
            else:
                g.emit(0, f"{v} = ({x} >> {k}) | ({x} << ({w} - {k}))")
            if t in g.types:
                g.vars[t].append(v)
            store = g.add_buffer("i32", "out", g.block * g.groups * (2 if w == 64 else 1))
            if w == 64:
                g.emit(0, f"{store}[g * 2] = i32({v})")
                g.emit(0, f"{store}[g * 2 + 1] = i32({v} >> 32)")
            else:
                g.emit(0, f"{store}[g] = i32({v})")
    finally:
        g.rng = saved


def copy_section(g):
    """pk.copy_async at the top level: each work-item copies one group of an input buffer into its
    slot of a shared array (one or two committed groups, waited for with copy_wait(1) and
    copy_wait(0)), then, after a barrier, reads an element another work-item copied (docs/language.md
    "Asynchronous copies"; plain copies on every backend but cuda/nvptx sm_80+)."""
    r = g.cprng
    ins = [t for t in g.types if t in g.readonly and t != "bool"]
    if not ins:
        return
    t = r.choice(ins)
    n = r.choice(copy_counts(g, t))
    groups = N_IN // n  # of the input buffer (N_IN elements, a power of two)
    parts = r.choice([1, 2])
    sh = g.fresh("cp")
    g.uses_barrier = True
    g.emit(0, f"{sh} = pk.shared({t}, {parts * g.block * n})")
    for p in range(parts):
        off = r.randint(0, groups - 1)
        g.need_align(g.readonly[t], n, t)
        g.emit(0, f"pk.copy_async({sh}, lid + {p * g.block}, {g.readonly[t]}, "
                  f"(lid + {off}) & {groups - 1}, {n})")
        g.emit(0, "pk.copy_commit()")
    if parts == 2:
        g.emit(0, "pk.copy_wait(1)")
    g.emit(0, "pk.copy_wait(0)")
    g.emit(0, "pk.barrier()")
    v = g.fresh("v")
    g.emit(0, f"{v} = {sh}[(lid * {n} + {r.randint(0, parts * g.block * n - 1)}) & "
              f"{parts * g.block * n - 1}]")
    g.vars[t].append(v)


__all__ = ["copy_counts", "copy_section", "rotate_section", "shared_dynamic_section", "vector_section"]
