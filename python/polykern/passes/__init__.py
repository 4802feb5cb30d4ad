"""Target-independent IR passes run before code generation."""
from .simplify import simplify  # noqa: F401
from .widen_bf16 import widen_bf16  # noqa: F401


def run_default_passes(fn):
    """The passes every build runs, in order. Each returns a verified function."""
    from ..ir.verifier import verify

    return verify(simplify(widen_bf16(fn)))
