"""kernelgen's subgroup sections: collectives at the top level (:func:`subgroup_section`, uniform control
flow), and collectives under subgroup-uniform control flow (:func:`subgroup_uniform_section`; docs/language.md
"Subgroups": a collective needs every lane of its subgroup, not of the work-group), described below.

Drawn from its own random stream (``g.streams["subgroup_uniform"]``), so a seed without it keeps its
program. The oracle runs the CPU's subgroup size and a device may have another, so every result is the
same whatever the size (the linear mapping, which every runtime here has in 1-D blocks):

- *split* branches on a condition that differs between subgroups (``pk.subgroup_id() % 2 == 0`` ...)
  do the same thing in both arms (the same reduction, folded by each subgroup's lane 0 into the same
  accumulator slot with its order-free atomic): the group's total does not depend on which subgroup took
  which arm, but the two arms are two collectives that different subgroups reach at once;
- branches and loops on conditions the analysis sees as only subgroup-uniform but whose value is the
  same in every subgroup of a group (votes, ``subgroup_max``, ``broadcast_first`` of work-group-uniform
  values; ``pk.subgroup_id() >= 0``) hold any reduction, and ``break`` on such a condition;
- a loop whose trip count differs between subgroups (``range(pk.subgroup_id() % 3 + 1)``) holds only
  what repeating does not change: ``min``/``max`` reductions into ``min``/``max`` accumulators and
  shuffles that give a lane its own value.
"""
from __future__ import annotations

from .kernelgen_values import N_ACC

_SHUFFLED = ("i32", "u32", "i64", "u64", "f32", "f64")


def _uniform_i32(g, r) -> str:
    """An i32 expression of work-group-uniform values (ids of the group, sizes, i32 parameters, literals)."""
    leaves = ["pk.group_id(0)", "pk.num_groups(0)", "pk.local_size(0)", str(r.randint(0, 9))]
    leaves += [n for n, t, role in g.params if role is None and t == "i32"]
    e = r.choice(leaves)
    for _ in range(r.randint(0, 2)):
        e = f"({e} {r.choice(['+', '-', '*', '^', '&'])} {r.choice(leaves)})"
    return e


def _same_cond(g, r) -> str:
    """A condition the analysis calls subgroup-uniform whose value is the same in every subgroup of a group."""
    u, k = _uniform_i32(g, r), r.randint(-2, 6)
    return r.choice([f"pk.subgroup_any({u} > {k})", f"pk.subgroup_all({u} % 3 != {k % 3})",
                     f"pk.subgroup_max({u}) < {k}", f"pk.subgroup_broadcast_first({u}) != {k}",
                     f"pk.subgroup_min({u} & 7) <= {k}", f"pk.subgroup_id() >= 0 and {u} > {k}",
                     f"pk.subgroup_id() * pk.subgroup_size() < pk.local_size(0) or {u} == {k}"])


def _split_cond(g, r) -> str:
    """A condition that differs between the subgroups of a group (subgroup-uniform only)."""
    u = _uniform_i32(g, r)
    return r.choice(["pk.subgroup_id() % 2 == 0", f"pk.subgroup_id() < ({u}) % 3",
                     f"(pk.subgroup_id() + {u}) % 3 == 1", "pk.subgroup_id() == pk.group_id(0)"])


def _reductions(g, r, ops) -> list:
    """Lines that reduce a lane value and fold it into an accumulator whose op is in ``ops`` (lane 0 of
    each subgroup, with the accumulator's own atomic)."""
    lines = []
    for t, (acc, op) in sorted(g.accs.items()):
        if op not in ops or r.random() < 0.3:
            continue
        v = g.fresh("sg")
        lines += [f"{v} = pk.subgroup_{op}({t}({g.expr(t, 2)}))", "if pk.subgroup_local_id() == 0:",
                  f"    pk.atomic_{op}({acc}, {r.randint(0, 7)}, {v})"]
    return lines


def _own_values(g, r, names) -> list:
    """Shuffles that give every lane its own value of top-level variables ``names`` back."""
    lines = []
    for t, v in names:
        m = r.choice([1, 2])
        lines.append(r.choice([f"{v} = {t}(pk.subgroup_shuffle({v}, pk.subgroup_local_id()))",
                               f"{v} = {t}(pk.subgroup_shuffle_xor(pk.subgroup_shuffle_xor({v}, {m}), {m}))"]))
    return lines


def _emit(g, depth: int, lines) -> None:
    for line in lines:
        g.emit(depth, line)


def subgroup_uniform_section(g) -> None:
    """The section (see the module docstring), at the top level of the kernel."""
    r = g.streams["subgroup_uniform"]
    g.uses_subgroups = True
    names = []
    for t in [t for t in g.types if t in _SHUFFLED]:
        if r.random() < 0.4:
            v = g.fresh("su")
            g.emit(0, f"{v} = {t}({g.expr(t, 2)})")
            names.append((t, v))
    every = ("add", "min", "max")
    for _ in range(r.randint(1, 3)):
        kind = r.choice(["split", "same", "loop", "varying_loop", "while"])
        if kind == "split":
            body = _reductions(g, r, every) + _own_values(g, r, names) or ["pass"]
            g.emit(0, f"if {_split_cond(g, r)}:")
            _emit(g, 1, body)
            g.emit(0, "else:")
            _emit(g, 1, body)
        elif kind == "same":
            g.emit(0, f"if {_same_cond(g, r)}:")
            _emit(g, 1, _reductions(g, r, every) + _own_values(g, r, names) or ["pass"])
            if r.random() < 0.4:
                g.emit(0, f"elif {_same_cond(g, r)}:")
                _emit(g, 1, _reductions(g, r, every) or ["pass"])
        elif kind == "loop":
            k = g.fresh("k")
            g.emit(0, f"for {k} in range(pk.subgroup_max({_uniform_i32(g, r)}) & 3):")
            _emit(g, 1, _reductions(g, r, every) + _own_values(g, r, names) or ["pass"])
            if r.random() < 0.5:
                g.emit(1, f"if pk.subgroup_any({k} + {_uniform_i32(g, r)} > {r.randint(0, 6)}):")
                g.emit(2, r.choice(["break", "continue"]))
        elif kind == "varying_loop":
            k = g.fresh("k")
            g.emit(0, f"for {k} in range(pk.subgroup_id() % 3 + 1):")
            _emit(g, 1, _reductions(g, r, ("min", "max")) + _own_values(g, r, names) or ["pass"])
        else:
            w, n = g.fresh("w"), g.fresh("sn")
            g.emit(0, f"{w} = 0")
            g.emit(0, f"{n} = pk.subgroup_broadcast_first({_uniform_i32(g, r)}) & 3")
            g.emit(0, f"while {w} < {n}:")
            g.emit(1, f"{w} += 1")
            _emit(g, 1, _reductions(g, r, every) or ["pass"])
    for t, v in names:
        g.vars[t].append(v)


def subgroup_section(g):
    """pk.subgroup_* at the top level (uniform control flow), used only in ways whose result does
    not depend on the device's subgroup size: reductions and votes folded into an accumulator by
    each subgroup's lane 0 with the accumulator's own (order-free) atomic, shuffles that give a
    work-item its own value back (masks 1 and 2 stay inside a subgroup: blocks are 4, 8 or 16),
    broadcasts of group-uniform values, and the ids recombined into local_id(0)."""
    r = g.sgrng
    g.uses_subgroups = True
    lead = "pk.subgroup_local_id() == 0"
    for t, (acc, op) in sorted(g.accs.items()):
        if r.random() < 0.7:
            v = g.fresh("sg")
            g.emit(0, f"{v} = pk.subgroup_{op}({t}({g.expr(t, 2)}))")
            g.emit(0, f"if {lead}:")
            g.emit(1, f"pk.atomic_{op}({acc}, {r.randint(0, N_ACC - 1)}, {v})")
        if op in ("min", "max") and r.random() < 0.5:  # min of all() / max of any(): the group's vote
            vote = "all" if op == "min" else "any"
            v = g.fresh("sg")
            g.emit(0, f"{v} = {t}(pk.subgroup_{vote}({g.expr('bool', 2)}))")
            g.emit(0, f"if {lead}:")
            g.emit(1, f"pk.atomic_{op}({acc}, {r.randint(0, N_ACC - 1)}, {v})")
    for t in [t for t in g.types if t in ("i32", "u32", "i64", "u64", "f32", "f64")]:
        if r.random() < 0.5:
            v = g.fresh("sg")
            m = r.choice([1, 2])
            inner = r.choice([f"pk.subgroup_shuffle_xor(pk.subgroup_shuffle_xor({g.expr(t, 2)}, {m}), {m})",
                              f"pk.subgroup_shuffle({g.expr(t, 2)}, pk.subgroup_local_id())"])
            g.emit(0, f"{v} = {t}({inner})")
            g.vars[t].append(v)
        if r.random() < 0.3:
            v = g.fresh("sg")
            g.emit(0, f"{v} = {t}(pk.subgroup_broadcast_first({t}(pk.group_id(0) * {r.randint(1, 9)})))")
            g.vars[t].append(v)
    if r.random() < 0.5:
        v = g.fresh("sg")
        g.emit(0, f"{v} = pk.subgroup_id() * pk.subgroup_size() + pk.subgroup_local_id() - lid")
        g.vars["i32"].append(v)
