"""Frontend messages suggest the fix that works: the cast of the right operand whatever the
operand order, the polykern equivalent of a NumPy/math function, a length parameter for len(), an
accurate list of the callable Python functions, and a float cast for a float literal with an integer."""
import importlib.util
import itertools

import pytest

from polykern.errors import KernelSyntaxError, KernelTypeError
from polykern.ir.types import SCALAR_TYPES

_SEQ = itertools.count()


def kernel_from(tmp_path, params, line):
    """A kernel ``kk(params)`` whose body is ``line``, in a real file that imports math and NumPy."""
    path = tmp_path / f"msg_kern_{next(_SEQ)}.py"
    path.write_text("import math\nimport numpy as np\nimport polykern as pk\nfrom polykern import *\n\n"
                    f"@pk.kernel\ndef kk({params}):\n    {line}\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kk


def error_of(tmp_path, params, line, cls=KernelTypeError):
    k = kernel_from(tmp_path, params, line)
    with pytest.raises(cls) as info:
        k.ir
    assert info.value.loc is not None and info.value.loc.line == 8, str(info.value)
    return info.value.message


# ---------------------------------------------------------------- 1. the cast to suggest

@pytest.mark.parametrize("params,line,example", [
    ("f: f32, i: i32, y: Buffer[f32]", "y[0] = f * i", "e.g. f * f32(i)"),
    ("f: f32, i: i32, y: Buffer[f32]", "y[0] = i * f", "e.g. f32(i) * f"),
    ("f: f32, i: i32, y: Buffer[f32]", "y[0] = f + (i + i)", "e.g. f + f32(i + i)"),
    ("f: f32, i: i32, y: Buffer[f32]", "y[0] = (i + i) - f", "e.g. f32(i + i) - f"),
    ("f: f32, i: i32, y: Buffer[f32]", "y[0] = f * i if i < 3 else f", "e.g. f * f32(i)"),
    ("f: f32, i: i32, y: Buffer[i32]", "y[0] = i32(i < f)", "e.g. f32(i) < f"),
    ("h: f16, f: f32, y: Buffer[f32]", "y[0] = h * f", "e.g. f32(h) * f"),
    ("h: f16, f: f32, y: Buffer[f32]", "y[0] = f * h", "e.g. f * f32(h)"),
    ("a: i32, b: i64, y: Buffer[i64]", "y[0] = b + a", "e.g. b + i64(a)"),
    ("a: i32, b: i64, y: Buffer[i64]", "y[0] = a + b", "e.g. i64(a) + b"),
    ("a: u8, b: u32, y: Buffer[u32]", "y[0] = b & a", "e.g. b & u32(a)"),
    ("f: f32, i: i32, y: Buffer[f32]", "y[0] = pk.select(i > 0, f, i)", "e.g. f32(i)"),
])
def test_the_cast_suggested_is_of_the_operand_that_converts(tmp_path, params, line, example):
    msg = error_of(tmp_path, params, line)
    assert "mismatched operand types" in msg and example in msg, msg


@pytest.mark.parametrize("line,options", [
    ("y[0] = a + b", ("i32(b)", "u32(a)")),
    ("y[0] = b + a", ("u32(a)", "i32(b)")),
])
def test_signed_with_unsigned_offers_both_casts(tmp_path, line, options):
    msg = error_of(tmp_path, "a: i32, b: u32, y: Buffer[i32]", line)
    assert all(o in msg for o in options), msg


@pytest.mark.parametrize("ta,tb", [(a, b) for a in SCALAR_TYPES.values() for b in SCALAR_TYPES.values() if a != b])
def test_every_suggested_cast_gives_the_operands_one_type(ta, tb):
    from polykern.lang.typing_rules import cast_choices

    choices = cast_choices(ta, tb)
    assert choices
    for side, t in choices:
        assert t == (tb if side == 0 else ta)  # the cast operand takes the other's type
    side, t = choices[0]
    if ta.is_float != tb.is_float and not (ta.is_bool or tb.is_bool):
        assert t.is_float, (ta, tb, choices)  # never an int cast of a float operand
    if ta.is_float and tb.is_float and ta.bits != tb.bits:
        assert t.bits == max(ta.bits, tb.bits)
    if ta.is_int and tb.is_int and ta.is_signed != tb.is_signed:
        assert len(choices) == 2


# ---------------------------------------------------------------- 2, 3. calls a kernel cannot make

@pytest.mark.parametrize("line,want", [
    ("x[0] = np.exp(x[0])", "use pk.exp(...)"),
    ("x[0] = np.sqrt(x[0])", "use pk.sqrt(...)"),
    ("x[0] = np.maximum(x[0], x[1])", "use pk.max(...)"),
    ("x[0] = np.power(x[0], x[1])", "use pk.pow(...)"),
    ("x[0] = np.where(x[0] > 0.0, x[0], x[1])", "use pk.select(...)"),
    ("x[0] = np.float32(x[1])", "use f32(...)"),
])
def test_numpy_functions_name_their_polykern_equivalent(tmp_path, line, want):
    msg = error_of(tmp_path, "x: Buffer[f32]", line, KernelSyntaxError)
    assert "cannot be called in a kernel" in msg and want in msg, msg


def test_a_plain_python_function_is_told_about_pk_func(tmp_path):
    path = tmp_path / "helper_kern.py"
    path.write_text("import polykern as pk\nfrom polykern import *\n\ndef exp(v):\n    return v\n\n"
                    "@pk.kernel\ndef kk(x: Buffer[f32]):\n    x[0] = exp(x[0])\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(KernelSyntaxError) as info:
        mod.kk.ir
    msg = info.value.message
    assert "decorate it with @pk.func" in msg and "pk.exp" not in msg, msg  # the user's own exp, not NumPy's


def test_len_says_to_pass_the_length(tmp_path):
    msg = error_of(tmp_path, "x: Buffer[f32]", "x[0] = f32(len(x))", KernelSyntaxError)
    assert "'len' cannot be called" in msg and "pass the length as a parameter" in msg, msg


@pytest.mark.parametrize("call", ["math.atan2(x[0], x[1])", "math.tan(x[0])", "np.arctan2(x[0], x[1])"])
def test_a_function_without_equivalent_lists_what_is_callable(tmp_path, call):
    msg = error_of(tmp_path, "x: Buffer[f32]", f"x[0] = {call}", KernelSyntaxError)
    assert "has no polykern equivalent" in msg, msg
    listed = msg.split("of Python's functions only ")[1].split(", ")
    assert "math.sqrt" in listed and "min" in listed and "float" in listed
    assert call.split("(")[0] not in listed


def test_every_listed_python_function_compiles(tmp_path):
    """The list in the message is what the frontend accepts (math.atan2 was refused by a message saying
    math functions are allowed)."""
    from polykern.lang.call_hints import python_callables
    from polykern.lang.exprs import _CAST_NAMES

    for name in python_callables(_CAST_NAMES):
        arity = 3 if name.endswith("fma") else 2 if name in ("min", "max", "pow", "math.pow") else 1  # math.fma: 3.13+
        args = ", ".join(f"x[{k}]" for k in range(arity))
        kernel_from(tmp_path, "x: Buffer[f32]", f"x[0] = f32({name}({args}))").ir


# ---------------------------------------------------------------- 4. a float literal with an integer

@pytest.mark.parametrize("line,example", [
    ("j = i * 0.5", "e.g. f32(i) * 0.5"),
    ("j = 0.5 * i", "e.g. 0.5 * f32(i)"),
    ("j = i + 1.5 if i > 0 else 0.0", "e.g. f32(i) + 1.5"),
])
def test_a_float_literal_with_an_integer_names_the_float_cast(tmp_path, line, example):
    msg = error_of(tmp_path, "i: i32, x: Buffer[f32]", line)
    assert "a float literal does not make an integer a float" in msg and example in msg, msg
    assert "does not fit" not in msg
