"""polykern.testing.fallback_contract: passes for a correct backend, fails for broken ones."""
import itertools

import pytest

from polykern import backends, registry
from polykern.kbin import wire
from polykern.module import DeviceModule, FallbackModule, create_with_fallback
from polykern.kbin.payload_formats import PayloadFormats, registry_key
from polykern.testing.fallback_contract import check_fallback_contract, forced_fallback
from polykern.testing.isolation import isolated
from polykern.testing.synthetic import saxpy_info


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv("POLYKERN_COMPILE_FORCE_FALLBACK", raising=False)
    monkeypatch.delenv("POLYKERN_BACKEND_AUTOLOAD", raising=False)
    with isolated():
        backends.declare("opencl", "opencl", display_name="OpenCL", extra="opencl", config="opencl",
                         hint="with an OpenCL ICD", runtime=_no_pyopencl)
        registry.register(registry_key("opencl"), PayloadFormats("bytes", ("cl",)))
        yield


def _no_pyopencl():
    raise ModuleNotFoundError("No module named 'pyopencl'", name="pyopencl")


class RealOpenCL(DeviceModule):
    is_runnable = True

    def _get_function(self, info):
        return lambda *a, grid=None, block=None: None


def _build(payload=b"__kernel void saxpy() {}\n"):
    return create_with_fallback("opencl", payload, "cl", {"saxpy": saxpy_info()}, {"cl": payload.decode()})


def test_contract_without_runtime():
    report = check_fallback_contract("opencl", _build)
    assert report == {"kind": "opencl", "compared_with_real": False, "functions": ["saxpy"], "bytes": len(
        _build().save_to_bytes()), "source_formats": ["cl"]}


def test_contract_with_runtime_compares_bytes():
    registry.register("module.create.opencl", lambda p, f, m, s: RealOpenCL("opencl", p, f, m, s))
    assert check_fallback_contract("opencl", _build)["compared_with_real"] is True


def test_contract_detects_real_fallback_byte_mismatch():
    class Drifting(RealOpenCL):
        def save_to_bytes(self):
            return super().save_to_bytes() + b"\x00"

    registry.register("module.create.opencl", lambda p, f, m, s: Drifting("opencl", p, f, m, s))
    with pytest.raises(AssertionError, match="serialize differently"):
        check_fallback_contract("opencl", _build)


def test_contract_detects_nondeterminism():
    counter = itertools.count()
    with pytest.raises(AssertionError, match="non-deterministic"):
        check_fallback_contract("opencl", lambda: _build(f"// build {next(counter)}\n".encode()))


def test_contract_detects_wrong_kind_and_runnable_fallback():
    with pytest.raises(AssertionError, match="fallback kind is 'opencl'"):
        check_fallback_contract("cuda", _build)

    class Liar(FallbackModule):
        is_runnable = True

    with pytest.raises(AssertionError, match="is_runnable"):
        check_fallback_contract("opencl", lambda: Liar("opencl", b"x", "cl", {"saxpy": saxpy_info()}, {}))


def test_contract_detects_a_bad_error():
    class Quiet(FallbackModule):
        def _get_function(self, info):
            raise RuntimeError("nope")

    with pytest.raises(AssertionError, match="raised RuntimeError, not RuntimeNotLinkedError"):
        check_fallback_contract("opencl", lambda: Quiet("opencl", b"x", "cl", {"saxpy": saxpy_info()}, {"cl": "x"}))


def test_forced_fallback_restores_environment(monkeypatch):
    import os

    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "keep")
    with forced_fallback(None):
        assert "POLYKERN_COMPILE_FORCE_FALLBACK" not in os.environ
    assert os.environ["POLYKERN_COMPILE_FORCE_FALLBACK"] == "keep"


def test_contract_requires_the_fix_in_the_message():
    from polykern.errors import RuntimeNotLinkedError

    class Vague(FallbackModule):
        def _get_function(self, info):
            raise RuntimeNotLinkedError(f"OpenCL cannot run '{info.name}'")

    with pytest.raises(AssertionError, match="how to fix"):
        check_fallback_contract("opencl", lambda: Vague("opencl", b"x", "cl", {"saxpy": saxpy_info()}, {"cl": "x"}))


def test_contract_needs_the_declared_payloads():
    registry.remove(registry_key("opencl"))
    with pytest.raises(AssertionError, match=r"module.payload.opencl is None, not the PayloadFormats"):
        check_fallback_contract("opencl", _build)


def test_contract_detects_a_module_its_kind_does_not_declare():
    registry.register(registry_key("opencl"), PayloadFormats("bytes", ("spir",)), override=True)
    with pytest.raises(AssertionError, match=r"fallback contract of 'opencl' violated: the module \(layout bytes, "
                                             r"fmt 'cl'\) is not one the kind declares: layout 1 \(bytes\) with fmt 'spir'"):
        check_fallback_contract("opencl", _build)


def test_contract_compares_the_verdicts_with_the_runtime_loader():
    def load(data, sources):
        fmt, fmap, payload = wire.decode_device_payload("opencl", data)
        return RealOpenCL("opencl", payload, fmt, fmap, sources)

    registry.register("module.load_from_bytes.opencl", load)
    assert check_fallback_contract("opencl", _build)["kind"] == "opencl"
    assert registry.get("module.load_from_bytes.opencl") is load  # put back after the fallback verdict
