"""pk.debug_print (docs/language.md "Debugging"): the format subset checked against the arguments at
compile time (located errors), the text on the CPU runtime (C's printf, captured at the file
descriptor) equal to the interpreter's, the refusal on targets without printf, and checked mode."""
from __future__ import annotations

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, bf16, bool_, capabilities, f16, f32, f64, i8, i32, i64, u8, u32, u64
from polykern.errors import KernelSyntaxError, KernelTypeError, LaunchError
from polykern.ir import debug_print as D
from polykern.ir import nodes as ir
from polykern.testing import tier_skip
from runtimes import all_target_kinds


@pk.kernel
def every_kind(n: i32, x: Buffer[f32, "readonly"], d: Buffer[f64, "readonly"], big: Buffer[i64, "readonly"],
               w: Buffer[u64, "readonly"], c: Buffer[i8, "readonly"], h: Buffer[f16, "readonly"]):
    i = pk.global_id(0)
    if i < n:
        pk.debug_print("i=%d %5.2f|%-8.3e|%g %+d %u %x %X %o %i %%\n", i, x[i], d[i], x[i] * 2.0, big[i], w[i],
                       c[i], c[i], u32(i), c[i])
        pk.debug_print("h=%.4f b=%g t=%d lit=%d %f\n", h[i], bf16(x[i]), i > 1, 7, 2.5)


def _inputs(n=4):
    rng = np.random.default_rng(3)
    return (n, (rng.standard_normal(n) * 100).astype(np.float32), rng.standard_normal(n) * 1e6,
            np.array([-2**40, 2**62, -1, 0][:n], np.int64), np.array([2**64 - 1, 5, 2**63, 0][:n], np.uint64),
            np.array([-1, -128, 127, 3][:n], np.int8), np.array([0.5, -1.25, 65504, 1e-3][:n], np.float16))


def _lines(text):
    return [line for line in text.splitlines() if line]


def test_cpu_prints_what_the_interpreter_prints(capfd):
    args = _inputs()
    pk.build([every_kind], targets=["interpret"])["every_kind"](*args, grid=1, block=4)
    interpreted = capfd.readouterr().out
    pk.build([every_kind], targets=["llvm"])["every_kind"](*args, grid=1, block=4)
    cpu = capfd.readouterr().out
    assert _lines(cpu) == _lines(interpreted)
    assert len(_lines(cpu)) == 8
    first = _lines(interpreted)[0]
    assert first.startswith("i=0 ") and first.endswith(" %")
    # C's reading of the promoted arguments: %u of an i8 -1 is 2**32 - 1, %x and %o of it in 32 bits
    assert f" {2**64 - 1} ffffffff FFFFFFFF 0 -1 %" in first


def test_interpreter_lines_follow_work_item_order_and_types(capsys):
    @pk.kernel
    def items(o: Buffer[u32]):
        i = pk.global_id(0)
        pk.debug_print("%d:%u:%x:%d\n", i, i - 1, u32(i) * u32(16), u32(4294967295))
        o[i] = u32(i)

    o = np.zeros(3, np.uint32)
    pk.build([items], targets=["interpret"])["items"](o, grid=1, block=3)
    assert capsys.readouterr().out == "0:4294967295:0:-1\n1:0:10:-1\n2:1:20:-1\n"
    assert list(o) == [0, 1, 2]


def test_cpu_output_across_barriers_keeps_each_work_item_in_order(capfd):
    @pk.kernel
    def staged(o: Buffer[i32]):
        t = pk.shared(i32, 4)
        i = pk.local_id(0)
        t[i] = i * 10
        pk.debug_print("a%d\n", i)
        pk.barrier()
        pk.debug_print("b%d=%d\n", i, t[3 - i])
        o[i] = t[3 - i]

    for target in ("interpret", "llvm"):
        o = np.zeros(4, np.int32)
        pk.build([staged], targets=[target])["staged"](o, grid=1, block=4)
        lines = _lines(capfd.readouterr().out)
        assert sorted(lines[:4]) == ["a0", "a1", "a2", "a3"], target
        assert sorted(lines[4:]) == ["b0=30", "b1=20", "b2=10", "b3=0"], target
        assert list(o) == [30, 20, 10, 0]


@pytest.mark.parametrize("body,message,col_of", [
    ('pk.debug_print("%d %d\\n", i)', "has 2 conversions but 1 argument follow it", "pk.debug_print"),
    ('pk.debug_print("%d\\n", x[i])', "conversion %d (the 1st) prints an integer, but its argument 'x[i]' is f32",
     "x[i]"),
    ('pk.debug_print("%f\\n", i)', "conversion %f (the 1st) prints a float, but its argument 'i' is i32", "i)"),
    ('pk.debug_print("%s\\n", i)', "'s' is not a pk.debug_print conversion", '"%s'),
    ('pk.debug_print("%ld\\n", i)', "no length modifiers in pk.debug_print", '"%ld'),
    ('pk.debug_print("%*d\\n", i)', "'*' is not supported", '"%*d'),
    ('pk.debug_print("%#x\\n", i)', "'#' is not supported", '"%#x'),
    ('pk.debug_print("tail %", i)', "the end of the format is not a pk.debug_print conversion", '"tail'),
    ('pk.debug_print("caf\\u00e9 %d", i)', "printable ASCII", '"caf'),
    ('pk.debug_print(fmt_var, i)', "must be a string constant", "fmt_var"),
    ('pk.debug_print()', "takes a format string", "pk.debug_print"),
    ('pk.debug_print("%u\\n", -1)', "does not fit u32", "-1"),
])
def test_format_errors_are_located(body, message, col_of):
    src = (f"def bad(x: Buffer[f32], n: i32):\n"
           f"    i = pk.global_id(0)\n"
           f"    fmt_var = i\n"
           f"    {body}\n")
    with pytest.raises(KernelTypeError) as ei:
        _compile(src)
    assert message in ei.value.message
    assert ei.value.loc.line == 4 and ei.value.loc.col == body.index(col_of) + 5


def _compile(src):
    import linecache

    name = f"<debug_print_{abs(hash(src))}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    scope = {"pk": pk, "Buffer": Buffer, "f32": f32, "i32": i32}
    exec(compile(src, name, "exec"), scope)  # noqa: S102 - a kernel source written by this test
    return pk.kernel(scope["bad"]).ir


def test_too_many_arguments_and_use_as_a_value_are_refused():
    args = ", ".join(["i"] * (D.MAX_ARGS + 1))
    with pytest.raises(KernelTypeError, match=f"at most {D.MAX_ARGS} arguments"):
        _compile(f"def bad(x: Buffer[f32], n: i32):\n    i = pk.global_id(0)\n"
                 f"    pk.debug_print(\"{'%d' * (D.MAX_ARGS + 1)}\", {args})\n")
    with pytest.raises(KernelSyntaxError, match="is a statement"):
        _compile("def bad(x: Buffer[f32], n: i32):\n    i = pk.debug_print(\"x\")\n")


def test_arguments_become_temporaries_of_the_printed_type():
    @pk.kernel
    def k(x: Buffer[u8, "readonly"], b: Buffer[bool_, "readonly"], h: Buffer[f16, "readonly"]):
        pk.debug_print("%d %x %g %d\n", x[0], x[0], h[0], b[0])

    p = next(s for s in ir.walk_stmts(k.ir.body) if isinstance(s, ir.Print))
    assert [str(a.type) for a in p.args] == ["i32", "u32", "f32", "i32"]
    assert all(isinstance(a, ir.Var) for a in p.args)


def test_c_formats_carry_the_length_of_64_bit_integers():
    parts = D.parse("%d %-5u %x %.3f%%\t")
    assert D.c_format(parts, [i64, u64, u32, f64], "ll") == "%lld %-5llu %x %.3f%%\t"
    assert D.c_format(parts, [i32, u64, u32, f32], "l") == "%d %-5lu %x %.3f%%\t"
    assert D.render(parts, [-3, 7, 255, 0.5]) == "-3 7     ff 0.500%\t"


# the target kinds whose Capabilities leave out debug_print (vulkan, webgpu, metal, hexagon, rocm, ...)
NO_PRINTF = [k for k in all_target_kinds() if not capabilities.of(k).debug_print]


def test_some_kinds_print_and_some_do_not():
    assert "llvm" not in NO_PRINTF and {"vulkan", "webgpu"} <= set(NO_PRINTF)


@pytest.mark.parametrize("target", NO_PRINTF)
def test_targets_without_printf_refuse_it_located(target):
    @pk.kernel
    def printing(o: Buffer[f32]):
        o[0] = 1.0
        pk.debug_print("%f\n", o[0])

    with pytest.raises(KernelTypeError) as ei:
        pk.build([printing], targets=[target])
    assert f"pk.debug_print is not available on target '{target}'" in ei.value.message
    assert ei.value.loc is not None and "pk.debug_print" in ei.value.loc.source_line


def test_printed_loads_are_checked_in_checked_mode_and_in_the_default_cpu_build(capfd):
    @pk.kernel
    def peek(x: Buffer[f32, "readonly"], k: i32):
        pk.debug_print("%f\n", x[k])

    x = np.arange(4, dtype=np.float32)
    for mode in (True, None):
        mod = pk.build([peek], targets=["llvm"], bounds_check=mode)
        mod["peek"](x, 2, grid=1, block=1)
        assert capfd.readouterr().out == "2.000000\n"
        with pytest.raises(LaunchError, match=r"kernel 'peek'.*out-of-bounds.*'x'"):
            mod["peek"](x, 9, grid=1, block=1)
        capfd.readouterr()  # what the guarded launch printed before its error was reported


_ORDER_CHILD = """
import os, sys
import numpy as np
import polykern as pk
from polykern import Buffer, i32

@pk.kernel
def k(o: Buffer[i32]):
    pk.debug_print("kernel %d\\n", pk.global_id(0))

mod = pk.build([k], targets=[sys.argv[1]])
print("before")  # Python's buffer: flushed before the launch
mod["k"](np.zeros(2, np.int32), grid=1, block=2)
os.write(1, b"after\\n")  # straight to the descriptor: the kernel's lines must already be there
"""


def _runtime_missing(kind):
    pk.backends.load_all()
    rec = pk.backends.record_for_kind(kind)
    return None if rec is not None and rec.runtime_available else (
        f"the {kind} runtime is not available: {rec.runtime_reason if rec else 'backend not installed'}")


@pytest.mark.parametrize("target", ["llvm", "interpret", pytest.param("opencl", marks=tier_skip.skipif(
    "pocl", _runtime_missing("opencl") is not None, reason=str(_runtime_missing("opencl"))))])
def test_output_is_in_order_with_the_programs_when_stdout_is_a_pipe(target, tmp_path):
    """C buffers a pipe's output in blocks (unless Python runs unbuffered, as under PYTHONUNBUFFERED, which
    also unbuffers C's stdio): the runtime flushes Python's buffer before a printing launch and C's after."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    child = tmp_path / "child.py"  # a file: the frontend reads the kernel's source
    child.write_text(_ORDER_CHILD)
    out = subprocess.run([sys.executable, str(child), target], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "before\nkernel 0\nkernel 1\nafter\n"
