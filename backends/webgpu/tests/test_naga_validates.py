"""wgpu-native's naga must accept every shader we emit: parse, validate, and build a
compute pipeline (which also lowers it to SPIR-V for the lavapipe Vulkan driver)."""
from __future__ import annotations

import pytest

import polykern as pk
from polykern import Buffer, f32, i32, u32
from polykern.ir.verifier import verify
from polykern.passes.legalize_target import legalize_for_target
from polykern_webgpu.wgsl_emit import emit_wgsl

from helpers import lower, validate_wgsl
from ir_kernels import F16_KERNELS, KERNELS


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("block", [(64, 1, 1), (8, 4, 2)])
def test_naga_accepts_ir_kernel(wgpu_context, name, block):
    if name in F16_KERNELS and "shader-f16" not in wgpu_context.features:
        pytest.skip("the WebGPU device lacks shader-f16")
    text, attrs = emit_wgsl(legalize_for_target(verify(KERNELS[name]()), "webgpu"), f16_ok=name in F16_KERNELS)
    validate_wgsl(wgpu_context, text, attrs["entry"], block)


@pk.kernel
def fe_mixed(n: i32, k: u32, x: Buffer[f32, "readonly"], y: Buffer[f32], h: Buffer[i32]):
    i = pk.global_id(0)
    t = pk.shared(f32, 32)
    p = pk.local(i32, 4)
    if pk.group_id(0) * pk.local_size(0) >= n:  # uniform: a whole workgroup returns before the barrier
        return
    acc = 0.0
    j = 0
    while j < 4:
        p[j] = j * i
        j += 1
    for q in range(3, -9, -2):
        if q == 1:
            continue
        acc += pk.sqrt(pk.abs(x[i])) * f32(q)
    t[pk.local_id(0) % 32] = acc
    pk.barrier()
    y[i] = pk.select(i % 2 == 0 and k > 3, t[0], -acc) + f32(p[3] >> (i & 3))
    pk.atomic_max(h, 0, i)
    old = pk.atomic_cas(h, 1, 0, i)
    if old != 0 or i // 3 == 2:
        pk.atomic_xchg(h, 2, i)


def test_naga_accepts_frontend_kernel(wgpu_context):
    text, attrs = emit_wgsl(lower(fe_mixed))
    validate_wgsl(wgpu_context, text, attrs["entry"])


def test_validation_can_fail(wgpu_context):
    """Negative control: the validator really rejects bad WGSL (a u32 stored into an i32)."""
    text, attrs = emit_wgsl(verify(KERNELS["saxpy"]()))
    broken = text.replace("y[i] = ", "y[i] = 1u + ")
    with pytest.raises(Exception, match="(?i)u32|type"):
        validate_wgsl(wgpu_context, broken, attrs["entry"])


@pk.kernel
def cmp_args(n: i32, o: Buffer[i32]):
    lid = pk.local_id(0)
    b = pk.select(lid >= n, lid < 49, True)
    c = pk.select(lid < n, lid > 2, lid <= 3)
    o[lid] = i32(b) + 2 * i32(c)


def test_comparisons_as_call_arguments(wgpu_context):
    """``select(true, lid < 49i, lid >= n)`` is a template list to WGSL's parser (fuzz finding, seed
    7000022): comparisons keep their parentheses in calls with several arguments."""
    text, attrs = emit_wgsl(lower(cmp_args))
    validate_wgsl(wgpu_context, text, attrs["entry"])
