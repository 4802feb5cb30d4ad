"""A module of a kind no installed backend provides (format version 2), shared by tests/test_kbin_v2.py
and tests/test_native.py: a helper module, so that both find it under Bazel too (//tests:support)."""
from polykern.module import DeviceModule


def future_module(fmap) -> DeviceModule:
    """A module of kind ``zz_future`` with named sections."""
    return DeviceModule("zz_future", {"saxpy": b"\x00\x01future code\xff", "meta": b"text section\n"}, "zzbin",
                        fmap, {"zz-asm": "future assembly\n"})
