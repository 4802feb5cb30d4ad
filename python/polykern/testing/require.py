"""``POLYKERN_REQUIRE``: tiers of the test suite that must not be skipped on this host.

Tests skip what the host lacks (a runtime, a validator). On a CI host that is supposed to have a tier,
such a skip hides a regression ("the OpenCL runtime stopped importing" reads as a green run).
``POLYKERN_REQUIRE=pocl,lavapipe,wgpu,spirv-val,naga,ld.lld,jax`` names the tiers this host must have; then

- ``tests/test_require.py`` fails for each required tier that is not present (with the probe's reason);
- a skip that says, as data, that it is the absence of a required tier fails instead
  (``polykern.testing.tier_skip``: ``pytest.mark.requires(tier)``, ``tier_skip.skip(tier, reason)``).
  Any other skip (a backend's declared refusal of a feature, a missing CUDA toolkit) stays a skip,
  whatever its reason says.

Unknown tier names are an error listing the known ones. Unset or empty: nothing is required.
This module holds the tiers and their probes and does not import pytest.
"""
from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from ..errors import PolykernError

ENV = "POLYKERN_REQUIRE"


def _runtime(name: str, device_word: Optional[str]) -> Callable[[], Optional[str]]:
    def probe() -> Optional[str]:
        from .. import backends

        backends.load_all()
        rec = next((r for r in backends.records() if r.name == name), None)
        if rec is None:
            return f"the {name} backend is not installed"
        if not rec.runtime_available:
            return f"the {name} runtime is not available: {rec.runtime_reason}"
        if device_word is None:
            return None
        devs = rec.devices()
        if any(device_word.lower() in d.lower() for d in devs["devices"]):
            return None
        return f"no {device_word} device among the {name} runtime's devices {devs['devices']} {devs['error']}"

    return probe


def _tool(*names: str) -> Callable[[], Optional[str]]:
    def probe() -> Optional[str]:
        if any(shutil.which(n) for n in names):
            return None
        return f"{' or '.join(names)} is not on PATH"

    return probe


def _naga() -> Optional[str]:
    try:
        import wgpu  # noqa: F401  (naga is inside wgpu-native: the WebGPU tests validate WGSL with it)
    except Exception as e:  # noqa: BLE001
        return f"wgpu (which carries naga) does not import: {e}"
    return None


def _ld_lld() -> Optional[str]:
    try:
        from polykern_rocm import lld  # the linker search the ROCm codegen itself uses
    except Exception as e:  # noqa: BLE001
        return f"polykern_rocm.lld does not import: {e}"
    return None if lld.candidates() else "no ld.lld candidate ($POLYKERN_LD_LLD, ld.lld, ld.lld-NN)"


def _module(name: str, install: str) -> Callable[[], Optional[str]]:
    def probe() -> Optional[str]:
        try:
            __import__(name)
        except Exception as e:  # noqa: BLE001 - any failure to import is the tier's absence
            return f"{name} does not import ({install}): {type(e).__name__}: {e}"
        return None

    return probe


@dataclass(frozen=True)
class Tier:
    """One tier: ``probe()`` returns None when it is present here, else the reason it is not;
    ``runtime`` names the backend whose runtime the tier is (None for a tool)."""

    probe: Callable[[], Optional[str]]
    runtime: Optional[str] = None


TIERS: Dict[str, Tier] = {
    "llvm": Tier(_runtime("llvm", None), runtime="llvm"),
    "pocl": Tier(_runtime("opencl", "Portable Computing Language"), runtime="opencl"),
    "lavapipe": Tier(_runtime("vulkan", "lavapipe"), runtime="vulkan"),
    "wgpu": Tier(_runtime("webgpu", None), runtime="webgpu"),
    "spirv-val": Tier(_tool("spirv-val")),
    "naga": Tier(_naga),
    "ld.lld": Tier(_ld_lld),
    "hexagon-emu": Tier(_runtime("hexagon", "emulated"), runtime="hexagon"),
    # polykern.jax (tests/test_framework_jax.py); torch has no tier: its PyPI wheel needs the CUDA libraries
    "jax": Tier(_module("jax", "pip install 'polykern[jax]'")),
}


def known(tier: str) -> str:
    """``tier`` itself when it is a tier, else a ``PolykernError`` listing the known ones."""
    if tier not in TIERS:
        raise PolykernError(f"unknown test tier {tier!r}; known tiers: {', '.join(sorted(TIERS))}")
    return tier


def runtime_tier(backend: str) -> Optional[str]:
    """The tier that is ``backend``'s runtime on a CI host (``vulkan`` -> ``lavapipe``), or None where no
    tier covers that backend (cuda, rocm, metal: no runtime on such a host)."""
    return next((t for t, spec in TIERS.items() if spec.runtime == backend), None)


@functools.lru_cache(maxsize=None)
def absent(tier: str) -> Optional[str]:
    """None when ``tier`` is present here, else why not (probed once per process)."""
    return TIERS[known(tier)].probe()


def required() -> List[str]:
    """The tiers named by ``POLYKERN_REQUIRE`` (a ``PolykernError`` for an unknown name)."""
    text = os.environ.get(ENV, "")
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in TIERS]
    if bad:
        raise PolykernError(f"{ENV}={text!r}: unknown tier {bad[0]!r}; known tiers: {', '.join(sorted(TIERS))}")
    return names
