"""Shifts, rotates and funnel shifts by any amount give the language's answer on hexagon (the amount
is taken modulo the width, docs/language.md 7.1), compared with the IR interpreter over amounts
0..2*width+3 and values with the top bit set and clear.

LLVM's optimizer turns a lone rotate or funnel shift into ``llvm.fshl``/``llvm.fshr`` (and the
instruction selector fuses ``or`` of two shifts into the same node), and LLVM's Hexagon backend
shifted a register pair by the unreduced amount: a u32 rotate of 0x12345678 by 36 gave 0x23456780
and by 68 gave 0, u64 rotates by 64..127 were wrong. polykern_hexagon/variable_shifts.py
hands code generation Hexagon shift intrinsics with the amount reduced instead; the IR and
assembly checks below look at that mechanism (they need no emulator).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, i8, i16, i32, i64, u8, u16, u32, u64
from polykern.testing.interp import interpret
from polykern.testing import tier_skip
from runtimes import runnable_targets

TYPES = [u8, i8, u16, i16, u32, i32, u64, i64]
HEXAGON = [(t, k) for t, k, _ in runnable_targets() if t.startswith("hexagon")]
needs_hexagon = tier_skip.skipif("hexagon-emu", not HEXAGON,
                                 reason="no emulated Hexagon runtime here (qemu-hexagon-static, clang, ld.lld)")


def shift_kernels(T, W: int):
    """Each shape of shift by a variable amount ``k`` on ``T`` in a kernel of its own (LLVM's
    optimizer turns a lone rotate or funnel shift into ``llvm.fshl``/``fshr``), and all of them in
    one kernel (shifts with other uses reach the instruction selector as shifts)."""
    M = W - 1

    @pk.kernel
    def rotl(x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], k: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        o[g] = (x[g] << k[g]) | (x[g] >> (T(W) - k[g]))

    @pk.kernel
    def rotl_masked(x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], k: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        o[g] = (x[g] << (k[g] & T(M))) | (x[g] >> ((T(0) - k[g]) & T(M)))

    @pk.kernel
    def rotr(x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], k: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        o[g] = (x[g] >> k[g]) | (x[g] << (T(W) - k[g]))

    @pk.kernel
    def fshl(x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], k: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        o[g] = (x[g] << k[g]) | (y[g] >> (T(W) - k[g]))

    @pk.kernel
    def fshr(x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], k: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        o[g] = (y[g] >> k[g]) | (x[g] << (T(W) - k[g]))

    @pk.kernel
    def shl(x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], k: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        o[g] = T(x[g] << k[g])  # T is named in the body, so the annotations see it

    @pk.kernel
    def shr(x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], k: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        o[g] = T(x[g] >> k[g])

    @pk.kernel
    def literal(x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], k: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        o[g] = ((x[g] << T(3)) | (x[g] >> T(W - 3))) ^ ((x[g] >> T(W - 1)) | (y[g] << T(1)))

    @pk.kernel
    def mixed(x: Buffer[T, "readonly"], y: Buffer[T, "readonly"], k: Buffer[T, "readonly"], o: Buffer[T]):
        g = pk.global_id(0)
        a = x[g]
        b = y[g]
        s = k[g]
        left = a << s
        right = a >> (T(W) - s)
        back = a >> s
        o[g] = ((left | right) ^ (back | (a << (T(W) - s)))) + ((left | (b >> (T(W) - s))) ^ (back + right))

    return [rotl, rotl_masked, rotr, fshl, fshr, shl, shr, literal, mixed]


def _inputs(T, W: int):
    dt = np.dtype(T.numpy)
    amounts = np.arange(2 * W + 4)
    patterns = [0x123456789ABCDEF1, 0xF0E1D2C3B4A59687, 1, (1 << 64) - 1, 0x8000000000000000]
    vals = np.array([p & ((1 << W) - 1) for p in patterns], np.uint64).astype(np.dtype(f"u{W // 8}")).view(dt)
    x = np.repeat(vals, len(amounts))
    return [x, np.roll(x, 7), np.tile(amounts, len(vals)).astype(dt), np.zeros_like(x)]


@needs_hexagon
@pytest.mark.parametrize("T", TYPES, ids=str)
def test_variable_shift_amounts_match_the_interpreter(T):
    kernels = shift_kernels(T, T.bits)
    args = _inputs(T, T.bits)
    n = len(args[0])
    target, kind = HEXAGON[0]
    dev = pk.build(kernels, targets=[target]).on(kind)
    for kern in kernels:
        want = interpret(kern, [a.copy() for a in args], 1, n).buffers["o"]
        got = [a.copy() for a in args]
        dev[kern.name](*got, grid=1, block=n)
        bad = np.flatnonzero(got[3] != want)
        assert not len(bad), (f"{T} {kern.name} on {target}: x={args[0][bad[:4]]} y={args[1][bad[:4]]} "
                              f"k={args[2][bad[:4]]} gave {got[3][bad[:4]]}, want {want[bad[:4]]}")


def _hexagon_sources(kern):
    (dev,) = pk.build([kern], targets=["hexagon"]).imports
    return dev.sources["llvm"], dev.sources["asm"]


@pytest.mark.parametrize("T", [u8, u16, u32, u64], ids=str)
def test_no_variable_amount_funnel_shift_reaches_code_generation(T):
    """A rotate is a funnel shift after LLVM's optimizer; the code-generated IR has none with a
    variable amount: the amount is reduced (``and``) in front of a Hexagon register shift, and the
    assembly keeps that ``and``."""
    W = T.bits
    ll, asm = _hexagon_sources(shift_kernels(T, W)[0])
    calls = re.findall(r"call i\d+ @llvm\.fsh[lr]\.i\d+\(([^\n]*)\)", ll)
    assert all(re.search(r", i\d+ \d+$", c) for c in calls), f"variable-amount funnel shift left for codegen: {calls}"
    assert re.search(rf"= and i{W} %[\w.]+, {W - 1}\n", ll), "the amount is not reduced in the IR"
    assert "@llvm.hexagon.S2." in ll
    assert re.search(rf"= and\(r\d+,#{W - 1}\)|= extractu\(r\d+,#{W.bit_length() - 1},#0\)", asm), \
        "the amount's reduction did not reach the Hexagon assembly"


@pytest.mark.parametrize("T", [u32, i64], ids=str)
def test_no_variable_amount_i32_i64_shift_reaches_code_generation(T):
    """Shifts the optimizer could not fuse (other uses) would be fused into a rotate by the
    instruction selector: none with a variable amount is left for it."""
    ll, _ = _hexagon_sources(shift_kernels(T, T.bits)[-1])
    plain = re.findall(rf"= (?:shl|lshr|ashr)[a-z ]* i{T.bits} [^,\n]+, %[^\n]*", ll)
    assert not plain, f"variable-amount shifts left for the instruction selector: {plain}"
    right = "asr" if T.is_signed else "lsr"
    assert "@llvm.hexagon.S2.asl.r." in ll and f"@llvm.hexagon.S2.{right}.r." in ll


FUNNEL_IR = """
declare <2 x i32> @llvm.fshr.v2i32(<2 x i32>, <2 x i32>, <2 x i32>)
declare i16 @llvm.fshl.i16(i16, i16, i16)
define <2 x i32> @vec(<2 x i32> %a, <2 x i32> %k) {
  %r = call <2 x i32> @llvm.fshr.v2i32(<2 x i32> %a, <2 x i32> %a, <2 x i32> %k)
  ret <2 x i32> %r
}
define <2 x i64> @vshift(<2 x i64> %a, <2 x i64> %k) {
  %m = and <2 x i64> %k, splat (i64 63)
  %r = lshr <2 x i64> %a, %m
  ret <2 x i64> %r
}
define i16 @lit(i16 %a) {
  %r = call i16 @llvm.fshl.i16(i16 %a, i16 %a, i16 19)
  ret i16 %r
}
"""


def test_vector_and_literal_funnel_shifts():
    """Forms the frontend's kernels may not produce today but LLVM can (vectorized rotates and
    shifts, which the instruction selector scalarizes and may fuse into i64 rotates; literal amounts
    past the width): vectors go lane by lane through the scalar helpers, a literal funnel shift
    keeps the immediate rotate with its amount reduced."""
    from polykern.codegen.llvm_target import compile_ir, target_machine
    from polykern_hexagon.variable_shifts import inline_helpers, opaque_shifts

    tm = target_machine("hexagon-unknown-elf", "hexagonv68", "", 3)
    out = compile_ir(inline_helpers(opaque_shifts(FUNNEL_IR), tm), "hexagon-unknown-elf", "hexagonv68", "", 0, tm=tm)
    assert "@llvm.fshr.v2i32(<2 x i32>" not in out.ll.split("declare")[0]
    assert out.ll.count("@llvm.hexagon.S2.lsr.r.p(i64") == 5  # two lanes of each and the declaration
    assert "lshr <2 x i64>" not in out.ll
    assert "= and i32 %" in out.ll
    assert "call i16 @llvm.fshl.i16(i16 %a, i16 %a, i16 3)" in out.ll
