"""The device strings the device-array and stream tests run on (test_device_api.py, test_streams.py), and the
tiered skip where a device's runtime, or a device of it, is absent here."""
from __future__ import annotations

import polykern as pk
from polykern.testing import tier_skip
from runtimes import runnable_targets

#: device string -> the target whose modules launch on it (the CPU runtime's target is "llvm")
DEVICES = {"cpu": "llvm", "opencl:0": "opencl", "vulkan:0": "vulkan", "webgpu": "webgpu"}


def target_or_skip(device: str) -> str:
    """The device's target kind, or a (tiered) skip where its runtime or a device of it is absent here (wgpu imports
    on a host without a Vulkan driver, then finds no adapter: the H200 machine)."""
    target = DEVICES[device]
    if target not in {t.split()[0] for t, _, _ in runnable_targets()}:
        tier_skip.skip_runtime(target, f"no {target} runtime here")
    if target not in pk.backends.runnable_kinds():
        tier_skip.skip_runtime(target, f"the {target} runtime finds no device here")
    return target
