"""Compile helpers for the webgpu tests: frontend kernels / IR -> webgpu modules."""
from __future__ import annotations

from polykern.ir.verifier import verify
from polykern.passes import run_default_passes
from polykern.passes.clone import clone_function
from polykern.passes.legalize_target import legalize_for_target
from polykern.target import Target

from polykern_webgpu import codegen


def lower(kernel):
    """A ``@pk.kernel`` (or an ir.Function) as the verified, simplified, legalized IR the backend receives."""
    fn = getattr(kernel, "ir", kernel)
    return legalize_for_target(clone_function(run_default_passes(verify(fn))), "webgpu")


def build(kernels, target="webgpu"):
    """The webgpu module of ``kernels`` (real if the runtime is registered, else fallback)."""
    return codegen.build([lower(k) for k in kernels], Target(target))


def validate_wgsl(ctx, text, entry, block=(64, 1, 1)):
    """Have naga (inside wgpu-native) compile ``text`` and build a compute pipeline from it."""
    shader = ctx.device.create_shader_module(code=text)
    return ctx.device.create_compute_pipeline(
        layout="auto",
        compute={"module": shader, "entry_point": entry,
                 "constants": dict(zip(("pk_block_x", "pk_block_y", "pk_block_z"), block))})
