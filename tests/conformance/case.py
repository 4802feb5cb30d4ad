"""The conformance case record and launch helpers shared by the kernel files."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, FrozenSet, List


@dataclass(frozen=True)
class Case:
    """A conformance case: kernels to build, and ``run(mod, rng)`` that launches them on ``mod``
    (a device module) and raises AssertionError on a wrong result.

    ``features`` names what a backend may lack (``f64``, ``f16``, ``i64``, ``i8``, ``i16``,
    ``atomic_f32``, ``bool_buffer`` ...); a backend's skip list maps features or case names to reasons.
    """

    name: str
    kernels: List = field(hash=False)
    run: Callable = field(hash=False)
    features: FrozenSet[str] = frozenset()


def launch_1d(mod, name, n, args, block=64):
    mod[name](*args, grid=max(1, (n + block - 1) // block), block=block)
