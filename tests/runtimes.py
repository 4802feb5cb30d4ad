"""Which targets can run here: every registered target kind whose module kind has a runtime loaded.

A backend may ship ``polykern_<x>.conformance`` with ``TARGETS = {target kind: [target strings]}``
(e.g. with feature attributes switched on) and ``SKIPS = {target kind: {case name or feature: reason}}``;
without it the target kind itself is tested with no skips.
"""
from __future__ import annotations

import importlib

from polykern import backends, registry
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


#: The attributes a test that compiles for every backend gives a target kind (the newest device generation
#: its codegen knows, so that the most of it is exercised); a kind not listed here compiles bare.
TARGET_ATTRIBUTES = {"cuda": "-arch=sm_90", "nvptx": "-arch=sm_90", "rocm": "-mcpu=gfx90a"}


def every_target():
    """One target string per registered target kind (``all_target_kinds``, with ``TARGET_ATTRIBUTES``): a
    backend added with one folder and one line is in the list, unedited."""
    return [f"{k} {TARGET_ATTRIBUTES[k]}" if k in TARGET_ATTRIBUTES else k for k in all_target_kinds()]
