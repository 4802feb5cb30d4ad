"""Per-element and per-row work on warpgroup accumulators (docs/language.md 5.3 "Registers, rows and A from
registers"): ``pk.wg_elements`` / ``pk.wg_rows`` loops, ``pk.wg_vec`` row vectors, ``pk.wg_row_max`` /
``pk.wg_row_sum``, wgmma with A from an accumulator's registers and ``pk.wgmma_kn``; their exact meaning in
the IR interpreter, their rules as located errors, and their CUDA C. examples/attention_hopper.py runs here
against float64 (the device runs it in backends/cuda/tests/test_hopper_runtime.py)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32
from polykern.errors import KernelTypeError
from polykern.ir import hopper as H
from polykern.ir import nodes as ir
from polykern.passes.unroll import MAX_TRIPS, indexes_registers, unroll
from polykern.testing.interp import OracleError, interpret

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import attention_hopper as AT  # noqa: E402

NEG = float("-inf")


@pk.kernel
def row_softmax(out: Buffer[f32], x: Buffer[f32, "readonly"], sums: Buffer[f32]):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 32)
    rows = pk.wg_acc(f32, 64, 8)
    m = pk.wg_vec(f32)
    s = pk.wg_vec(f32)
    pk.wg_fill(acc, 0.0)
    pk.wg_fill(rows, 0.0)
    for i, j in pk.wg_elements(acc):
        acc[i, j] = x[i * 32 + j]
    pk.wg_row_max(m, acc)
    for i, j in pk.wg_elements(acc):
        acc[i, j] = pk.exp2(acc[i, j] - m[i])
    pk.wg_row_sum(s, acc)
    for i in pk.wg_rows():
        s[i] = 1.0 / s[i]
    for i, j in pk.wg_elements(acc):
        acc[i, j] *= s[i]
    for i, j in pk.wg_elements(rows):
        if j == 0:
            rows[i, j] = s[i]
    pk.wg_store(out, 0, 32, acc)
    pk.wg_store(sums, 0, 8, rows)


def test_row_operations_follow_the_reference():
    x = np.random.default_rng(3).uniform(-4, 4, (64, 32)).astype(np.float32)
    r = interpret(row_softmax, [np.zeros(64 * 32, np.float32), x.ravel(), np.zeros(64 * 8, np.float32)], (1,), 128)
    e = np.exp2(x - x.max(1, keepdims=True)).astype(np.float32)
    inv = np.array([np.float32(1.0) / H.reference_row_sum(e[i]) for i in range(64)], np.float32)
    got = r.buffers["sums"].reshape(64, 8)[:, 0]
    # exp2 is within its promise, the row sum in the documented order: compare loosely, then exactly per order
    assert np.allclose(got, inv, rtol=1e-6)
    assert np.allclose(r.buffers["out"].reshape(64, 32), e * inv[:, None], rtol=1e-6)


def test_row_sum_order_is_the_documented_one():
    """(s0 + s1) + (s2 + s3), each holder summing its columns in register order: an order the plain sum does
    not follow, visible on values whose sum depends on it."""
    row = np.zeros(16, np.float32)
    row[0], row[2], row[4] = 1e8, 1.0, -1e8   # holder 0: cols 0, 1, 8, 9; holder 1: 2, 3, 10, 11; holder 2: 4, 5...
    assert H.row_partials(row)[0][0] == np.float32(1e8) and H.row_partials(row)[1][0] == np.float32(1.0)
    assert H.reference_row_sum(row) == np.float32(np.float32(1e8 + 1.0) + np.float32(-1e8))
    assert H.reference_row_max(np.array([np.nan, 2.0, 1.0] + [0.0] * 13, np.float32)) == 2.0


def test_layout_holds_every_element_once():
    seen = {H.element_row_col(t, e) for t in range(128) for e in range(128)}
    assert seen == {(r, c) for r in range(64) for c in range(256)}
    assert all(H.slot_row(t, (e >> 1) & 1) == H.element_row_col(t, e)[0] for t in range(128) for e in range(16))


@pytest.mark.parametrize("causal", [False, True])
def test_attention_example_matches_float64(causal):
    q, k, v, o = AT.run_on_cpu(1, 256, 64, causal, BN=64)
    ref = AT.reference(q, k, v, 1, 256, 64, causal)
    assert np.abs(o.astype(np.float64) - ref).max() <= 2e-3


def test_cuda_c_of_the_attention_kernel():
    src = pk.build(AT.make_attention(128, True), "cuda -arch=sm_90a -fmt=cuda").on("cuda").inspect_source("cuda")
    assert "cvt.rn.f16x2.f32" in src              # P from S's registers, rounded to f16
    assert "__shfl_xor_sync(0xffffffffu, pk_v, 2)" in src  # the row reductions across a row's four holders
    assert "p, 1, 1, 1;" in src and "pk_wg_desc_mn(" in src  # V as a K x N tile: the transpose bit, panels


def _kernel(body: str, extra: str = ""):
    """A kernel with one warpgroup, an accumulator ``acc`` (64 x 16), ``other`` (64 x 32), a row vector ``m``
    and a shared f16 tile, then ``body``."""
    import importlib.util
    import tempfile

    src = f'''import polykern as pk
from polykern import Buffer, f16, f32

@pk.kernel
def k(out: Buffer[f32], n: pk.i32):
    pk.warpgroups(1)
    acc = pk.wg_acc(f32, 64, 16)
    other = pk.wg_acc(f32, 64, 32)
    m = pk.wg_vec(f32)
    tiles = pk.shared_dynamic(f16)
{extra}    pk.wg_fill(acc, 0.0)
    pk.wg_fill(other, 0.0)
''' + "".join(f"    {line}\n" for line in body.splitlines())
    d = tempfile.mkdtemp()
    path = os.path.join(d, "kmod.py")
    with open(path, "w") as fh:
        fh.write(src)
    spec = importlib.util.spec_from_file_location("kmod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


@pytest.mark.parametrize("body,msg", [
    ("x = acc[0, 0]", r"read and written as acc\[i, j\] inside 'for i, j in pk.wg_elements\(acc\)'"),
    ("for i, j in pk.wg_elements(acc):\n    acc[j, i] = 1.0", r"with the loop's own row and column"),
    ("for i, j in pk.wg_elements(acc):\n    other[i, j] = 1.0", r"read and written as other\[i, j\]"),
    ("for i, j in pk.wg_elements(acc):\n    m[i] = 1.0", r"row vector 'm' is written in a pk.wg_rows\(\) loop"),
    ("for i, j in pk.wg_elements(acc):\n    out[i] = acc[i, j]", r"a store to 'out' is not allowed"),
    ("for i in pk.wg_rows():\n    pk.barrier()", r"a synchronizing operation is not allowed"),
    ("for i in pk.wg_rows():\n    for a, b in pk.wg_elements(acc):\n        acc[a, b] = m[i]", r"do not nest"),
    ("for i in pk.wg_rows():\n    if n > 0:\n        break", r"no break or continue of its own"),
    ("x = m[0]", r"row vector is read and written as vec\[i\]"),
    ("pk.wgmma(acc, acc, 0, tiles, 0)", r"reads A from accumulator 'acc' while adding into it"),
    ("pk.wgmma(acc, other, 24, tiles, 0)", r"16 of its columns starting at a multiple of 16 below 32, got column 24"),
    ("pk.wgmma_kn(acc, other, 0, tiles, 64, 1024)", r"B operand of pk.wgmma_kn starts at element 64"),
    ("pk.wgmma_kn(acc, other, 0, tiles, 0, n)", r"panel stride of pk.wgmma_kn\(\) is a compile-time constant"),
    ("pk.wg_row_max(acc, acc)", r"'acc' is not a warpgroup row vector"),
])
def test_rules_are_located_errors(body, msg):
    with pytest.raises(KernelTypeError, match=msg):
        _kernel(body).ir  # noqa: B018 - translating is the test


def test_kn_panels_must_start_atoms():
    k = _kernel("pk.wgmma_kn(big, other, 0, tiles, 0, 96)", extra="    big = pk.wg_acc(f32, 64, 128)\n"
                "    pk.wg_fill(big, 0.0)\n")
    with pytest.raises(KernelTypeError, match="panel stride is a positive multiple of 512 elements, got 96"):
        k.ir  # noqa: B018


def _loops(fn):
    return [s for s in ir.walk_stmts(fn.body) if isinstance(s, ir.For)]


def test_register_loops_unroll_by_the_general_rule():
    """The hidden loop of pk.wg_elements over a 64 x 256 accumulator runs 128 times, past MAX_TRIPS: it is
    unrolled because acc[i, j] / m[i] index registers by it (passes/unroll.py indexes_registers, the rule of
    pk.local arrays), not by a limit of its own; a loop of as many trips that indexes no register stays a
    loop, the wg_elements one included."""
    big = "    big = pk.wg_acc(f32, 64, 256)\n    pk.wg_fill(big, 0.0)\n"
    regs = _kernel("for i, j in pk.wg_elements(big):\n    big[i, j] = big[i, j] + m[i]", extra=big).ir
    assert H.WgAccType(f32, 256).n // 2 > MAX_TRIPS and not _loops(regs)
    assert sum(isinstance(s, ir.HopperOp) and s.op == "wg_set" for s in ir.walk_stmts(regs.body)) == 128
    plain = _kernel("s = 0.0\nfor i, j in pk.wg_elements(big):\n    s = s + pk.f32(j)", extra=big).ir
    assert [(s.start.value, s.stop.value) for s in _loops(plain)] == [(0, 128)]
    # the same through unroll() itself: a register read, a register write, neither
    r = ir.Var("r", pk.i32)
    reads = ir.For("r", ir.Const(0, pk.i32), ir.Const(128, pk.i32), 1, [ir.Assign("x", ir.WgReg("big", r))])
    writes = ir.For("r", ir.Const(0, pk.i32), ir.Const(128, pk.i32), 1,
                    [ir.HopperOp("wg_set", ["big"], [r, ir.Const(1.0, f32)])])
    neither = ir.For("r", ir.Const(0, pk.i32), ir.Const(128, pk.i32), 1, [ir.Assign("x", ir.Var("r", pk.i32))])
    assert indexes_registers(reads) and indexes_registers(writes) and not indexes_registers(neither)
    assert len(unroll(reads)) == len(unroll(writes)) == 2 * 128 + 1 and unroll(neither) is None


def test_interpreter_refuses_register_misuse():
    """Reading an accumulator while a wgmma into it is pending, and writing one a pending wgmma reads as A."""
    @pk.kernel
    def pending(out: Buffer[f32], b: Buffer[f16, "readonly"]):
        pk.warpgroups(1)
        tb = pk.tensor_map(b, (64, 64), (64, 64), "128B")
        tiles = pk.shared_dynamic(f16)
        bar = pk.mbarriers(1)
        p = pk.wg_acc(f32, 64, 16)
        acc = pk.wg_acc(f32, 64, 64)
        if pk.local_id(0) == 0:
            pk.mbarrier_init(bar, 0, 1)
        pk.barrier()
        if pk.local_id(0) == 0:
            pk.mbarrier_arrive_tx(bar, 0, 64 * 64 * 2)
            pk.tma_load(tiles, 0, tb, 0, 0, bar, 0)
        pk.mbarrier_wait(bar, 0, 0)
        pk.wg_fill(p, 1.0)
        pk.wg_fill(acc, 0.0)
        pk.wgmma_kn(acc, p, 0, tiles, 0, 4096)
        pk.wgmma_commit()
        for i, j in pk.wg_elements(p):
            p[i, j] = 2.0
        pk.wgmma_wait(0)
        pk.wg_store(out, 0, 64, acc)

    args = [np.zeros(64 * 64, np.float32), np.ones(64 * 64, np.float16), 64 * 64]
    with pytest.raises(OracleError, match="accumulator 'p' of warpgroup 0 is written while a wgmma that reads it"):
        interpret(pending, args, (1,), 128)


def test_other_targets_refuse_by_name():
    with pytest.raises(KernelTypeError, match=r"uses Hopper operations \(pk.wg_fill"):
        pk.build(row_softmax, "llvm")
