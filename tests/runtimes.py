"""Which targets can run here: every registered target kind whose module kind has a runtime loaded.

A backend may ship ``polykern_<x>.conformance`` with ``TARGETS = {target kind: [target strings]}``
(e.g. with feature attributes switched on) and ``SKIPS = {target kind: {case name or feature: reason}}``;
without it the target kind itself is tested with no skips.
"""
from __future__ import annotations

import importlib

from polykern import backends, numerics, registry
from polykern.interpret import KIND


def runnable_targets():
    """[(target string, module kind, skips)] for every target kind with a runtime here."""
    backends.load_all()
    out = []
    for key in registry.names("target.kind."):
        tk = registry.get(key)
        kind_name = key[len("target.kind."):]
        rec = backends.record_for_kind(tk.module_kind)
        if rec is None or not rec.runtime_available:
            continue
        try:
            conf = importlib.import_module(f"polykern_{rec.name}.conformance")
        except ModuleNotFoundError:
            conf = None
        targets = list(getattr(conf, "TARGETS", {}).get(kind_name, [kind_name]))
        skips = dict(getattr(conf, "SKIPS", {}).get(kind_name, {}))
        for t in targets:
            out.append((t, tk.module_kind, skips))
    return out


def all_target_kinds():
    """Every target kind a backend registered (codegen present), runtime or not: not the built-in
    ``interpret`` (registered by the first ``pk.build``; tests/test_interpret_mode.py), so the list does not
    depend on what ran before."""
    backends.load_all()
    return sorted(k[len("target.kind."):] for k in registry.names("target.kind.") if k != f"target.kind.{KIND}")


def conversion_specials_checked(kind: str) -> bool:
    """Whether a runtime's inf/NaN results of conversions are compared: where the numeric promises keep
    IEEE specials (numerics.specials_promised), and on lavapipe's Vulkan, which does not promise them in
    general but keeps those of conversions (polykern's SPIR-V rounds to f16 with integer operations).
    WebGPU promises no specials on any device (NVIDIA's driver and a newer lavapipe fold the f16 round
    trip of naga's SPIR-V themselves, giving -65520 for -inf): there only finite results are compared."""
    devices = backends.record_for_kind(kind).devices()["devices"]
    name = next((d for d in devices if "[selected]" in d), devices[0] if devices else "")
    return numerics.specials_promised(kind, name) or (kind == "vulkan" and "llvmpipe" in name.lower())
