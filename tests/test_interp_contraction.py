"""A float a*b+c that a backend may contract (numerics.MAY_CONTRACT: webgpu) leaves unchecked only what it
fed (Result.contracted, through variables, private arrays and control flow: interpreter.sites), not the whole
program; the other elements are still compared."""
import numpy as np

import polykern as pk
from polykern import Buffer, f32
from polykern.testing import fuzzcase
from polykern.testing.compare import compare
from polykern.testing.interp import interpret
from polykern.testing import tier_skip


@pk.kernel
def fused_one(x: Buffer[f32, "readonly"], o: Buffer[f32], p: Buffer[f32], q: Buffer[f32], r: Buffer[f32]):
    i = pk.global_id(0)
    t = x[i] * 3.1
    o[i] = t + x[i]  # may be fused where contraction is allowed
    p[i] = x[i] * 3.1  # a product alone: rounded once everywhere
    q[i] = x[i] - 0.5
    la = pk.local(f32, 2)
    la[1] = x[i] * 1.7 - x[i]
    r[i] = la[1] * 2.0  # fed by an a*b-c through a private array


@pk.kernel
def fused_branch(x: Buffer[f32, "readonly"], o: Buffer[f32]):
    i = pk.global_id(0)
    if x[i] * 3.0 + 1.0 > 4.0:  # an a*b+c reaches control flow: any value may differ
        o[i] = 1.0
    else:
        o[i] = 2.0


X = np.array([1.1, 2.3, -0.7, 5.9], np.float32)


def _launch():
    return interpret(fused_one, [X] + [np.zeros(4, np.float32) for _ in range(4)], grid=1, block=4)


def test_only_what_an_a_times_b_plus_c_fed_is_left_unchecked():
    res = _launch()
    assert res.contractible and not res.contracted_anywhere
    assert {k: v.tolist() for k, v in res.contracted.items()} == {
        "o": [True] * 4, "p": [False] * 4, "q": [False] * 4, "r": [True] * 4}
    got = {"x": X, **{k: res.buffers[k].copy() for k in "opqr"}}
    got["o"][0] = np.nextafter(got["o"][0], np.float32(10))  # what a fused a*b+c may give
    got["r"][3] = np.nextafter(got["r"][3], np.float32(-10))
    c = compare(res, got, "webgpu")
    assert c.ok and c.unchecked == 8  # o and r
    assert not compare(res, got, "llvm").ok  # llvm never contracts: every element is compared
    for buf in "pq":  # elements no a*b+c fed are still compared exactly on webgpu
        bad = {k: v.copy() for k, v in got.items()}
        bad[buf][2] = np.nextafter(bad[buf][2], np.float32(10))
        assert [(m.buffer, m.index) for m in compare(res, bad, "webgpu").mismatches] == [(buf, 2)]


def test_an_a_times_b_plus_c_in_control_flow_leaves_everything_unchecked():
    res = interpret(fused_branch, [X, np.zeros(4, np.float32)], grid=1, block=4)
    assert res.contracted_anywhere
    wrong = {"x": X, "o": np.full(4, 7.0, np.float32)}
    assert compare(res, wrong, "webgpu").unchecked == 8
    assert not compare(res, wrong, "llvm").ok


def test_webgpu_results_meet_the_per_element_comparison():
    target = "webgpu -shader_f16=true"
    if not fuzzcase.runtime_present(target):
        tier_skip.skip("wgpu", "no WebGPU runtime here")
    args = [X] + [np.zeros(4, np.float32) for _ in range(4)]
    pk.build([fused_one], [target])["fused_one"](*args, grid=1, block=4)
    c = compare(_launch(), dict(zip("xopqr", args)), "webgpu", device=fuzzcase.selected_device("webgpu"))
    assert c.ok, c.mismatches
    assert c.unchecked == 8
