"""The IR one target's emitter receives: what its instructions do not keep of the language's meaning,
written on the IR as its capabilities declare (polykern/capabilities.py).

:func:`legalize_for_target` runs ``legalize_numerics`` (integer division, remainder, shifts, float ->
int, fmod, pow) and then ``legalize_f16`` (16-bit float conversions on the bits, which also rounds the
f16 results the first pass computed in f32), verifying after each. The pipeline calls it on each
target's own copy of the kernels (never for the interpreter, which is the meaning itself); a test that
drives an emitter directly calls it too, so the emitter sees what a build gives it.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.verifier import verify
from .legalize_f16 import legalize_f16
from .legalize_numerics import legalize_numerics

__all__ = ["legalize_for_target"]


def legalize_for_target(fn: ir.Function, target) -> ir.Function:
    """``fn`` (changed in place: pass the target's own copy) legalized for ``target`` (a Target or a
    target kind name)."""
    return verify(legalize_f16(verify(legalize_numerics(fn, target)), target))
