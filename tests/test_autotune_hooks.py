"""A build hook is part of what an autotuning choice depends on (red-team pass over the plugin interface): the choice
measured with one polykern.hook.opencl.postproc hook is not reused with another hook or with none, since
the hook changes the code that was measured (docs/backends.md "Hooks")."""
import json

import numpy as np
import pytest

import polykern as pk
from polykern import backends, hooks, registry
from polykern.testing import tier_skip
from autotune_support import CONFIGS, cache_dir, cache_files, run_checked, scaled_add  # noqa: F401 (fixture)


def tuning_a(source, target):
    return "#define PK_TUNING_A 1\n" + source


def tuning_b(source, target):
    return "#define PK_TUNING_B 1\n" + source


@pytest.fixture(autouse=True)
def _opencl_and_no_hooks():
    backends.load_all()
    rec = backends.record_for_kind("opencl")
    if rec is None or not rec.runtime_available:
        why = rec.runtime_reason if rec else "backend not installed"
        tier_skip.skip("pocl", f"opencl runtime not available: {why}")
    yield
    for name in registry.names(hooks.PREFIX):
        registry.remove(name)


def test_a_changed_hook_does_not_reuse_the_tuning_of_another(cache_dir):
    tuned = pk.autotune(configs=CONFIGS, key=["n"], reps=1, warmup=0)(scaled_add)
    registry.register("polykern.hook.opencl.postproc", tuning_a)
    run_checked(tuned.build(targets=["opencl"]), 1000)
    first = cache_files(cache_dir)
    record = json.loads((cache_dir / first[0]).read_text())
    assert record["identity"]["hooks"] == [["hook_opencl_postproc", hooks.identity(tuning_a)]]

    registry.register("polykern.hook.opencl.postproc", tuning_b, override=True)
    run_checked(tuned.build(targets=["opencl"]), 1000)     # was: the choice measured with tuning_a, reused
    assert len(cache_files(cache_dir)) == 2
    registry.remove("polykern.hook.opencl.postproc")
    run_checked(tuned.build(targets=["opencl"]), 1000)
    assert len(cache_files(cache_dir)) == 3
