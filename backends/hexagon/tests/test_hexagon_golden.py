"""Golden Hexagon assembly of the hexagon target for three corpus kernels: a plain
elementwise kernel, a shared-memory reduction with barriers, and 3-D launch geometry. A diff points
at what the emitter or LLVM changed; ``POLYKERN_UPDATE_GOLDEN=1`` rewrites the files after a reviewed
change (LLVM upgrades change them too)."""
from __future__ import annotations

import difflib
import os
import pathlib

import pytest

from polykern import backends, registry
from polykern.codegen.c_corpus import corpus
from polykern.target import Target

GOLDEN = pathlib.Path(__file__).parent / "golden"
UPDATE = os.environ.get("POLYKERN_UPDATE_GOLDEN", "") not in ("", "0")


@pytest.mark.parametrize("name", ["saxpy", "shared_reduce", "grid_3d"])
def test_hexagon_golden(name):
    backends.load_all()
    dev = registry.get("target.build.hexagon")([corpus()[name]], Target("hexagon -mcpu=hexagonv68"))
    text = dev.sources["asm"]
    path = GOLDEN / f"hexagon_{name}.s"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing; run with POLYKERN_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), path.name, "emitted"))
        pytest.fail(f"{path.name} changed (POLYKERN_UPDATE_GOLDEN=1 regenerates it):\n{diff}")
