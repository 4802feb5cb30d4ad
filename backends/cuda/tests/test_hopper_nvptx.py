"""Hopper's matrix path on ``nvptx -arch=sm_90a`` (docs/language.md 5.3; nvptx_hopper.py): every operation is
lowered to the PTX the CUDA C path uses and ptxas assembles it; the kernel takes its tensor maps and launch
bounds as the CUDA runtime launches a ``cuda -arch=sm_90a`` module; the artifact records the same facts and is
refused on a device that is not compute capability 9.0 by the same code; the register operations (elements and
rows, row reductions, A from registers, B as K x N) follow the CUDA C path's layout, order and packing; what the
target does not lower is refused by name. The GPU runs are test_hopper_runtime.py (both targets)."""
import copy
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import polykern as pk
from polykern import bf16, f16, f32, registry
from polykern.errors import DeviceError, KernelTypeError
from polykern.ir import hopper as H
from polykern.ir import nodes as N
from polykern.passes import run_default_passes
from polykern.target import Target
from polykern.testing.isolation import isolated
import polykern_cuda
from polykern_cuda import nvptx_hopper

from fake_cuda import FakeGPU, import_runtime, install_fake
import hopper_kernels as HK

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
import attention_hopper as AT  # noqa: E402
import gemm_hopper as G  # noqa: E402
import named_barrier_kernels as NB  # noqa: E402

PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")
TARGET = "nvptx -arch=sm_90a"


def _device(kernel, target=TARGET):
    return pk.build(kernel, targets=target).on("cuda")


def _ptxas(ptx: str, tmp_path) -> str:
    """ptxas -arch=sm_90a's report (-v) on ``ptx``, which it must accept."""
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "k.cubin")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"ptxas -arch=sm_90a rejected the PTX:\n{r.stderr[-4000:]}"
    return r.stderr


def _ops(kernel):
    return {s.op for s in N.walk_stmts(kernel.ir.body) if isinstance(s, N.HopperOp)}


def _forms(kernel):
    """The kernel's Hopper operations, plus "WgReg" (an element or row read) and "<op> A from registers"."""
    fn, out = kernel.ir, _ops(kernel)
    for s in N.walk_stmts(fn.body):
        if isinstance(s, N.HopperOp) and s.op in H.WGMMA_OPS and s.names[1] in fn.hopper.accs:
            out.add(f"{s.op} A from registers")
        out |= {"WgReg" for e in N.stmt_exprs(s) for x in N.walk_expr(e) if isinstance(x, N.WgReg)}
    return out


def make_rows_and_a(dtype=f16, n: int = 16):
    """One warpgroup: an accumulator ``src`` holding 2 (j // 16) + j % 2 at column j (set in pk.wg_elements),
    ``acc`` += A @ B^T with A from src's columns 16..31 and B a K-major tile (pk.wgmma), then += A @ B with A from
    columns 0..15 and B the same tile read K x N (pk.wgmma_kn); acc's row max and sum (pk.wg_row_max / _sum) go
    to its columns 0 and 1 (pk.wg_elements reading row vectors), and acc to C."""
    @pk.kernel
    def rows_and_a(A: pk.Buffer[dtype, "readonly"], C: pk.Buffer[f32]):
        pk.warpgroups(1)
        ta = pk.tensor_map(A, (64, 64), (64, 64), "128B")
        tiles = pk.shared_dynamic(dtype)
        bar = pk.mbarriers(1)
        acc = pk.wg_acc(f32, 64, n)
        src = pk.wg_acc(f32, 64, 32)
        mx = pk.wg_vec(f32)
        sm = pk.wg_vec(f32)
        if pk.local_id(0) == 0:
            pk.mbarrier_init(bar, 0, 1)
        pk.barrier()
        if pk.local_id(0) == 0:
            pk.mbarrier_arrive_tx(bar, 0, 64 * 64 * 2)
            pk.tma_load(tiles, 0, ta, 0, 0, bar, 0)
        pk.mbarrier_wait(bar, 0, 0)
        for i, j in pk.wg_elements(src):
            src[i, j] = pk.f32(j % 2 + 2 * (j // 16))
        pk.wg_fill(acc, 0.0)
        pk.wgmma(acc, src, 16, tiles, 0)
        pk.wgmma_kn(acc, src, 0, tiles, 0, 512)
        pk.wgmma_commit()
        pk.wgmma_wait(0)
        pk.wg_row_max(mx, acc)
        pk.wg_row_sum(sm, acc)
        for i, j in pk.wg_elements(acc):
            if j == 0:
                acc[i, j] = mx[i]
            if j == 1:
                acc[i, j] = sm[i]
        pk.wg_store(C, 0, n, acc)

    return rows_and_a


#: The kernels these tests build: together they use every operation and form the nvptx target lowers.
KERNELS = {
    "gemm_f16": lambda: G.make_gemm(64, 2),
    "gemm_bf16_bn256": lambda: G.make_gemm(256, 4, bf16),
    "persistent": lambda: G.make_gemm_persistent(128, 3),
    "one_f32_store": lambda: HK.make_one_wgmma(f16, f32),
    "one_bf16_f16_store_n8": lambda: HK.make_one_wgmma(bf16, f16, 8),
    "attention_d64": lambda: AT.make_attention(64, False, 128, 2),
    "attention_d128_causal": lambda: AT.make_attention(128, True, 128, 2),
    "attention_d128_bf16_bn64": lambda: AT.make_attention(128, True, 64, 2, bf16),
    "rows_and_a_f16": lambda: make_rows_and_a(f16, 16),
    "rows_and_a_bf16_n128": lambda: make_rows_and_a(bf16, 128),
    "named_barrier_relay": lambda: NB.relay,
}


def test_the_kernels_cover_every_lowered_operation():
    seen = set().union(*(_forms(make()) for make in KERNELS.values()))
    assert set(nvptx_hopper.LOWERED) | {"WgReg", "wgmma A from registers", "wgmma_kn A from registers"} <= seen, (
        set(nvptx_hopper.LOWERED) - seen)
    assert set(nvptx_hopper.LOWERED) <= set(H.OPS)
    # the operations of elements and rows, A from registers and B as K x N (Hopper's matrix path) are lowered, not refused
    assert {"wg_set", "wg_row_max", "wg_row_sum", "wgmma_kn"} <= set(nvptx_hopper.LOWERED)


@needs_ptxas
@pytest.mark.parametrize("name", KERNELS)
def test_lowered_and_assembled(name, tmp_path):
    kernel = KERNELS[name]()
    ptx = _device(kernel).inspect_source("ptx")
    assert ".version 8.0\n" in ptx and ".target sm_90a\n" in ptx
    ops = _ops(kernel)
    needles = {"mbar_init": ["mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster;"],
               "mbar_arrive": ["mbarrier.arrive.shared::cta.b64 _,"],
               "mbar_arrive_tx": ["mbarrier.arrive.expect_tx.shared::cta.b64 _,"],
               "mbar_wait": ["mbarrier.try_wait.parity.shared::cta.b64"],
               "tma_load": ["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                            "cvta.param.u64"],
               "wgmma": ["wgmma.fence.sync.aligned;", "wgmma.mma_async.sync.aligned.m64n"],
               "wgmma_kn": ["wgmma.fence.sync.aligned;", ", p, 1, 1, 1;"],  # the transpose bit of B
               "wg_row_max": ["max.f32", "shfl.sync.bfly.b32"],
               "wg_row_sum": ["add.rn.f32", "shfl.sync.bfly.b32"],
               "wgmma_commit": ["wgmma.commit_group.sync.aligned;"],
               "wgmma_wait": ["wgmma.wait_group.sync.aligned"],
               "named_barrier": ["bar.sync"], "named_arrive": ["bar.arrive"]}
    for op in ops:
        for needle in needles.get(op, []):
            assert needle in ptx, (op, needle)
    for s in N.walk_stmts(kernel.ir.body):
        if isinstance(s, N.HopperOp) and s.op.startswith("setmaxnreg_"):
            assert f"setmaxnreg.{s.op[-3:]}.sync.aligned.u32 \t{int(s.args[0].value)};" in ptx
    hf = kernel.ir.hopper
    if hf.accs:  # (the named-barrier kernel has no wgmma)
        at = next(iter(hf.accs.values()))
        elem = next(kernel.ir.arrays[n].elem.name for n in hf.swizzled)
        assert f"wgmma.mma_async.sync.aligned.m64n{at.n}k16.f32.{elem}.{elem} " in ptx
        if any(f.endswith("A from registers") for f in _forms(kernel)):
            assert f"cvt.rn.{elem}x2.f32 " in ptx
    assert f".maxntid {128 * hf.warpgroups}\n.minnctapersm 1\n" in ptx
    report = _ptxas(ptx, tmp_path)
    assert "C7514" not in report, report  # no wgmma serialized for other instructions reading the accumulator
    assert "C7519" not in report, report  # nor for registers written between wgmma.fence and the wgmma
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report


def _constant(ptx: str, operand: str) -> float:
    """The f32 constant a PTX operand holds: an immediate (``0f3F800000``) or a register set by ``mov.b32``."""
    if operand.startswith("%"):
        operand = re.search(rf"mov\.b32\s+{re.escape(operand)}, (\S+);", ptx).group(1)
    bits = int(operand[2:], 16) if operand.startswith("0f") else int(operand)
    return float(np.array([bits], np.uint32).view(np.float32)[0])


@pytest.mark.parametrize("dtype", [f16, bf16])
def test_a_from_registers_packs_the_second_register_high(dtype):
    """A from an accumulator: registers k0/2 + 2q (low half) and + 1 (high half) rounded to 16 bits, as hopper.py's
    pk_pack_f16: cvt.rn.f16x2.f32 puts its FIRST source in the upper half. src's columns 16.. hold 2 (even) and 3
    (odd), columns 0.. 0 and 1, so the two wgmmas convert (hi, lo) = (3, 2) and (1, 0)."""
    ptx = _device(make_rows_and_a(dtype)).inspect_source("ptx")
    cvts = re.findall(rf"cvt\.rn\.{dtype.name}x2\.f32 (%r\d+), (\S+), (\S+);", ptx)
    assert [(_constant(ptx, hi), _constant(ptx, lo)) for _, hi, lo in cvts] == [(3.0, 2.0), (1.0, 0.0)]
    mma = re.findall(r"wgmma\.mma_async\S+ \{[^}]*\}, \{([^}]*)\}, (%rd\d+), p, 1, 1, (\d);", ptx)
    assert [(a.split(",")[0], t) for a, _, t in mma] == [(cvts[0][0], "0"), (cvts[1][0], "1")]  # wgmma, wgmma_kn


def _reductions(ptx: str):
    """The expressions of the values the PTX computes after the last wgmma.wait_group from the last wgmma's
    accumulator registers (``("acc", k)``) by ``max.f32``, ``add.rn.f32`` (operands as a set: both commute
    exactly) and ``shfl.sync.bfly`` (``("xor", value, lane mask)``)."""
    outs = re.findall(r"wgmma\.mma_async[^{]*\{([^}]*)\}", ptx)[-1].split(",")
    env = {r.strip(): ("acc", k) for k, r in enumerate(outs)}
    tail = ptx[ptx.rindex("wgmma.wait_group"):]
    for op, d, a, b in re.findall(r"^\s*(add\.rn\.f32|max\.f32|shfl\.sync\.bfly\.b32)\s+(%r\d+), (%r\d+), "
                                  r"(%r\d+|\d+)[,;]", tail, re.M):
        if op.startswith("shfl"):
            env[d] = ("xor", env.get(a, a), int(b))
        else:
            env[d] = (op.split(".")[0], frozenset((env.get(a, a), env.get(b, b))))
    return set(env.values())


@pytest.mark.parametrize("n", [16, 128])
def test_row_reductions_fold_in_the_cuda_c_paths_order(n):
    """pk.wg_row_max / _sum (ir.hopper.reference_row_sum; hopper.py _row_reduce): slot r's row is the
    accumulator's registers 4c + 2r + {0, 1}; each thread folds them in that order from the first, then
    v = v op shfl_xor(v, 1), v = v op shfl_xor(v, 2), so (s0 + s1) + (s2 + s3) in every lane."""
    got = _reductions(_device(make_rows_and_a(f16, n)).inspect_source("ptx"))
    for op in ("max", "add"):
        for r in range(H.VEC_SLOTS):
            regs = [4 * c + 2 * r + d for c in range(n // 8) for d in (0, 1)]
            v = ("acc", regs[0])
            for k in regs[1:]:
                v = (op, frozenset((v, ("acc", k))))
            for x in (1, 2):
                v = (op, frozenset((v, ("xor", v, x))))
            assert v in got, (op, r)


def test_wg_store_pairs_and_singles():
    """Column pairs are one store where off and ld are even (f32: 64-bit, f16: 32-bit), else two."""
    for out, vec, single in ((f32, "st.global.v2.b32", "st.global.b32"), (f16, "st.global.v2.b16", "st.global.b16")):
        ptx = _device(HK.make_one_wgmma(f16, out)).inspect_source("ptx")
        assert ptx.count(vec) == 16 and ptx.count(single + " ") + ptx.count(single + "\t") == 32, out


def test_hidden_parameters_follow_the_users_as_the_runtime_packs_them():
    """One ``.param .align 64 .b8 [128]`` per tensor map, after the user's parameters in declaration order: what
    runtime/tensor_maps.py's ParamLauncher passes through kernelParams (the same as NVRTC's for CUDA C)."""
    dev = _device(G.make_gemm(64, 2))
    info = dev.functions["gemm_hopper"]
    head = dev.inspect_source("ptx").split(".visible .entry gemm_hopper(")[1].split(")")[0]
    params = [p.strip() for p in head.strip().split(",")]
    n = len(info.args)
    assert len(params) == n + len(H.tensor_maps_of(info.attrs)) == n + 2
    assert [m["name"] for m in H.tensor_maps_of(info.attrs)] == ["ta", "tb"]
    for i, p in enumerate(params[n:]):
        assert p == f".param .align 64 .b8 gemm_hopper_param_{n + i}[128]"
    assert not any(".b8" in p for p in params[:n])


def test_artifact_records_what_the_cuda_artifact_records():
    """The arch and the launch facts (warpgroups, tensor maps, the dynamic tile's alignment) are those of the
    cuda sm_90a build: the runtime's checks and launch read them alike."""
    kernel = G.make_gemm(64, 2)
    mine, theirs = (_device(kernel, t).functions["gemm_hopper"] for t in (TARGET, "cuda -arch=sm_90a -fmt=cuda"))
    assert mine.attrs["arch"] == "sm_90a"
    assert mine.attrs[H.ATTR_WARPGROUPS] == "3" and mine.attrs[H.ATTR_DYNAMIC_ALIGN] == "1024"
    assert mine.attrs == theirs.attrs and mine.args == theirs.args


def test_swizzled_dynamic_tile_starts_at_1024_bytes():
    llvm = _device(HK.make_one_wgmma()).sources["llvm"]
    # (-address) & 1023 bytes past the array's address (LLVM knows the extern array is 16-byte aligned: & 1008)
    pad = re.search(r"(%\S+) = and i32 sub \(i32 0, i32 ptrtoint \(ptr addrspace\(3\) @pk_dynamic_shared_one_wgmma to "
                    r"i32\)\), (1023|1008)\n", llvm)
    assert pad, llvm
    assert re.search(r"getelementptr inbounds( nuw)? i8, ptr addrspace\(3\) @pk_dynamic_shared_one_wgmma, i64 %\S+",
                     llvm)


def test_static_swizzled_tile_is_refused_by_name():
    @pk.kernel
    def k(M: pk.i32, A: pk.Buffer[f16, "readonly"], C: pk.Buffer[f32]):
        pk.warpgroups(1)
        ta = pk.tensor_map(A, (M, 64), (64, 64), "128B")
        tiles = pk.shared(f16, 8192)
        bars = pk.mbarriers(1)
        acc = pk.wg_acc(f32, 64, 64)
        pk.tma_load(tiles, 0, ta, 0, 0, bars, 0)
        pk.wgmma(acc, tiles, 0, tiles, 0)

    with pytest.raises(KernelTypeError, match=r"nvptx backend: the swizzled tile 'tiles' is not supported: .* is "
                                              r"declared with pk.shared_dynamic on nvptx"):
        _device(k)


def test_row_vectors_start_at_zero():
    """Every copy of a pk.wg_vec starts at 0 (docs/language.md 5.3): v[i] + 1 of a vector never written stores
    1.0 everywhere (LLVM folds it; uninitialized registers would fold to an arbitrary value)."""
    @pk.kernel
    def vec_start(C: pk.Buffer[f32]):
        pk.warpgroups(1)
        acc = pk.wg_acc(f32, 64, 8)
        v = pk.wg_vec(f32)
        for i, j in pk.wg_elements(acc):
            acc[i, j] = v[i] + 1.0
        pk.wg_store(C, 0, 8, acc)

    stores = [line for line in _device(vec_start).sources["llvm"].splitlines()
              if re.match(r"\s*store .*ptr addrspace\(1\)", line)]
    assert stores and all("float 1.000000e+00" in line for line in stores), stores


class _FutureExpr(N.Expr):
    """An expression node no emitter knows (as one added to the IR before nvptx lowers it would be)."""

    def __init__(self):
        self.type = f32

    def children(self):
        return []


def _refusal_of(change) -> KernelTypeError:
    """The error nvptx gives one_wgmma's IR after ``change(fn, commit)`` (``commit``: its wgmma_commit)."""
    fn = run_default_passes(copy.deepcopy(HK.make_one_wgmma().ir))
    commit = next(s for s in N.walk_stmts(fn.body) if isinstance(s, N.HopperOp) and s.op == "wgmma_commit")
    change(fn, commit)
    with pytest.raises(KernelTypeError) as e:
        registry.get("target.build.nvptx")([fn], Target(TARGET))
    assert e.value.loc is commit.loc
    return e.value


def _insert_before(fn, at, s) -> None:
    s.loc = at.loc
    fn.body.insert(fn.body.index(at), s)


def test_an_operation_nvptx_does_not_lower_is_refused_by_name(monkeypatch):
    """A Hopper operation added to the language (ir.hopper.OPS) before nvptx lowers it: a located
    KernelTypeError naming it, before anything is emitted, not a crash."""
    monkeypatch.setitem(H.OPS, "wg_future", ((), ()))
    e = _refusal_of(lambda fn, commit: _insert_before(fn, commit, N.HopperOp("wg_future", [], [])))
    assert ("nvptx backend: pk.wg_future (in kernel 'one_wgmma') is not supported: the nvptx target does not lower it "
            "yet; build for 'cuda -arch=sm_90a'") in e.message


def test_an_expression_nvptx_has_no_method_for_is_refused_by_name():
    e = _refusal_of(lambda fn, commit: _insert_before(fn, commit, N.ExprStmt(_FutureExpr())))
    assert "nvptx backend: the expression _FutureExpr (in kernel 'one_wgmma') is not supported" in e.message


@pytest.mark.parametrize("target, why", [
    ("nvptx", "not sm_90: build for 'nvptx -arch=sm_90a'"),
    ("nvptx -arch=sm_100a", "not sm_100a: build for 'nvptx -arch=sm_90a'"),
])
def test_other_architectures_are_refused(target, why):
    with pytest.raises(KernelTypeError, match="they need the architecture-specific target sm_90a") as e:
        pk.build(G.make_gemm(64, 2), targets=target)
    assert why in e.value.message


def test_checked_mode_refuses():
    with pytest.raises(KernelTypeError, match=r"checked mode \(bounds_check\) does not cover them yet"):
        pk.build(G.make_gemm(64, 2), targets=TARGET, bounds_check=True)


def _image_on(monkeypatch, cc, target):
    """FAKE driver (fake_cuda.py) of compute capability ``cc``: the image the runtime would hand it for
    examples/gemm_hopper.py built for ``target``."""
    gpu = FakeGPU(cc=cc)
    install_fake(monkeypatch, gpu)
    fn = run_default_passes(copy.deepcopy(G.make_gemm(64, 2).ir))
    with isolated():
        polykern_cuda.register_backend()
        import_runtime(monkeypatch, gpu)
        t = Target(target)
        dev = registry.get(f"target.build.{t.kind}")([fn], t)
        return dev.image, dev.payload


@pytest.mark.parametrize("target", [TARGET, "cuda -arch=sm_90a -fmt=cuda"])
@pytest.mark.parametrize("cc", [(8, 9), (10, 0)])
def test_refused_on_a_device_that_is_not_9_0(monkeypatch, target, cc):
    """The module is refused by name before the driver sees it, for both targets by the same check
    (runtime/module.py ``_specific_arch``)."""
    with pytest.raises(DeviceError, match=r"this module was built for sm_90a \(architecture-specific code such as "
                                          r"wgmma and setmaxnreg, which runs only on compute capability 9.0\)"):
        _image_on(monkeypatch, cc, target)


def test_loads_on_a_9_0_device(monkeypatch):
    image, payload = _image_on(monkeypatch, (9, 0), TARGET)
    assert image == ("ptx", payload) and b".target sm_90a" in payload


@pytest.mark.parametrize("case", HK.CASES, ids=HK.CASE_IDS)
def test_runtime_cases_are_the_languages_meaning(case):
    """test_hopper_runtime.py's one-wgmma cases on the IR interpreter: its expected result is the language's (and
    the B operand stays within the copied tile), so a difference on the GPU is the code's."""
    from polykern.testing.interp import interpret

    args, a, _ = HK.launch_args(case)
    out = interpret(HK.make_one_wgmma(*case[:3]), args + [HK.SHARED_ELEMS], 1, 128)
    assert np.array_equal(HK.stored(out.buffers["C"], case), HK.expected(a, case))


@pytest.mark.parametrize("example, entries, needles", [
    ("gemm_hopper", 2, ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier", ".target sm_90a")),
    # the two module-level kernels are both named attention_hopper: the CLI keeps the first
    ("attention_hopper", 1, ("wgmma.mma_async", "cvt.rn.f16x2.f32", "shfl.sync.bfly.b32", ".target sm_90a")),
])
def test_compile_cli_writes_the_kernels(tmp_path, example, entries, needles):
    """``polykern compile examples/<example>.py --target "nvptx -arch=sm_90a"`` on a host without a GPU."""
    out = tmp_path / "g.kbin"
    path = os.path.join(os.path.dirname(G.__file__), f"{example}.py")
    r = subprocess.run([sys.executable, "-m", "polykern", "compile", path, "--target", TARGET, "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    shown = subprocess.run([sys.executable, "-m", "polykern", "inspect", str(out), "--source", "ptx"],
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    for needle in needles:
        assert needle in shown.stdout, needle
    assert shown.stdout.count(f".visible .entry {example}") == entries
