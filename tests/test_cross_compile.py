"""Cross-compilation end to end, for every runtime present on this host:
- an artifact built with POLYKERN_COMPILE_FORCE_FALLBACK=1 (as on a host with no runtime) is
  byte-identical to the one built with the runtime loaded;
- the fallback-built artifact, loaded by the real runtime, runs and gives the right answer;
- on the fallback module itself, launching raises RuntimeNotLinkedError.
"""
import numpy as np
import pytest

import polykern as pk
from conformance.kernels_parallel import _reduction, _saxpy
from polykern.errors import RuntimeNotLinkedError
from runtimes import runnable_targets

TARGETS = [(t, k) for t, k, _ in runnable_targets()]


@pytest.mark.parametrize("target,kind", TARGETS, ids=[t for t, _ in TARGETS])
def test_fallback_artifact_runs_on_real_runtime(target, kind, monkeypatch, tmp_path):
    kernels = [_saxpy.saxpy, _reduction.block_sum]
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
    cross = pk.build(kernels, targets=[target])
    assert not cross.on(kind).is_runnable
    with pytest.raises(RuntimeNotLinkedError):
        cross.on(kind)["saxpy"]
    cross.export(tmp_path / "cross.kbin")
    monkeypatch.delenv("POLYKERN_COMPILE_FORCE_FALLBACK")
    native = pk.build(kernels, targets=[target])
    assert native.on(kind).is_runnable
    native.export(tmp_path / "native.kbin")
    assert (tmp_path / "cross.kbin").read_bytes() == (tmp_path / "native.kbin").read_bytes()
    assert cross.on(kind).save_to_bytes() == native.on(kind).save_to_bytes()

    loaded = pk.load(tmp_path / "cross.kbin").on(kind)
    rng = np.random.default_rng(7)
    _saxpy.run(loaded, rng, n=10_007)
    _reduction.run(loaded, rng, n=5_001)
