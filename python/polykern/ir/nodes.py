"""IR nodes: a small, structured, fully typed kernel IR.

The IR keeps structured control flow (if/for/while) because every source-level
backend (CUDA C, OpenCL C, MSL, WGSL) and the SPIR-V emitter want it, and the
LLVM emitter lowers it easily. Every expression carries its result ``type``.
Every node may carry ``loc`` (a :class:`polykern.errors.SourceLoc`) so that a
backend refusing a feature can point at the user's source.

Variables are named; a function declares every scalar local in ``Function.locals``
and every shared/local array in ``Function.arrays`` (names are unique per
function: the frontend renames shadowed names).

Semantics worth knowing when writing a backend:
- ``BinOp`` operands always have the same type as each other (the frontend
  inserts casts); comparisons return ``bool``.
- Integer ``floordiv``/``mod`` use C semantics (truncate toward zero), with ``x // 0 == x``,
  ``x % 0 == 0``, ``MIN // -1 == MIN`` and ``MIN % -1 == 0``; float ``mod`` is C ``fmod``.
- ``shl``/``shr``: shift amount is taken modulo the bit width, ``shr`` is arithmetic for signed
  and logical for unsigned types. (A target whose instructions do not keep these, or the float ->
  int saturation, declares it in its capabilities, and passes/legalize_numerics.py writes them
  before its emitter runs.)
- ``land``/``lor`` short-circuit: the right operand is evaluated only if needed.
- ``For`` runs ``var = start; while var < stop (step > 0) or var > stop
  (step < 0): body; var += step``; ``step`` is a nonzero compile-time constant.
  As in Python's ``range``, the bounds are evaluated once, before the loop, ``start`` first: the
  frontend makes ``stop`` a ``Const``, a scalar parameter or a ``Var`` of a temporary the body never
  assigns (and ``start`` a ``Const``, a ``Var`` or such a temporary), so a backend may re-read
  ``stop`` on every iteration, as a C ``for`` does, and get the same value.
- Special registers (``global_id`` ...) have type ``i32``.
- Atomics return the old value.
- Every scalar local in ``Function.locals`` starts at zero (backends zero-initialize them); local
  arrays (scope "local") start zeroed too; shared arrays are uninitialized.
- Names of params/locals/arrays are the user's Python identifiers, verbatim (they are the ABI: a
  parameter's name is its FunctionInfo arg name). They may be keywords of a target language, start
  with "__" or be non-ASCII: every emitter maps IR names to legal, unique identifiers of its own
  language (codegen/c_names.NameTable for C-like sources, the WGSL Namer); SPIR-V and LLVM take any
  name.
- A ``Const`` holds a value of its type (the verifier refuses an integer out of range); the frontend
  rounds float literals once to their type, so folding (passes/simplify.py) sees the device's number.
- IR from the frontend has expressions at most ~64 deep (longer user expressions are split into
  temporaries), so backends may walk expressions recursively; and every ``Barrier`` is in uniform
  control flow (passes/uniformity.py), reached by all work-items of a workgroup or none.
- The frontend may introduce temporaries (``_t0``, ``_idx0``) for short-circuit/conditional
  expressions; the IR ``Select`` is eager (both arms evaluated) and only used for side-effect-free,
  non-faulting arms.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from ..errors import SourceLoc
from .types import ArrayType, BufferType, FragmentType, ScalarType, Type, bool_, f32

# ---------------------------------------------------------------- expressions


@dataclass(eq=False)
class Expr:
    type: Any = field(init=False, default=None)
    loc: Optional[SourceLoc] = field(init=False, default=None, repr=False)

    def children(self) -> List["Expr"]:
        return []


@dataclass(eq=False)
class Const(Expr):
    value: Union[int, float, bool]
    ctype: ScalarType

    def __post_init__(self):
        self.type = self.ctype


@dataclass(eq=False)
class Var(Expr):
    """A reference to a scalar local, a scalar parameter, or (as the base of
    Load/Store/Atomic) a buffer parameter or array."""

    name: str
    vtype: Type

    def __post_init__(self):
        self.type = self.vtype


BINOPS_ARITH = ("add", "sub", "mul", "div", "floordiv", "mod")
BINOPS_BIT = ("and", "or", "xor", "shl", "shr")
BINOPS_CMP = ("lt", "le", "gt", "ge", "eq", "ne")
BINOPS_LOGIC = ("land", "lor")


@dataclass(eq=False)
class BinOp(Expr):
    op: str
    a: Expr
    b: Expr

    def __post_init__(self):
        self.type = bool_ if self.op in BINOPS_CMP or self.op in BINOPS_LOGIC else self.a.type

    def children(self):
        return [self.a, self.b]


@dataclass(eq=False)
class UnaryOp(Expr):
    op: str  # "neg" | "not" (logical, bool) | "invert" (bitwise, ints)
    a: Expr

    def __post_init__(self):
        self.type = self.a.type

    def children(self):
        return [self.a]


@dataclass(eq=False)
class _Retyped(Expr):
    """An expression of type ``to`` made from one operand ``a`` (the base of Cast and Bitcast)."""

    to: ScalarType
    a: Expr

    def __post_init__(self):
        self.type = self.to

    def children(self):
        return [self.a]


@dataclass(eq=False)
class Cast(_Retyped):
    """``a`` converted to ``to`` (docs/language.md 7.3)."""


#: the (value type, bits type) pairs a ``Bitcast`` reinterprets, in either direction: a float and the unsigned
#: integer of its width, and a 16-bit float and the low half of a ``u32`` (the upper half zero), so
#: targets without 16-bit integers (WGSL, SPIR-V without Int16) can hold the bits
BITCAST_PAIRS = (("f32", "u32"), ("f64", "u64"), ("f16", "u32"), ("bf16", "u32"))


@dataclass(eq=False)
class Bitcast(_Retyped):
    """``a``'s bits read as ``to`` (no conversion); only the pairs of :data:`BITCAST_PAIRS`. Made by the
    legalization passes (passes/legalize_f16.py), never by the frontend."""


@dataclass(eq=False)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr

    def __post_init__(self):
        self.type = self.a.type

    def children(self):
        return [self.cond, self.a, self.b]


@dataclass(eq=False)
class Load(Expr):
    base: Var  # BufferType or ArrayType
    index: Expr  # integer typed

    def __post_init__(self):
        self.type = self.base.type.elem

    def children(self):
        return [self.index]


@dataclass(eq=False)
class WgReg(Expr):
    """Register ``index`` of this work-item's part of a warpgroup accumulator or row vector ``name``
    (docs/language.md "Hopper": ``acc[i, j]`` / ``vec[i]`` inside ``pk.wg_elements`` / ``pk.wg_rows``; the
    frontend computes the index from the layout ``ir.hopper.element_row_col`` gives). Written by the
    ``HopperOp`` ``wg_set``."""

    name: str
    index: Expr  # i32

    def __post_init__(self):
        self.type = f32

    def children(self):
        return [self.index]


# Fast math (docs/language.md "Fast math"): ``fast_<op>`` is ``<op>`` (``fast_div``: float ``/``) computed
# within the looser promise ``polykern.numerics.promise("fast_<op>", ...)``; passes/fast_math.py makes
# them from ``build(fast_math=True)`` and turns them back into the precise operation wherever a target
# has no faster lowering (f16, f64; bf16 computes in f32 and stays fast).
FAST_MATH = {"fast_exp": "exp", "fast_exp2": "exp2", "fast_log": "log", "fast_log2": "log2",
             "fast_rsqrt": "rsqrt", "fast_div": "div"}
MATH_UNARY = ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "abs", "floor", "ceil",
              "fast_exp", "fast_exp2", "fast_log", "fast_log2", "fast_rsqrt")
MATH_BINARY = ("pow", "min", "max", "fast_div")
MATH_TERNARY = ("fma",)
MATH_FUNCS = MATH_UNARY + MATH_BINARY + MATH_TERNARY
# Functions that accept integer operands too; the rest are float-only.
MATH_INT_OK = ("abs", "min", "max")


@dataclass(eq=False)
class Call(Expr):
    """A math builtin; all args share the result type."""

    func: str
    args: List[Expr]

    def __post_init__(self):
        self.type = self.args[0].type

    def children(self):
        return list(self.args)


SPECIAL_REGS = ("global_id", "local_id", "group_id", "local_size", "num_groups")


@dataclass(eq=False)
class SpecialReg(Expr):
    kind: str  # one of SPECIAL_REGS
    dim: int  # 0, 1, 2

    def __post_init__(self):
        from .types import i32

        self.type = i32


ATOMIC_OPS = ("add", "min", "max", "xchg", "cas")


@dataclass(eq=False)
class Atomic(Expr):
    """Atomic read-modify-write on ``base[index]``; returns the old value.
    For ``cas``: if old == ``compare`` store ``value``."""

    op: str
    base: Var
    index: Expr
    value: Expr
    compare: Optional[Expr] = None

    def __post_init__(self):
        self.type = self.base.type.elem

    def children(self):
        out = [self.index, self.value]
        if self.compare is not None:
            out.insert(1, self.compare)
        return out


SUBGROUP_REGS = ("size", "local_id", "id")
SUBGROUP_COLLECTIVES = ("shuffle", "shuffle_xor", "add", "min", "max", "any", "all", "broadcast_first")
SUBGROUP_OPS = SUBGROUP_REGS + SUBGROUP_COLLECTIVES


@dataclass(eq=False)
class Subgroup(Expr):
    """A subgroup builtin (``pk.subgroup_<op>``, docs/language.md "Subgroups").

    ``size``/``local_id``/``id`` take no arguments and have type ``i32``; ``any``/``all`` take a bool
    and give a bool; ``shuffle``/``shuffle_xor`` take ``(value, lane)`` (lane ``i32``), the others
    ``(value,)``, and give the value's type. A collective (every op but the three registers) is
    reached by all work-items of its subgroup or none (passes/uniformity.py) and is always the
    whole right-hand side of an ``Assign`` whose operands contain no other collective (the frontend
    hoists it into a temporary), so backends and the interpreter meet it at statement level."""

    op: str
    args: List[Expr] = field(default_factory=list)

    def __post_init__(self):
        from .types import i32

        if self.op in SUBGROUP_REGS:
            self.type = i32
        elif self.op in ("any", "all"):
            self.type = bool_
        else:
            self.type = self.args[0].type

    @property
    def collective(self) -> bool:
        return self.op in SUBGROUP_COLLECTIVES

    def children(self):
        return list(self.args)


# ---------------------------------------------------------------- statements


@dataclass(eq=False)
class Stmt:
    loc: Optional[SourceLoc] = field(init=False, default=None, repr=False)


@dataclass(eq=False)
class Assign(Stmt):
    name: str
    value: Expr


@dataclass(eq=False)
class Store(Stmt):
    base: Var
    index: Expr
    value: Expr


@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: List[Stmt]
    orelse: List[Stmt] = field(default_factory=list)


@dataclass(eq=False)
class For(Stmt):
    var: str  # a scalar local of integer type
    start: Expr
    stop: Expr
    step: int
    body: List[Stmt]


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: List[Stmt]


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    pass


@dataclass(eq=False)
class Barrier(Stmt):
    """Workgroup execution + shared-memory barrier (CUDA __syncthreads)."""


MATRIX_OPS = ("fill", "load", "store", "mma", "scale")
MATRIX_LAYOUTS = ("row", "col")


@dataclass(eq=False)
class MatrixOp(Stmt):
    """A matrix-fragment operation of the whole subgroup (docs/language.md "Matrix fragments").

    ``frag`` names the fragment (``Function.fragments``) that ``fill``/``load``/``mma``/``scale`` write
    and ``store`` reads. ``fill``: ``args`` = [value]; ``scale``: [factor] (``frag *= factor``);
    ``load``/``store``: ``base`` (a Buffer or shared array), ``args`` = [offset, ld]: element (i, j) of the
    fragment is ``base[offset + i * ld + j]`` (``layout`` "row") or ``base[offset + j * ld + i]`` ("col");
    ``mma``: ``srcs`` = [a, b, c] and ``frag = a @ b + c``. The operands are the same in every work-item
    of the subgroup, and the statement is reached by all work-items of the workgroup or none
    (passes/uniformity.py)."""

    op: str
    frag: str
    ftype: FragmentType
    srcs: List[str] = field(default_factory=list)
    base: Optional[Var] = None
    args: List[Expr] = field(default_factory=list)
    layout: str = "row"


#: Bytes one asynchronous copy moves (docs/language.md "Asynchronous copies"): cp.async's sizes.
COPY_BYTES = (4, 8, 16)


@dataclass(eq=False)
class CopyAsync(Stmt):
    """``pk.copy_async(dst, dst_k, src, src_k, count)``: this work-item starts copying ``src[count *
    src_k + j]`` into ``dst[count * dst_k + j]`` for j in 0..count-1 (docs/language.md "Asynchronous
    copies"). ``dst`` is a shared array, ``src`` a Buffer of the same element type; ``count`` elements
    are 4, 8 or 16 bytes (``COPY_BYTES``), so each side is aligned to that size where its base is.
    The indices are integers of one type (``count * k + count - 1`` fits it). The copy belongs to the
    work-item's next ``CopyCommit`` group and is complete (visible to this work-item) after a
    ``CopyWait`` leaves that group no longer pending; before that, the destination elements must not
    be touched and the source elements not written (the oracle refuses both). Backends without
    asynchronous copies get plain copies (passes/async_copy.py)."""

    dst: Var
    dst_k: Expr
    src: Var
    src_k: Expr
    count: int


@dataclass(eq=False)
class CopyCommit(Stmt):
    """``pk.copy_commit()``: the work-item's copies issued since its last commit form one group."""


@dataclass(eq=False)
class CopyWait(Stmt):
    """``pk.copy_wait(pending)``: wait until at most ``pending`` (a constant >= 0) of the work-item's
    most recently committed groups are incomplete; copies not yet committed are not waited for."""

    pending: int


ASYNC_COPY_STMTS = (CopyAsync, CopyCommit, CopyWait)


@dataclass(eq=False)
class HopperOp(Stmt):
    """A Hopper (sm_90a) operation: transaction barriers, tensor copies, warpgroup MMA (docs/language.md
    "Hopper: warpgroup MMA, tensor copies, transaction barriers"). ``op`` is one of ``ir.hopper.OPS``,
    ``names`` the objects it names (arrays, barrier sets, tensor maps, accumulators) and ``args`` its
    expression operands, in the order ``ir.hopper.OPS`` gives; ``ir.hopper`` holds the rules."""

    op: str
    names: List[str] = field(default_factory=list)
    args: List[Expr] = field(default_factory=list)


@dataclass(eq=False)
class Print(Stmt):
    """``pk.debug_print(fmt, ...)``: this work-item prints ``fmt`` (the user's format, in the subset of
    ``ir.debug_print``) with ``args``, one ``Var`` or ``Const`` per conversion, each of the type
    ``debug_print.arg_type`` gives (the frontend converts the user's values into temporaries first)."""

    fmt: str
    args: List[Expr] = field(default_factory=list)


# ---------------------------------------------------------------- functions


@dataclass(eq=False)
class Param:
    name: str
    type: Union[ScalarType, BufferType]

    @property
    def is_buffer(self) -> bool:
        return isinstance(self.type, BufferType)


@dataclass(eq=False)
class Function:
    name: str
    params: List[Param]
    body: List[Stmt]
    locals: Dict[str, ScalarType] = field(default_factory=dict)
    arrays: Dict[str, ArrayType] = field(default_factory=dict)
    loc: Optional[SourceLoc] = field(default=None, repr=False)
    source: str = field(default="", repr=False)
    #: Extra FunctionInfo attributes recorded by passes (e.g. the bounds-check access table).
    attrs: Dict[str, str] = field(default_factory=dict, repr=False)
    #: Matrix fragments (pk.frag_a/frag_b/frag_acc), by name; only MatrixOp statements use them.
    fragments: Dict[str, FragmentType] = field(default_factory=dict)
    #: Hopper facts (ir.hopper.HopperFacts: warpgroups, barrier sets, tensor maps, accumulators), or None.
    hopper: Any = None

    @property
    def shared_arrays(self) -> Dict[str, ArrayType]:
        return {k: v for k, v in self.arrays.items() if v.scope == "shared"}

    @property
    def local_arrays(self) -> Dict[str, ArrayType]:
        return {k: v for k, v in self.arrays.items() if v.scope == "local"}

    def param(self, name: str) -> Optional[Param]:
        for p in self.params:
            if p.name == name:
                return p
        return None


# ---------------------------------------------------------------- traversal helpers


def walk_stmts(stmts: List[Stmt]):
    """Yield every statement, depth first, in source order."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from walk_stmts(s.then)
            yield from walk_stmts(s.orelse)
        elif isinstance(s, (For, While)):
            yield from walk_stmts(s.body)


def stmt_exprs(s: Stmt) -> List[Expr]:
    """The expressions directly held by a statement (not by nested statements)."""
    if isinstance(s, Assign):
        return [s.value]
    if isinstance(s, Store):
        return [s.index, s.value]
    if isinstance(s, ExprStmt):
        return [s.expr]
    if isinstance(s, If):
        return [s.cond]
    if isinstance(s, For):
        return [s.start, s.stop]
    if isinstance(s, While):
        return [s.cond]
    if isinstance(s, MatrixOp):
        return list(s.args)
    if isinstance(s, CopyAsync):
        return [s.dst_k, s.src_k]
    if isinstance(s, (HopperOp, Print)):
        return list(s.args)
    return []


def walk_expr(e: Expr):
    yield e
    for c in e.children():
        yield from walk_expr(c)


def walk_all_exprs(stmts: List[Stmt]):
    for s in walk_stmts(stmts):
        for e in stmt_exprs(s):
            yield from walk_expr(e)


def uses_barrier(fn: Function) -> bool:
    return any(isinstance(s, Barrier) for s in walk_stmts(fn.body))


def subgroup_collective(s: Stmt) -> Optional["Subgroup"]:
    """The subgroup collective ``s`` evaluates (``t = pk.subgroup_add(v)``), or None."""
    if isinstance(s, Assign) and isinstance(s.value, Subgroup) and s.value.collective:
        return s.value
    return None


def uses_matrix(fn: Function) -> bool:
    """Whether ``fn`` has matrix-fragment operations."""
    return any(isinstance(s, MatrixOp) for s in walk_stmts(fn.body))


def uses_hopper(fn: Function) -> bool:
    """Whether ``fn`` has Hopper operations (HopperOp) or declares Hopper objects."""
    return fn.hopper is not None or any(isinstance(s, HopperOp) for s in walk_stmts(fn.body))


def uses_async_copies(fn: Function) -> bool:
    """Whether ``fn`` has pk.copy_async/copy_commit/copy_wait statements."""
    return any(isinstance(s, ASYNC_COPY_STMTS) for s in walk_stmts(fn.body))


def uses_subgroups(fn: Function) -> bool:
    """Whether ``fn`` uses any subgroup builtin."""
    return any(isinstance(e, Subgroup) for e in walk_all_exprs(fn.body))


def used_types(fn: Function) -> set:
    """Every scalar type that appears in the function (params, locals, arrays, exprs)."""
    out = set()
    for p in fn.params:
        out.add(p.type.elem if isinstance(p.type, BufferType) else p.type)
    out.update(fn.locals.values())
    out.update(a.elem for a in fn.arrays.values())
    for e in walk_all_exprs(fn.body):
        if isinstance(e.type, ScalarType):
            out.add(e.type)
    return out
