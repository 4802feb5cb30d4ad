"""examples/gemm_f16.py's pipelined variant ``"async"`` (``STAGES`` >= 2: a ring of shared tiles
filled by ``pk.copy_async``, docs/language.md "Asynchronous copies") beside the baseline ``"sync"``
(``STAGES`` = 1): results on the CPU against float64 and, bit for bit, against the oracle (which also
refuses any race in the ring's protocol); what the GPU builds contain (cp.async, ldmatrix, shared
memory under CUDA's 48 KiB static limit), assembled by ptxas for sm_80 and sm_90. The ``"dyn*"``
variants (kernel ``gemm_f16_dyn``: the same body, its ring in one pk.shared_dynamic array, A's stages
then B's) the same way, plus checked mode bounding the array by exactly the ring the launch sizes.
(llvm is the one runtime here that runs fragments: PoCL and WebGPU refuse them, lavapipe lacks
VK_KHR_cooperative_matrix.)"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import polykern as pk
from polykern.errors import LaunchError
from polykern.testing.interp import interpret

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import gemm_f16 as G  # noqa: E402


@pytest.mark.parametrize("variant,stages", [("async", 2), ("async", 3), ("async", 4), ("async4", None),
                                            ("async64", None), ("dyn3", None), ("dyn4", None), ("dyn3bk64", None),
                                            ("dyn4wide", None), ("dyn4", 2)])
def test_async_variant_on_the_cpu_matches_the_oracle(variant, stages):
    rng = np.random.default_rng(7)
    (bm, bn, bk), _, wm = G.config(G.SMALL_TILES, variant, stages)
    # 5 k-tiles (of 16, 32 or 64): the ring wraps, the prologue's groups and the tail's empty ones
    m, n, k = 64, 128, 5 * bk
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    mod = pk.build(G.kernels(G.SMALL_TILES, (variant,), stages), ["llvm"])
    sg = G.device_subgroup_size(mod)
    c = np.zeros(m * n, np.float32)
    G.launch(mod, a.ravel(), b.ravel(), c, m, n, k, G.SMALL_TILES, sg, variant, stages)
    assert G.check(c.reshape(m, n), a, b) <= 1.0
    kern = G.specialized(G.SMALL_TILES, variant, stages)
    args = [a.ravel(), b.ravel(), np.zeros(m * n, np.float32), np.int32(m), np.int32(n), np.int32(k)]
    if G.VARIANTS[variant].dynamic:  # the hidden shared_size argument: exactly the ring
        args.append(np.int32(G.ring_elements((bm, bn, bk), G.config(G.SMALL_TILES, variant, stages)[1])))
    oracle = interpret(kern, args, (n // bn, m // bm), G.warps((bm, bn, bk), wm) * sg, subgroup_size=sg)
    np.testing.assert_array_equal(oracle.buffers["c"], c)


def test_both_variants_agree_on_the_cpu():
    rng = np.random.default_rng(1)
    mod = pk.build(G.kernels(), ["llvm"])
    assert "sync" in G.run(mod, rng) and "async" in G.run(mod, rng)
    m = n = 128
    k = 64
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    out = {}
    for v in G.VARIANTS:
        out[v] = np.zeros(m * n, np.float32)
        G.launch(mod, a.ravel(), b.ravel(), out[v], m, n, k, G.SMALL_TILES, G.device_subgroup_size(mod), v)
    for v in G.VARIANTS:  # same products, same order: static or dynamic ring, any depth, BK or tile
        np.testing.assert_array_equal(out[v], out["sync"], err_msg=v)


@pytest.mark.parametrize("variant", [v for v, spec in G.VARIANTS.items() if spec.dynamic])
def test_dynamic_ring_is_exactly_ring_elements(variant):
    """Checked mode bounds the pk.shared_dynamic array by the launch's shared_size: the ring fits the
    ``ring_elements`` the launch gives, and without the last row's padding (never written) the ring's
    last element, in B's last stage (A's stages then B's, carved from the one array), is out of bounds."""
    rng = np.random.default_rng(3)
    tiles, ring, wm = G.config(G.SMALL_TILES, variant)
    m, n, k = tiles[0], tiles[1], (ring + 1) * tiles[2]  # every stage filled, the ring wraps once
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    mod = pk.build(G.kernels(G.SMALL_TILES, (variant,)), ["llvm"], bounds_check=True)
    sg = G.device_subgroup_size(mod)
    c = np.zeros(m * n, np.float32)
    G.launch(mod, a.ravel(), b.ravel(), c, m, n, k, G.SMALL_TILES, sg, variant)
    assert G.check(c.reshape(m, n), a, b) <= 1.0
    kern = mod[G.specialized(G.SMALL_TILES, variant).name]
    size = G.ring_elements(tiles, ring)
    short = size - G.PAD - 1  # B's last stage's last row ends at size - PAD - 1
    with pytest.raises(LaunchError, match=rf"out-of-bounds write to shared array 's' at index {short} \(length "
                                          rf"{short}\)"):
        kern(a.ravel(), b.ravel(), c, np.int32(m), np.int32(n), np.int32(k), grid=(1, 1),
             block=G.warps(tiles, wm) * sg, shared_size=short)


def test_launch_checks_the_async_configuration():
    mod = pk.build(G.kernels(G.SMALL_TILES, ("async",)), ["llvm"])
    x = np.zeros(64 * 64, np.float16)
    with pytest.raises(ValueError, match="BK must be a multiple of 16"):
        G.launch(mod, x, x, np.zeros(64 * 64, np.float32), 64, 64, 64, (64, 64, 8), 8, "async")
    with pytest.raises(ValueError, match="variants are sync, async"):
        G.specialized(G.SMALL_TILES, "tma")


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "cuda -arch=sm_90", "nvptx -arch=sm_80", "nvptx -arch=sm_90"])
def test_gpu_builds_have_cp_async(target):
    from polykern_cuda import toolchain

    if target.startswith("cuda") and toolchain.available_compiler() is None:
        pytest.skip("neither NVRTC nor nvcc is installed here")
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas is not on PATH")
    arch = target.split("=")[1]
    ptx = pk.build(G.kernels(G.GPU_TILES), [target]).on("cuda").inspect_source("ptx")
    entries = {e.split("(")[0]: e for e in re.split(r"\.entry ", ptx)[1:]}
    sync = entries[G.specialized(G.GPU_TILES).name]
    ring = entries[G.specialized(G.GPU_TILES, "async").name]
    assert "cp.async" not in sync
    assert re.search(r"cp\.async\.cg\.shared\.global \[[^\]]+\], \[[^\]]+\], 16;", ring)
    assert "cp.async.commit_group;" in ring and "cp.async.wait_group 0;" in ring  # 2 stages: wait for all
    if target.startswith("cuda"):  # CUDA C proves the ring's fragment offsets aligned: ldmatrix, as the baseline
        assert ring.count("ldmatrix") == sync.count("ldmatrix") > 0
    r = subprocess.run(["ptxas", "-v", f"-arch={arch}", "-o", os.devnull, "-"], input=ptx.encode(),
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[:2000]
    smem = re.search(rf"Function properties for {ring.split('(')[0]}.*?(\d+) bytes smem", r.stderr.decode(), re.S)
    assert smem and int(smem.group(1)) == 2 * (128 * 40 + 32 * 136) * 2 <= 48 * 1024
    ring64 = entries[G.specialized(G.GPU_TILES, "async64").name]  # 64 x 64 subgroup tiles: 16 mma per 8 loads
    assert ring64.count("mma.sync") == 2 * ring.count("mma.sync") and "cp.async.cg" in ring64
    if target.startswith("cuda"):
        assert ring64.count("ldmatrix") == 16
    ring4 = G.specialized(G.GPU_TILES, "async4").name
    assert "cp.async.wait_group 2;" in entries[ring4]  # 4 stages: 3 tiles in flight, this one done
    smem4 = re.search(rf"Function properties for {ring4}.*?(\d+) bytes smem", r.stderr.decode(), re.S)
    assert smem4 and int(smem4.group(1)) == 4 * (128 * 24 + 16 * 136) * 2 <= 48 * 1024
    # the rings in dynamic shared memory: the same body (ldmatrix where the static ring has it, 3 or 4
    # stages of cp.async groups), no static shared memory, no spills
    props = dict(re.findall(r"Function properties for (\w+)\n(.*?)(?=Function properties|\Z)", r.stderr.decode(), re.S))
    for variant, wait, per_ring in (("dyn3", 1, 1), ("dyn4", 2, 1), ("dyn3bk64", 1, 2), ("dyn4wide", 2, 1)):
        name = G.specialized(G.GPU_TILES, variant).name  # per_ring: k-slices per step / the static ring's
        assert name.startswith("gemm_f16_dyn__")
        body = entries[name]
        assert f"cp.async.wait_group {wait};" in body
        assert body.count("mma.sync") == per_ring * ring.count("mma.sync")
        assert body.count("ldmatrix") == per_ring * ring.count("ldmatrix") > 0
        assert re.search(r"\.extern \.shared \.align 16 \.b8 pk_dynamic_shared\w*\[\];", ptx)
        assert "bytes smem" not in props[name] and "0 bytes spill stores, 0 bytes spill loads" in props[name]
