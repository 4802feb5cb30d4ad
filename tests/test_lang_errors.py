"""Every user error of the kernel language: its class, its message, and the source location it names.

Each kernel below marks the offending line with a ``# E:<tag>`` comment; the test checks that the error
points at exactly that line of this file and shows the source line with a caret.
"""
import math
import re

import pytest

import polykern as pk
from polykern import Buffer, f32, f64, i32, i64, u8, u32
from polykern.errors import KernelSyntaxError, KernelTypeError, PolykernError

THIS = open(__file__).read().splitlines()


def line_of(tag):
    hits = [i + 1 for i, ln in enumerate(THIS) if re.search(rf"# E:{tag}(\s|$)", ln)]
    assert len(hits) == 1, tag
    return hits[0]


def check(kern, cls, text, tag):
    with pytest.raises(cls) as info:
        kern.ir
    err = info.value
    assert text in str(err), str(err)
    assert err.loc is not None and err.loc.file == __file__
    assert err.loc.line == line_of(tag), (err.loc, str(err))
    rendered = str(err)
    assert rendered.startswith(f"{__file__}:{line_of(tag)}:{err.loc.col}: ")
    assert THIS[line_of(tag) - 1].strip() in rendered and "^" in rendered


@pk.kernel
def k_assign_mismatch(x: Buffer[f32]):
    k = 0
    k = x[0]  # E:assign
    x[0] = f32(k)


@pk.kernel
def k_listcomp(x: Buffer[f32]):
    y = [v for v in range(3)]  # E:listcomp


@pk.kernel
def k_undefined(x: Buffer[f32]):
    x[0] = zzz  # E:undef  # noqa: F821


@pk.kernel
def k_int_div(n: i32, x: Buffer[i32]):
    x[0] = n / 2  # E:intdiv


@pk.kernel
def k_mixed(n: i32, m: i64, x: Buffer[i64]):
    x[0] = m + n  # E:mixed


@pk.kernel
def k_readonly(x: Buffer[f32, "readonly"]):
    x[0] = 1.0  # E:readonly


@pk.kernel
def k_param_assign(n: i32, x: Buffer[f32]):
    n = n + 1  # E:param


@pk.kernel
def k_return_value(x: Buffer[f32]):
    return 1  # E:retval


@pk.kernel
def k_literal_range(x: Buffer[u8]):
    x[0] = 300  # E:litrange


@pk.kernel
def k_float_index(x: Buffer[f32]):
    x[1.5] = 0.0  # E:findex


@pk.kernel
def k_shared_size(n: i32, x: Buffer[f32]):
    s = pk.shared(f32, n)  # E:shsize
    x[0] = s[0]


@pk.kernel
def k_while_else(x: Buffer[f32]):
    while x[0] > 0.0:  # E:whileelse
        x[0] -= 1.0
    else:
        pass


@pk.kernel
def k_chain(n: i32, x: Buffer[f32]):
    if 0 < n < 10:  # E:chain
        x[0] = 1.0


@pk.kernel
def k_try(x: Buffer[f32]):
    try:  # E:try
        x[0] = 1.0
    except Exception:
        pass


@pk.kernel
def k_sqrt_int(n: i32, x: Buffer[f32]):
    x[0] = f32(pk.sqrt(n))  # E:sqrtint


@pk.kernel
def k_dim(x: Buffer[i32]):
    x[0] = pk.global_id(3)  # E:dim


@pk.kernel
def k_range_float(x: Buffer[f32]):
    for i in range(0.5, 3.0):  # E:rangef
        x[0] = 1.0


@pk.kernel
def k_for_iter(x: Buffer[f32]):
    for v in x:  # E:foriter
        pass


@pk.kernel
def k_call_python(x: Buffer[f32]):
    x[0] = len(x)  # E:pycall


@pk.kernel
def k_unused(x: Buffer[f32]):
    x[0] + 1.0  # E:unused


@pk.kernel
def k_alias(x: Buffer[f32]):
    y = x  # E:alias
    y[0] = 1.0


@pk.kernel
def k_atomic_readonly(x: Buffer[i32, "readonly"]):
    pk.atomic_add(x, 0, 1)  # E:atomro


@pk.kernel
def k_invert_float(x: Buffer[f32]):
    x[0] = ~x[1]  # E:invert


@pk.kernel
def k_tuple(x: Buffer[f32]):
    a, b = 1.0, 2.0  # E:tuple
    x[0] = a


@pk.kernel
def k_kwargs(x: Buffer[f32]):
    x[0] = pk.max(x[1], b=2.0)  # E:kw


@pk.kernel
def k_shift_float(x: Buffer[f32]):
    x[0] = x[1] << 2  # E:shiftf


@pk.kernel
def k_barrier_expr(x: Buffer[f32]):
    x[0] = pk.barrier()  # E:barrierexpr


CASES = [
    (k_assign_mismatch, KernelTypeError, "cannot assign f32 to i32 variable 'k'", "assign"),
    (k_listcomp, KernelSyntaxError, "list comprehensions are not supported in kernels", "listcomp"),
    (k_undefined, KernelSyntaxError, "name 'zzz' is not defined", "undef"),
    (k_int_div, KernelTypeError, "use '//' for integer division", "intdiv"),
    (k_mixed, KernelTypeError, "mismatched operand types i64 and i32 in '+'", "mixed"),
    (k_readonly, KernelTypeError, "cannot write to readonly Buffer 'x'", "readonly"),
    (k_param_assign, KernelTypeError, "cannot assign to kernel parameter 'n'", "param"),
    (k_return_value, KernelTypeError, "kernels cannot return a value", "retval"),
    (k_literal_range, KernelTypeError, "integer literal 300 does not fit u8", "litrange"),
    (k_float_index, KernelTypeError, "index must be an integer, got f32", "findex"),
    (k_shared_size, KernelTypeError, "must be a compile-time integer constant", "shsize"),
    (k_while_else, KernelSyntaxError, "'while ... else' is not supported", "whileelse"),
    (k_chain, KernelSyntaxError, "chained comparisons", "chain"),
    (k_try, KernelSyntaxError, "'try' statements are not supported in kernels", "try"),
    (k_sqrt_int, KernelTypeError, "sqrt() needs a float argument, got i32", "sqrtint"),
    (k_dim, KernelTypeError, "dimension must be 0, 1 or 2, got 3", "dim"),
    (k_range_float, KernelTypeError, "range() needs integer bounds, got f32", "rangef"),
    (k_for_iter, KernelSyntaxError, "only 'for NAME in range(...)' loops", "foriter"),
    (k_call_python, KernelSyntaxError, "'len' cannot be called in a kernel", "pycall"),
    (k_unused, KernelSyntaxError, "has no effect", "unused"),
    (k_alias, KernelTypeError, "Buffers and arrays cannot be aliased", "alias"),
    (k_atomic_readonly, KernelTypeError, "atomic_add() on readonly Buffer 'x'", "atomro"),
    (k_invert_float, KernelTypeError, "'~' needs an integer operand, got f32", "invert"),
    (k_tuple, KernelSyntaxError, "tuple assignment is not supported", "tuple"),
    (k_kwargs, KernelSyntaxError, "keyword arguments are not supported", "kw"),
    (k_shift_float, KernelTypeError, "'<<' needs integer operands, got f32", "shiftf"),
    (k_barrier_expr, KernelSyntaxError, "barrier() is a statement", "barrierexpr"),
]


@pytest.mark.parametrize("kern,cls,text,tag", CASES, ids=[c[3] for c in CASES])
def test_error(kern, cls, text, tag):
    check(kern, cls, text, tag)


def test_errors_are_polykern_errors():
    for _, cls, _, _ in CASES:
        assert issubclass(cls, PolykernError)


def test_missing_annotation():
    def body(n, x: Buffer[f32]):
        x[0] = 1.0

    with pytest.raises(KernelTypeError, match="parameter 'n' needs a type annotation"):
        pk.kernel(body).ir


def test_failure_is_not_cached():
    with pytest.raises(KernelTypeError):
        k_mixed.ir
    with pytest.raises(KernelTypeError):
        k_mixed.ir


def test_builtins_outside_kernel_raise():
    with pytest.raises(KernelSyntaxError, match="only be used inside a @pk.kernel"):
        pk.global_id(0)


def test_calling_kernel_directly_explains():
    @pk.kernel
    def k(x: Buffer[f32]):
        x[0] = 1.0

    with pytest.raises(PolykernError, match="build it first"):
        k(None)


# ---------------------------------------------------------------- accepted programs and their IR

@pk.kernel
def k_everything(n: i32, a: f64, x: Buffer[f64], h: Buffer[u32], out: Buffer[i64]):
    """Docstrings are ignored."""
    i = pk.global_id(0)
    if i >= n:
        return
    acc = pk.local(f64, 4)
    for k in range(4):
        acc[k] = f64(k) * 0.5
    t: f64 = 0.0
    for k in range(3, -1, -1):
        t += math.sqrt(acc[k]) + pk.max(acc[k], 1.0) ** 2
        if t > 100.0:
            break
        elif t < -1.0:
            continue
    x[i] = t if i < n else a
    b = u32(i) >> 3
    pk.atomic_add(h, i % 4, b & 1)
    out[i] = i64(min(i, 5, n)) * 3


def test_everything_translates():
    fn = k_everything.ir
    text = pk.ir.function_str(fn) if hasattr(pk, "ir") else __import__("polykern.ir", fromlist=["x"]).function_str(fn)
    assert "local acc: f64[4]" in text
    assert "for k in range(3:i32, -1:i32, -1):" in text
    assert "(b & 1:u32)" in text
    assert fn.locals["t"] == f64 and fn.locals["b"] == u32


def test_ifexp_with_loads_is_lazy():
    """`x[i] if i < n else 0.0` must not read x[i] when i >= n: it becomes an If, not a Select."""
    from polykern import ir

    @pk.kernel
    def k(n: i32, x: Buffer[f32], y: Buffer[f32]):
        i = pk.global_id(0)
        y[i] = x[i] if i < n else 0.0

    fn = k.ir
    assert not any(isinstance(e, ir.Select) for e in ir.walk_all_exprs(fn.body))
    assert any(isinstance(s, ir.If) for s in fn.body)


def test_keyword_names_are_kept_in_the_ir():
    """The IR keeps the user's names (they are the ABI); each emitter maps them to legal identifiers."""
    @pk.kernel
    def k(half: i32, x: Buffer[f32]):
        float_ = 1.0
        kernel = x[0] + float_
        x[half] = kernel

    fn = k.ir
    assert [p.name for p in fn.params] == ["half", "x"]
    assert "kernel" in fn.locals and "float_" in fn.locals


def test_literal_adapts_to_f16_and_u8():
    from polykern import f16

    @pk.kernel
    def k(x: Buffer[f16], y: Buffer[u8]):
        x[0] = x[1] * 0.5 + 2
        y[0] = y[1] + 255

    assert k.ir.body  # translated without a type error
