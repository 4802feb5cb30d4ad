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
  builtin; the runtime specializes the pipeline per block shape. SpecId 3: a ``pk.shared_dynamic``
  length; SpecId 4: the device's GLSL Fma rounds once (lower_arith.py ``fused_multiply_add``).
- grid = number of workgroups (vkCmdDispatch(gx, gy, gz)).

Semantics: integer ``floordiv`` is OpSDiv/OpUDiv, unsigned ``mod`` OpUMod, shifts the plain shifts;
signed ``mod`` never arrives (OpSRem/OpSMod are undefined for negative operands in the Vulkan
environment, and NVIDIA computes an unsigned remainder): passes/legalize_numerics.py writes it on the
magnitudes, as it writes the other cases the environment leaves undefined (see the end). Float min/max return the non-NaN operand (NMin/NMax, like C fmin); ``!=`` on floats is unordered (true
for NaN); float -> bool is ``x != 0`` (NaN is true). ``range`` bounds are evaluated once, before the loop
(Python semantics). Atomics are relaxed, Device scope on buffers and Workgroup scope on shared arrays;
float atomic add/min/max use a compare-exchange loop on the bit pattern (the array is then declared
with the same-width unsigned element type and every access bitcasts), float ``cas`` compares bits.
Narrowing to f16 never uses OpFConvert (drivers fold f32 -> f16 -> f32 into a no-op even with
NoContraction): passes/legalize_f16.py writes it on the bits, and an ``ir.Bitcast`` of the u32 to f16 is
its low half (``bitcast``). Float ``%``, signed ``%`` and ``pk.pow`` never arrive: passes/legalize_numerics.py
writes them (OpFRem rounds, OpSRem is undefined for negative operands, GLSL Pow for x < 0), guards the
divisors and masks the shift amounts.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Tuple

from polykern import ir
from polykern.errors import KernelTypeError
from polykern.ir import nodes as n
from polykern.ir.bfloat16 import f32_to_bits
from polykern.ir.types import ArrayType, ScalarType, bf16, bool_, i32, u16, u32
from polykern.ir.vector import VecGroup, iter_groups, vector_buffers

from .lower_arith import ArithLowering
from .lower_convert import ConvertLowering
from .spirv_builder import FunctionBuilder, ModuleBuilder
from .spirv_matrix import declare_matrix, lower_matrix_op
from .spirv_subgroups import declare_subgroup_inputs, lower_subgroup
from .spirv_spec import (BUILTIN, EXECUTION_MODE, EXECUTION_MODEL, SCOPE_DEVICE, SCOPE_WORKGROUP,
                         SEM_ACQUIRE_RELEASE, SEM_MAKE_AVAILABLE, SEM_MAKE_VISIBLE, SEM_RELAXED,
                         SEM_UNIFORM_MEMORY, SEM_WORKGROUP_MEMORY, Op)


PUSH_CONSTANT_LIMIT = 128  # bytes every Vulkan device guarantees (maxPushConstantsSize)
_SPECIAL_BUILTIN = {"global_id": "GlobalInvocationId", "local_id": "LocalInvocationId",
                    "group_id": "WorkgroupId", "num_groups": "NumWorkgroups"}


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


class _Loop:
    def __init__(self, merge: int, cont: int):
        self.merge = merge
        self.cont = cont


class KernelLowering(ArithLowering, ConvertLowering):
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
            if t == bf16:  # its bits, in u16 (passes/legalize_f16.py converts them)
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
        """A structured loop (FunctionBuilder.structured_loop) over IR statements; break/continue branch
        to its merge/continue blocks."""
        def body_fn(merge: int, cont: int) -> None:
            self.loops.append(_Loop(merge, cont))
            self.stmts(body)
            self.loops.pop()

        self.f.structured_loop(cond_fn, body_fn, step_fn)

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
        if isinstance(e, n.Bitcast):
            return self.bitcast(self.expr(e.a), e.a.type, e.to)
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
              "floordiv": (Op.SDiv, Op.UDiv, None), "mod": (None, Op.UMod, None),
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
