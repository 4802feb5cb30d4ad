"""Matrix fragments on NVIDIA (mma_sync.py): the lane layout covers every element once, the CUDA C
(NVRTC) and NVPTX paths emit mma.sync that ptxas assembles for sm_80 and sm_90, and the located
refusals (an arch without mma.sync, a shape the tiling does not cover). The results on a GPU are
checked by tests/test_matrix.py (cuda and nvptx are runnable targets there)."""
from __future__ import annotations

import os
import re
import sys

import pytest

import polykern as pk
from polykern import Buffer, bf16, f16, f32, i8, i32, u8
from polykern.errors import BackendUnavailableError, KernelTypeError
from polykern.ir import nodes as ir
from polykern.ir.types import FragmentType
from polykern.passes import run_default_passes
from polykern.target import Target
from polykern_cuda import mma_sync, nvptx, toolchain
from polykern_cuda.divisibility import Divisibility
from polykern_cuda.codegen import cuda_source

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
from matrix_kernels import fill_scale_store, staged, staged_layouts, staged_x2, tile_gemm  # noqa: E402

KERNELS = [tile_gemm.specialize(TA=f16, TC=f32, M=16, N=16, K=16, BCOL=0),
           tile_gemm.specialize(TA=f16, TC=f16, M=32, N=8, K=32, BCOL=1),
           tile_gemm.specialize(TA=i8, TC=i32, M=16, N=16, K=16, BCOL=0),
           tile_gemm.specialize(TA=u8, TC=i32, M=16, N=32, K=32, BCOL=1), fill_scale_store, staged]
MMA = re.compile(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.(\w+)\.(\w+)\.(\w+)\.(\w+)")


@pytest.mark.parametrize("elem", [f16, bf16, i8, u8])
@pytest.mark.parametrize("shape", mma_sync.SHAPES)
@pytest.mark.parametrize("role", ["a", "b", "acc"])
def test_lanes_hold_every_element_once(role, shape, elem):
    ft = FragmentType(role, elem if role != "acc" else f32, *shape)
    seen = {}
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for (r0, rg, rt), (c0, cg, ct) in mma_sync.slots(ft if role != "acc" else ft):
            rc = (r0 + rg * g + rt * t, c0 + cg * g + ct * t)
            assert rc not in seen, (rc, lane, seen.get(rc))
            seen[rc] = lane
    assert set(seen) == {(r, c) for r in range(ft.rows) for c in range(ft.cols)}


def _need_tools():
    try:
        toolchain.nvrtc_library()
    except BackendUnavailableError as e:
        pytest.skip(f"NVRTC is not installed here ({e})")
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")


def _expected_instructions():
    """{(dtype, atype): count} of the kernels' mma instructions per source occurrence."""
    return {("f32", "f16"), ("s32", "s8"), ("s32", "u8")}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_c_mma_sync_assembles(arch, monkeypatch):
    _need_tools()
    monkeypatch.setenv(toolchain.COMPILER_ENV, "nvrtc")
    src, symbols = cuda_source([run_default_passes(k.ir) for k in KERNELS])
    assert "#include" not in src  # NVRTC alone: the instruction is inline PTX
    ptx, tool = toolchain.compile_cuda(src, arch, "ptx")
    text = ptx.decode()
    assert {(m.group(1), m.group(2)) for m in MMA.finditer(text)} == _expected_instructions()
    toolchain.ptxas_check(ptx, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvptx_mma_sync_assembles(arch):
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")
    ptx = nvptx.generate([run_default_passes(k.ir) for k in KERNELS], Target.parse(f"nvptx -arch={arch}"))[0]
    text = ptx.decode()
    assert {(m.group(1), m.group(2)) for m in MMA.finditer(text)} == _expected_instructions()
    toolchain.ptxas_check(ptx, arch)


@pk.kernel
def small(d: Buffer[f32]):
    acc = pk.frag_acc(f32, 8, 8, 8)
    pk.frag_fill(acc, 1.0)
    pk.frag_store(d, 0, 8, acc)


@pytest.mark.parametrize("kind", ["cuda", "nvptx"])
def test_refusals_name_the_feature(kind):
    with pytest.raises(KernelTypeError) as ei:
        pk.build([fill_scale_store], targets=[f"{kind} -arch=sm_75"])
    assert "mma.sync needs sm_80 or newer; the target is sm_75" in str(ei.value)
    assert ei.value.loc is not None
    with pytest.raises(KernelTypeError) as ei:
        pk.build([small], targets=[f"{kind} -arch=sm_90"])
    assert f"{kind} does not support pk.frag_fill (8x8x8 f32 (acc))" in str(ei.value)
    assert "tiling covers M in 16, 32" in str(ei.value)


@pytest.mark.parametrize("role,shape", [("a", (16, 16, 16)), ("a", (32, 8, 32)), ("b", (16, 8, 16)),
                                        ("b", (16, 32, 32)), ("b", (32, 16, 16))])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_ldmatrix_tables_give_each_lane_its_slots(role, shape, layout):
    """ldmatrix as the PTX ISA defines it (lane l addresses row l & 7 of matrix l >> 3; register q of
    lane (g, t) gets (g, 2t), (g, 2t+1) of matrix q, transposed with .trans), fed the addresses the
    lowering computes from ldmatrix_groups, hands every lane exactly the elements slots() assigns it."""
    ft = FragmentType(role, f16, *shape)
    groups = mma_sync.ldmatrix_groups(ft, layout)
    trans = mma_sync.ldmatrix_trans(ft, layout)
    ld, off = 40, 24
    rows, cols = ft.rows, ft.cols
    mem = list(range(off + ld * max(rows, cols) + 64))

    def at(r, c):
        return off + (r * ld + c if layout == "row" else c * ld + r)

    got = {lane: [] for lane in range(32)}
    for group in groups:
        n = len(group)
        assert n in (2, 4)
        addr = {}
        for lane in range(32):
            q, j = (lane >> 3) % n, lane & 7
            kq, mq = group[q]
            row, col = (kq + j, mq) if trans else (mq + j, kq)
            addr[lane] = off + row * ld + col
            assert addr[lane] % 8 == 0  # 16-byte rows when the base and ld are
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            for q in range(n):
                rowa = [mem[addr[8 * q + j] + i] for j in range(8) for i in range(8)]
                m8 = [rowa[8 * j:8 * j + 8] for j in range(8)]
                pair = (m8[2 * t][g], m8[2 * t + 1][g]) if trans else (m8[g][2 * t], m8[g][2 * t + 1])
                got[lane].extend(pair)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        want = [mem[at(r0 + rg * g + rt * t, c0 + cg * g + ct * t)]
                for (r0, rg, rt), (c0, cg, ct) in mma_sync.slots(ft)]
        assert got[lane] == want, lane


def _cuda_c(*kernels):
    return cuda_source([run_default_passes(k.ir) for k in kernels])[0]


def _nvptx_ptx(arch):
    target = Target.parse(f"nvptx -arch={arch}")
    return lambda *kernels: nvptx.generate([run_default_passes(k.ir) for k in kernels], target)[0].decode()


@pytest.mark.parametrize("emitter", ["cuda", "nvptx-sm_80", "nvptx-sm_90"])
def test_ldmatrix_only_where_provably_aligned(emitter):
    """A shared f16 A/B fragment load whose offset and leading dimension are provably multiples of 8
    elements gets ldmatrix (.trans for row-major B and column-major A); an offset of 4, a global source,
    accumulators and 8-bit fragments keep the element-wise loads. CUDA C (inline PTX) and nvptx
    (nvptx_matrix.py) share the tables and the proof; nvptx's PTX is assembled by ptxas. Their results
    on a GPU: tests/test_matrix.py (test_shared_layouts_and_offsets, test_shared_fragment_of_two_registers)."""
    assert mma_sync.ldmatrix_groups(FragmentType("acc", f32, 16, 16, 16), "row") is None
    assert mma_sync.ldmatrix_groups(FragmentType("a", i8, 16, 16, 16), "row") is None
    src = _cuda_c if emitter == "cuda" else _nvptx_ptx(emitter.split("-")[1])
    row, col = src(staged_layouts.specialize(COL=0, OFF=8)), src(staged_layouts.specialize(COL=1, OFF=8))
    # A row-major: plain; B row-major: .trans (32x32 fragments: 4 x4 instructions each)
    assert row.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4
    assert row.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 4
    assert col.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4
    assert col.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 4
    assert "ldmatrix" not in src(staged_layouts.specialize(COL=0, OFF=4))
    assert "ldmatrix" not in src(KERNELS[0])  # global memory
    assert "ldmatrix" in src(staged)
    x2 = src(staged_x2)
    assert "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in x2  # a 16x8 B fragment: one x2
    if emitter != "cuda" and toolchain.find_ptxas() is not None:
        for text in (row, col, x2):
            toolchain.ptxas_check(text.encode(), emitter.split("-")[1])


@pk.kernel
def _div(x: Buffer[i32], p: i32):
    a = pk.subgroup_id() * 32
    b = a + 16 * p
    c = a + p
    e = 0
    for i in range(0, p, 8):
        e = i << 3
    x[0] = a + b + c + e


def test_divisibility():
    fn = run_default_passes(_div.ir)
    div = Divisibility(fn)
    value = {s.name: s.value for s in ir.walk_stmts(fn.body) if isinstance(s, ir.Assign)}

    def var(name):
        return ir.Var(name, i32)

    assert div.multiple_of(var("a"), 32) and not div.multiple_of(var("a"), 64)
    assert div.multiple_of(var("b"), 16) and not div.multiple_of(var("b"), 32)
    assert not div.multiple_of(var("c"), 2)  # p: a parameter, unknown
    assert div.multiple_of(var("e"), 64) and not div.multiple_of(var("e"), 128)
    assert not div.multiple_of(var("p"), 2)
    assert value  # the kernel kept its locals
