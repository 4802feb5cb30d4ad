"""Subgroup collectives under subgroup-uniform control flow (docs/language.md "Subgroups", "Barriers and
uniformity"): a collective needs every lane of its subgroup, not of the workgroup, so one subgroup per row
(`row = group_id * subgroups + subgroup_id(); if row < n_rows: ... subgroup_add ...`) compiles and runs on
every runtime here, matching the oracle; a collective under a condition that varies within a subgroup is a
located KernelTypeError naming that condition; barriers still need workgroup-uniform control flow; the
oracle refuses at run time lanes of one subgroup that reach different collectives."""
import re
import shutil
import subprocess

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.lang.frontend import translate
from polykern.testing import tier_skip
from polykern.testing.interp import OracleError, interpret
from located_refusal import check_refusal
from runtimes import compile_targets, runnable_targets

# ---------------------------------------------------------------- accepted: subgroup-uniform control flow

@pk.kernel
def row_per_subgroup(n_rows: i32, n: i32, x: Buffer[i32, "readonly"], out: Buffer[i32]):
    """One subgroup per row, rows past the end skipped by a whole subgroup."""
    nsub = (pk.local_size(0) + pk.subgroup_size() - 1) // pk.subgroup_size()
    row = pk.group_id(0) * nsub + pk.subgroup_id()
    lane = pk.subgroup_local_id()
    if row < n_rows:
        s = pk.subgroup_add(x[row * n + lane] if lane < n else 0)
        if lane == 0:
            out[row] = s


@pk.kernel
def rows_grid_stride(n_rows: i32, n: i32, x: Buffer[i32, "readonly"], out: Buffer[i32]):
    """An early return and a loop whose trip count differs between subgroups, collectives inside."""
    nsub = (pk.local_size(0) + pk.subgroup_size() - 1) // pk.subgroup_size()
    row = pk.group_id(0) * nsub + pk.subgroup_id()
    if row >= n_rows:
        return
    while row < n_rows:
        acc = 0
        k = pk.subgroup_local_id()
        while k < n:  # varies within a subgroup, but holds no collective
            acc += x[row * n + k]
            k += pk.subgroup_size()
        s = pk.subgroup_add(acc)
        m = pk.subgroup_max(acc)
        if pk.subgroup_local_id() == 0:
            out[row] = s * 1000 + m
        row += pk.num_groups(0) * nsub


@pk.kernel
def mixed_sources(trips: Buffer[i32, "readonly"], x: Buffer[i32, "readonly"], out: Buffer[i32]):
    """Trip counts from a readonly Buffer at a subgroup-uniform index, a subgroup-uniform break, and
    conditions on votes, integer reductions and broadcasts."""
    i = pk.global_id(0)
    sg = pk.subgroup_id()
    v = x[i]
    acc = 0
    for r in range(trips[pk.group_id(0) * 16 + sg]):
        acc += pk.subgroup_max(v + r)
        if r == sg:
            break
    if pk.subgroup_any(v > 5):
        acc += pk.subgroup_shuffle_xor(v, 1)
    m = pk.subgroup_max(v)
    while m > 0:
        v = max(v - 3, 0)
        m = pk.subgroup_max(v)
        acc += pk.subgroup_broadcast_first(v)
    out[i] = acc


@pk.kernel
def split_then_barrier(x: Buffer[i32, "readonly"], out: Buffer[i32]):
    """Subgroups of one group at two different collectives, then all of them at one barrier."""
    sh = pk.shared(i32, 256)
    lid = pk.local_id(0)
    i = pk.global_id(0)
    v = x[i]
    if pk.subgroup_id() % 2 == 0:
        v = pk.subgroup_add(v)
    else:
        v = pk.subgroup_max(v) * 100
    sh[lid] = v
    pk.barrier()
    out[i] = sh[(lid + 8) % pk.local_size(0)]


@pk.kernel
def device_size(o: Buffer[i32]):
    o[pk.global_id(0)] = pk.subgroup_size()


def _run_row_per_subgroup(launch, size):
    n_rows, n = 13, 6
    x = np.arange(n_rows * n, dtype=np.int32) * 7 % 23
    out = np.full(n_rows, -1, np.int32)
    launch(row_per_subgroup, [n_rows, n, x, out], (n_rows + 4) // 5, 4 * size + 2)  # a 5th subgroup of 2 lanes
    lanes = np.where(np.arange(n_rows) % 5 == 4, 2, min(n, size))
    rows = x.reshape(n_rows, n)
    assert (out == [rows[r, :lanes[r]].sum() for r in range(n_rows)]).all(), out
    return out


def _run_grid_stride(launch, size):
    n_rows, n = 11, 21
    x = (np.arange(n_rows * n, dtype=np.int32) * 5 % 17) - 8
    out = np.full(n_rows, -1, np.int32)
    launch(rows_grid_stride, [n_rows, n, x, out], 2, 2 * size)  # 4 subgroups for 11 rows
    rows = x.reshape(n_rows, n)
    lane_sums = np.stack([rows[:, k::size].sum(1) for k in range(size)], 1)
    assert (out == rows.sum(1) * 1000 + lane_sums.max(1)).all(), out
    return out


def _run_mixed(launch, size):
    groups, block = 2, 4 * size
    rng = np.random.default_rng(7)
    trips = rng.integers(0, 5, groups * 16).astype(np.int32)
    x = rng.integers(-4, 12, groups * block).astype(np.int32)
    out = np.zeros(groups * block, np.int32)
    launch(mixed_sources, [trips, x, out], groups, block)
    want = np.zeros_like(out)
    for base in range(0, groups * block, size):  # subgroups: consecutive lanes (1-D blocks)
        sg, v = base % block // size, x[base:base + size].astype(np.int64)
        acc = np.zeros(size, np.int64)
        for r in range(trips[base // block * 16 + sg]):
            acc += (v + r).max()
            if r == sg:
                break
        if (v > 5).any():
            acc += v[np.arange(size) ^ 1]
        while v.max() > 0:
            v = np.maximum(v - 3, 0)
            acc += v[0]
        want[base:base + size] = acc
    assert (out == want).all(), (out, want)
    return out


def _run_split_barrier(launch, size):
    block = 4 * size
    x = (np.arange(2 * block, dtype=np.int32) * 7) % 11
    out = np.zeros(2 * block, np.int32)
    launch(split_then_barrier, [x, out], 2, block)
    sub = x.reshape(-1, size)
    per = np.where(np.arange(len(sub)) % 4 % 2 == 0, sub.sum(1), sub.max(1) * 100)  # 4 subgroups a group
    v = np.repeat(per, size).reshape(2, block)
    assert (out.reshape(2, block) == np.roll(v, -8, axis=1)).all(), out
    return out


ACCEPTED = [_run_row_per_subgroup, _run_grid_stride, _run_mixed, _run_split_barrier]


def _device_size(dev):
    o = np.zeros(8, np.int32)
    dev["device_size"](o, grid=1, block=8)
    return int(o[0])


def _oracle(size):
    def launch(kern, args, grid, block):
        res = interpret(kern, args, grid, block, subgroup_size=size)
        for a, p in zip(args, kern.ir.params):
            if p.is_buffer:
                a[...] = res.buffers[p.name]
    return launch


RUNTIMES = [pytest.param(t, k, id=t.split()[0]) for t, k, skips in runnable_targets() if "subgroups" not in skips]


@pytest.mark.parametrize("target,kind", RUNTIMES)
def test_subgroup_uniform_collectives_run_and_match_the_oracle(target, kind):
    """Each accepted pattern runs on the runtime and gives the oracle's result at the device's subgroup size
    (1-D work-groups: the linear mapping every runtime here uses)."""
    dev = pk.build([row_per_subgroup, rows_grid_stride, mixed_sources, split_then_barrier, device_size],
                   targets=[target]).on(kind)
    size = _device_size(dev)

    def launch(kern, args, grid, block):
        dev[kern.name](*args, grid=grid, block=block)

    for case in ACCEPTED:
        got = case(launch, size)
        want = case(_oracle(size), size)
        assert (got == want).all(), (case.__name__, got, want)


def test_the_oracle_runs_subgroups_apart():
    """Subgroups of one group reach different numbers of collectives (mixed_sources' trip counts differ):
    the oracle resolves each subgroup's collective alone, at the CPU's size and at others."""
    for size in (4, 8, 16):
        _run_mixed(_oracle(size), size)  # checks the oracle against a NumPy model of each subgroup


def _compile_targets():
    return ["opencl -subgroups" if t.split()[0] == "opencl" else t for t in compile_targets()]


def test_every_backend_is_compiled():
    assert {"llvm", "vulkan", "cuda", "nvptx", "rocm", "metal", "opencl"} <= {t.split()[0] for t in _compile_targets()}


@pytest.mark.parametrize("target", _compile_targets())
def test_every_backend_compiles_them(target):
    """The code generators of every backend, also those that cannot run here (CUDA, NVPTX, ROCm, Metal, OpenCL
    with subgroups), take collectives inside branches and loops."""
    if target.startswith("rocm"):
        tier_skip.skip_if_absent("ld.lld")  # the hsaco is linked (the GPU machine has no ld.lld)
    pk.build([row_per_subgroup, rows_grid_stride, mixed_sources], targets=[target])


@pytest.mark.parametrize("target", ["cuda -arch=sm_90 -fmt=ptx", "nvptx -arch=sm_80"])
def test_ptx_of_branch_collectives_assembles(target):
    if target.startswith("cuda") and shutil.which("nvcc") is None:
        pytest.skip("nvcc (CUDA toolkit) is not on PATH")
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")
    ptx = pk.build([row_per_subgroup, rows_grid_stride, mixed_sources], targets=[target]).on("cuda").inspect_source("ptx")
    assert "shfl.sync" in ptx or "redux.sync" in ptx
    arch = target.split("-arch=")[1].split()[0]
    r = subprocess.run(["ptxas", f"-arch={arch}", "-o", "/dev/null", "-"], input=ptx.encode(), capture_output=True)
    assert r.returncode == 0, r.stderr.decode()


def test_spirv_of_branch_collectives_validates():
    """OpGroupNonUniform* inside structured selections and loops: valid SPIR-V (spirv-val)."""
    if shutil.which("spirv-val") is None:
        tier_skip.skip("spirv-val", "spirv-val not installed")
    mod = pk.build([row_per_subgroup, rows_grid_stride, mixed_sources], targets=["vulkan"]).on("vulkan")
    for name, spv in mod.payload.items():
        r = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", "-"], input=spv, capture_output=True)
        assert r.returncode == 0, (name, r.stderr)


# ---------------------------------------------------------------- refused: each marks the collective (C:tag)
# and the line the message must name as the reason (W:tag)

@pk.kernel
def lane_condition(x: Buffer[i32]):
    i = pk.global_id(0)
    if pk.local_id(0) < 3:  # W:lane
        x[i] = pk.subgroup_add(x[i])  # C:lane


@pk.kernel
def local_id_over_size(x: Buffer[i32]):
    i = pk.global_id(0)
    row = pk.local_id(0) // pk.subgroup_size()  # not subgroup_id(): the mapping is the device's
    if row == 0:  # W:div
        x[i] = pk.subgroup_add(x[i])  # C:div


@pk.kernel
def float_sum_condition(x: Buffer[f32], o: Buffer[i32]):
    i = pk.global_id(0)
    t = pk.subgroup_add(x[i])
    if t > 0.0:  # W:fsum
        o[i] = pk.subgroup_max(o[i])  # C:fsum


@pk.kernel
def shuffle_condition(o: Buffer[i32]):
    i = pk.global_id(0)
    t = pk.subgroup_shuffle(i, 0)
    if t > 0:  # W:shuf
        o[i] = pk.subgroup_max(o[i])  # C:shuf


@pk.kernel
def lane_break(o: Buffer[i32]):
    i = pk.global_id(0)
    for k in range(8):  # W:brk
        o[i] = pk.subgroup_add(o[i])  # C:brk
        if pk.subgroup_local_id() == k:
            break


@pk.kernel
def lane_return(n: i32, o: Buffer[i32]):
    i = pk.global_id(0)
    if i >= n:  # W:ret
        return
    o[i] = pk.subgroup_add(o[i])  # C:ret


@pk.kernel
def writable_at_subgroup_index(o: Buffer[i32]):
    i = pk.global_id(0)
    if o[pk.subgroup_id()] > 0:  # W:wr
        o[i] = pk.subgroup_add(i)  # C:wr


@pk.kernel
def assigned_by_some_lanes(o: Buffer[i32]):
    i = pk.global_id(0)
    flag = 0
    if pk.subgroup_local_id() == 0:  # W:flag
        flag = 1
    if flag == 1:
        o[i] = pk.subgroup_add(i)  # C:flag


REFUSED = [
    (lane_condition, "lane", "depends on local_id(0)"),
    (local_id_over_size, "div", "depends on 'row' ("),
    (float_sum_condition, "fsum", "subgroup_add() of a float (a device may round it differently in each lane)"),
    (shuffle_condition, "shuf", "subgroup_shuffle()"),
    (lane_break, "brk", "is left early by only some work-items of a subgroup"),
    (lane_return, "ret", "the 'return' at line"),
    (writable_at_subgroup_index, "wr", "a load from Buffer 'o', which is not readonly"),
    (assigned_by_some_lanes, "flag", "'flag', which is assigned at line"),
]


@pytest.mark.parametrize("kern,tag,why", REFUSED, ids=[c[1] for c in REFUSED])
def test_collective_in_flow_that_varies_within_a_subgroup_is_a_located_error(kern, tag, why):
    text = check_refusal(kern, __file__, "C", tag, "is reached only by some work-items of a subgroup", why)
    assert "subgroup_id()" in text  # how to fix: the sources of subgroup-uniform values


@pk.kernel
def barrier_per_subgroup(o: Buffer[i32]):
    if pk.subgroup_id() == 0:  # W:bar
        pk.barrier()  # B:bar
    o[pk.global_id(0)] = 1


def test_barriers_still_need_workgroup_uniform_flow():
    check_refusal(barrier_per_subgroup, __file__, "B", "bar",
                  "barrier() is reached only by some work-items of a workgroup", "depends on subgroup_id()")


# ---------------------------------------------------------------- the oracle checks arrival at run time

@pk.kernel
def some_lanes_reduce(x: Buffer[i32]):
    i = pk.global_id(0)
    if x[i] > 0:
        x[i] = pk.subgroup_add(x[i])


@pk.kernel
def lanes_split_between_collectives(x: Buffer[i32]):
    i = pk.global_id(0)
    if pk.subgroup_local_id() < 2:
        x[i] = pk.subgroup_add(x[i])
    else:
        x[i] = pk.subgroup_max(x[i])


def test_the_oracle_refuses_lanes_of_a_subgroup_that_diverge():
    x = np.ones(16, np.int32)
    x[3] = 0  # one lane of the first subgroup skips the collective
    fn = translate(some_lanes_reduce.pyfunc, check_barriers=False)
    with pytest.raises(OracleError, match=r"reached by some lanes of subgroup 0 of a group while its lane 3 "
                                          r"finished: a collective in control flow that varies within a subgroup"):
        interpret(fn, [x], 1, 16)
    assert (interpret(fn, [np.ones(16, np.int32)], 1, 16).buffers["x"] == 8).all()  # every lane: fine
    fn = translate(lanes_split_between_collectives.pyfunc, check_barriers=False)
    with pytest.raises(OracleError, match=r"its lane 2 reached subgroup_max\(\)"):
        interpret(fn, [np.ones(8, np.int32)], 1, 8)


# ---------------------------------------------------------------- the fuzzer's generator

def _fuzz_section(seed):
    from polykern.testing import kernelgen

    return kernelgen.generate(seed, probability={"subgroup_uniform": 1.0}, avoid={"matrix", "shared_dynamic"})


def test_generator_puts_collectives_under_subgroup_uniform_flow():
    """kernelgen's subgroup_uniform section (its own stream): collectives in split branches on subgroup_id(),
    in branches and loops on votes, and in loops whose trip count differs between subgroups; the programs
    pass the analysis and the oracle, whose results do not depend on the subgroup size."""
    import random

    from polykern.testing import fuzzcase, kernelgen

    seen = set()
    for seed in range(12):
        p = _fuzz_section(seed)
        body = p.source.split("@pk.kernel")[1]
        for kind, pat in (("split", r"if .*pk\.subgroup_id\(\).*:\n(\s+)sg\d+ = pk\.subgroup_"),
                          ("varying loop", r"for k\d+ in range\(pk\.subgroup_id\(\) % 3 \+ 1\):"),
                          ("vote", r"if pk\.subgroup_(any|all)\(")):
            if re.search(pat, body):
                seen.add(kind)
        kern = fuzzcase.load_kernel(p.source, p.name)
        ref = interpret(kern, p.make_args(), p.grid, p.block)
        for size in (4, 16):  # other devices' sizes: the same results
            other = interpret(kern, p.make_args(), p.grid, p.block, subgroup_size=size)
            for name, arr in ref.buffers.items():
                np.testing.assert_array_equal(arr, other.buffers[name], err_msg=f"seed {seed} size {size}: {name}")
    assert seen == {"split", "varying loop", "vote"}, seen
    drawn = [s for s in range(200) if random.Random(f"subgroup_uniform-{s}").random()
             < kernelgen.PROBABILITY["subgroup_uniform"]]
    for s in range(40):  # a seed whose stream does not draw the section keeps its program
        if s not in drawn:
            assert kernelgen.generate(s).source == kernelgen.generate(s, avoid={"subgroup_uniform"}).source
        else:
            assert kernelgen.generate(s).source != kernelgen.generate(s, avoid={"subgroup_uniform"}).source
    assert "pk.subgroup_" not in kernelgen.generate(drawn[0], avoid={"subgroups"}).source.split("@pk.kernel")[1]


def test_fuzz_tool_runs_the_section_on_the_cpu():
    """tools/fuzz.py --probability subgroup_uniform=1: every program has the section; none disagrees."""
    import os
    import sys

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, os.path.join(repo, "tools", "fuzz.py"), "--seed", "41", "--count", "3",
                        "--targets", "llvm", "--probability", "subgroup_uniform=1", "--no-save"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "3 programs x 1 targets, 0 disagreements" in r.stdout, r.stdout[-2000:] + r.stderr
    bad = subprocess.run([sys.executable, os.path.join(repo, "tools", "fuzz.py"), "--count", "1", "--targets", "llvm",
                          "--probability", "subgroup_uniforms=1", "--no-save"], capture_output=True, text=True,
                         timeout=600)
    assert bad.returncode != 0 and "unknown probability ['subgroup_uniforms']" in bad.stdout + bad.stderr
