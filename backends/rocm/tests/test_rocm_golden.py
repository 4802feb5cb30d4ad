"""Golden AMDGPU assembly (with the amdhsa kernel metadata) of the rocm target for three corpus
kernels: a plain elementwise kernel, a shared-memory reduction with barriers, and 3-D launch
geometry. A diff points at what the emitter or LLVM changed; ``POLYKERN_UPDATE_GOLDEN=1`` rewrites
the files after a reviewed change (LLVM upgrades change them too)."""
from __future__ import annotations

import pathlib

import pytest

from polykern.testing.golden import check_golden

from polykern import backends, registry
from polykern.testing.c_corpus import corpus
from polykern.target import Target

GOLDEN = pathlib.Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", ["saxpy", "shared_reduce", "grid_3d"])
def test_rocm_golden(name):
    backends.load_all()
    dev = registry.get("target.build.rocm")([corpus()[name]], Target("rocm -mcpu=gfx90a"))
    text = dev.sources["asm"]
    path = GOLDEN / f"rocm_{name}.s"
    check_golden(path, text)
