"""Checked mode's guards compute their bounds without wrapping.

A fragment load/store's guard computed ``off + ld * (rows - 1)`` in the offset's type: ``ld = (2**32 + 14)
// 15`` wrapped in i32 to a small span, an i64 ``ld`` was truncated to the offset's i32 (``2**32 + 16``
became 16), and the guard passed while the code touched ``off + r * ld + c`` computed in i64: SIGSEGV on
llvm, an emulator crash on hexagon. A signed index was only converted to the unsigned check type, so with
a (saturated) length above ``2**31`` a negative index passed as ``2**32 - |index|``. Now each is the
documented LaunchError and nothing is touched, on llvm and hexagon, and the IR interpreter running the
checked IR (which checks every access itself) agrees: the guard records the violation before the access.
Groups (vload/vstore, copy_async) on every runtime here, PoCL and lavapipe included."""
import copy

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i8, i32, i64, u8, u32
from polykern.runtime.checked_launch import CheckedKernel
from polykern.errors import LaunchError
from polykern.passes import run_default_passes
from polykern.passes.bounds_check import RECORD_WORDS, bounds_check
from polykern.testing.interp import interpret
from runtimes import runnable_targets

CPU = [pytest.param(t, id=t) for t, k, _ in runnable_targets() if k in ("llvm", "hexagon")]
GROUPS = [pytest.param(t, id=t.split()[0]) for t, k, _ in runnable_targets()
          if k in ("llvm", "hexagon", "opencl", "vulkan", "webgpu")]


@pk.kernel
def frag_ld(O: pk.dtype, L: pk.dtype, off: "O", ld: "L", x: Buffer[f32, "readonly"], d: Buffer[f32]):
    acc = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(acc, 0.0)  # what d gets when the load is skipped
    pk.frag_load(acc, x, off, ld)
    pk.frag_store(d, 0, 16, acc)


@pk.kernel
def frag_st(O: pk.dtype, L: pk.dtype, LAYOUT_COL: pk.constexpr, off: "O", ld: "L", d: Buffer[f32]):
    acc = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(acc, 1.0)
    if LAYOUT_COL:
        pk.frag_store(d, off, ld, acc, "col")
    else:
        pk.frag_store(d, off, ld, acc)


frag_ld32 = frag_ld.specialize(O=i32, L=i32)
frag_ld_mixed = frag_ld.specialize(O=i32, L=i64)
frag_ld_u32 = frag_ld.specialize(O=u32, L=u32)
frag_st32 = frag_st.specialize(O=i32, L=i32, LAYOUT_COL=True)
frag_st64 = frag_st.specialize(O=i64, L=i64, LAYOUT_COL=False)


@pk.kernel
def frag_ld_shared(off: i32, ld: i32, x: Buffer[f32, "readonly"], d: Buffer[f32]):
    t = pk.shared(f32, 256)
    if pk.local_id(0) == 0:
        for k in range(256):
            t[k] = x[k]
    pk.barrier()
    acc = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(acc, 0.0)
    pk.frag_load(acc, t, off, ld)
    pk.frag_store(d, 0, 16, acc)


def _fx(n=256):
    return np.arange(n, dtype=np.float32)


W32 = (2 ** 32 + 14) // 15  # 15 * W32 = 2**32 + 14: 14 in i32
W64 = (2 ** 64 + 14) // 15  # 15 * W64 = 2**64 + 14: 14 in i64
FRAG = "(r < 16, c < 16)"

# kernel, arguments (offset, ld, ...buffers), what the message says after the offset and ld
BAD = [
    (frag_ld32, lambda: [np.int32(0), np.int32(W32), _fx(), np.zeros(256, np.float32)],
     f"frag_load on buffer 'x' at offset 0 with leading dimension {W32}: its elements 0 \\+ r \\* {W32} \\+ c "
     rf"\(r < 16, c < 16\) span 0 \.\. {15 * W32 + 15} \(length 256\)"),
    (frag_ld32, lambda: [np.int32(240), np.int32(-W32), _fx(), np.zeros(256, np.float32)],
     rf"frag_load on buffer 'x' at offset 240 with leading dimension -{W32}: .* span {240 - 15 * W32} \.\. 255 "
     r"\(length 256\)"),
    (frag_ld32, lambda: [np.int32(-(2 ** 31)), np.int32(2 ** 27), _fx(), np.zeros(256, np.float32)],
     rf"at offset {-(2 ** 31)} with leading dimension {2 ** 27}:"),
    (frag_st32, lambda: [np.int32(2 ** 31 - 8), np.int32(1), np.zeros(256, np.float32)],  # off + 15 wraps
     rf"frag_store on buffer 'd' at offset {2 ** 31 - 8} with leading dimension 1: .* span {2 ** 31 - 8} \.\. "),
    (frag_ld_mixed, lambda: [np.int32(0), np.int64(2 ** 32 + 16), _fx(), np.zeros(256, np.float32)],
     rf"at offset 0 with leading dimension {2 ** 32 + 16}: .* span 0 \.\. {15 * (2 ** 32 + 16) + 15} "),
    (frag_st64, lambda: [np.int64(0), np.int64(W64), np.zeros(256, np.float32)],
     rf"frag_store on buffer 'd' at offset 0 with leading dimension {W64}: "),
    (frag_st64, lambda: [np.int64(100), np.int64(-W64), np.zeros(256, np.float32)],  # 15*ld wraps to -14
     rf"at offset 100 with leading dimension -{W64}: .* span {100 - 15 * W64} \.\. 115 "),
    (frag_st64, lambda: [np.int64(2 ** 63 - 8), np.int64(0), np.zeros(256, np.float32)],  # off + 15 wraps in i64
     rf"at offset {2 ** 63 - 8} with leading dimension 0: "),
    (frag_st64, lambda: [np.int64(2 ** 62), np.int64(-(2 ** 62)), np.zeros(256, np.float32)],  # 15*ld wraps
     rf"at offset {2 ** 62} with leading dimension {-(2 ** 62)}: "),
    (frag_ld_u32, lambda: [np.uint32(1), np.uint32(W32), _fx(), np.zeros(256, np.float32)],
     rf"at offset 1 with leading dimension {W32}: "),
    (frag_ld_shared, lambda: [np.int32(0), np.int32(W32), _fx(), np.zeros(256, np.float32)],
     rf"frag_load on array 't' at offset 0 with leading dimension {W32}: .* \(length 256\)"),
]


@pytest.mark.parametrize("target", CPU)
@pytest.mark.parametrize("kernel,args,msg", BAD, ids=[f"{c[0].name}-{i}" for i, c in enumerate(BAD)])
def test_a_fragment_whose_span_wraps_is_reported(target, kernel, args, msg):
    a = args()
    before = [x.copy() for x in a]
    fn = pk.build([kernel], [target], bounds_check=True)[kernel.name]
    with pytest.raises(LaunchError, match=msg):
        fn(*a, grid=1, block=8)
    for x, y in zip(a, before):  # a store skipped, or a load skipped (d = the filled zeros)
        np.testing.assert_array_equal(x, y)


def _checked_ir(kernel):
    return bounds_check(run_default_passes(copy.deepcopy(kernel.ir)))


def _interp_record(kernel, args, lengths, index_type=np.uint32):
    """Run the checked IR on the oracle (which refuses any access outside a buffer itself) with the
    hidden arguments, as one work-item (a subgroup of one: several would race on the record, for the
    oracle); the error record after the launch."""
    record = np.zeros(RECORD_WORDS, np.int32)
    res = interpret(_checked_ir(kernel), list(args) + [np.array(lengths, index_type), record], grid=1, block=1,
                    subgroup_size=1)
    return res.buffers["bounds_err"]


@pytest.mark.parametrize("kernel,args,msg", BAD, ids=[f"{c[0].name}-{i}" for i, c in enumerate(BAD)])
def test_the_interpreter_sees_the_guard_fail_before_the_access(kernel, args, msg):
    a = args()
    buffers = [x for x in a if x.ndim]
    wide = any(x.dtype.itemsize == 8 for x in a)
    rec = _interp_record(kernel, a, [len(b) for b in buffers], np.uint64 if wide else np.uint32)
    assert rec[0] != 0  # recorded (the oracle raised on the access otherwise)
    assert (int(rec[1]) & 0xFFFFFFFF) == (int(a[0]) & 0xFFFFFFFF)  # the offset's bits


GOOD = [  # in bounds, at the edges: the guard must let them through, results as unchecked
    (frag_ld32, lambda: [np.int32(0), np.int32(16), _fx(), np.zeros(256, np.float32)]),
    (frag_ld32, lambda: [np.int32(240), np.int32(-16), _fx(), np.zeros(256, np.float32)]),  # rows reversed
    (frag_ld32, lambda: [np.int32(15), np.int32(15), _fx(256), np.zeros(256, np.float32)]),  # last element 255
    (frag_ld_mixed, lambda: [np.int32(0), np.int64(16), _fx(), np.zeros(256, np.float32)]),
    (frag_st64, lambda: [np.int64(4), np.int64(17), np.zeros(4 + 15 * 17 + 16, np.float32)]),
    (frag_ld_u32, lambda: [np.uint32(0), np.uint32(16), _fx(), np.zeros(256, np.float32)]),
    (frag_ld_shared, lambda: [np.int32(240), np.int32(-16), _fx(), np.zeros(256, np.float32)]),
]


@pytest.mark.parametrize("target", CPU)
@pytest.mark.parametrize("kernel,args", GOOD, ids=[f"{c[0].name}-{i}" for i, c in enumerate(GOOD)])
def test_fragments_at_the_edges_still_run(target, kernel, args):
    got = []
    for checked in (False, True):
        a = args()
        pk.build([kernel], [target], bounds_check=checked)[kernel.name](*a, grid=1, block=8)
        got.append(a[-1])
    np.testing.assert_array_equal(got[0], got[1])
    assert got[1].any()


@pytest.mark.parametrize("target", CPU)
def test_one_element_short_is_reported(target):
    fn = pk.build([frag_ld32], [target], bounds_check=True)[frag_ld32.name]
    with pytest.raises(LaunchError, match=r"span 15 \.\. 255 \(length 255\)"):
        fn(np.int32(15), np.int32(15), _fx(255), np.zeros(256, np.float32), grid=1, block=8)


# ----------------------------------------------------------------- signed indices, long buffers

@pk.kernel
def rd8(i: i32, x: Buffer[u8, "readonly"], y: Buffer[u8]):
    y[0] = x[i]


@pk.kernel
def rd_i8(i: i8, x: Buffer[u8, "readonly"], y: Buffer[u8]):
    y[0] = x[i]


@pk.kernel
def vst(k: i32, y: Buffer[u8]):
    pk.vstore(y, k, (1, 2, 3, 4))


def _raw(target, kernel):
    """The checked kernel's runtime function, taking the hidden arguments itself: a lengths buffer can
    then claim what a buffer of more than 2**31 elements would (the guard only reads that length)."""
    k = pk.build([kernel], [target], bounds_check=True)[kernel.name].resolve()[1]
    while not isinstance(k, CheckedKernel):  # under the alignment check of a group's kernel
        k = k.fn
    return k.fn


LONG = 2 ** 31 + 16  # what the saturated u32 length of a 2 GiB + 16 byte buffer is


@pytest.mark.parametrize("target", CPU)
@pytest.mark.parametrize("kernel,i", [(rd8, -(2 ** 31)), (rd8, 15 - 2 ** 31), (rd_i8, -128)])
def test_a_negative_index_fails_below_a_long_length(target, kernel, i):
    x, y = np.arange(64, dtype=np.uint8), np.zeros(1, np.uint8)
    record = np.zeros(RECORD_WORDS, np.int32)
    long = 2 ** 32 - 1 if kernel is rd_i8 else LONG  # i8 -128 converts to 2**32 - 128
    _raw(target, kernel)(kernel.ir.params[0].type.numpy.type(i), x, y, np.array([long, 1], np.uint32), record,
                         grid=1, block=1)
    assert record[0] != 0 and int(record[1]) == i and y[0] == 0


@pytest.mark.parametrize("target", GROUPS)
def test_a_group_with_a_negative_lane_fails_below_a_long_length(target):
    """pk.vstore's fit check passes for k = -(2**29) (its elements fit i32) and each lane is then an element
    check: a negative lane index must fail against any length."""
    if target.startswith("webgpu"):
        pytest.skip("WGSL has no 8-bit integers")
    y, record = np.zeros(64, np.uint8), np.zeros(RECORD_WORDS, np.int32)
    _raw(target, vst)(np.int32(-(2 ** 29)), y, np.array([LONG], np.uint32), record, grid=1, block=1)
    assert record[0] != 0 and int(record[1]) == -(2 ** 31) and not y.any()


@pk.kernel
def cp(k: i32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    t = pk.shared(f32, 4)
    pk.copy_async(t, 0, x, k, 4)
    pk.copy_commit()
    pk.copy_wait(0)
    y[0] = t[0] + t[3]


@pytest.mark.parametrize("target", GROUPS)
def test_a_copy_with_a_negative_source_fails_below_a_long_length(target):
    x, y, record = np.arange(64, dtype=np.float32), np.zeros(1, np.float32), np.zeros(RECORD_WORDS, np.int32)
    _raw(target, cp)(np.int32(-(2 ** 29)), x, y, np.array([LONG, 1], np.uint32), record, grid=1, block=1)
    assert record[0] != 0 and int(record[1]) == -(2 ** 31)


@pytest.mark.parametrize("kernel,args,lengths,index", [
    (rd8, lambda: [np.int32(-(2 ** 31)), np.arange(64, dtype=np.uint8), np.zeros(1, np.uint8)], [LONG, 1], -(2 ** 31)),
    (rd_i8, lambda: [np.int8(-128), np.arange(64, dtype=np.uint8), np.zeros(1, np.uint8)], [2 ** 32 - 1, 1], -128),
    (vst, lambda: [np.int32(-(2 ** 29)), np.zeros(64, np.uint8)], [LONG], -(2 ** 31)),
    (cp, lambda: [np.int32(-(2 ** 29)), np.arange(64, dtype=np.float32), np.zeros(1, np.float32)], [LONG, 1],
     -(2 ** 31)),
], ids=["i32", "i8", "vstore", "copy_async"])
def test_the_interpreter_sees_the_negative_index_fail(kernel, args, lengths, index):
    rec = _interp_record(kernel, args(), lengths)
    assert rec[0] != 0 and int(rec[1]) == index
