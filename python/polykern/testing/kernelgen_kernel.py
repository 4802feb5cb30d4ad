"""kernelgen's kernel: its parameters (scalars, input, output, math and accumulator buffers), its device
functions, and its body: the ids, local arrays, shared memory between barriers, the feature sections in
their fixed order (each from its own random stream), then random statements until the budget is spent
and a store into every output and math buffer that has none yet.
"""
from __future__ import annotations

from typing import List

from .kernelgen_funcs import helper, memory_functions
from .kernelgen_matrix import matrix_possible, matrix_section
from .kernelgen_memory import copy_section, rotate_section, shared_dynamic_section, vector_section
from .kernelgen_subgroups import subgroup_section, subgroup_uniform_section
from .kernelgen_values import FLOATS, N_LOCAL

__all__ = ["build_kernel"]


def build_kernel(g) -> List[str]:
    """Draw the kernel's parameters (into ``g.params``), device functions and body (into ``g.lines``, the
    output slots still ``{K_<buffer>}``); return the device functions' source lines."""
    r = g.rng
    params = g.params
    for _ in range(r.randint(0, 3)):
        t = r.choice(g.types)
        t = "f32" if t == "bf16" else t  # no bf16 scalar kernel arguments (docs/language.md "bf16")
        name = g.fresh("s")
        params.append((name, t, None))
        g.vars[t].append(name)
        g.fixed.add(name)
    for t in g.types:
        if t == "bool" and (g.portable or "bool_buffer" in g.avoid):
            continue
        if r.random() < 0.7:
            name = g.fresh("a")
            g.readonly[t] = name
            params.append((name, t, "in"))
        name = g.fresh("o")
        g.outs[t] = name
        g.out_slots[t] = 0
        params.append((name, t, "out"))
    for t in g.types_of(lambda x: x in FLOATS):
        name = g.fresh("m")
        g.maths[t] = name
        g.math_slots[t] = 0
        params.append((name, t, "math"))
    if not g.maths:
        g.types.append("f32")
        name = g.fresh("m")
        g.maths["f32"] = name
        g.math_slots["f32"] = 0
        params.append((name, "f32", "math"))
    g.accs = {}
    for t in (["i32", "u32"] if "u32" in g.types else ["i32"]):
        name = g.fresh("acc")
        g.accs[t] = (name, r.choice(["add", "add", "min", "max"]))
        params.append((name, t, "acc"))
    helper_lines = []
    for _ in range(g.frng.choice([0, 0, 0, 1, 2]) if "functions" not in g.avoid else 0):
        helper_lines += helper(g)
    if g.wants("memory_functions", ("functions", "barrier")):
        helper_lines += memory_functions(g)
    if "constexpr" not in g.avoid and g.frng.random() < 0.25:
        g.constexprs[g.fresh("C")] = g.frng.randint(0, 6)

    g.emit(0, "g = pk.global_id(0)")
    g.vars["i32"].append("g")
    g.emit(0, "lid = pk.local_id(0)")
    g.vars["i32"].append("lid")
    g.fixed.update(("g", "lid"))
    for t in g.types:
        if t != "bool" and r.random() < 0.25:
            name = g.fresh("la")
            g.emit(0, f"{name} = pk.local({t}, {N_LOCAL})")
            g.local_arrays[t] = name
    if r.random() < 0.4 and "barrier" not in g.avoid:
        t = r.choice(g.types)
        sh = g.fresh("sh")
        g.uses_barrier = True
        g.emit(0, f"{sh} = pk.shared({'bool_' if t == 'bool' else t}, {g.block})")
        for _ in range(r.randint(1, 2)):
            g.emit(0, f"{sh}[lid] = {g.expr(t, 3)}")
            g.emit(0, "pk.barrier()")
            v = g.fresh("v")
            g.emit(0, f"{v} = {sh}[(lid + {r.randint(0, g.block - 1)}) & {g.block - 1}]")
            g.emit(0, "pk.barrier()")
            g.vars[t].append(v)
    if not {"copies", "barrier"} & g.avoid and g.cprng.random() < 0.25:
        copy_section(g)
    if "subgroups" not in g.avoid and g.sgrng.random() < 0.3:
        subgroup_section(g)
    if g.wants("subgroup_uniform", ("subgroups",)):
        subgroup_uniform_section(g)
    if g.wants("vectors"):
        vector_section(g)
    if g.wants("shared_dynamic", ("barrier",)) and g.shared_size is None:
        shared_dynamic_section(g)
    if g.wants("matrix", ("subgroups",)) and matrix_possible(g):
        matrix_section(g)
    if g.wants("rotates"):
        rotate_section(g)
    if g.mem_call is not None:
        t, call = g.mem_call
        v = g.fresh("v")
        g.emit(0, f"{v} = {call}")
        g.vars[t].append(v)
    while g.budget > 0:
        g.stmt(0)
    for t in g.outs:
        if g.out_slots[t] == 0:
            g.out_store(0, t)
    for t in g.maths:
        if g.math_slots[t] == 0:
            c = g.math_slots[t]
            g.math_slots[t] += 1
            g.emit(0, f"{g.maths[t]}[g * {{K_{g.maths[t]}}} + {c}] = pk.sqrt({g.expr(t, 2)})")
    return helper_lines
