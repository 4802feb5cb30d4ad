"""Matrix fragments in SPIR-V: SPV_KHR_cooperative_matrix (capability CooperativeMatrixKHR), which
requires the Vulkan memory model (the shader declares it: VulkanMemoryModel, MemoryModel Vulkan).

A fragment is a Function variable of an ``OpTypeCooperativeMatrixKHR`` (Subgroup scope; use A, B or
Accumulator; rows x columns of the fragment's role); ``frag_load``/``frag_store`` are
``OpCooperativeMatrixLoadKHR``/``StoreKHR`` at the element ``base[offset]`` with the layout
(RowMajorKHR/ColumnMajorKHR) and the leading dimension as stride (in elements); ``frag_fill`` is an
``OpCompositeConstruct`` of one value, ``frag_scale`` an ``OpMatrixTimesScalar``, ``mma`` an
``OpCooperativeMatrixMulAddKHR`` (with the signedness operands of integer components). bf16 fragments
have SPV_KHR_bfloat16's ``OpTypeFloat 16 BFloat16KHR`` component (capabilities BFloat16TypeKHR,
BFloat16CooperativeMatrixKHR): they load from the u16 bits that hold bf16 in buffers and shared arrays
(passes/legalize_f16.py), and a fill bit-casts its u16 value; the device needs VK_KHR_shader_bfloat16. f32 A/B
fragments are the language's tf32 inputs: a device listing f32 combinations may multiply full floats, so
each is rounded to tf32 after its load or fill (``ir.matrix.round_tf32`` on the bits of the invocation's
``OpCooperativeMatrixLengthKHR`` elements, reached with ``OpAccessChain``). NVIDIA's driver lists no f32
combination: there the kernel is refused at load, naming the list.

Which (M, N, K, A/B/C/result types) a device runs is in its VkCooperativeMatrixPropertiesKHR list; the
shader records what it uses in the ``cooperative_matrix`` FunctionInfo attribute
(``MxNxK:A,B,C,R`` entries, ``;``-separated) and the runtime refuses a kernel whose entry the device
does not list, or a device without the extension (runtime/coopmat.py)."""
from __future__ import annotations

from typing import Dict

from polykern.ir import nodes as n
from polykern.ir.matrix import mma_types
from polykern.ir.matrix import TF32_DROPPED_BITS
from polykern.ir.types import FragmentType, bf16, bool_, f32, u16, u32

from .spirv_spec import SCOPE_SUBGROUP, Op

__all__ = ["ATTR", "lower_matrix_op", "declare_matrix", "supported"]

ATTR = "cooperative_matrix"
EXTENSION = "SPV_KHR_cooperative_matrix"
_USE = {"a": 0, "b": 1, "acc": 2}
_LAYOUT = {"row": 0, "col": 1}
# Cooperative Matrix Operands: signedness of A, B, C and the result.
_SIGNED = {"a": 0x1, "b": 0x2, "c": 0x4, "result": 0x8}


def declare_matrix(low) -> None:
    """Capability, extension, one Function variable per fragment, and the FunctionInfo record."""
    m = low.m
    m.capability("CooperativeMatrixKHR")
    m.extension(EXTENSION)
    m.use_vulkan_memory_model()
    low.fragments: Dict[str, int] = {}
    for name, ft in sorted(low.fn.fragments.items()):
        low.fragments[name] = low.f.variable(low.m.t_pointer("Function", _type(low, ft)), name)
    combos = set()
    for s in n.walk_stmts(low.fn.body):
        if isinstance(s, n.MatrixOp) and s.op == "mma":
            a, b, c = mma_types(low.fn, s)
            combos.add(f"{a.shape}:{a.elem},{b.elem},{c.elem},{c.elem}")
    low.attrs[ATTR] = ";".join(sorted(combos))


def _type(low, ft: FragmentType) -> int:
    m = low.m
    if ft.elem == bf16:  # SPV_KHR_bfloat16's bfloat16 component (the buffers hold its bits as u16)
        m.capability("BFloat16CooperativeMatrixKHR")
        comp = m.t_bfloat16()
    else:
        comp = low.ty(ft.elem)
    ids = [m.const_u32(SCOPE_SUBGROUP), m.const_u32(ft.rows), m.const_u32(ft.cols), m.const_u32(_USE[ft.role])]
    return m._type(("coopmat", comp, ft.role, ft.rows, ft.cols), Op.TypeCooperativeMatrixKHR, [comp, *ids])


def _int32(low, e: n.Expr) -> int:
    from polykern.ir.types import i32, u32

    v = low.expr(e)
    if e.type.bits != 32:
        v = low.convert(v, e.type, i32 if e.type.is_signed else u32)
    return v


def lower_matrix_op(low, s: n.MatrixOp) -> None:
    """``s`` into ``low`` (a KernelLowering inside its function)."""
    f, m = low.f, low.m
    ft = s.ftype
    t = _type(low, ft)
    var = low.fragments[s.frag]
    if s.op == "fill":
        v = low.expr(s.args[0])
        if ft.elem == bf16:  # u16 bits -> bfloat16
            v = f.val(Op.Bitcast, m.t_bfloat16(), v)
        f.op(Op.Store, var, f.val(Op.CompositeConstruct, t, v))
        _round_tf32(low, ft, var, t)
    elif s.op == "scale":
        f.op(Op.Store, var, f.val(Op.MatrixTimesScalar, t, f.val(Op.Load, t, var), low.expr(s.args[0])))
    elif s.op == "mma":
        a_t, b_t, c_t = mma_types(low.fn, s)
        a, b, c = (f.val(Op.Load, _type(low, x), low.fragments[name]) for x, name in zip((a_t, b_t, c_t), s.srcs))
        flags = 0
        if a_t.elem.is_int and a_t.elem.is_signed:
            flags |= _SIGNED["a"] | _SIGNED["b"]
        if c_t.elem.is_int and c_t.elem.is_signed:
            flags |= _SIGNED["c"] | _SIGNED["result"]
        ops = [flags] if flags else []
        f.op(Op.Store, var, f.val(Op.CooperativeMatrixMulAddKHR, t, a, b, c, *ops))
    else:
        ptr, st, elem = low.element_ptr(s.base, s.args[0])
        if st != elem and not (elem == bf16 and st == u16):  # bf16: loaded from its u16 bits
            low.refuse(f"frag_{s.op} on '{s.base.name}', whose elements are stored as {st}", s.loc)
        layout, stride = m.const_u32(_LAYOUT[s.layout]), _int32(low, s.args[1])
        if s.op == "load":
            f.op(Op.Store, var, f.val(Op.CooperativeMatrixLoadKHR, t, ptr, layout, stride))
            _round_tf32(low, ft, var, t)
        else:
            f.op(Op.CooperativeMatrixStoreKHR, ptr, f.val(Op.Load, t, var), layout, stride)


def _round_tf32(low, ft: FragmentType, var: int, t: int) -> None:
    """An f32 A/B fragment (``var`` of cooperative matrix type ``t``) rounded to tf32 in place: a loop over
    the invocation's elements, each one's bits ``u`` -> ``(u + 0x1000) & ~0x1FFF`` (a NaN: quiet bit set)."""
    if ft.role == "acc" or ft.elem != f32:
        return
    f, m = low.f, low.m
    ut, ft_id, bt = low.ty(u32), low.ty(f32), low.ty(bool_)
    low_bits = (1 << TF32_DROPPED_BITS) - 1
    iv = f.variable(m.t_pointer("Function", ut), "pk_tf32_i")
    f.op(Op.Store, iv, m.const_u32(0))
    count = f.val(Op.CooperativeMatrixLengthKHR, ut, t)
    index = []  # the loaded counter: defined in the condition block, used by the body and the step

    def cond() -> int:
        index[:] = [f.val(Op.Load, ut, iv)]
        return f.val(Op.ULessThan, bt, index[0], count)

    def body(merge: int, cont: int) -> None:
        p = f.val(Op.AccessChain, m.t_pointer("Function", ft_id), var, index[0])
        u = f.val(Op.Bitcast, ut, f.val(Op.Load, ft_id, p))
        nan = f.val(Op.UGreaterThan, bt, f.val(Op.BitwiseAnd, ut, u, m.const_u32(0x7FFFFFFF)),
                    m.const_u32(0x7F800000))
        r = f.val(Op.Select, ut, nan, f.val(Op.BitwiseOr, ut, u, m.const_u32(0x00400000)),
                  f.val(Op.IAdd, ut, u, m.const_u32(1 << (TF32_DROPPED_BITS - 1))))
        r = f.val(Op.BitwiseAnd, ut, r, m.const_u32(~low_bits & 0xFFFFFFFF))
        f.op(Op.Store, p, f.val(Op.Bitcast, ft_id, r))

    f.structured_loop(cond, body, lambda: f.op(Op.Store, iv, f.val(Op.IAdd, ut, index[0], m.const_u32(1))))

def supported(target, fn, s):
    """``Capabilities.matrix`` of vulkan: every shape and type of the language compiles; which ones a device
    runs is checked when the module is loaded (runtime/program.py)."""
    return None
