"""``POLYKERN_REQUIRE``: tiers of the test suite that must not be skipped on this host.

Tests skip, with a reason, what the host lacks (a runtime, a validator). On a CI host that is supposed
to have a tier, such a skip hides a regression ("the OpenCL runtime stopped importing" reads as a
green run). ``POLYKERN_REQUIRE=pocl,lavapipe,wgpu,spirv-val,naga,ld.lld`` names the tiers this host
must have; then

- ``tests/test_require.py`` fails for each required tier that is not present (with the probe's reason);
- a test skipped with a reason that names a required tier *and says it is absent* ("not available",
  "not installed", "no OpenCL platform", ...) fails instead (the pytest hook below, which the
  repository's root ``conftest.py`` installs for every test directory). A backend's declared refusal of
  a feature ("WGSL has no 64-bit floating-point type") stays a skip.

Unknown tier names are an error listing the known ones. Unset or empty: nothing is required.
"""
from __future__ import annotations

import os
import re
import shutil
from typing import Callable, Dict, List, Optional, Tuple

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


#: tier -> (probe returning None when present or the reason it is not, words that name it in a skip)
TIERS: Dict[str, Tuple[Callable[[], Optional[str]], Tuple[str, ...]]] = {
    "llvm": (_runtime("llvm", None), ("llvm runtime", "cpu runtime")),
    "pocl": (_runtime("opencl", "Portable Computing Language"), ("opencl", "pocl")),
    "lavapipe": (_runtime("vulkan", "lavapipe"), ("vulkan", "lavapipe")),
    "wgpu": (_runtime("webgpu", None), ("webgpu", "wgpu")),
    "spirv-val": (_tool("spirv-val"), ("spirv-val", "spirv-as", "spirv-dis")),
    "naga": (_naga, ("naga",)),
    "ld.lld": (_ld_lld, ("ld.lld",)),
    "hexagon-emu": (_runtime("hexagon", "emulated"), ("qemu-hexagon", "hexagon runtime")),
}


def skip_if_absent(tier: str) -> None:
    """Skip the calling test when ``tier`` is absent here, with a reason naming it (so that a host which
    requires the tier fails instead, like every other absent-tier skip)."""
    reason = TIERS[tier][0]()
    if reason is not None:
        import pytest  # only a test calls this; the module itself needs no pytest

        pytest.skip(f"{tier} not available: {reason}")


def required() -> List[str]:
    """The tiers named by ``POLYKERN_REQUIRE`` (a ``PolykernError`` for an unknown name)."""
    text = os.environ.get(ENV, "")
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in TIERS]
    if bad:
        raise PolykernError(f"{ENV}={text!r}: unknown tier {bad[0]!r}; known tiers: {', '.join(sorted(TIERS))}")
    return names


# How a skip says that what it needs is *absent* (a lost tier), as opposed to a backend's declared refusal
# of a feature ("WGSL has no 64-bit floating-point type", "refused at compile time"), which is expected
# on every host and must stay a skip.
_ABSENT = re.compile(r"not available|unavailable|not installed|not on path|could not be imported|"
                     r"cannot be imported|not importable|not registered|is not here|not present|"
                     r"\bno [\w. -]*(runtime|platform|device|adapter)s?\b|does not import")


def says_absent(reason: str) -> bool:
    """True when a skip reason says a runtime, tool or device is absent (not a declared refusal)."""
    return bool(_ABSENT.search(reason.lower()))


def tiers_named_by(reason: str) -> List[str]:
    """The tiers whose words appear in a skip reason (case-insensitive, whole words)."""
    low = reason.lower()
    return [t for t, (_, words) in TIERS.items()
            if any(re.search(r"(?<![\w.-])" + re.escape(w) + r"(?![\w-])", low) for w in words)]
