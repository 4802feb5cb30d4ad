"""Subgroup builtins in SPIR-V: GroupNonUniform instructions (SPIR-V 1.3, Vulkan 1.1) at Subgroup scope.

The subgroup size, id and lane come from the device (the SubgroupSize, SubgroupId and
SubgroupLocalInvocationId built-ins), loaded once at the start of the kernel. Lanes and xor masks
are taken modulo the subgroup size (docs/language.md "Subgroups"; SPIR-V leaves an out-of-range
lane undefined). Reductions use GroupOperation Reduce; float add order is the device's (reassociation
allowed: polykern.numerics). The runtime refuses a device whose VkPhysicalDeviceSubgroupProperties
lack compute-stage support or one of the operation classes (basic, vote, arithmetic, ballot, shuffle).
"""
from __future__ import annotations

from polykern.ir import nodes as n
from polykern.ir.types import i32

from .spirv_spec import BUILTIN, GROUP_OPERATION_REDUCE, SCOPE_SUBGROUP, Op

__all__ = ["declare_subgroup_inputs", "lower_subgroup"]

_REGS = (("size", "SubgroupSize"), ("id", "SubgroupId"), ("local_id", "SubgroupLocalInvocationId"))
# op -> (signed int, unsigned int, float) instruction
_REDUCE = {"add": (Op.GroupNonUniformIAdd, Op.GroupNonUniformIAdd, Op.GroupNonUniformFAdd),
           "min": (Op.GroupNonUniformSMin, Op.GroupNonUniformUMin, Op.GroupNonUniformFMin),
           "max": (Op.GroupNonUniformSMax, Op.GroupNonUniformUMax, Op.GroupNonUniformFMax)}


def declare_subgroup_inputs(low) -> dict:
    """Declare and load the three subgroup built-ins (u32 inputs) of ``low`` (a KernelLowering whose
    function has begun); returns {op: i32 value id} and records the variables as interface inputs."""
    m, f = low.m, low.f
    m.capability("GroupNonUniform")  # the SubgroupSize/Id/LocalInvocationId built-ins need it, collectives or not
    uint = m.t_int(32, False)
    out = {}
    for op, builtin in _REGS:
        var = m.global_variable(m.t_pointer("Input", uint), "Input", f"subgroup_{op}")
        m.decorate(var, "BuiltIn", BUILTIN[builtin])
        low.interface.append(var)
        low.subgroup_inputs.append(var)
        out[op] = f.val(Op.Bitcast, low.ty(i32), f.val(Op.Load, uint, var))
    return out


def lower_subgroup(low, e: n.Subgroup) -> int:
    m, f = low.m, low.f
    if e.op in low.subgroup_regs:
        return low.subgroup_regs[e.op]
    scope = low.u32c(SCOPE_SUBGROUP)
    m.capability("GroupNonUniform")
    v = low.expr(e.args[0])
    rt = low.ty(e.type)
    if e.op in ("any", "all"):
        m.capability("GroupNonUniformVote")
        return f.val(Op.GroupNonUniformAny if e.op == "any" else Op.GroupNonUniformAll, rt, scope, v)
    if e.op == "broadcast_first":
        m.capability("GroupNonUniformBallot")
        if e.type.is_float:  # lane 0 (every lane is active: uniform control flow) by a shuffle: lavapipe
            # (Mesa 22.3, LLVM 15) aborts on two float BroadcastFirst ("Cannot select scalar_to_vector")
            m.capability("GroupNonUniformShuffle")
            return f.val(Op.GroupNonUniformShuffle, rt, scope, v, low.u32c(0))
        return f.val(Op.GroupNonUniformBroadcastFirst, rt, scope, v)
    if e.op in ("shuffle", "shuffle_xor"):
        m.capability("GroupNonUniformShuffle")
        uint = m.t_int(32, False)
        lane = f.val(Op.Bitcast, uint, low.expr(e.args[1]))
        size = f.val(Op.Bitcast, uint, low.subgroup_regs["size"])
        lane = f.val(Op.BitwiseAnd, uint, lane, f.val(Op.ISub, uint, size, low.u32c(1)))
        code = Op.GroupNonUniformShuffle if e.op == "shuffle" else Op.GroupNonUniformShuffleXor
        return f.val(code, rt, scope, v, lane)
    m.capability("GroupNonUniformArithmetic")
    t = e.type
    code = _REDUCE[e.op][2 if t.is_float else (0 if t.is_signed else 1)]
    return f.val(code, rt, scope, GROUP_OPERATION_REDUCE, v)
