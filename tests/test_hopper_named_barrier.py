"""Named barriers (docs/language.md 5.3 "Named barriers"; ir/hopper.py, lang/hopper.py,
interpreter/named.py, the CUDA C in backends/cuda/polykern_cuda/hopper.py): a subset of the block's
warpgroups synchronizes, memory written before the barrier by its arrivers is there for its waiters after
it and for nobody else; the IR interpreter refuses the races, deadlocks and misuses, the frontend the rules
that need no run."""
import copy

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.errors import CompileError, KernelTypeError
from polykern.ir import nodes as ir
from polykern.ir.verifier import verify
from polykern.testing.interp import OracleError, interpret
from hopper_support import assemble_sm90a, located_error
from named_barrier_kernels import relay, relay_expected

A = np.arange(128, dtype=np.float32) - 40.0


# ------------------------------------------------------------------ two warpgroups, one handoff
@pk.kernel
def handoff(mode: i32, A: Buffer[f32, "readonly"], C: Buffer[f32]):
    """Warpgroup 0 writes the tile, warpgroup 1 reads it reversed (another work-item's element). mode 0:
    bar.sync on both sides; 1: the producer only arrives; 2: no barrier; 3: the producer writes again after
    arriving; 4: the consumer writes, then the arriving producer reads it."""
    pk.warpgroups(2)
    tile = pk.shared(f32, 128)
    back = pk.shared(f32, 128)
    wg = pk.warpgroup_id()
    t = pk.local_id(0) % 128
    if wg == 0:
        tile[t] = A[t] * 2.0
        if mode == 0:
            pk.named_barrier(1, 256)
        if mode == 1 or mode == 3 or mode == 4:
            pk.named_arrive(1, 256)
        if mode == 3:
            tile[t] = 0.0
        if mode == 4:
            C[128 + t] = back[t]
    else:
        if mode == 4:
            back[127 - t] = 1.0
        if mode != 2:
            pk.named_barrier(1, 256)
        C[t] = tile[127 - t]


def _handoff(mode):
    return interpret(handoff, [mode, A, np.zeros(256, np.float32)], 1, 256).buffers["C"]


@pytest.mark.parametrize("mode", [0, 1])
def test_handoff_through_a_named_barrier(mode):
    c = _handoff(mode)
    assert np.array_equal(c[:128], (A * 2)[::-1]) and np.array_equal(c[128:], np.zeros(128, np.float32))


@pytest.mark.parametrize("mode, what", [
    (2, r"data race on tile\[127\]: read by work-item 128 after a write by another work-item"),  # no barrier
    (3, r"data race on tile\[127\]: read by work-item 128 after a write"),  # written again after the arrive
    (4, r"data race on back\[0\]: read by work-item 0 after a write"),  # an arriver learns nothing
])
def test_accesses_the_named_barrier_does_not_order_are_races(mode, what):
    with pytest.raises(OracleError, match=what):
        _handoff(mode)


# ------------------------------------------------------------------ three warpgroups: who is ordered
@pk.kernel
def three(mode: i32, A: Buffer[f32, "readonly"], C: Buffer[f32]):
    """Warpgroup 0 writes the tile and meets warpgroup 1 at barrier 1. mode 0: warpgroup 2 then meets
    warpgroup 1 at barrier 2 and reads the tile (ordered through warpgroup 1); 1: warpgroup 2 reads it without
    (it took part in nothing); 2: warpgroup 1 and 2 read, after a pk.barrier() of the whole block; 3: two
    readers of one element in one round, then a third warpgroup writes it after meeting only one of them."""
    pk.warpgroups(3)
    tile = pk.shared(f32, 128)
    wg = pk.warpgroup_id()
    t = pk.local_id(0) % 128
    if wg == 0:
        tile[t] = A[t] + 1.0
        pk.named_barrier(1, 256)
        if mode == 3:
            C[t] = tile[0]
    if wg == 1:
        pk.named_barrier(1, 256)
        if mode == 3:
            C[128 + t] = tile[0]
        if mode == 0 or mode == 3:
            pk.named_barrier(2, 256)
    if wg == 2:
        if mode == 0 or mode == 3:
            pk.named_barrier(2, 256)
        if mode == 3:
            if t == 0:
                tile[0] = 5.0
        if mode < 2:
            C[256 + t] = tile[127 - t]
    if mode == 2:
        pk.barrier()
        C[128 * wg + t] = tile[t]


def _three(mode):
    return interpret(three, [mode, A, np.zeros(384, np.float32)], 1, 384).buffers["C"]


def test_a_named_barrier_orders_through_a_shared_participant():
    assert np.array_equal(_three(0)[256:], (A + 1)[::-1])


def test_a_non_participant_is_not_ordered():
    with pytest.raises(OracleError, match=r"data race on tile\[127\]: read by work-item 256 after a write"):
        _three(1)


def test_the_block_barrier_still_orders_everyone():
    c = _three(2)
    assert np.array_equal(c[128:256], A + 1) and np.array_equal(c[256:], A + 1)


def test_every_unordered_reader_is_checked():
    """Warpgroups 0 and 1 both read tile[0] after barrier 1; warpgroup 2 meets only warpgroup 1 and writes it:
    a race with warpgroup 0's read, which a record of only the last reader would miss."""
    with pytest.raises(OracleError, match=r"data race on tile\[0\]: written by work-item 256 after another "
                                          r"work-item read it"):
        _three(3)


# ------------------------------------------------------------------ a ring of rounds (named_barrier_kernels.relay)


def test_rounds_repeat_in_a_ring():
    a = np.concatenate([A, A * 3])
    out = interpret(relay, [5, a, np.zeros(256, np.float32)], 2, 384).buffers["C"]
    assert np.array_equal(out, relay_expected(a, 5))


# ------------------------------------------------------------------ deadlocks and misuse at run time
@pk.kernel
def misuse(mode: i32, n: i32, C: Buffer[f32]):
    """mode 0: the count (384) is never reached; 1: a computed id out of range; 2: two counts in one round;
    3: a warpgroup arrives twice in one round; 4: only part of a warpgroup arrives."""
    pk.warpgroups(3)
    wg = pk.warpgroup_id()
    lid = pk.local_id(0)
    if mode == 0 and wg < 2:
        pk.named_barrier(1, 384)
    if mode == 1:
        pk.named_barrier(n, 384)
    if mode == 2:
        if wg == 0:
            pk.named_barrier(1, 256)
        else:
            pk.named_barrier(1, 384)
    if mode == 3 and wg == 0:
        pk.named_arrive(2, 256)
        pk.named_arrive(2, 256)
    if mode == 4 and lid < 64:
        pk.named_barrier(1, 128)
    C[lid] = 1.0


@pytest.mark.parametrize("mode, n, what", [
    (0, 1, r"deadlock: no work-item of the group can proceed .*work-items 0\.\.255 wait at pk\.named_barrier\(1, "
           r"384\) at .*\(named barrier 1: 256 of 384 work-items arrived, warpgroups 0, 1\)"),
    (1, 16, r"named barrier 16: the ids are 1 to 15 \(0 is the block barrier pk\.barrier\(\) uses\)"),
    (1, 0, r"named barrier 0: the ids are 1 to 15"),
    (2, 1, r"warpgroup 1 arrives at named barrier 1 with count 384, but warpgroup 0 arrived in this round with "
           r"count 256"),
    (3, 1, r"warpgroup 0 arrives at named barrier 2 again before its round completed \(128 of 256"),
    (4, 1, r"work-items 0\.\.63 of warpgroup 0 reached a warpgroup operation that work-items 64\.\.127 finished "
           r"without"),
])
def test_misuse_is_an_oracle_error(mode, n, what):
    with pytest.raises(OracleError, match=what):
        interpret(misuse, [mode, n, np.zeros(384, np.float32)], 1, 384)


def test_all_arriving_completes_the_round():
    out = interpret(misuse, [1, 3, np.zeros(384, np.float32)], 1, 384).buffers["C"]
    assert (out == 1).all()


# ------------------------------------------------------------------ compile-time rules
def _rule_kernel(op, bar_id, count):
    @pk.kernel
    def k(C: Buffer[f32]):
        pk.warpgroups(2)
        op(bar_id, count)

    return k


@pytest.mark.parametrize("op, bar_id, count, why", [
    (pk.named_barrier, 0, 256, "named barrier 0: the ids are 1 to 15 (0 is the block barrier pk.barrier() uses)"),
    (pk.named_arrive, 16, 256, "named barrier 16: the ids are 1 to 15"),
    (pk.named_barrier, 1, 96, "a multiple of 128 from 128 to the block's 256, got 96"),
    (pk.named_arrive, 1, 384, "to the block's 256, got 384"),
])
def test_rules_are_located_type_errors(op, bar_id, count, why):
    assert why in located_error(_rule_kernel(op, bar_id, count), "op(bar_id, count)")


def test_warpgroups_and_a_constant_count_are_required():
    @pk.kernel
    def undeclared(C: Buffer[f32]):
        pk.named_barrier(1, 128)

    assert "pk.named_barrier() synchronizes whole warpgroups: declare the block's warpgroups first" in \
        located_error(undeclared, "pk.named_barrier(1, 128)")

    @pk.kernel
    def computed_count(n: i32, C: Buffer[f32]):
        pk.warpgroups(2)
        pk.named_barrier(1, n)

    assert "the count of pk.named_barrier()" in located_error(computed_count, "pk.named_barrier(1, n)")

    @pk.kernel
    def one_argument(C: Buffer[f32]):
        pk.warpgroups(2)
        pk.named_arrive(1)

    assert "pk.named_arrive() takes 2 arguments" in located_error(one_argument, "pk.named_arrive(1)")


@pytest.mark.parametrize("count", [ir.Const(100, i32), ir.Const(512, i32), ir.Var("mode", i32)])
def test_the_verifier_wants_a_constant_count_of_whole_warpgroups(count):
    """bar.sync takes the count as an immediate: IR that another producer builds with a computed or partial one
    is a compiler bug the verifier names."""
    fn = copy.deepcopy(handoff.ir)
    op = next(s for s in ir.walk_stmts(fn.body) if isinstance(s, ir.HopperOp) and s.op == "named_barrier")
    op.args[1] = count
    with pytest.raises(CompileError, match="named_barrier needs a constant count of whole warpgroups within the block"):
        verify(fn)


# ------------------------------------------------------------------ targets
def test_cuda_c_has_bar_sync_and_bar_arrive(tmp_path):
    src = pk.build(relay, targets="cuda -arch=sm_90a -fmt=cuda").on("cuda").inspect_source("cuda")
    for bar in (1, 2):
        for kind in ("sync", "arrive"):
            assert f'asm volatile("bar.{kind} %0, 256;" :: "r"((unsigned)({bar})) : "memory");' in src, (kind, bar)
    assemble_sm90a(src, tmp_path)


def test_nvptx_has_bar_sync_and_bar_arrive(tmp_path):
    """nvptx -arch=sm_90a writes the same instructions (LLVM inline PTX), and ptxas takes them."""
    import subprocess

    ptx = pk.build(relay, targets="nvptx -arch=sm_90a").on("cuda").inspect_source("ptx")
    for bar in (1, 2):
        for kind in ("sync", "arrive"):
            assert any(f"bar.{kind}" in line and ", 256;" in line for line in ptx.splitlines()), (kind, bar)
    from polykern_cuda import toolchain

    ptxas = toolchain.find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")
    path = tmp_path / "relay.ptx"
    path.write_text(ptx)
    r = subprocess.run([ptxas, "-arch=sm_90a", str(path), "-o", str(tmp_path / "relay.cubin")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("target", ["llvm", "opencl", "nvptx"])
def test_other_targets_refuse_by_name(target):
    """Every target but cuda / nvptx -arch=sm_90a refuses, naming the operation and a target to build for."""
    with pytest.raises(KernelTypeError) as e:
        pk.build(misuse, targets=target)
    assert "pk.named_barrier" in e.value.message and "-arch=sm_90a" in e.value.message, e.value.message
    assert e.value.loc is not None and "pk.named_barrier(1, 384)" in e.value.loc.source_line
