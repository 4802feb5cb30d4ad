"""Lowering of one IR kernel to one SPIR-V GLCompute shader module.

Launch ABI (also in README.md and in each FunctionInfo's attrs):
- Buffers: descriptor set 0, binding = index of the buffer among the buffer parameters, each a
  ``StorageBuffer`` ``Block`` struct holding one runtime array (ArrayStride = element size);
  readonly buffers are ``NonWritable``. ``Buffer[bool]`` is stored as one byte per element (NumPy's
  layout); any nonzero byte reads as true, true stores as 1.
- Scalars: one ``PushConstant`` ``Block`` struct, members in parameter order, each at an offset
  aligned to its slot size. Slots: i32/u32/f32/i64/u64/f64 as themselves; i8/i16 as i32 (sign
  extended), u8/u16/bool as u32 (zero extended, bool 0/1), f16 as f32 (exact). The attrs
  ``push_constants`` ("name@offset:slot,...") and ``push_constant_size`` describe it.
- Block size: specialization constants SpecId 0, 1, 2 (u32, default 1) form the ``WorkgroupSize``
  builtin; the runtime specializes the pipeline per block shape.
- grid = number of workgroups (vkCmdDispatch(gx, gy, gz)).

Semantics: integer ``floordiv``/``mod`` truncate (C semantics). ``floordiv`` is OpSDiv/OpUDiv (the
Vulkan environment restricts only OpSRem/OpSMod). Signed ``mod`` never uses OpSRem/OpSMod, which the
Vulkan environment leaves undefined for negative operands (NVIDIA computes an unsigned remainder):
it is OpUMod on the magnitudes with the dividend's sign (see ``signed_remainder``). Shifts mask the amount;
float min/max return the non-NaN operand (NMin/NMax, like C fmin); ``!=`` on floats is unordered (true
for NaN); float -> bool is ``x != 0`` (NaN is true). ``range`` bounds are evaluated once, before the loop
(Python semantics). Atomics are relaxed, Device scope on buffers and Workgroup scope on shared arrays;
float atomic add/min/max use a compare-exchange loop on the bit pattern (the array is then declared
with the same-width unsigned element type and every access bitcasts), float ``cas`` compares bits.
Narrowing to f16 never uses OpFConvert (drivers fold f32 -> f16 -> f32 into a no-op even with
NoContraction): the round-to-nearest-even half bit pattern is computed from the f32 bits with 32-bit
integer ops and bitcast to half (see ``f32_to_f16``); f64 -> f16 goes through f32 rounded to odd
(``f64_to_f32_odd``), so it rounds once. Float ``%`` is C's exact fmod (``fmod``), not OpFRem.
"""
from __future__ import annotations

import math
from typing import Dict, FrozenSet, List, Optional, Tuple

import numpy as np

from polykern import ir
from polykern.errors import KernelTypeError
from polykern.ir import nodes as n
from polykern.ir.bfloat16 import f32_to_bits
from polykern.ir.types import SCALAR_TYPES, ArrayType, ScalarType, bf16, bool_, f32, f64, i32, u16, u32
from polykern.ir.vector import VecGroup, iter_groups, vector_buffers
from polykern.numerics import saturation_bounds

from . import lower_bf16
from .spirv_builder import FunctionBuilder, ModuleBuilder
from .spirv_matrix import declare_matrix, lower_matrix_op
from .spirv_subgroups import declare_subgroup_inputs, lower_subgroup
from .spirv_spec import (BUILTIN, EXECUTION_MODE, EXECUTION_MODEL, GLSL, SCOPE_DEVICE, SCOPE_WORKGROUP,
                         SEM_ACQUIRE_RELEASE, SEM_MAKE_AVAILABLE, SEM_MAKE_VISIBLE, SEM_RELAXED, SEM_UNIFORM_MEMORY,
                         SEM_WORKGROUP_MEMORY, Op)

PUSH_CONSTANT_LIMIT = 128  # bytes every Vulkan device guarantees (maxPushConstantsSize)
_SPECIAL_BUILTIN = {"global_id": "GlobalInvocationId", "local_id": "LocalInvocationId",
                    "group_id": "WorkgroupId", "num_groups": "NumWorkgroups"}
_FLOAT32_ONLY_MATH = ("exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow")
_GLSL_FLOAT = {"sqrt": "Sqrt", "rsqrt": "InverseSqrt", "exp": "Exp", "exp2": "Exp2", "log": "Log",
               "log2": "Log2", "sin": "Sin", "cos": "Cos", "tanh": "Tanh", "pow": "Pow", "fma": "Fma",
               "abs": "FAbs", "floor": "Floor", "ceil": "Ceil", "min": "NMin", "max": "NMax"}


def push_slot(t: ScalarType) -> ScalarType:
    """The push-constant slot type that carries a scalar parameter of type ``t``."""
    from polykern.ir.types import f32

    if t.is_bool:
        return u32
    if t.is_float:
        return f32 if t.bits == 16 else t
    if t.bits < 32:
        return i32 if t.is_signed else u32
    return t


def push_constant_layout(params) -> List[Tuple[str, int, ScalarType, ScalarType]]:
    """(name, offset, slot type, parameter type) for each scalar parameter, in order."""
    out, offset = [], 0
    for p in params:
        if p.is_buffer:
            continue
        slot = push_slot(p.type)
        size = slot.bits // 8
        offset = (offset + size - 1) // size * size
        out.append((p.name, offset, slot, p.type))
        offset += size
    return out


def _is_positive_zero(e: n.Expr) -> bool:
    """A float +0.0 the driver can see as a constant: a literal, or a cast of an integer/bool zero."""
    if not e.type.is_float:
        return False
    if isinstance(e, n.Cast) and isinstance(e.a, n.Const) and not e.a.type.is_float:
        return e.a.value == 0
    return isinstance(e, n.Const) and e.value == 0 and math.copysign(1.0, e.value) > 0


def _is_cheap_and_safe(e: n.Expr) -> bool:
    """Side-effect free and never undefined: may be evaluated even when a short-circuit skips it."""
    for x in n.walk_expr(e):
        if isinstance(x, (n.Load, n.Atomic)):
            return False
        if isinstance(x, n.BinOp) and x.op in ("div", "floordiv", "mod") and not x.type.is_float:
            return False
    return True


class _Loop:
    def __init__(self, merge: int, cont: int):
        self.merge = merge
        self.cont = cont


class KernelLowering:
    def __init__(self, fn: ir.Function, version: Tuple[int, int], features: FrozenSet[str]):
        self.fn = fn
        self.version = version
        self.features = features
        self.m = ModuleBuilder(version)
        self.subgroup_inputs: List[int] = []  # built-in input variables of the subgroup registers
        self.subgroup_regs: Dict[str, int] = {}  # subgroup op -> its loaded i32 value
        self.f: Optional[FunctionBuilder] = None
        self.required: set = set()
        self.vars: Dict[str, int] = {}  # scalar name -> Function variable
        self.arrays: Dict[str, Tuple[int, str]] = {}  # buffer/array name -> (variable, storage class)
        self.punned: set = set()  # array names stored as same-width uints (float atomics)
        self.interface: List[int] = []
        self.specials: Dict[Tuple[str, int], int] = {}
        self.loops: List[_Loop] = []
        self.attrs: Dict[str, str] = {}
        self.block_structs: set = set()
        # 32-bit buffers accessed only by pk.vload/pk.vstore groups of one width: arrays of vectors
        self.vec_buffers = {b: k for b, k in vector_buffers(fn).items()
                            if fn.param(b).type.elem.name in ("f32", "i32", "u32")}

    # ------------------------------------------------------------------ errors and features
    def refuse(self, msg: str, loc=None):
        raise KernelTypeError(f"vulkan: kernel '{self.fn.name}': {msg}", loc or self.fn.loc)

    def need(self, feature: str, what: str, loc=None):
        if feature not in self.features:
            from .features import DEFAULT_FEATURES, canonical_features

            have = canonical_features(self.features)
            want = set(self.features) | {feature}
            if want >= set(DEFAULT_FEATURES):
                fix = ",".join(["default"] + sorted(want - set(DEFAULT_FEATURES)))
            else:
                fix = canonical_features(want)
            self.refuse(
                f"{what} needs the '{feature}' feature, which this target does not enable "
                f"(features={have}); compile for 'vulkan -features={fix}' if the device supports it", loc)
        self.required.add(feature)

    def _loc_of_type(self, t: ScalarType):
        for e in n.walk_all_exprs(self.fn.body):
            if e.type == t and e.loc is not None:
                return e.loc
        return self.fn.loc

    def check_types(self):
        in_buffers = {p.type.elem for p in self.fn.params if p.is_buffer}
        for t in sorted(n.used_types(self.fn), key=lambda t: t.name):
            loc = self._loc_of_type(t)
            if t.is_bool:
                if bool_ in in_buffers:
                    self.need("int8", "Buffer[bool] (stored as bytes)", loc)
                continue
            if t == bf16:  # its bits, in u16 (lower_bf16.py)
                self.need("int16", f"type {t} (held as 16-bit integers)", loc)
            elif t.is_float and t.bits in (16, 64):
                self.need(f"float{t.bits}", f"type {t}", loc)
            elif t.is_int and t.bits in (8, 16, 64):
                self.need(f"int{t.bits}", f"type {t}", loc)

    # ------------------------------------------------------------------ types and constants
    def ty(self, t: ScalarType) -> int:
        if t == bf16:
            t = u16
        if t.is_bool:
            return self.m.t_bool()
        if t.is_float:
            self._type_caps(t)
            return self.m.t_float(t.bits)
        self._type_caps(t)
        return self.m.t_int(t.bits, t.is_signed)

    def _type_caps(self, t: ScalarType):
        caps = {(2, 16): "Float16", (2, 64): "Float64", (0, 8): "Int8", (0, 16): "Int16", (0, 64): "Int64"}
        cap = caps.get((2 if t.is_float else 0, t.bits))
        if cap:
            self.m.capability(cap)

    def const(self, t: ScalarType, value) -> int:
        if t == bf16:
            return self.m.const(self.ty(u16), int(f32_to_bits(value)))
        return self.m.const(self.ty(t), value)

    def u32c(self, value: int) -> int:
        return self.m.const_u32(value)

    def storage_type(self, name: str, elem: ScalarType, external: bool) -> ScalarType:
        """The element type an array is declared with."""
        from polykern.ir.types import SCALAR_TYPES

        if name in self.punned or elem == bf16:
            return SCALAR_TYPES[f"u{elem.bits}"]
        if elem.is_bool and external:
            return SCALAR_TYPES["u8"]
        return elem

    # ------------------------------------------------------------------ module-level declarations
    def declare_buffers(self):
        m = self.m
        bindings = []
        for p in self.fn.params:
            if not p.is_buffer:
                continue
            binding = len(bindings)
            bindings.append(f"{p.name}={binding}")
            st = self.storage_type(p.name, p.type.elem, True)
            if st.bits in (8, 16):
                cap = "StorageBuffer8BitAccess" if st.bits == 8 else "StorageBuffer16BitAccess"
                m.capability(cap)
                if st.bits == 8 and self.version < (1, 5):
                    m.extension("SPV_KHR_8bit_storage")
                if st.bits == 16 and self.version < (1, 3):
                    m.extension("SPV_KHR_16bit_storage")
            elem = self.ty(st)
            lanes = self.vec_buffers.get(p.name, 1)
            if lanes > 1:  # accessed only by pk.vload/pk.vstore groups: an array of vectors (ir/vector.py)
                elem = m.t_vector(elem, lanes)
            rt = m.t_runtime_array(elem, st.nbytes * lanes)
            struct_id = m.t_struct([rt], tag="block")
            if struct_id not in self.block_structs:
                self.block_structs.add(struct_id)
                m.name(struct_id, f"Buffer_{st}" + (f"x{lanes}" if lanes > 1 else ""))
                m.decorate(struct_id, "Block")
                m.member_decorate(struct_id, 0, "Offset", 0)
            ptr = m.t_pointer("StorageBuffer", struct_id)
            var = m.global_variable(ptr, "StorageBuffer", p.name)
            m.decorate(var, "DescriptorSet", 0)
            m.decorate(var, "Binding", binding)
            if p.type.readonly:
                m.decorate(var, "NonWritable")
            self.arrays[p.name] = (var, "StorageBuffer")
            self.interface.append(var)
        if self.version < (1, 3) and bindings:
            m.extension("SPV_KHR_storage_buffer_storage_class")
        self.attrs["descriptor_set"] = "0"
        self.attrs["bindings"] = ",".join(bindings)

    def declare_push_constants(self):
        layout = push_constant_layout(self.fn.params)
        size = 0
        if layout:
            name, off, slot, _ = layout[-1]
            size = off + slot.bits // 8
        if size > PUSH_CONSTANT_LIMIT:
            self.refuse(f"its scalar arguments need {size} bytes of push constants; Vulkan guarantees "
                        f"only {PUSH_CONSTANT_LIMIT} (pass some of them in a Buffer)")
        self.attrs["push_constants"] = ",".join(f"{nm}@{off}:{slot}" for nm, off, slot, _ in layout)
        self.attrs["push_constant_size"] = str(size)
        self.push = None
        if not layout:
            return
        m = self.m
        members = [self.ty(slot) for _, _, slot, _ in layout]
        struct_id = m.t_struct(members, tag="push")
        m.name(struct_id, "Params")
        m.decorate(struct_id, "Block")
        for i, (nm, off, _, _) in enumerate(layout):
            m.member_name(struct_id, i, nm)
            m.member_decorate(struct_id, i, "Offset", off)
        var = m.global_variable(m.t_pointer("PushConstant", struct_id), "PushConstant", "params")
        self.interface.append(var)
        self.push = (var, layout)

    def declare_workgroup_size(self):
        m = self.m
        parts = [m.spec_const_u32(1, i, f"local_size_{'xyz'[i]}") for i in range(3)]
        self.wg_size = m.spec_const_composite(m.t_vector(m.t_int(32, False), 3), parts)
        m.name(self.wg_size, "workgroup_size")
        m.decorate(self.wg_size, "BuiltIn", BUILTIN["WorkgroupSize"])
        self.attrs["spec_ids"] = "local_size_x=0,local_size_y=1,local_size_z=2"

    def declare_shared(self):
        for name, at in self.fn.shared_arrays.items():
            st = self.storage_type(name, at.elem, False)
            if at.dynamic:  # pk.shared_dynamic: its length is specialization constant 3 (one pipeline per size)
                length = self.m.spec_const_u32(1, 3, "shared_size")
                arr = self.m.t_array_of_length(self.ty(st), length)
                self.attrs["spec_ids"] += ",shared_size=3"
            else:
                arr = self.m.t_array(self.ty(st), at.size)
            var = self.m.global_variable(self.m.t_pointer("Workgroup", arr), "Workgroup", name)
            self.arrays[name] = (var, "Workgroup")
            self.interface.append(var)

    def builtin_input(self, kind: str) -> int:
        m = self.m
        v3 = m.t_vector(m.t_int(32, False), 3)
        var = m.global_variable(m.t_pointer("Input", v3), "Input", kind)
        m.decorate(var, "BuiltIn", BUILTIN[_SPECIAL_BUILTIN[kind]])
        self.interface.append(var)
        return var

    # ------------------------------------------------------------------ pre-pass
    def scan(self):
        for e in n.walk_all_exprs(self.fn.body):
            if isinstance(e, n.Atomic):
                elem = e.base.type.elem
                if isinstance(e.base.type, ArrayType) and e.base.type.scope == "local":
                    self.refuse(f"atomic_{e.op}() on local array '{e.base.name}'", e.loc)
                if elem.is_bool or elem.bits in (8, 16):
                    self.refuse(f"atomic_{e.op}() on {elem} elements: Vulkan has 32- and 64-bit atomics "
                                "only", e.loc)
                if elem.bits == 64:
                    self.need("int64_atomics", f"atomic_{e.op}() on {elem}", e.loc)
                    if elem.is_float:
                        self.need("int64", f"atomic_{e.op}() on f64 (done on its u64 bit pattern)", e.loc)
                if elem.is_float:  # float atomics work on the bit pattern: declare the array as uints
                    self.punned.add(e.base.name)
        specials = set()
        for e in n.walk_all_exprs(self.fn.body):
            if isinstance(e, n.SpecialReg):
                specials.add((e.kind, e.dim))
        return sorted(specials)

    # ------------------------------------------------------------------ the kernel
    def run(self) -> Tuple[bytes, Dict[str, str]]:
        m = self.m
        m.capability("Shader")
        self.check_types()
        specials = self.scan()
        if any(e.type.bits == 64 for e in n.walk_all_exprs(self.fn.body) if isinstance(e, n.Atomic)):
            m.capability("Int64Atomics")
        self.declare_buffers()
        self.declare_push_constants()
        self.declare_workgroup_size()
        self.declare_shared()
        inputs = {kind: self.builtin_input(kind) for kind in sorted({k for k, _ in specials})
                  if kind != "local_size"}
        void = m.t_void()
        f = self.f = m.function(void, m.t_function(void), self.fn.name)
        f.begin()
        # Function-storage variables: scalar params, locals, local arrays.
        for p in self.fn.params:
            if not p.is_buffer:
                self.vars[p.name] = f.variable(m.t_pointer("Function", self.ty(p.type)), p.name)
        for name, t in self.fn.locals.items():  # locals and local arrays start at zero (the IR's promise)
            if name not in self.vars:
                self.vars[name] = f.variable(m.t_pointer("Function", self.ty(t)), name, m.const_null(self.ty(t)))
        for name, at in self.fn.local_arrays.items():
            arr = m.t_array(self.ty(at.elem), at.size)
            self.arrays[name] = (f.variable(m.t_pointer("Function", arr), name, m.const_null(arr)), "Function")
        self.load_params()
        self.load_specials(specials, inputs)
        if n.uses_subgroups(self.fn):
            if self.version < (1, 3):
                sg = next(e for e in n.walk_all_exprs(self.fn.body) if isinstance(e, n.Subgroup))
                self.refuse(f"subgroup_{sg.op}() needs SPIR-V 1.3 or later (GroupNonUniform operations); "
                            f"this target asks for SPIR-V {self.version[0]}.{self.version[1]}", sg.loc)
            self.subgroup_regs = declare_subgroup_inputs(self)
        if self.fn.fragments:  # matrix fragments: SPV_KHR_cooperative_matrix (spirv_matrix.py)
            declare_matrix(self)
        self.stmts(self.fn.body)
        if not f.terminated:
            f.op(Op.Return)
        m.entry_point(EXECUTION_MODEL["GLCompute"], f.id, self.fn.name,
                      self.interface if self.version >= (1, 4) else
                      [v for v in self.interface if v in inputs.values() or v in self.subgroup_inputs])
        self.preserve_specials(f.id)
        self.attrs["entry"] = self.fn.name
        self.attrs["spirv"] = f"{self.version[0]}.{self.version[1]}"
        self.attrs["features"] = ",".join(sorted(self.required))
        return m.assemble(), self.attrs

    def preserve_specials(self, fid: int) -> None:
        """SignedZeroInfNanPreserve (SPV_KHR_float_controls) for every float width the shader declares:
        without it a driver may assume no NaN/inf/-0 (NVIDIA folds inf - inf and 0 / 0 to 0), and
        polykern.numerics promises IEEE specials. Core in SPIR-V 1.4; an extension before. The runtime
        refuses the shader on a device that does not report shaderSignedZeroInfNanPreserveFloatN."""
        widths = self.m.float_widths()
        if not widths:
            return
        self.m.capability("SignedZeroInfNanPreserve")
        if self.version < (1, 4):
            self.m.extension("SPV_KHR_float_controls")
        for bits in widths:
            self.m.execution_mode(fid, EXECUTION_MODE["SignedZeroInfNanPreserve"], bits)

    def load_params(self):
        if self.push is None:
            return
        m, f = self.m, self.f
        var, layout = self.push
        for i, (name, _, slot, t) in enumerate(layout):
            ptr = f.val(Op.AccessChain, m.t_pointer("PushConstant", self.ty(slot)), var, self.u32c(i))
            v = f.val(Op.Load, self.ty(slot), ptr)
            f.op(Op.Store, self.vars[name], self.convert(v, slot, t, exact=True))

    def load_specials(self, specials, inputs):
        m, f = self.m, self.f
        uint, sint = m.t_int(32, False), self.ty(i32)
        vectors = {kind: f.val(Op.Load, m.t_vector(uint, 3), var) for kind, var in inputs.items()}
        for kind, dim in specials:
            src = self.wg_size if kind == "local_size" else vectors[kind]
            comp = f.val(Op.CompositeExtract, uint, src, dim)
            self.specials[(kind, dim)] = f.val(Op.Bitcast, sint, comp)

    # ------------------------------------------------------------------ statements
    def stmts(self, body: List[n.Stmt]):
        for group, part in iter_groups(body):
            if self.f.terminated:
                return  # the rest of this list is unreachable (after break/continue/return)
            if group is not None and group.base.name in self.vec_buffers:
                self.vector_access(group)
                continue
            for s in part:
                if self.f.terminated:
                    return
                self.stmt(s)

    def vector_access(self, g: VecGroup):
        """A pk.vload/pk.vstore group on a buffer declared as an array of vectors: one vector load or
        store (ir/vector.py)."""
        f, m = self.f, self.m
        var, _ = self.arrays[g.base.name]
        scalar = self.ty(g.base.type.elem)
        vty = m.t_vector(scalar, g.n)
        idx = self.expr(g.index)
        if g.index.type.bits < 32:
            idx = self.convert(idx, g.index.type, i32 if g.index.type.is_signed else u32)
        ptr = f.val(Op.AccessChain, m.t_pointer("StorageBuffer", vty), var, self.u32c(0), idx)
        if g.kind == "load":
            v = f.val(Op.Load, vty, ptr)
            for j, dest in enumerate(g.dests):
                f.op(Op.Store, self.vars[dest], f.val(Op.CompositeExtract, scalar, v, j))
        else:
            f.op(Op.Store, ptr, f.val(Op.CompositeConstruct, vty, *[self.expr(v) for v in g.values]))

    def stmt(self, s: n.Stmt):
        f = self.f
        if isinstance(s, n.Assign):
            if s.name not in self.vars:
                self.refuse(f"assignment to unknown variable '{s.name}'", s.loc)
            f.op(Op.Store, self.vars[s.name], self.expr(s.value))
        elif isinstance(s, n.Store):
            ptr, st, elem = self.element_ptr(s.base, s.index)
            f.op(Op.Store, ptr, self.to_storage(self.expr(s.value), elem, st))
        elif isinstance(s, n.ExprStmt):
            self.expr(s.expr)
        elif isinstance(s, n.If):
            self.if_stmt(s)
        elif isinstance(s, n.While):
            self.loop(lambda: self.expr(s.cond), s.body, None)
        elif isinstance(s, n.For):
            self.for_stmt(s)
        elif isinstance(s, n.Break):
            if not self.loops:
                self.refuse("'break' outside a loop", s.loc)
            f.op(Op.Branch, self.loops[-1].merge)
        elif isinstance(s, n.Continue):
            if not self.loops:
                self.refuse("'continue' outside a loop", s.loc)
            f.op(Op.Branch, self.loops[-1].cont)
        elif isinstance(s, n.Return):
            f.op(Op.Return)
        elif isinstance(s, n.Barrier):
            sem = SEM_ACQUIRE_RELEASE | SEM_WORKGROUP_MEMORY | SEM_UNIFORM_MEMORY
            if self.m.vulkan_memory_model:  # (matrix fragments) availability and visibility are explicit
                sem |= SEM_MAKE_AVAILABLE | SEM_MAKE_VISIBLE
            f.op(Op.ControlBarrier, self.u32c(SCOPE_WORKGROUP), self.u32c(SCOPE_WORKGROUP), self.u32c(sem))
        elif isinstance(s, n.MatrixOp):
            lower_matrix_op(self, s)
        else:
            self.refuse(f"statement {type(s).__name__} is not supported by the SPIR-V emitter", s.loc)

    def if_stmt(self, s: n.If):
        f = self.f
        cond = self.expr(s.cond)
        merge, then = f.new_label(), f.new_label()
        other = f.new_label() if s.orelse else merge
        f.op(Op.SelectionMerge, merge, 0)
        f.op(Op.BranchConditional, cond, then, other)
        f.begin(then)
        self.stmts(s.then)
        if not f.terminated:
            f.op(Op.Branch, merge)
        if s.orelse:
            f.begin(other)
            self.stmts(s.orelse)
            if not f.terminated:
                f.op(Op.Branch, merge)
        f.begin(merge)

    def loop(self, cond_fn, body: List[n.Stmt], step_fn):
        """header: OpLoopMerge; cond block: branch to body or merge; body; continue block: step,
        back-edge to the header; merge."""
        f = self.f
        header, cond_l, body_l, cont, merge = (f.new_label() for _ in range(5))
        f.op(Op.Branch, header)
        f.begin(header)
        f.op(Op.LoopMerge, merge, cont, 0)
        f.op(Op.Branch, cond_l)
        f.begin(cond_l)
        c = cond_fn()
        f.op(Op.BranchConditional, c, body_l, merge)
        f.begin(body_l)
        self.loops.append(_Loop(merge, cont))
        self.stmts(body)
        self.loops.pop()
        if not f.terminated:
            f.op(Op.Branch, cont)
        f.begin(cont)
        if step_fn is not None:
            step_fn()
        f.op(Op.Branch, header)
        f.begin(merge)

    def for_stmt(self, s: n.For):
        f = self.f
        t = self.fn.locals.get(s.var)
        if t is None or not t.is_int:
            self.refuse(f"loop variable '{s.var}' must be an integer local", s.loc)
        var = self.vars[s.var]
        start = self.expr(s.start)
        stop = self.expr(s.stop)  # evaluated once, like Python's range()
        f.op(Op.Store, var, start)
        tid = self.ty(t)
        if s.step > 0:
            cmp_op = Op.SLessThan if t.is_signed else Op.ULessThan
        else:
            cmp_op = Op.SGreaterThan if t.is_signed else Op.UGreaterThan

        def cond():
            return f.val(cmp_op, self.m.t_bool(), f.val(Op.Load, tid, var), stop)

        def step():
            cur = f.val(Op.Load, tid, var)
            f.op(Op.Store, var, f.val(Op.IAdd, tid, cur, self.const(t, s.step)))

        self.loop(cond, s.body, step)

    # ------------------------------------------------------------------ memory
    def element_ptr(self, base: n.Var, index: n.Expr):
        """(pointer, storage element type, IR element type) of ``base[index]``."""
        if base.name not in self.arrays:
            self.refuse(f"'{base.name}' is not a buffer or array", base.loc)
        var, sc = self.arrays[base.name]
        elem = base.type.elem
        st = self.storage_type(base.name, elem, sc == "StorageBuffer")
        idx = self.expr(index)
        it = index.type
        if not isinstance(it, ScalarType) or not it.is_int:
            self.refuse(f"index of '{base.name}' must be an integer, got {it}", index.loc)
        if it.bits < 32:
            idx = self.convert(idx, it, i32 if it.is_signed else u32)
        ptr_t = self.m.t_pointer(sc, self.ty(st))
        if sc == "StorageBuffer":
            ptr = self.f.val(Op.AccessChain, ptr_t, var, self.u32c(0), idx)
        else:
            ptr = self.f.val(Op.AccessChain, ptr_t, var, idx)
        return ptr, st, elem

    def from_storage(self, v: int, st: ScalarType, elem: ScalarType) -> int:
        if st == elem:
            return v
        if elem.is_bool:
            return self.f.val(Op.INotEqual, self.m.t_bool(), v, self.const(st, 0))
        return self.f.val(Op.Bitcast, self.ty(elem), v)

    def to_storage(self, v: int, elem: ScalarType, st: ScalarType) -> int:
        if st == elem:
            return v
        if elem.is_bool:
            return self.f.val(Op.Select, self.ty(st), v, self.const(st, 1), self.const(st, 0))
        return self.f.val(Op.Bitcast, self.ty(st), v)

    # ------------------------------------------------------------------ expressions
    def expr(self, e: n.Expr) -> int:
        f = self.f
        if isinstance(e, n.Const):
            return self.const(e.type, e.value)
        if isinstance(e, n.Var):
            if e.name not in self.vars:
                self.refuse(f"'{e.name}' ({e.type}) cannot be used as a value", e.loc)
            return f.val(Op.Load, self.ty(e.type), self.vars[e.name])
        if isinstance(e, n.BinOp):
            return self.binop(e)
        if isinstance(e, n.UnaryOp):
            a = self.expr(e.a)
            t = e.a.type
            if e.op == "not":
                return f.val(Op.LogicalNot, self.ty(bool_), a)
            if e.op == "neg":
                return f.val(Op.FNegate, self.ty(t), a) if t.is_float else self.wrapping_negate(t, a)
            if e.op == "invert":
                return f.val(Op.Not, self.ty(t), a)
            self.refuse(f"unary operator '{e.op}'", e.loc)
        if isinstance(e, n.Cast):
            return self.convert(self.expr(e.a), e.a.type, e.to)
        if isinstance(e, n.Select):
            c, a, b = self.expr(e.cond), self.expr(e.a), self.expr(e.b)
            return f.val(Op.Select, self.ty(e.type), c, a, b)
        if isinstance(e, n.Load):
            ptr, st, elem = self.element_ptr(e.base, e.index)
            return self.from_storage(f.val(Op.Load, self.ty(st), ptr), st, elem)
        if isinstance(e, n.Call):
            return self.call(e)
        if isinstance(e, n.SpecialReg):
            return self.specials[(e.kind, e.dim)]
        if isinstance(e, n.Atomic):
            return self.atomic(e)
        if isinstance(e, n.Subgroup):
            return lower_subgroup(self, e)
        self.refuse(f"expression {type(e).__name__} is not supported by the SPIR-V emitter", e.loc)

    _ARITH = {"add": (Op.IAdd, Op.IAdd, Op.FAdd), "sub": (Op.ISub, Op.ISub, Op.FSub),
              "mul": (Op.IMul, Op.IMul, Op.FMul), "div": (Op.SDiv, Op.UDiv, Op.FDiv),
              "floordiv": (Op.SDiv, Op.UDiv, None), "mod": (None, Op.UMod, Op.FRem),
              "and": (Op.BitwiseAnd, Op.BitwiseAnd, None), "or": (Op.BitwiseOr, Op.BitwiseOr, None),
              "xor": (Op.BitwiseXor, Op.BitwiseXor, None),
              "shl": (Op.ShiftLeftLogical, Op.ShiftLeftLogical, None),
              "shr": (Op.ShiftRightArithmetic, Op.ShiftRightLogical, None)}
    _CMP = {"lt": (Op.SLessThan, Op.ULessThan, Op.FOrdLessThan),
            "le": (Op.SLessThanEqual, Op.ULessThanEqual, Op.FOrdLessThanEqual),
            "gt": (Op.SGreaterThan, Op.UGreaterThan, Op.FOrdGreaterThan),
            "ge": (Op.SGreaterThanEqual, Op.UGreaterThanEqual, Op.FOrdGreaterThanEqual),
            "eq": (Op.IEqual, Op.IEqual, Op.FOrdEqual),
            "ne": (Op.INotEqual, Op.INotEqual, Op.FUnordNotEqual)}
    _LOGIC = {"and": Op.LogicalAnd, "or": Op.LogicalOr, "xor": Op.LogicalNotEqual,
              "eq": Op.LogicalEqual, "ne": Op.LogicalNotEqual}

    def binop(self, e: n.BinOp) -> int:
        f = self.f
        if e.op in ("land", "lor"):
            return self.short_circuit(e)
        t = e.a.type
        a, b = self.expr(e.a), self.expr(e.b)
        if t.is_bool:
            if e.op in self._LOGIC:
                return f.val(self._LOGIC[e.op], self.ty(bool_), a, b)
            if e.op in self._CMP:  # ordered comparison of bools: compare as 0/1
                a, b, t = self.convert(a, bool_, u32), self.convert(b, bool_, u32), u32
            else:
                self.refuse(f"operator '{e.op}' on bool", e.loc)
        col = 2 if t.is_float else (0 if t.is_signed else 1)
        if e.op in self._CMP:
            return f.val(self._CMP[e.op][col], self.ty(bool_), a, b)
        if e.op == "mod" and t.is_float:
            return self.fmod(t, a, b)
        if t.is_float and e.op in ("mul", "div", "add", "sub"):
            out = self.with_positive_zero(e, t, a, b)
            if out is not None:
                return out
        b_const = e.b.value if isinstance(e.b, n.Const) else None
        if t.is_int and e.op in ("div", "floordiv", "mod"):
            b = self.safe_divisor(t, e.op, a, b, b_const)
        if e.op not in self._ARITH or self._ARITH[e.op][col] is None:
            if e.op == "floordiv" and t.is_float:
                return self.glsl("Floor", t, self.float_divide(t, a, b, e.b))
            if e.op == "mod" and t.is_int and t.is_signed:
                return self.signed_remainder(t, a, b, b_const if b_const not in (0, None) else None)
            self.refuse(f"operator '{e.op}' on {t}", e.loc)
        if e.op in ("shl", "shr"):
            b = f.val(Op.BitwiseAnd, self.ty(t), b, self.const(t, t.bits - 1))
        if e.op == "div" and t.is_float:
            return self.float_divide(t, a, b, e.b)
        out = f.val(self._ARITH[e.op][col], self.ty(t), a, b)
        return self.exact(out) if t.is_float else out

    def float_divide(self, t: ScalarType, a: int, b: int, divisor: n.Expr) -> int:
        """``a / b`` as ``q = a / -|b|``, then ``q`` where b's sign bit is set, else ``-q``: the same
        IEEE value. lavapipe (Mesa 22.3) dropped the store of ``x / y`` when it could derive
        y == +0.0 (a zero-initialized ``pk.local`` element) and x was a run-time value (the output
        kept its old contents; fuzz seed 20000161); it keeps ``x / -0.0``, and the divisor here is
        never a +0.0 (WGSL: the pk_div_f32 helper). A nonzero constant divisor needs none of this."""
        f, tid = self.f, self.ty(t)
        if isinstance(divisor, n.Const) and divisor.value == divisor.value and divisor.value != 0:
            return self.exact(f.val(Op.FDiv, tid, a, b))
        ut = SCALAR_TYPES[f"u{t.bits}"]
        q = self.exact(f.val(Op.FDiv, tid, a, f.val(Op.FNegate, tid, self.glsl("FAbs", t, b))))
        negative = f.val(Op.UGreaterThanEqual, self.ty(bool_), f.val(Op.Bitcast, self.ty(ut), b),
                         self.const(ut, 1 << (t.bits - 1)))
        return f.val(Op.Select, tid, negative, q, f.val(Op.FNegate, tid, q))

    def fmod(self, t: ScalarType, x: int, y: int) -> int:
        """C's fmod, exactly (OpFRem only has the precision of x - y * trunc(x / y), and lavapipe's
        f64 OpFRem gives 0): with t = |y| * 2^k the largest such t <= |x|, subtract t wherever it
        fits while halving t back down to |y|; every subtraction is exact (t <= r < 2t). NaN
        (x infinite or NaN, y zero or NaN) and |x| < |y| (y infinite too) are found from the bits."""
        f, m = self.f, self.m
        tid, bid = self.ty(t), self.ty(bool_)
        ut = SCALAR_TYPES[f"u{t.bits}"]
        uid = self.ty(ut)
        mant = {16: 10, 32: 23, 64: 52}[t.bits]
        sign = 1 << (t.bits - 1)
        bx = f.val(Op.BitwiseAnd, uid, f.val(Op.Bitcast, uid, x), self.const(ut, sign - 1))
        by = f.val(Op.BitwiseAnd, uid, f.val(Op.Bitcast, uid, y), self.const(ut, sign - 1))
        inf_bits = self.const(ut, ((1 << (t.bits - 1 - mant)) - 1) << mant)
        special = f.val(Op.LogicalOr, bid, f.val(Op.UGreaterThanEqual, bid, bx, inf_bits),
                        f.val(Op.LogicalOr, bid, f.val(Op.UGreaterThan, bid, by, inf_bits),
                              f.val(Op.IEqual, bid, by, self.const(ut, 0))))
        small = f.val(Op.ULessThan, bid, bx, by)
        ax, ay = f.val(Op.Bitcast, tid, bx), f.val(Op.Bitcast, tid, by)
        ptr = m.t_pointer("Function", tid)
        tv, rv = f.variable(ptr), f.variable(ptr)
        f.op(Op.Store, tv, ay)
        f.op(Op.Store, rv, ax)
        run_l, done_l = f.new_label(), f.new_label()
        run = f.val(Op.LogicalNot, bid, f.val(Op.LogicalOr, bid, special, small))
        f.op(Op.SelectionMerge, done_l, 0)
        f.op(Op.BranchConditional, run, run_l, done_l)
        f.begin(run_l)
        # up: t = |y| * 2^k, the largest not above |x|
        header, body, cont, merge = (f.new_label() for _ in range(4))
        f.op(Op.Branch, header)
        f.begin(header)
        f.op(Op.LoopMerge, merge, cont, 0)
        f.op(Op.Branch, body)
        f.begin(body)
        tcur = f.val(Op.Load, tid, tv)
        t2 = self.exact(f.val(Op.FAdd, tid, tcur, tcur))
        f.op(Op.BranchConditional, f.val(Op.FOrdGreaterThan, bid, t2, ax), merge, cont)
        f.begin(cont)
        f.op(Op.Store, tv, t2)
        f.op(Op.Branch, header)
        f.begin(merge)
        # down: subtract t where it fits, halve t until it is |y| again
        header, body, cont, merge = (f.new_label() for _ in range(4))
        f.op(Op.Branch, header)
        f.begin(header)
        f.op(Op.LoopMerge, merge, cont, 0)
        f.op(Op.Branch, body)
        f.begin(body)
        tcur, r = f.val(Op.Load, tid, tv), f.val(Op.Load, tid, rv)
        fits = f.val(Op.FOrdGreaterThanEqual, bid, r, tcur)
        f.op(Op.Store, rv, f.val(Op.Select, tid, fits, self.exact(f.val(Op.FSub, tid, r, tcur)), r))
        f.op(Op.BranchConditional, f.val(Op.FOrdEqual, bid, tcur, ay), merge, cont)
        f.begin(cont)
        f.op(Op.Store, tv, self.exact(f.val(Op.FMul, tid, tcur, self.const(t, 0.5))))
        f.op(Op.Branch, header)
        f.begin(merge)
        f.op(Op.Branch, done_l)
        f.begin(done_l)
        r = f.val(Op.Load, tid, rv)
        signed = f.val(Op.BitwiseOr, uid, f.val(Op.Bitcast, uid, r),
                       f.val(Op.BitwiseAnd, uid, f.val(Op.Bitcast, uid, x), self.const(ut, sign)))
        res = f.val(Op.Select, tid, small, x, f.val(Op.Bitcast, tid, signed))
        return f.val(Op.Select, tid, special, self.const(t, float("nan")), res)

    def with_positive_zero(self, e: n.BinOp, t: ScalarType, a: int, b: int) -> Optional[int]:
        """``e`` with a +0.0 constant operand, written so that no +0.0 reaches the driver's folding:
        lavapipe (Mesa 22.3) ignores SignedZeroInfNanPreserve there and folds x * 0.0 and 0.0 / x to 0,
        x + 0.0 to x, 0.0 - x to -x (fuzz cases fz6000265, fz6000297: 0.0 * inf was 0, not NaN). It
        does keep -0.0 operands, so x * +0 = -(x * -0), x / +0 = -(x / -0), +0 / x = -(-0 / x);
        x + 0 and 0 - x differ
        from x and -x only at a zero, which becomes +0. None if ``e`` has no +0.0 operand."""
        pos_a, pos_b = _is_positive_zero(e.a), _is_positive_zero(e.b)
        if not (pos_a or pos_b):
            return None
        f, tid = self.f, self.ty(t)
        neg_zero = self.const(t, -0.0)
        if e.op == "mul":
            prod = self.exact(f.val(Op.FMul, tid, neg_zero, b) if pos_a else f.val(Op.FMul, tid, a, neg_zero))
            return f.val(Op.FNegate, tid, prod)
        if e.op == "div":
            q = f.val(Op.FDiv, tid, neg_zero, b) if pos_a else f.val(Op.FDiv, tid, a, neg_zero)
            return f.val(Op.FNegate, tid, self.exact(q))
        if e.op == "add" or (e.op == "sub" and pos_a):
            x = b if pos_a else a
            if e.op == "sub":
                x = f.val(Op.FNegate, tid, x)
            zero = self.const(t, 0.0)
            return f.val(Op.Select, tid, f.val(Op.FOrdEqual, self.ty(bool_), x, zero), zero, x)
        return None  # x - 0.0 == x exactly: folding it is right

    def exact(self, v: int) -> int:
        """Decorate float result ``v`` NoContraction: a*b+c is never fused (polykern.numerics)."""
        self.m.decorate(v, "NoContraction")
        return v

    def safe_divisor(self, t: ScalarType, op: str, a: int, b: int, b_const) -> int:
        """``b``, or 1 where OpSDiv/OpUDiv/OpUMod are undefined (b == 0; MIN / -1): then a / 1 == a
        and a % 1 == 0 give polykern.numerics' x // 0 == x, x % 0 == 0 and MIN // -1 == MIN (wraps)."""
        f = self.f
        signed_div = t.is_signed and op != "mod"
        if b_const not in (None, 0) and not (signed_div and b_const == -1):
            return b
        bid = self.ty(bool_)
        bad = f.val(Op.IEqual, bid, b, self.const(t, 0))
        if signed_div:
            ovf = f.val(Op.LogicalAnd, bid, f.val(Op.IEqual, bid, a, self.const(t, t.min_value())),
                        f.val(Op.IEqual, bid, b, self.const(t, -1)))
            bad = f.val(Op.LogicalOr, bid, bad, ovf)
        return f.val(Op.Select, self.ty(t), bad, self.const(t, 1), b)

    def signed_remainder(self, t: ScalarType, a: int, b: int, b_const=None) -> int:
        """C remainder (sign of the dividend) without OpSRem/OpSMod, which the Vulkan environment
        leaves undefined when an operand is negative: r = |a| umod |b| (magnitudes as same-width
        unsigned values, so |MIN| = 2**(bits-1) is exact), then -r if a < 0. Defined for every
        a and every b != 0 (MIN % -1 gives 0). A constant divisor's magnitude is a constant."""
        from polykern.ir.types import SCALAR_TYPES

        f = self.f
        tid, ut = self.ty(t), SCALAR_TYPES[f"u{t.bits}"]
        uid, bid = self.ty(ut), self.ty(bool_)
        zero = self.const(t, 0)

        def magnitude(v):
            neg = f.val(Op.SLessThan, bid, v, zero)
            uv = f.val(Op.Bitcast, uid, v)
            return neg, f.val(Op.Select, uid, neg, f.val(Op.ISub, uid, self.const(ut, 0), uv), uv)

        a_neg, ua = magnitude(a)
        ub = magnitude(b)[1] if b_const is None else self.const(ut, abs(int(b_const)) % (1 << t.bits))
        r = f.val(Op.Bitcast, tid, f.val(Op.UMod, uid, ua, ub))
        return f.val(Op.Select, tid, a_neg, self.wrapping_negate(t, r), r)

    def wrapping_negate(self, t: ScalarType, v: int) -> int:
        """-v of an integer, wrapping (-MIN == MIN), computed as 0 - v in the same-width unsigned type:
        NVIDIA's Vulkan driver gave abs(MIN) % 25 = 23 where polykern's wrapping semantics give -23
        (fuzz case fz1000416), as if OpSNegate could not overflow; an unsigned subtraction leaves no
        overflow to assume away (the OpenCL emitter's pk_abs does the same)."""
        f = self.f
        ut = SCALAR_TYPES[f"u{t.bits}"]
        uid = self.ty(ut)
        uv = v if not t.is_signed else f.val(Op.Bitcast, uid, v)
        r = f.val(Op.ISub, uid, self.const(ut, 0), uv)
        return r if not t.is_signed else f.val(Op.Bitcast, self.ty(t), r)

    def short_circuit(self, e: n.BinOp) -> int:
        f = self.f
        a = self.expr(e.a)
        if _is_cheap_and_safe(e.b):
            b = self.expr(e.b)
            return f.val(Op.LogicalAnd if e.op == "land" else Op.LogicalOr, self.ty(bool_), a, b)
        pred_a = f.cur.label
        merge, rhs = f.new_label(), f.new_label()
        f.op(Op.SelectionMerge, merge, 0)
        if e.op == "land":
            f.op(Op.BranchConditional, a, rhs, merge)
        else:
            f.op(Op.BranchConditional, a, merge, rhs)
        f.begin(rhs)
        b = self.expr(e.b)
        pred_b = f.cur.label
        f.op(Op.Branch, merge)
        f.begin(merge)
        skipped = self.const(bool_, e.op == "lor")
        return f.val(Op.Phi, self.ty(bool_), skipped, pred_a, b, pred_b)

    def glsl(self, inst: str, t: ScalarType, *args: int) -> int:
        ext = self.m.ext_import("GLSL.std.450")
        return self.f.val(Op.ExtInst, self.ty(t), ext, GLSL[inst], *args)

    def call(self, e: n.Call) -> int:
        f = self.f
        t = e.type
        args = [self.expr(a) for a in e.args]
        if t.is_float:
            if t.bits == 64 and e.func in _FLOAT32_ONLY_MATH:
                self.refuse(f"{e.func}() on f64: GLSL.std.450 has no 64-bit {e.func}; cast to f32 "
                            "explicitly if that precision is enough", e.loc)
            if e.func not in _GLSL_FLOAT:
                self.refuse(f"math function {e.func}()", e.loc)
            if e.func == "fma":
                args = self.fma_without_positive_zero_factor(e, t, args)
            if e.func == "fma" and t.bits < 64:
                return self.fused_multiply_add(t, args)
            if e.func == "pow":
                return self.pow(t, *args)
            if e.func in ("log", "log2") and t.bits == 32:
                return self.log_subnormal_safe(e.func, *args)
            return self.glsl(_GLSL_FLOAT[e.func], t, *args)
        if not t.is_int:
            self.refuse(f"{e.func}() on {t}", e.loc)
        tid = self.ty(t)
        if e.func == "abs":
            if not t.is_signed:
                return args[0]
            neg = f.val(Op.SLessThan, self.ty(bool_), args[0], self.const(t, 0))
            return f.val(Op.Select, tid, neg, self.wrapping_negate(t, args[0]), args[0])
        if e.func in ("min", "max"):
            lt = Op.SLessThan if t.is_signed else Op.ULessThan
            less = f.val(lt, self.ty(bool_), args[0], args[1])
            first, second = (args[0], args[1]) if e.func == "min" else (args[1], args[0])
            return f.val(Op.Select, tid, less, first, second)
        self.refuse(f"{e.func}() on integer type {t}", e.loc)

    def log_subnormal_safe(self, func: str, x: int) -> int:
        """GLSL Log/Log2 of an f32 subnormal is wrong on drivers that keep subnormals in arithmetic but
        not in their log (lavapipe: log(1e-40) = -88.02): such x is scaled by 2^24 first, and
        24 ln 2 (24) subtracted. A driver that flushes the multiplication gives log(0) = -inf, which
        polykern.numerics allows (subnormal inputs may be flushed)."""
        f = self.f
        tid, bid = self.ty(f32), self.ty(bool_)
        small = f.val(Op.FOrdLessThan, bid, x, self.const(f32, 2.0 ** -126))
        scaled = self.exact(f.val(Op.FMul, tid, x, self.const(f32, 2.0 ** 24)))
        r = self.glsl(_GLSL_FLOAT[func], f32, f.val(Op.Select, tid, small, scaled, x))
        shift = 24 * 0.6931471805599453 if func == "log" else 24.0
        return f.val(Op.Select, tid, small, self.exact(f.val(Op.FSub, tid, r, self.const(f32, shift))), r)

    def pow(self, t: ScalarType, x: int, y: int) -> int:
        """C99 Annex F pow: GLSL Pow is undefined for x < 0 and for x == 0, y <= 0 (lavapipe gives
        pow(nan, .5) = 0, pow(-inf, .5) = nan), so Pow runs on |x| and the special cases (zeros,
        infinities, NaN, negative x with integer or non-integer y, y == 0, x == 1) are selected."""
        f = self.f
        tid, bid = self.ty(t), self.ty(bool_)
        c = lambda v: self.const(t, v)  # noqa: E731
        sel = lambda cond, p, q: f.val(Op.Select, tid, cond, p, q)  # noqa: E731
        both = lambda p, q: f.val(Op.LogicalAnd, bid, p, q)  # noqa: E731
        either = lambda p, q: f.val(Op.LogicalOr, bid, p, q)  # noqa: E731
        feq = lambda p, q: f.val(Op.FOrdEqual, bid, p, q)  # noqa: E731
        flt = lambda p, q: f.val(Op.FOrdLessThan, bid, p, q)  # noqa: E731
        inf = c(float("inf"))
        ax = self.glsl("FAbs", t, x)
        r = self.glsl("Pow", t, ax, y)
        y_neg, y_inf = flt(y, c(0.0)), f.val(Op.IsInf, bid, y)
        r = sel(y_inf, sel(f.val(Op.LogicalEqual, bid, flt(ax, c(1.0)), y_neg), inf, c(0.0)), r)
        r = sel(feq(ax, c(0.0)), sel(y_neg, inf, c(0.0)), r)
        r = sel(f.val(Op.IsInf, bid, ax), sel(y_neg, c(0.0), inf), r)
        # the sign: x's sign bit (so -0 counts) and y an odd integer (|y| >= 2^bits-of-mantissa is even)
        ux = SCALAR_TYPES[f"u{t.bits}"]
        x_neg = f.val(Op.INotEqual, bid, f.val(Op.BitwiseAnd, self.ty(ux), f.val(Op.Bitcast, self.ty(ux), x),
                                                self.const(ux, 1 << (t.bits - 1))), self.const(ux, 0))
        y_int = feq(self.glsl("Floor", t, y), y)
        half = self.exact(f.val(Op.FMul, tid, y, c(0.5)))
        y_odd = both(y_int, f.val(Op.LogicalNot, bid, feq(self.glsl("Floor", t, half), half)))
        r = sel(both(x_neg, y_odd), f.val(Op.FNegate, tid, r), r)
        finite_neg_x = both(flt(x, c(0.0)), f.val(Op.LogicalNot, bid, f.val(Op.IsInf, bid, x)))
        nan = c(float("nan"))
        r = sel(both(finite_neg_x, f.val(Op.LogicalNot, bid, either(y_int, y_inf))), nan, r)
        r = sel(either(f.val(Op.IsNan, bid, x), f.val(Op.IsNan, bid, y)), nan, r)
        r = sel(both(feq(x, c(-1.0)), y_inf), c(1.0), r)
        return sel(either(feq(y, c(0.0)), feq(x, c(1.0))), c(1.0), r)

    def fma_without_positive_zero_factor(self, e: n.Call, t: ScalarType, args: List[int]) -> List[int]:
        """fma(+0, y, z) as fma(-0, -y, z) (and likewise a +0 second factor): the same product, but no
        +0.0 factor for lavapipe to fold (fma(0, x, c) gave c for x = inf; see with_positive_zero)."""
        a, b, c = args
        tid = self.ty(t)
        if _is_positive_zero(e.args[0]):
            a, b = self.const(t, -0.0), self.f.val(Op.FNegate, tid, b)
        elif _is_positive_zero(e.args[1]):
            a, b = self.f.val(Op.FNegate, tid, a), self.const(t, -0.0)
        return [a, b, c]

    def fused_multiply_add(self, t: ScalarType, args: List[int]) -> int:
        """Vulkan gives GLSL.std.450 Fma only the precision of a*b+c (llvmpipe does not fuse), so a
        narrow fma is computed one size up: the product of two f16 (f32) values is exact in f32
        (f64), leaving one rounding in the wide add and one back to t (within 1 ulp of fused).
        f32 needs the float64 feature for this; without it, and for f64, GLSL Fma is used."""
        from polykern.ir.types import SCALAR_TYPES

        wide = SCALAR_TYPES[f"f{t.bits * 2}"]
        if wide.bits == 64 and "float64" not in self.features:
            return self.glsl("Fma", t, *args)
        if wide.bits == 64:
            self.required.add("float64")
        a, b, c = (self.convert(v, t, wide) for v in args)
        prod = self.f.val(Op.FMul, self.ty(wide), a, b)
        return self.convert(self.f.val(Op.FAdd, self.ty(wide), prod, c), wide, t)

    def convert(self, v: int, src: ScalarType, dst: ScalarType, exact: bool = False) -> int:
        """C-style conversion of ``v`` from ``src`` to ``dst``. ``exact``: ``v`` is known to be
        representable in ``dst`` (an f16 push constant in its f32 slot), so no rounding is needed."""
        f = self.f
        if src == dst:
            return v
        if bf16 in (src, dst):  # only to and from f32 after passes/widen_bf16.py
            if {src, dst} != {bf16, f32}:
                raise KernelTypeError(f"vulkan backend: a {src} -> {dst} conversion reached the lowering "
                                      "(bf16 converts through f32)", self.fn.loc)
            return (lower_bf16.to_bf16 if dst == bf16 else lower_bf16.from_bf16)(self, v)
        if dst.is_bool:
            if src.is_float:
                return f.val(Op.FUnordNotEqual, self.ty(bool_), v, self.const(src, 0.0))
            return f.val(Op.INotEqual, self.ty(bool_), v, self.const(src, 0))
        if src.is_bool:
            one = 1.0 if dst.is_float else 1
            zero = 0.0 if dst.is_float else 0
            return f.val(Op.Select, self.ty(dst), v, self.const(dst, one), self.const(dst, zero))
        if src.is_float and dst.is_float:
            if dst.bits == 16 and not exact:
                if src.bits == 64:  # via f32 rounded to odd: then one rounding to f16 is exact
                    v = self.f64_to_f32_odd(v)
                return self.f32_to_f16(v)
            # NoContraction makes the conversion "exact" for drivers' optimizers: Mesa otherwise folds
            # f32 -> f16 -> f32 into a no-op and the value never rounds to half precision.
            out = f.val(Op.FConvert, self.ty(dst), v)
            self.m.decorate(out, "NoContraction")
            return out
        if src.is_float:
            return self.float_to_int(v, src, dst)
        if dst.is_float:
            return f.val(Op.ConvertSToF if src.is_signed else Op.ConvertUToF, self.ty(dst), v)
        # integer -> integer: extend by the source's signedness, then reinterpret the sign.
        from polykern.ir.types import SCALAR_TYPES

        if src.bits != dst.bits:
            if src.is_signed and dst.bits == 64:
                return self.sign_extend_to_64(v, src, dst)
            if src.is_signed:
                return f.val(Op.SConvert, self.ty(dst), v)
            wide = SCALAR_TYPES[f"u{dst.bits}"]
            v = f.val(Op.UConvert, self.ty(wide), v)
            src = wide
            if src == dst:
                return v
        return f.val(Op.Bitcast, self.ty(dst), v)

    def sign_extend_to_64(self, v: int, src: ScalarType, dst: ScalarType) -> int:
        """``v`` (signed, narrower) sign-extended to the 64-bit ``dst`` without OpSConvert to 64 bits:
        (zero-extended v32 ^ 2**31) - 2**31. Mesa 22.3's lavapipe compares an OpSConvert'ed i32 with
        a constant as if it had been zero-extended (i64(-1) < 0 was false: fuzz case fz6000113,
        i64(s) % 21 gave 15); no driver sees a sign extension here to rewrite."""
        f = self.f
        if src.bits < 32:
            v = f.val(Op.SConvert, self.ty(SCALAR_TYPES["i32"]), v)
        u64_ = SCALAR_TYPES["u64"]
        wide = f.val(Op.UConvert, self.ty(u64_), f.val(Op.Bitcast, self.ty(u32), v))
        bias = self.const(u64_, 1 << 31)
        out = f.val(Op.ISub, self.ty(u64_), f.val(Op.BitwiseXor, self.ty(u64_), wide, bias), bias)
        return out if dst == u64_ else f.val(Op.Bitcast, self.ty(dst), out)

    def f64_to_f32_odd(self, d: int) -> int:
        """``d`` rounded to f32 *to odd* (truncated, lowest bit set when inexact): rounding that to f16
        (11 bits) gives the correctly rounded f16 of ``d``, where going through an RNE f32 rounds twice."""
        f = self.f
        bid, uid = self.ty(bool_), self.ty(u32)
        r = f.val(Op.FConvert, self.ty(f32), d)
        self.m.decorate(r, "NoContraction")
        back = f.val(Op.FConvert, self.ty(f64), r)
        self.m.decorate(back, "NoContraction")
        inexact = f.val(Op.LogicalNot, bid, f.val(Op.FOrdEqual, bid, back, d))
        away = f.val(Op.FOrdGreaterThan, bid, self.glsl("FAbs", f64, back), self.glsl("FAbs", f64, d))
        bits = f.val(Op.Bitcast, uid, r)
        bits = f.val(Op.Select, uid, away, f.val(Op.ISub, uid, bits, self.u32c(1)), bits)
        bits = f.val(Op.Select, uid, inexact, f.val(Op.BitwiseOr, uid, bits, self.u32c(1)), bits)
        return f.val(Op.Bitcast, self.ty(f32), bits)

    def float_to_int(self, v: int, src: ScalarType, dst: ScalarType) -> int:
        """Saturating conversion, NaN -> 0 (polykern.numerics.float_to_int): OpConvertFTo* only on
        values in range (it is undefined outside), selects for the rest. The bounds are exact powers
        of two; where the type cannot reach one (f16 -> i32: hi = inf), the largest finite value
        bounds the range instead, so infinities still saturate."""
        f = self.f
        lo, hi = saturation_bounds(src.name, dst.name)
        lo = max(lo, -float(np.finfo(src.numpy).max))
        bid, tid = self.ty(bool_), self.ty(dst)
        above = f.val(Op.FOrdGreaterThanEqual, bid, v, self.const(src, hi))
        in_range = f.val(Op.LogicalAnd, bid, f.val(Op.FOrdGreaterThanEqual, bid, v, self.const(src, lo)),
                         f.val(Op.LogicalNot, bid, above))
        safe = f.val(Op.Select, self.ty(src), in_range, v, self.const(src, 0.0))
        conv = f.val(Op.ConvertFToS if dst.is_signed else Op.ConvertFToU, tid, safe)
        low = self.const(dst, 0)
        if dst.is_signed:  # below MIN -> MIN; NaN -> 0
            low = f.val(Op.Select, tid, f.val(Op.FOrdLessThan, bid, v, self.const(src, lo)),
                        self.const(dst, dst.min_value()), low)
        out_of_range = f.val(Op.Select, tid, above, self.const(dst, dst.max_value()), low)
        return f.val(Op.Select, tid, in_range, conv, out_of_range)

    def f32_to_f16(self, v: int) -> int:
        """f32 -> f16, round to nearest even, with 32-bit integer ops on the bit pattern and no
        OpFConvert: NVIDIA's driver folds an f32 -> f16 -> f32 OpFConvert pair into a no-op even
        when both are decorated NoContraction, so the value never rounds to half precision.

        With x the f32 bits and ax = x & 0x7fffffff (all unsigned; h gets the sign bit x >> 16 & 0x8000):
        - NaN (ax > 0x7f800000): quiet NaN 0x7e00 | top 10 mantissa bits;
        - ax >= 0x477ff000 (65520, the tie above 65504 = max half; inf included): inf 0x7c00;
        - ax >= 0x38800000 (2**-14, the smallest normal half): rebias the exponent (- 112 << 23), then
          (y + 0xfff + ((y >> 13) & 1)) >> 13 rounds 13 dropped bits to nearest even (a carry into
          the exponent is the correct next binade);
        - else a subnormal half (or zero): m = 24-bit significand, s = 126 - exponent (>= 14) is the
          shift that leaves units of 2**-24; q = m >> s, rounded up if the dropped bits exceed half,
          or equal half and q is odd; s >= 25 gives 0 (m < 2**24 < half of 2**25; f32 subnormals too).
        The 16-bit pattern is the low half of a u32 bitcast to a 2 x f16 vector (component 0 is the
        low-order bits), so no Int16 capability is needed."""
        from polykern.ir.types import f16

        f, m = self.f, self.m
        u, b = self.ty(u32), self.ty(bool_)
        c = self.u32c

        def op(opcode, *args):
            return f.val(opcode, u, *args)

        def sel(cond, x, y):
            return f.val(Op.Select, u, cond, x, y)

        x = op(Op.Bitcast, v)
        sign = op(Op.BitwiseAnd, op(Op.ShiftRightLogical, x, c(16)), c(0x8000))
        ax = op(Op.BitwiseAnd, x, c(0x7FFFFFFF))
        # NaN
        nan = op(Op.BitwiseOr, c(0x7E00), op(Op.BitwiseAnd, op(Op.ShiftRightLogical, ax, c(13)), c(0x3FF)))
        # normal half
        y = op(Op.ISub, ax, c(112 << 23))
        odd = op(Op.BitwiseAnd, op(Op.ShiftRightLogical, y, c(13)), c(1))
        normal = op(Op.ShiftRightLogical, op(Op.IAdd, y, op(Op.IAdd, c(0xFFF), odd)), c(13))
        # subnormal half (or zero)
        mant = op(Op.BitwiseOr, op(Op.BitwiseAnd, ax, c(0x7FFFFF)), c(0x800000))
        shift = op(Op.ISub, c(126), op(Op.ShiftRightLogical, ax, c(23)))  # >= 14 on this path
        too_small = f.val(Op.UGreaterThan, b, shift, c(24))
        s = sel(too_small, c(24), shift)  # keeps the shifts below in range; the result is 0 anyway
        q = op(Op.ShiftRightLogical, mant, s)
        half = op(Op.ShiftLeftLogical, c(1), op(Op.ISub, s, c(1)))
        rest = op(Op.BitwiseAnd, mant, op(Op.ISub, op(Op.ShiftLeftLogical, c(1), s), c(1)))
        above = f.val(Op.UGreaterThan, b, rest, half)
        tie_odd = f.val(Op.LogicalAnd, b, f.val(Op.IEqual, b, rest, half),
                        f.val(Op.INotEqual, b, op(Op.BitwiseAnd, q, c(1)), c(0)))
        up = f.val(Op.LogicalOr, b, above, tie_odd)
        sub = sel(too_small, c(0), op(Op.IAdd, q, sel(up, c(1), c(0))))
        # pick
        h = sel(f.val(Op.UGreaterThanEqual, b, ax, c(0x38800000)), normal, sub)
        h = sel(f.val(Op.UGreaterThanEqual, b, ax, c(0x477FF000)), c(0x7C00), h)
        h = sel(f.val(Op.UGreaterThan, b, ax, c(0x7F800000)), nan, h)
        h = op(Op.BitwiseOr, h, sign)
        half_t = self.ty(f16)
        pair = f.val(Op.Bitcast, m.t_vector(half_t, 2), h)
        return f.val(Op.CompositeExtract, half_t, pair, 0)

    # ------------------------------------------------------------------ atomics
    def atomic(self, e: n.Atomic) -> int:
        f = self.f
        ptr, st, elem = self.element_ptr(e.base, e.index)
        _, sc = self.arrays[e.base.name]
        scope = self.u32c(SCOPE_WORKGROUP if sc == "Workgroup" else SCOPE_DEVICE)
        sem = self.u32c(SEM_RELAXED)
        sty = self.ty(st)
        cmp = self.to_storage(self.expr(e.compare), elem, st) if e.op == "cas" else None
        raw = self.expr(e.value)
        value = self.to_storage(raw, elem, st) if e.op in ("cas", "xchg") or not elem.is_float else None
        if e.op == "cas":
            old = f.val(Op.AtomicCompareExchange, sty, ptr, scope, sem, sem, value, cmp)
        elif e.op == "xchg":
            old = f.val(Op.AtomicExchange, sty, ptr, scope, sem, value)
        elif elem.is_float:
            old = self.cas_loop(e, raw, ptr, scope, sem, st, elem)
        else:
            ops = {"add": (Op.AtomicIAdd, Op.AtomicIAdd), "min": (Op.AtomicSMin, Op.AtomicUMin),
                   "max": (Op.AtomicSMax, Op.AtomicUMax)}
            if e.op not in ops:
                self.refuse(f"atomic_{e.op}()", e.loc)
            old = f.val(ops[e.op][0 if elem.is_signed else 1], sty, ptr, scope, sem, value)
        return self.from_storage(old, st, elem)

    def cas_loop(self, e: n.Atomic, v: int, ptr: int, scope: int, sem: int, st: ScalarType,
                 elem: ScalarType) -> int:
        """old = atomic load; loop { new = op(old, v); seen = cas(ptr, old -> new); if seen == old
        break; old = seen }. Compares bit patterns, so NaNs cannot spin it forever."""
        f = self.f
        sty, fty = self.ty(st), self.ty(elem)
        init = f.val(Op.AtomicLoad, sty, ptr, scope, sem)
        pre = f.cur.label
        header, body, cont, merge = (f.new_label() for _ in range(4))
        f.op(Op.Branch, header)
        f.begin(header)
        old = self.m.new_id()
        seen = self.m.new_id()
        f.op(Op.Phi, sty, old, init, pre, seen, cont)
        f.op(Op.LoopMerge, merge, cont, 0)
        f.op(Op.Branch, body)
        f.begin(body)
        old_f = f.val(Op.Bitcast, fty, old)
        if e.op == "add":
            new_f = f.val(Op.FAdd, fty, old_f, v)
        elif e.op in ("min", "max"):
            new_f = self.glsl("NMin" if e.op == "min" else "NMax", elem, old_f, v)
        else:
            self.refuse(f"atomic_{e.op}() on {elem}", e.loc)
        new = f.val(Op.Bitcast, sty, new_f)
        f.op(Op.AtomicCompareExchange, sty, seen, ptr, scope, sem, sem, new, old)
        done = f.val(Op.IEqual, self.ty(bool_), seen, old)
        f.op(Op.BranchConditional, done, merge, cont)
        f.begin(cont)
        f.op(Op.Branch, header)
        f.begin(merge)
        return old


def lower_kernel(fn: ir.Function, version: Tuple[int, int], features: FrozenSet[str]):
    """(SPIR-V binary, attrs) for one kernel."""
    return KernelLowering(fn, version, features).run()
