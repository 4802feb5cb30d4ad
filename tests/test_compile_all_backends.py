"""Every example and conformance kernel compiles for every backend on this (CPU-only) host, with
POLYKERN_COMPILE_FORCE_FALLBACK=1 and without, giving identical bytes either way. A kernel using a
feature a backend lacks must be refused with a KernelTypeError that names the backend; kernels that use
no optional feature must compile everywhere."""
import pytest

import polykern as pk
from conformance import ALL_CASES
from polykern.errors import KernelTypeError
from polykern.target import Target
from backend_list import REPO, gen
from runtimes import all_target_kinds

KINDS = all_target_kinds()
EXPECTED_KINDS = set(gen.target_kinds(gen.read_backends(REPO)))  # THE list: backends/backends.bzl


def test_every_backend_registered():
    missing = EXPECTED_KINDS - set(KINDS)
    assert not missing, f"target kinds without a code generator: {sorted(missing)}"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", ALL_CASES, ids=[c.name for c in ALL_CASES])
def test_compiles_with_and_without_fallback(case, kind, monkeypatch):
    try:
        monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")
        forced = pk.build(case.kernels, targets=[kind])
        monkeypatch.delenv("POLYKERN_COMPILE_FORCE_FALLBACK")
        normal = pk.build(case.kernels, targets=[kind])
    except KernelTypeError as e:
        assert case.features, f"{case.name} uses no optional feature but {kind} refused it: {e}"
        text = str(e).lower()
        names = {kind, Target.parse(kind).module_kind}
        assert any(n in text for n in names), f"refusal must name the backend ({names}): {e}"
        return
    (dev_forced,) = forced.imports
    (dev_normal,) = normal.imports
    assert not dev_forced.is_runnable
    assert dev_forced.kind == dev_normal.kind
    assert dev_forced.save_to_bytes() == dev_normal.save_to_bytes()
    assert forced.export(None) == normal.export(None)
    assert dev_forced.inspect_source()
