"""Which targets can run here: every registered target kind whose module kind has a runtime loaded.

A backend may ship ``polykern_<x>.conformance`` with ``TARGETS = {target kind: [target strings]}``
(e.g. with feature attributes switched on), ``device_skips(target kind) -> {feature: reason}`` (what
the selected device lacks) and ``UNCHECKED = {target kind: reason}`` (kinds the conformance suite does not
run again in checked mode, :func:`unchecked`); without it the target kind itself is tested, also checked. The skips are
``polykern.testing.fuzzcase.target_skips``: what the target kind's Capabilities declare it refuses or
lacks (polykern/capabilities.py), and what the device lacks.
"""
from __future__ import annotations

import importlib

from polykern import backends, numerics, registry
from polykern.interpret import KIND
from polykern.testing.fuzzcase import numerics_backend, target_skips


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
        conf = _conformance(rec.name)
        targets = list(getattr(conf, "TARGETS", {}).get(kind_name, [kind_name]))
        skips = target_skips(kind_name)
        for t in targets:
            out.append((t, tk.module_kind, skips))
    return out


def _conformance(backend_name):
    try:
        return importlib.import_module(f"polykern_{backend_name}.conformance")
    except ModuleNotFoundError:
        return None


def unchecked(target_kind):
    """Why the conformance suite does not run ``target_kind`` again in checked mode (its backend's
    conformance ``UNCHECKED``), or "" where it does: every kind, unless its backend says why not."""
    rec = backends.record_for_kind(registry.get(f"target.kind.{target_kind}").module_kind)
    conf = _conformance(rec.name) if rec is not None else None
    return getattr(conf, "UNCHECKED", {}).get(target_kind, "")


def compile_targets():
    """One target string per registered target kind (``all_target_kinds``), runtime or not: the first of
    its backend's conformance ``TARGETS`` (e.g. ``webgpu -shader_f16=true``), else the kind itself. Tests
    that compile for every backend use this list, so a new backend joins them unedited."""
    out = []
    for kind_name in all_target_kinds():
        rec = backends.record_for_kind(registry.get(f"target.kind.{kind_name}").module_kind)
        conf = _conformance(rec.name) if rec is not None else None
        out.append(list(getattr(conf, "TARGETS", {}).get(kind_name, [kind_name]))[0])
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
    return numerics.specials_promised(numerics_backend(kind), name) or (kind == "vulkan" and "llvmpipe" in name.lower())
