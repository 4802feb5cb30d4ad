"""How deep @pk.func calls may nest (lang/functions.py MAX_CALL_DEPTH).

Each inlined call translates the called body inside its caller's translation, on Python's stack; about 65
nested calls ran out of it and were refused as "this statement is nested too deeply", located at a
statement of some function in the middle of the chain. Calls now nest up to MAX_CALL_DEPTH, and the
call that passes it is refused, naming the depth and the chain.
"""
import sys

import numpy as np
import pytest

import polykern as pk
from polykern.errors import KernelSyntaxError, KernelTypeError
from polykern.lang.functions import MAX_CALL_DEPTH
from kernel_sources import make_kernel


def _chain(tmp_path, depth):
    """Kernel ``kk`` calling h{depth} -> ... -> h1, each call inside a loop, an if and a while."""
    src = ["def kk(x: Buffer[f32]):", f"    x[0] = h{depth}(x[0])", "",
           "@pk.func", "def h1(v: f32) -> f32:", "    return v + 1.0"]
    for d in range(2, depth + 1):
        src += ["", "@pk.func", f"def h{d}(v: f32) -> f32:", "    y = v", "    for j in range(2):",
                "        if j == 1:", "            while y < 0.0:", "                y = y + 1.0",
                f"            y = h{d - 1}(y + f32(j) * 0.0)", "    return y"]
    return make_kernel(tmp_path, "\n".join(src) + "\n"), src


def _deep_stack(n, thunk):
    """Run ``thunk`` ``n`` Python frames deeper than here (as under a test runner's plugins)."""
    return thunk() if n == 0 else _deep_stack(n - 1, thunk)


def test_the_deepest_chain_allowed_compiles_and_runs(tmp_path):
    k, _ = _chain(tmp_path, MAX_CALL_DEPTH)
    _deep_stack(200, lambda: k.ir)
    x = np.zeros(1, np.float32)
    pk.build([k], ["llvm"])["kk"](x, grid=1, block=1)
    assert x[0] == 1.0


@pytest.mark.parametrize("depth", [MAX_CALL_DEPTH + 1, 100])
def test_the_call_that_passes_the_limit_is_refused(tmp_path, depth):
    k, src = _chain(tmp_path, depth)
    with pytest.raises(KernelTypeError) as info:
        _deep_stack(200, lambda: k.ir)
    e = info.value
    last = depth - MAX_CALL_DEPTH  # h{last} is the call one past the limit, made in h{last + 1}
    chain = " -> ".join(["kk"] + [f"h{d}" for d in range(depth, last - 1, -1)])
    assert e.message == (f"this call of device function 'h{last}' is nested {MAX_CALL_DEPTH + 1} calls deep "
                         f"({chain}); device functions are inlined into their callers, and calls nest at most "
                         f"{MAX_CALL_DEPTH} deep")
    call = src.index(f"            y = h{last}(y + f32(j) * 0.0)")
    assert (e.loc.line, e.loc.col) == (call + 5, 17)  # make_kernel writes 4 lines before the source


def test_a_statement_too_deep_inside_calls_names_them(tmp_path):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 30000))  # for CPython to compile the source; polykern runs under `old`
    try:
        k = make_kernel(tmp_path, "def kk(x: Buffer[f32]):\n    x[0] = outer(x[1])\n\n"
                                  "@pk.func\ndef outer(v: f32) -> f32:\n    return inner(v)\n\n"
                                  f"@pk.func\ndef inner(v: f32) -> f32:\n    w = {'-' * 3000}v\n    return w\n")
    finally:
        sys.setrecursionlimit(old)
    with pytest.raises(KernelSyntaxError) as info:
        k.ir
    assert info.value.message.endswith("split it into several statements, or nest fewer device function calls: it "
                                       "is inside 2 (kk -> outer -> inner)")
    assert info.value.loc.line == 14  # w = ---...v in inner
