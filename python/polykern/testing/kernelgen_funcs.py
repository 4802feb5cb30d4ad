"""kernelgen's device functions (docs/language.md 3, 6).

Plain ones (:func:`helper`, called from expressions with :func:`call`): a ``@pk.func`` ``h<k>`` with scalar
parameters, maybe an input buffer and a ``pk.constexpr``, early returns (also from inside a loop).

Ones that use memory (:func:`memory_functions`): two levels of ``@pk.func``.

The outer function ``mo<k>(b, o, lid, gi)`` declares a shared array (``pk.shared_dynamic`` or
``pk.shared``), fills its work-item's group of it (``pk.copy_async`` from the buffer ``b``, one
``pk.vstore``, or plain stores), meets the others at a barrier, reads a group another work-item filled,
and calls the inner function ``mi<k>(b, o, k, gi)``, which reads a ``pk.vload`` group of ``b`` and stores
a ``pk.vstore`` group into the work-item's own group ``gi`` of ``o`` (a new output buffer). The kernel calls
the outer function once, at its top level (the barrier inside needs uniform control flow).
Drawn from its own random stream (``g.streams["memory_functions"]``).
"""
from __future__ import annotations

from typing import List

from .kernelgen_memory import copy_counts
from .kernelgen_values import TYPE_ORDER, annot


def call(g, func) -> str:
    """A call of device function ``func`` (name, return type, parameters: ``g.helpers``) with generated
    arguments."""
    name, _, params = func
    g.call_depth += 1
    args = []
    for p, pt in params:
        if pt == "constexpr":
            args.append(str(g.rng.randint(0, 4)))
        elif pt.startswith("buf:"):
            args.append(g.readonly[pt[4:]])
        else:
            args.append(g.expr(pt, 1))
    g.call_depth -= 1
    return f"{name}({', '.join(args)})"


def helper(g) -> List[str]:
    """A @pk.func: scalar parameters, maybe an input buffer and a pk.constexpr, early returns."""
    r = g.rng
    name, t = g.fresh("h"), r.choice(g.types)
    params = [(g.fresh("p"), r.choice(g.types)) for _ in range(r.randint(1, 3))]
    kernel_state = (g.vars, g.readonly, g.local_arrays, g.lines, g.fixed, g.constexprs)
    g.vars = {x: [] for x in TYPE_ORDER}
    for p, pt in params:
        g.vars[pt].append(p)
    inputs = {x: g.readonly[x] for x in g.readonly if r.random() < 0.5}
    g.readonly, g.local_arrays, g.lines, g.fixed = {}, {}, [], set()
    for x in inputs:
        b = g.fresh("b")
        g.readonly[x] = b
        params.append((b, "buf:" + x))
    g.constexprs = {}
    if r.random() < 0.5:
        c = g.fresh("C")
        g.constexprs[c] = 0
        params.append((c, "constexpr"))
    for _ in range(r.randint(0, 2)):
        g.declare(0, r.choice(g.types))
    if r.random() < 0.5:
        g.emit(0, f"if {g.expr('bool', 2)}:")
        g.emit(1, f"return {g.expr(t, 2)}")
    if r.random() < 0.5:
        k = g.fresh("k")
        bound = sorted(g.constexprs)[0] if g.constexprs else str(r.randint(0, 4))
        g.emit(0, f"for {k} in range({bound}):")
        g.vars["i32"].append(k)
        g.fixed.add(k)
        names = [v for v in g.vars[t] if v not in g.fixed]
        if names:
            g.emit(1, f"{r.choice(names)} = {g.expr(t, 2)}")
        g.emit(1, f"if {g.expr('bool', 2)}:")
        g.emit(2, f"return {g.expr(t, 2)}")
    g.emit(0, f"return {g.expr(t, 3)}")
    body = g.lines
    sig = ", ".join(f"{p}: {_helper_annot(pt)}" for p, pt in params)
    (g.vars, g.readonly, g.local_arrays, g.lines, g.fixed, g.constexprs) = kernel_state
    g.helpers.append((name, t, params))
    return ["", "", "@pk.func", f"def {name}({sig}) -> {annot(t, None)}:"] + body + [""]


def _helper_annot(pt: str) -> str:
    """A device function parameter: "constexpr", "buf:<type>" (an input buffer) or a scalar type."""
    if pt == "constexpr":
        return "pk.constexpr"
    return annot(pt[4:], "in") if pt.startswith("buf:") else annot(pt, None)


def memory_functions(g) -> List[str]:
    """The two functions' source lines (to go before the kernel); records the call in ``g.mem_call``."""
    r = g.streams["memory_functions"]
    ins = [t for t in g.types if t in g.readonly and t != "bool"]
    if not ins:
        return []
    saved, g.rng = g.rng, r
    try:
        return _functions(g, r, r.choice(ins))
    finally:
        g.rng = saved


def _functions(g, r, t: str) -> List[str]:
    tn = t
    inner, outer = g.fresh("mi"), g.fresh("mo")
    n = r.choice([2, 4])
    groups = g.n_in // n
    op = r.choice(["+", "-", "*"])
    lines = ["", "", "@pk.func",
             f'def {inner}(b: Buffer[{tn}, "readonly"], o: Buffer[{tn}], k: i32, gi: i32) -> {tn}:']
    xs = [f"x{c}" for c in range(n)]
    lines.append(f"    {', '.join(xs)} = pk.vload(b, k & {groups - 1}, {n})")
    perm = r.sample(xs, n)
    lines.append(f"    pk.vstore(o, gi, ({', '.join(perm)}))")
    lines.append(f"    return {f' {op} '.join(xs[:2])}")
    # the outer function: its shared array, filled per work-item, read after a barrier
    counts = copy_counts(g, t) if "copies" not in g.avoid else []
    how = r.choice(["copy"] * bool(counts) + ["vstore", "plain"])
    m = r.choice(counts) if how == "copy" else r.choice([2, 4])
    dynamic = (g.shared_size is None and not {"shared_dynamic", "function_shared_dynamic"} & g.avoid
               and r.random() < 0.6)
    body = [f'def {outer}(b: Buffer[{tn}, "readonly"], o: Buffer[{tn}], lid: i32, gi: i32) -> {tn}:']
    if dynamic:
        g.shared_size = g.block * m + r.randint(0, 3)
        body.append(f"    t = pk.shared_dynamic({tn})")
    else:
        body.append(f"    t = pk.shared({tn}, {g.block * m})")
    if how == "copy":
        body.append(f"    pk.copy_async(t, lid, b, (lid + {r.randint(0, g.n_in // m - 1)}) & {g.n_in // m - 1}, {m})")
        body.append("    pk.copy_commit()")
        body.append("    pk.copy_wait(0)")
    elif how == "vstore":
        body.append(f"    pk.vstore(t, lid, ({', '.join(f'b[(lid + {c}) & {g.n_in - 1}]' for c in range(m))}))")
    else:
        body += [f"    t[lid * {m} + {c}] = b[(lid * {c + 1}) & {g.n_in - 1}]" for c in range(m)]
    body.append("    pk.barrier()")
    other = f"((lid + {r.randint(1, g.block - 1) if g.block > 1 else 0}) & {g.block - 1})"
    if m in (2, 4) and r.random() < 0.5:
        ys = [f"y{c}" for c in range(m)]
        body.append(f"    {', '.join(ys)} = pk.vload(t, {other}, {m})")
        y = r.choice(ys)
    else:
        body.append(f"    y = t[{other} * {m} + {r.randint(0, m - 1)}]")
        y = "y"
    body.append(f"    return {y} {op} {inner}(b, o, lid + {r.randint(0, 7)}, gi)")
    lines += ["", "", "@pk.func"] + body + [""]
    out = g.add_buffer(t, "out", g.block * g.groups * n)
    g.need_align(out, n, t)  # through the functions' parameters o and b
    g.need_align(g.readonly[t], n, t)
    if how == "copy":
        g.need_align(g.readonly[t], m, t)
    g.uses_barrier = True
    g.mem_call = (t, f"{outer}({g.readonly[t]}, {out}, lid, g)")
    return lines


__all__ = ["call", "helper", "memory_functions"]
