"""Hopper's matrix path on ``nvptx -arch=sm_90a`` (docs/language.md 5.3; nvptx_hopper.py): every operation is
lowered to the PTX the CUDA C path uses and ptxas assembles it; the kernel takes its tensor maps and launch
bounds as the CUDA runtime launches a ``cuda -arch=sm_90a`` module; the artifact records the same facts and is
refused on a device that is not compute capability 9.0 by the same code; what the target does not lower is
refused by name. The GPU runs are test_hopper_runtime.py (both targets)."""
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
import gemm_hopper as G  # noqa: E402

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


#: The kernels these tests build: together they use every operation the nvptx target lowers.
KERNELS = {
    "gemm_f16": lambda: G.make_gemm(64, 2),
    "gemm_bf16_bn256": lambda: G.make_gemm(256, 4, bf16),
    "persistent": lambda: G.make_gemm_persistent(128, 3),
    "one_f32_store": lambda: HK.make_one_wgmma(f16, f32),
    "one_bf16_f16_store_n8": lambda: HK.make_one_wgmma(bf16, f16, 8),
}


def test_the_kernels_cover_every_lowered_operation():
    seen = set().union(*(_ops(make()) for make in KERNELS.values()))
    assert set(nvptx_hopper.LOWERED) <= seen, set(nvptx_hopper.LOWERED) - seen
    assert set(nvptx_hopper.LOWERED) <= set(H.OPS)


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
               "wgmma_commit": ["wgmma.commit_group.sync.aligned;"],
               "wgmma_wait": ["wgmma.wait_group.sync.aligned"],
               "setmaxnreg_inc": ["setmaxnreg.inc.sync.aligned.u32 \t232;"],
               "setmaxnreg_dec": ["setmaxnreg.dec.sync.aligned.u32 \t40;"]}
    for op in ops:
        for needle in needles.get(op, []):
            assert needle in ptx, (op, needle)
    hf = kernel.ir.hopper
    at = next(iter(hf.accs.values()))
    elem = next(kernel.ir.arrays[n].elem.name for n in hf.swizzled)
    assert f"wgmma.mma_async.sync.aligned.m64n{at.n}k16.f32.{elem}.{elem} " in ptx
    assert f".maxntid {128 * hf.warpgroups}\n.minnctapersm 1\n" in ptx
    report = _ptxas(ptx, tmp_path)
    assert "C7514" not in report, report  # no wgmma serialized for other instructions reading the accumulator
    assert "C7519" not in report, report  # nor for registers written between wgmma.fence and the wgmma


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


class _FutureExpr(N.Expr):
    """An expression node no emitter knows (as a new warpgroup register read would be)."""

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


def test_other_forms_nvptx_does_not_lower_are_refused_by_name():
    """A wgmma whose A operand is an accumulator's registers, an expression the emitter has no method for."""
    def acc_as_a(fn, commit):
        wgmma = next(s for s in N.walk_stmts(fn.body) if isinstance(s, N.HopperOp) and s.op == "wgmma")
        wgmma.names[1] = wgmma.names[0]
        wgmma.loc = commit.loc

    assert "pk.wgmma with an operand that is not a shared tile (in kernel 'one_wgmma') is not supported" in (
        _refusal_of(acc_as_a).message)
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


def test_compile_cli_writes_the_kernels(tmp_path):
    """``polykern compile examples/gemm_hopper.py --target "nvptx -arch=sm_90a"`` on a host without a GPU."""
    out = tmp_path / "g.kbin"
    example = os.path.join(os.path.dirname(G.__file__), "gemm_hopper.py")
    r = subprocess.run([sys.executable, "-m", "polykern", "compile", example, "--target", TARGET, "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    shown = subprocess.run([sys.executable, "-m", "polykern", "inspect", str(out), "--source", "ptx"],
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    for needle in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier", ".target sm_90a"):
        assert needle in shown.stdout, needle
    assert shown.stdout.count(".visible .entry gemm_hopper") == 2  # both kernels
