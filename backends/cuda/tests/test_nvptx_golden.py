"""Golden PTX of the nvptx target for three corpus kernels: a plain elementwise kernel, a shared
memory reduction with barriers and atomics, and 3-D launch geometry. A diff points at what the
emitter or LLVM changed; ``POLYKERN_UPDATE_GOLDEN=1`` rewrites the files after a reviewed change
(LLVM upgrades change them too)."""
from __future__ import annotations

import pathlib

import pytest

from polykern.testing.golden import check_golden

from polykern import registry
from polykern.testing.c_corpus import corpus
from polykern.target import Target

GOLDEN = pathlib.Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", ["saxpy", "shared_reduce", "grid_3d"])
def test_nvptx_golden(name):
    dev = registry.get("target.build.nvptx")([corpus()[name]], Target("nvptx -arch=sm_90"))
    text = dev.sources["ptx"]
    path = GOLDEN / f"nvptx_{name}.ptx"
    check_golden(path, text)
