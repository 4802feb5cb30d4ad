"""IR -> WGSL: one compute shader per kernel.

Shape of the output (see abi.py for the launch ABI it implements)::

    override pk_block_x: u32 = 1u;   // workgroup size, set per launch
    ...
    @group(0) @binding(0) var<storage, read> x: array<f32>;
    struct PkArgs { n: i32, a: f32, }
    @group(0) @binding(2) var<uniform> pk_args: PkArgs;
    var<workgroup> tile: array<f32, 256>;
    @compute @workgroup_size(pk_block_x, pk_block_y, pk_block_z)
    fn saxpy(@builtin(global_invocation_id) pk_global_id: vec3<u32>) { ... }

Expressions are emitted inline and fully parenthesised (WGSL refuses mixing
some operators without parentheses). A few constructs need statements in the
middle of an expression (strong compare-exchange, f32 atomics emulated with a
compare-exchange loop on the bits, read-modify-write on private arrays): those
write "prelude" lines just before the statement that uses them. A prelude in a
place that is evaluated conditionally or repeatedly is moved where it belongs:
the right operand of ``&&``/``||`` becomes an ``if``, a loop condition turns the
loop into ``loop { prelude; if !(cond) { break; } ... continuing { step } }``.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Set, Tuple

from polykern.errors import CompileError
from polykern.ir import nodes as ir
from polykern.ir.types import ArrayType, ScalarType
from polykern.ir.vector import VecGroup, iter_groups, vector_buffers

from . import abi
from .wgsl_helpers import HELPERS
from .wgsl_names import Namer
from .wgsl_types import WGSL_TYPE, check_function, literal

_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_INT_BIT = {"and": "&", "or": "|", "xor": "^"}
_BOOL_BIT = {"and": "&", "or": "|", "xor": "!="}
_MATH = {"rsqrt": "inverseSqrt"}
_ATOMIC_FN = {"add": "atomicAdd", "min": "atomicMin", "max": "atomicMax", "xchg": "atomicExchange"}
# Builtin inputs of the entry point. Group and global ids are computed from
# workgroup_id plus the launch uniform's group_base (grids larger than the
# device's per-dimension dispatch limit are launched in chunks; abi.py).
_BUILTIN_INPUTS = (("local_invocation_id", "pk_local_id"), ("workgroup_id", "pk_group_id"))
_NEEDS = {"global_id": {"pk_local_id", "pk_group_id"}, "group_id": {"pk_group_id"},
          "local_id": {"pk_local_id"}, "num_groups": set()}
_XYZ = "xyz"
_SUBGROUP_INPUTS = {"size": ("subgroup_size", "pk_sg_size"), "local_id": ("subgroup_invocation_id", "pk_sg_lane"),
                    "id": ("subgroup_id", "pk_sg_id")}
_SUBGROUP_FN = {"shuffle": "subgroupShuffle", "shuffle_xor": "subgroupShuffleXor", "add": "subgroupAdd",
                "min": "subgroupMin", "max": "subgroupMax", "any": "subgroupAny", "all": "subgroupAll",
                "broadcast_first": "subgroupBroadcastFirst"}
INDENT = "    "


def wty(t: ScalarType) -> str:
    return WGSL_TYPE[t.name]


class WGSLEmitter:
    """Emits the WGSL shader of one verified ``ir.Function``."""

    def __init__(self, fn: ir.Function, f16_ok: bool = False):
        check_function(fn, f16_ok)
        self.fn = fn
        self.names = Namer([fn.name] + [p.name for p in fn.params] + list(fn.locals) + list(fn.arrays))
        self.atomic_bases: Set[str] = set()
        self.regs: Set[str] = set()
        self.uses_f16 = False
        for e in ir.walk_all_exprs(fn.body):
            if isinstance(e, ir.Atomic) and not _is_private(e.base):
                self.atomic_bases.add(e.base.name)
            elif isinstance(e, ir.SpecialReg) and e.kind in _NEEDS:
                self.regs.add(e.kind)
            if isinstance(e.type, ScalarType) and e.type.name == "f16":
                self.uses_f16 = True
        self.uses_f16 = self.uses_f16 or any(t.name == "f16" for t in ir.used_types(fn))
        self.uses_subgroups = ir.uses_subgroups(fn)
        self.assigned = {s.name for s in ir.walk_stmts(fn.body) if isinstance(s, ir.Assign)}
        self.assigned |= {s.var for s in ir.walk_stmts(fn.body) if isinstance(s, ir.For)}
        self.needs_launch = bool(self.regs & {"global_id", "group_id", "num_groups"})
        self.writes_storage = any(p.is_buffer and not p.type.readonly for p in fn.params)
        # buffers accessed only by pk.vload/pk.vstore groups of one width: declared array<vecN<T>>
        self.vec_buffers = {b: n for b, n in vector_buffers(fn).items()
                            if fn.param(b).type.elem.name in ("f32", "i32", "u32") and b not in self.atomic_bases}
        self.out: List[str] = []
        self.ind = 0
        self._tmp = 0
        self.helpers: Set[str] = set()
        module_names = {self.names[p.name] for p in fn.params if p.is_buffer}
        module_names |= {self.names[n] for n, a in fn.arrays.items() if a.scope == "shared"}
        self.entry = self.names[fn.name]
        if self.entry in module_names:
            self.entry = "pk_main"

    # ------------------------------------------------------------ plumbing

    def line(self, text: str) -> None:
        self.out.append(INDENT * self.ind + text)

    def tmp(self) -> str:
        self._tmp += 1
        return f"pk_t{self._tmp}"

    def capture(self, extra: int, thunk: Callable[[], str]) -> Tuple[str, List[str]]:
        """Run ``thunk`` with output redirected; returns (its result, the lines it wrote)."""
        saved, saved_ind = self.out, self.ind
        self.out, self.ind = [], saved_ind + extra
        try:
            result = thunk()
            lines = self.out
        finally:
            self.out, self.ind = saved, saved_ind
        return result, lines

    # ------------------------------------------------------------ module

    def emit(self) -> Tuple[str, Dict[str, str]]:
        fn = self.fn
        body, body_lines = self.capture(1, lambda: self._body())
        head: List[str] = [f"// polykern webgpu kernel '{fn.name}'"]
        if self.uses_f16:
            head.append("enable f16;")
        head.append("")
        for o in abi.BLOCK_OVERRIDES:
            head.append(f"override {o}: u32 = 1u;")
        head.append("")
        nbuf = 0
        scalars = []
        for p in fn.params:
            if p.is_buffer:
                access = "read" if p.type.readonly else "read_write"
                head.append(f"@group(0) @binding({nbuf}) var<storage, {access}> "
                            f"{self.names[p.name]}: array<{self._elem_decl(p.name, p.type.elem)}>;")
                nbuf += 1
            else:
                scalars.append(p)
        if scalars:
            head.append("")
            head.append(f"struct {abi.PARAMS_STRUCT} {{")
            for p in scalars:
                head.append(f"{INDENT}{self.names[p.name]}: {abi.HOST_SLOT[p.type.name]},")
            head.append("}")
            head.append(f"@group(0) @binding({nbuf}) var<uniform> {abi.PARAMS_VAR}: {abi.PARAMS_STRUCT};")
        if self.needs_launch:
            head.append("")
            head.append(f"struct {abi.LAUNCH_STRUCT} {{")
            head.append(f"{INDENT}group_base: vec4<u32>,")
            head.append(f"{INDENT}grid: vec4<u32>,")
            head.append("}")
            head.append(f"@group(0) @binding({nbuf + bool(scalars)}) var<uniform> {abi.LAUNCH_VAR}: "
                        f"{abi.LAUNCH_STRUCT};")
        shared = fn.shared_arrays
        if shared:
            head.append("")
            for name, a in shared.items():
                size = a.size
                if a.dynamic:  # pk.shared_dynamic: its length is a pipeline override, set per launch
                    head.append(f"override {abi.SHARED_SIZE_OVERRIDE}: u32 = 1u;")
                    size = abi.SHARED_SIZE_OVERRIDE
                head.append(f"var<workgroup> {self.names[name]}: "
                            f"array<{self._elem_decl(name, a.elem)}, {size}>;")
        head.append("")
        for h in sorted(self.helpers):
            head.append(HELPERS[h])
        head.append("@compute @workgroup_size(" + ", ".join(abi.BLOCK_OVERRIDES) + ")")
        used = set().union(*(_NEEDS[k] for k in self.regs)) if self.regs else set()
        builtins = [f"@builtin({b}) {v}: vec3<u32>" for b, v in _BUILTIN_INPUTS if v in used]
        if self.uses_subgroups:  # only those read: naga refuses the lane and id built-ins in 2-D/3-D work-groups
            ops = {e.op for e in ir.walk_all_exprs(self.fn.body) if isinstance(e, ir.Subgroup)}
            ops |= {"size"} if ops & {"shuffle", "shuffle_xor"} else set()  # lanes are taken modulo the size
            builtins += [f"@builtin({b}) {v}: u32" for op, (b, v) in _SUBGROUP_INPUTS.items() if op in ops]
        head.append(f"fn {self.entry}(" + ", ".join(builtins) + ") {")
        decls = self._decls(scalars)
        head = [ln for k, ln in enumerate(head) if ln or k == 0 or head[k - 1]]  # no double blank lines
        text = "\n".join(head + decls + body_lines + ["}", ""])
        attrs = abi.layout_attrs(
            [p.name for p in fn.params], [p.is_buffer for p in fn.params],
            ["" if p.is_buffer else p.type.name for p in fn.params], self.needs_launch)
        attrs["entry"] = self.entry
        attrs["workgroup_size"] = "override:" + ",".join(abi.BLOCK_OVERRIDES)
        if self.atomic_bases:
            attrs["atomic_buffers"] = ",".join(
                p.name for p in fn.params if p.name in self.atomic_bases)
        features = (["shader-f16"] if self.uses_f16 else []) + (["subgroup"] if self.uses_subgroups else [])
        if features:
            attrs["features"] = ",".join(features)
        return text, attrs

    def _elem_decl(self, name: str, elem: ScalarType) -> str:
        if name in self.vec_buffers:
            return f"vec{self.vec_buffers[name]}<{wty(elem)}>"
        if name in self.atomic_bases:
            return "atomic<u32>" if elem.is_float else f"atomic<{wty(elem)}>"
        if elem.is_bool and name in self.fn.shared_arrays:
            return "u32"  # see _is_shared_bool
        return wty(elem)

    def _is_shared_bool(self, base: ir.Var) -> bool:
        """A shared bool array lives as u32 0/1 in workgroup memory: NVIDIA's driver (through naga's
        SPIR-V, H200 and H100, driver 580) read wrong values back from a workgroup array<bool>
        (fuzz cases fz2000124, fz2000161, fz2000193, fz2000208)."""
        return base.type.elem.is_bool and base.name in self.fn.shared_arrays

    def _decls(self, scalars: List[ir.Param]) -> List[str]:
        out = []
        for p in scalars:
            member = f"{abi.PARAMS_VAR}.{self.names[p.name]}"
            if p.type.is_bool:
                value = f"({member} != 0u)"
            elif p.type.name == "f16":
                value = f"f16({member})"
            else:
                value = member
            if p.name in self.assigned:
                out.append(f"{INDENT}var {self.names[p.name]}: {wty(p.type)} = {value};")
            else:
                out.append(f"{INDENT}let {self.names[p.name]} = {value};")
        for name, t in self.fn.locals.items():
            out.append(f"{INDENT}var {self.names[name]}: {wty(t)};")
        for name, a in self.fn.local_arrays.items():
            out.append(f"{INDENT}var {self.names[name]}: array<{wty(a.elem)}, {a.size}>;")
        return out

    # ------------------------------------------------------------ statements

    def _body(self) -> str:
        self.stmts(self.fn.body)
        return ""

    def stmts(self, body: List[ir.Stmt]) -> None:
        for group, part in iter_groups(body):
            if group is not None and group.base.name in self.vec_buffers:
                self._vector_access(group)
                continue
            for s in part:
                self.stmt(s)

    def _vector_access(self, g: VecGroup) -> None:
        """A pk.vload/pk.vstore group on a buffer declared as array<vecN<T>> (ir/vector.py)."""
        name, k = self.names[g.base.name], self.top(g.index)
        if g.kind == "load":
            v = self.tmp()
            self.line(f"let {v} = {name}[{k}];")
            for j, dest in enumerate(g.dests):
                self.line(f"{self.names[dest]} = {v}.{'xyzw'[j]};")
        else:
            parts = ", ".join(self.top(v) for v in g.values)
            self.line(f"{name}[{k}] = vec{g.n}<{wty(g.base.type.elem)}>({parts});")

    def block(self, body: List[ir.Stmt]) -> None:
        self.ind += 1
        self.stmts(body)
        self.ind -= 1

    def stmt(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.Assign):
            self.line(f"{self.names[s.name]} = {self.top(s.value)};")
        elif isinstance(s, ir.Store):
            self._store(s)
        elif isinstance(s, ir.ExprStmt):
            self._expr_stmt(s.expr)
        elif isinstance(s, ir.If):
            self._if(s)
        elif isinstance(s, ir.For):
            self._for(s)
        elif isinstance(s, ir.While):
            self._while(s)
        elif isinstance(s, ir.Break):
            self.line("break;")
        elif isinstance(s, ir.Continue):
            self.line("continue;")
        elif isinstance(s, ir.Return):
            self.line("return;")
        elif isinstance(s, ir.Barrier):
            # CUDA __syncthreads orders global memory too; workgroupBarrier only
            # covers var<workgroup>, so add storageBarrier when buffers are written.
            if self.writes_storage:
                self.line("storageBarrier();")
            self.line("workgroupBarrier();")
        else:
            raise TypeError(f"webgpu codegen: unknown statement {type(s).__name__}")

    def _store(self, s: ir.Store) -> None:
        name = self.names[s.base.name]
        idx = self.top(s.index)
        val = self.top(s.value)
        if s.base.name in self.atomic_bases:
            if s.base.type.elem.is_float:
                val = f"bitcast<u32>({val})"
            self.line(f"atomicStore(&{name}[{idx}], {val});")
        elif self._is_shared_bool(s.base):
            self.line(f"{name}[{idx}] = select(0u, 1u, {val});")
        else:
            self.line(f"{name}[{idx}] = {val};")

    def _expr_stmt(self, e: ir.Expr) -> None:
        if (isinstance(e, ir.Atomic) and e.op in _ATOMIC_FN and not _is_private(e.base)
                and not e.base.type.elem.is_float):
            self.line(self._int_atomic_call(e) + ";")
            return
        text = self.top(e)
        if isinstance(e, ir.Atomic) and "atomic" not in text:
            return  # the prelude performed it; what is left is the (unused) old value
        if not text.startswith("pk_t") and not isinstance(e, (ir.Var, ir.Const)):
            self.line(f"_ = {text};")

    def _if(self, s: ir.If) -> None:
        self.line(f"if {self.top(s.cond)} {{")
        self.block(s.then)
        orelse = s.orelse
        while len(orelse) == 1 and isinstance(orelse[0], ir.If):
            nested = orelse[0]
            cond, pre = self.capture(1, lambda: self.top(nested.cond))
            if pre:
                break
            self.line(f"}} else if {cond} {{")
            self.block(nested.then)
            orelse = nested.orelse
        if orelse:
            self.line("} else {")
            self.block(orelse)
        self.line("}")

    def _for(self, s: ir.For) -> None:
        var = self.names[s.var]
        vt: ScalarType = self.fn.locals.get(s.var) or self.fn.param(s.var).type
        start = self.top(s.start)
        cmp = "<" if s.step > 0 else ">"
        stop, pre = self.capture(1, lambda: self.ex(s.stop))
        mag = literal(abs(s.step), vt)
        update = f"{var} = {var} {'+' if s.step > 0 else '-'} {mag}"
        if not pre:
            self.line(f"for ({var} = {start}; {var} {cmp} {stop}; {update}) {{")
            self.block(s.body)
            self.line("}")
            return
        self.line(f"{var} = {start};")
        self.line("loop {")
        self.out.extend(pre)
        self.line(f"{INDENT}if !({var} {cmp} {stop}) {{ break; }}")
        self.block(s.body)
        self.line(f"{INDENT}continuing {{ {update}; }}")
        self.line("}")

    def _while(self, s: ir.While) -> None:
        cond, pre = self.capture(1, lambda: self.top(s.cond))
        if not pre:
            self.line(f"while {cond} {{")
        else:
            self.line("loop {")
            self.out.extend(pre)
            self.line(f"{INDENT}if !({cond}) {{ break; }}")
        self.block(s.body)
        self.line("}")

    # ------------------------------------------------------------ expressions

    def top(self, e: ir.Expr) -> str:
        """An expression in a position that needs no parentheses around it."""
        text = self.ex(e)
        if isinstance(e, (ir.BinOp, ir.UnaryOp)) and text.startswith("(") and text.endswith(")") \
                and _balanced(text[1:-1]):
            return text[1:-1]
        return text

    def arg(self, e: ir.Expr) -> str:
        """An argument of a call with several: a bool expression keeps its parentheses, else WGSL's
        template-list discovery reads ``select(x, a < b, c >= d)`` as ``a<b, c>`` (naga rejects it)."""
        return self.ex(e) if e.type.is_bool else self.top(e)

    def ex(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Const):
            if isinstance(e.type, ScalarType) and e.type.name == "f16":
                self.uses_f16 = True
            return literal(e.value, e.type)
        if isinstance(e, ir.Var):
            return self.names[e.name]
        if isinstance(e, ir.BinOp):
            return self._binop(e)
        if isinstance(e, ir.UnaryOp):
            return self._unary(e)
        if isinstance(e, ir.Cast):
            return self._cast(e)
        if isinstance(e, ir.Bitcast):
            return self._bitcast(e)
        if isinstance(e, ir.Select):
            return self._select(e)
        if isinstance(e, ir.Load):
            return self._load(e)
        if isinstance(e, ir.Call):
            return self._call(e)
        if isinstance(e, ir.SpecialReg):
            return self._reg(e)
        if isinstance(e, ir.Atomic):
            return self._atomic(e)
        if isinstance(e, ir.Subgroup):
            return self._subgroup(e)
        raise TypeError(f"webgpu codegen: unknown expression {type(e).__name__}")

    def _subgroup(self, e: ir.Subgroup) -> str:
        """WGSL subgroup built-ins (the device feature 'subgroup'). naga (wgpu 0.32) rejects the
        standard ``enable subgroups;`` and takes them under the feature alone, so none is written."""
        if e.op in _SUBGROUP_INPUTS:
            return f"i32({_SUBGROUP_INPUTS[e.op][1]})"
        v = self.arg(e.args[0])
        if e.op in ("shuffle", "shuffle_xor"):  # the lane (mask) modulo the subgroup size
            size = _SUBGROUP_INPUTS["size"][1]
            lane = f"(bitcast<u32>({self.top(e.args[1])}) & ({size} - 1u))"
            return f"{_SUBGROUP_FN[e.op]}({v}, {lane})"
        if e.op == "broadcast_first" and e.type.is_float:  # lane 0 by a shuffle: see spirv_subgroups
            return f"subgroupShuffle({v}, 0u)"
        return f"{_SUBGROUP_FN[e.op]}({v})"

    def once(self, e: ir.Expr) -> str:
        """Evaluate ``e`` exactly once, binding it to a ``let`` unless trivial."""
        text = self.top(e)
        if isinstance(e, (ir.Const, ir.Var)) or text.startswith("pk_t"):
            return text
        name = self.tmp()
        self.line(f"let {name} = {text};")
        return name

    def _binop(self, e: ir.BinOp) -> str:
        op, t = e.op, e.a.type
        if op in ("land", "lor"):
            return self._short_circuit(e)
        a, b = self.ex(e.a), self.ex(e.b)
        if _may_fail_in_naga(e):  # naga would reject overflow / division by zero of constants
            a = self._runtime_value(e.a, a)
        if op == "ne" and t.is_float:  # naga/drivers may make != ordered: NaN != x must be true
            return f"(!({a} == {b}))"
        if op in _CMP:
            return f"({a} {_CMP[op]} {b})"
        if op == "floordiv":
            return f"floor({a} / {b})" if t.is_float else f"({a} / {b})"
        if op == "mod" and (t.is_float or t.is_signed):  # WGSL's rounds; naga's is OpSRem
            raise CompileError(f"webgpu codegen: a {t} % reached the emitter (passes/legalize_numerics.py "
                               "writes it)", e.loc)
        if op in _ARITH:
            return f"({a} {_ARITH[op]} {b})"
        if op in _INT_BIT:
            return f"({a} {(_BOOL_BIT if t.is_bool else _INT_BIT)[op]} {b})"
        if op in ("shl", "shr"):  # the amount is below the width (passes/legalize_numerics.py masks it)
            if isinstance(e.b, ir.Const):
                amount = f"{int(e.b.value)}u"
            else:
                amount = b if e.b.type.name == "u32" else f"u32({_strip(b)})"
            return f"({a} {'<<' if op == 'shl' else '>>'} {amount})"
        raise TypeError(f"webgpu codegen: unknown binary operator {op!r}")

    def _short_circuit(self, e: ir.BinOp) -> str:
        a = self.ex(e.a)
        b, pre = self.capture(1, lambda: self.ex(e.b))
        sym = "&&" if e.op == "land" else "||"
        if not pre:
            return f"({a} {sym} {b})"
        name = self.tmp()
        self.line(f"var {name}: bool = {_strip(a)};")
        self.line(f"if {'' if e.op == 'land' else '!'}{name} {{")
        self.out.extend(pre)
        self.line(f"{INDENT}{name} = {_strip(b)};")
        self.line("}")
        return name

    def _unary(self, e: ir.UnaryOp) -> str:
        a = self.ex(e.a)
        if e.op == "neg" and e.type.is_int and _is_constant(e.a):  # -(MIN) of constants: naga rejects it
            a = self._runtime_value(e.a, a)
        if e.op == "not":
            return f"(!{_wrap(a)})"
        if e.op == "invert":
            return f"(~{_wrap(a)})"
        if e.op == "neg":
            if e.type.name == "u32":
                return f"(0u - {a})"
            return f"(-{_wrap(a)})"
        raise TypeError(f"webgpu codegen: unknown unary operator {e.op!r}")

    def _cast(self, e: ir.Cast) -> str:
        if e.a.type == e.to:
            return self.ex(e.a)
        if e.to.name == "f16" and e.a.type.name != "bool":  # drivers fold f16(x): rounded on the bits
            raise CompileError(f"webgpu codegen: a {e.a.type} -> f16 conversion reached the emitter "
                               "(passes/legalize_f16.py rounds to f16 on the bits)", e.loc)
        return f"{wty(e.to)}({self.top(e.a)})"

    def _bitcast(self, e: ir.Bitcast) -> str:
        """``ir.Bitcast``: WGSL's bitcast for f32/u32; a u32's low half as an f16 through unpack2x16float (an
        f32 that f16 holds exactly, so a driver folding the f16() changes nothing; naga has no bitcast from
        u32 to vec2<f16>), and back through pack2x16float."""
        x = self.top(e.a)
        if e.to.name == "f16":
            return f"f16(unpack2x16float({x}).x)"
        if e.a.type.name == "f16":
            return f"pack2x16float(vec2<f32>(f32({x}), 0.0f))"
        return f"bitcast<{wty(e.to)}>({x})"

    def _select(self, e: ir.Select) -> str:
        cond = self.arg(e.cond)
        a, pre_a = self.capture(1, lambda: self.arg(e.a))
        b, pre_b = self.capture(1, lambda: self.arg(e.b))
        if not pre_a and not pre_b:
            return f"select({b}, {a}, {cond})"
        # An arm with side effects: evaluate only the chosen one, like C's ?:.
        name = self.tmp()
        self.line(f"var {name}: {wty(e.type)};")
        self.line(f"if {cond} {{")
        self.out.extend(pre_a)
        self.line(f"{INDENT}{name} = {a};")
        self.line("} else {")
        self.out.extend(pre_b)
        self.line(f"{INDENT}{name} = {b};")
        self.line("}")
        return name

    def _load(self, e: ir.Load) -> str:
        name = self.names[e.base.name]
        idx = self.top(e.index)
        if e.base.name in self.atomic_bases:
            text = f"atomicLoad(&{name}[{idx}])"
            return f"bitcast<f32>({text})" if e.type.is_float else text
        if self._is_shared_bool(e.base):
            return f"({name}[{idx}] != 0u)"
        return f"{name}[{idx}]"

    def _call(self, e: ir.Call) -> str:
        args = [self.arg(a) for a in e.args]
        if e.type.is_float and e.func != "fma" and all(_is_constant(a) for a in e.args):
            args[0] = self._runtime_value(e.args[0], args[0])
        if e.func == "abs" and e.type.name == "i32":  # wraps: abs(MIN) == MIN on every driver
            self.helpers.add("pk_abs_i32")
            return f"pk_abs_i32({args[0]})"
        if e.func == "fma" and e.type.name == "f32":
            self.helpers.add("pk_fma")
            return f"pk_fma({', '.join(args)})"
        return f"{_MATH.get(e.func, e.func)}({', '.join(args)})"

    def _runtime_value(self, e: ir.Expr, text: str) -> str:
        """``e`` (emitted as ``text``) through a ``var``: naga evaluates a builtin or operator whose
        operands are all constants (or pipeline overrides, as the workgroup size is) at shader or
        pipeline creation and rejects the shader when the result is NaN, infinite or overflows
        (sqrt(-2.0), exp(100.0), 65504.0h + 41.0h, local_size << 28, 1 // 0), where the language
        gives the IEEE or wrapped result at run time."""
        name = self.tmp()
        self.line(f"var {name}: {wty(e.type)} = {_strip(text)};")
        return name

    def _reg(self, e: ir.SpecialReg) -> str:
        axis = _XYZ[e.dim]
        if e.kind == "local_size":
            return f"i32({abi.BLOCK_OVERRIDES[e.dim]})"
        if e.kind == "local_id":
            return f"i32(pk_local_id.{axis})"
        if e.kind == "num_groups":
            return f"i32({abi.LAUNCH_VAR}.grid.{axis})"
        group = f"({abi.LAUNCH_VAR}.group_base.{axis} + pk_group_id.{axis})"
        if e.kind == "group_id":
            return f"i32{group}"
        return f"i32({group} * {abi.BLOCK_OVERRIDES[e.dim]} + pk_local_id.{axis})"

    # ------------------------------------------------------------ atomics

    def _int_atomic_call(self, e: ir.Atomic) -> str:
        ptr = f"&{self.names[e.base.name]}[{self.top(e.index)}]"
        return f"{_ATOMIC_FN[e.op]}({ptr}, {self.top(e.value)})"

    def _atomic(self, e: ir.Atomic) -> str:
        if _is_private(e.base):
            return self._private_rmw(e)
        elem = e.base.type.elem
        if not elem.is_float and e.op in _ATOMIC_FN:
            return self._int_atomic_call(e)
        idx = self.once(e.index)
        ptr = f"&{self.names[e.base.name]}[{idx}]"
        if not elem.is_float:  # strong compare-exchange from the weak one
            cmp = self.once(e.compare)
            val = self.once(e.value)
            return self._cas_loop(ptr, cmp, val, wty(elem))
        if e.op == "cas":
            cmp = self.once(e.compare)
            val = self.once(e.value)
            bits_cmp = self.tmp()
            self.line(f"let {bits_cmp} = bitcast<u32>({cmp});")
            old = self._cas_loop(ptr, bits_cmp, f"bitcast<u32>({val})", "u32")
            return f"bitcast<f32>({old})"
        val = self.once(e.value)
        if e.op == "xchg":
            return f"bitcast<f32>(atomicExchange({ptr}, bitcast<u32>({val})))"
        old, res = self.tmp(), self.tmp()
        cur = f"bitcast<f32>({old})"
        new = {"add": f"{cur} + {val}", "min": f"min({cur}, {val})", "max": f"max({cur}, {val})"}[e.op]
        self.line(f"var {old}: u32 = atomicLoad({ptr});")
        self.line("loop {")
        self.line(f"{INDENT}let {res} = atomicCompareExchangeWeak({ptr}, {old}, bitcast<u32>({new}));")
        self.line(f"{INDENT}if {res}.exchanged {{ break; }}")
        self.line(f"{INDENT}{old} = {res}.old_value;")
        self.line("}")
        return cur

    def _cas_loop(self, ptr: str, cmp: str, val: str, ty: str) -> str:
        old, res = self.tmp(), self.tmp()
        self.line(f"var {old}: {ty};")
        self.line("loop {")
        self.line(f"{INDENT}let {res} = atomicCompareExchangeWeak({ptr}, {cmp}, {val});")
        self.line(f"{INDENT}if ({res}.exchanged || ({res}.old_value != {cmp})) {{")
        self.line(f"{INDENT}{INDENT}{old} = {res}.old_value;")
        self.line(f"{INDENT}{INDENT}break;")
        self.line(f"{INDENT}}}")
        self.line("}")
        return old

    def _private_rmw(self, e: ir.Atomic) -> str:
        """Atomics on a private (per-invocation) array are plain read-modify-writes."""
        name = self.names[e.base.name]
        idx = self.once(e.index)
        cmp = self.once(e.compare) if e.op == "cas" else None
        val = self.once(e.value)
        old = self.tmp()
        ref = f"{name}[{idx}]"
        self.line(f"let {old} = {ref};")
        if e.op == "cas":
            self.line(f"if {old} == {cmp} {{ {ref} = {val}; }}")
        else:
            new = {"add": f"{old} + {val}", "min": f"min({old}, {val})",
                   "max": f"max({old}, {val})", "xchg": val}[e.op]
            self.line(f"{ref} = {new};")
        return old


def _is_constant(e: ir.Expr) -> bool:
    """Whether ``e`` is built from constants and the workgroup size (a pipeline override) only:
    naga would evaluate it at shader or pipeline creation."""
    if isinstance(e, ir.Const):
        return True
    if isinstance(e, ir.SpecialReg):
        return e.kind == "local_size"
    if isinstance(e, ir.Cast):
        return _is_constant(e.a)
    if isinstance(e, ir.UnaryOp):
        return _is_constant(e.a)
    if isinstance(e, ir.BinOp):
        return _is_constant(e.a) and _is_constant(e.b)
    if isinstance(e, ir.Call):
        return all(_is_constant(a) for a in e.args)
    return False


def _may_fail_in_naga(e: ir.BinOp) -> bool:
    """Whether naga evaluates ``e`` at shader or pipeline creation and might find it overflows or
    divides by zero (an error there, where the language wraps or gives inf at run time)."""
    if e.op in _CMP or e.op in _INT_BIT or e.op == "shr" or not (_is_constant(e.a) and _is_constant(e.b)):
        return False
    if e.op in ("div", "floordiv", "mod") and e.type.is_int and isinstance(e.b, ir.Const):
        return e.b.value in (0, -1)
    return True


def _is_private(base: ir.Var) -> bool:
    return isinstance(base.type, ArrayType) and base.type.scope == "local"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _strip(text: str) -> str:
    if text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        return text[1:-1]
    return text


def _wrap(text: str) -> str:
    """Parenthesise an operand of a prefix operator unless it is atomic text."""
    if text.startswith("-") or text.startswith("!") or text.startswith("~"):
        return f"({text})"
    return text


def emit_wgsl(fn: ir.Function, f16_ok: bool = False) -> Tuple[str, Dict[str, str]]:
    """WGSL text and the FunctionInfo attrs (abi.py) of one kernel."""
    return WGSLEmitter(fn, f16_ok).emit()
