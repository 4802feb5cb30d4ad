"""The fallback contract (docs/internals.md "Modules"), as one reusable check.

A backend's test calls::

    from polykern.testing.fallback_contract import check_fallback_contract
    report = check_fallback_contract("cuda", lambda: build_my_module())

where the callable builds a module through ``create_with_fallback`` (for example
``registry.get("target.build.cuda")(funcs, Target("cuda"))``). The check builds it twice with
``POLYKERN_COMPILE_FORCE_FALLBACK=1`` and, when ``module.create.<kind>`` is registered, once
without; it raises ``AssertionError`` (this is test code) describing the first violation:

- the fallback has the expected ``kind`` and ``is_runnable`` is false;
- ``save_to_bytes`` is identical to the real module's (runtime present) or across two
  fallback builds (runtime absent), and the exported artifacts are identical too;
- ``get_function`` raises ``RuntimeNotLinkedError`` naming the kernel, the backend and the fix;
- ``inspect_source`` works for the default and for every embedded format;
- the kind declares the payloads it holds (``module.payload.<kind>``, a ``PayloadFormats``) and
  its module is one of them; its artifact, and the same artifact with the module rewritten to a fmt
  or layout the kind does not hold, get the same verdict with the runtime's loader and without it
  (the rewritten ones: an ``ArtifactError`` naming the kind, the layout and the fmt).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Dict, Iterator, Optional

from .. import artifact, backends, registry
from ..kbin import wire
from ..errors import ArtifactError, RuntimeNotLinkedError
from ..kbin.messages import quote
from ..module import FORCE_FALLBACK_ENV, Module, RootModule
from ..kbin.payload_formats import PayloadFormats, registry_key
from .kbin_rewrite import rewrite_module

__all__ = ["check_fallback_contract", "forced_fallback"]


def _offers_its_fixes(kind: str, text: str) -> bool:
    """The message names the backend's pip extra / install step and Bazel config where it has them,
    and always the way out of loading the artifact elsewhere (or it names the forced fallback)."""
    if FORCE_FALLBACK_ENV in text:
        return True
    rec = backends.record_for_kind(kind)
    needles = ["load this artifact where"]
    if rec is not None:
        needles += [rec.install] if rec.install else ([f"polykern[{rec.extra}]"] if rec.extra else [])
        needles += [f"--config={rec.config}"] if rec.config else []
    return all(n.lower() in text.lower() for n in needles)


@contextlib.contextmanager
def forced_fallback(value: Optional[str] = "1") -> Iterator[None]:
    """Set (or with ``None`` unset) POLYKERN_COMPILE_FORCE_FALLBACK for the duration."""
    old = os.environ.get(FORCE_FALLBACK_ENV)
    try:
        if value is None:
            os.environ.pop(FORCE_FALLBACK_ENV, None)
        else:
            os.environ[FORCE_FALLBACK_ENV] = value
        yield
    finally:
        if old is None:
            os.environ.pop(FORCE_FALLBACK_ENV, None)
        else:
            os.environ[FORCE_FALLBACK_ENV] = old


def _fail(kind: str, msg: str) -> None:
    raise AssertionError(f"fallback contract of '{kind}' violated: {msg}")


def _check(cond: bool, kind: str, msg: str) -> None:
    if not cond:
        _fail(kind, msg)


def _artifact(m: Module) -> bytes:
    return RootModule.collect([m], targets=[]).export(metadata={"compiler": "polykern contract-check"})


def check_fallback_contract(kind: str, build: Callable[[], Module]) -> Dict[str, Any]:
    """Check the fallback contract for module kind ``kind``; returns a small report dict."""
    with forced_fallback("1"):
        fb1 = build()
        fb2 = build()
    for fb in (fb1, fb2):
        _check(isinstance(fb, Module), kind, f"build() returned {fb!r}, not a Module")
        _check(fb.kind == kind, kind, f"fallback kind is {fb.kind!r}")
        _check(fb.is_runnable is False, kind, "fallback is_runnable is not False")
    _check(bool(fb1.functions), kind, "the module describes no functions (build at least one kernel)")
    data = fb1.save_to_bytes()
    _check(isinstance(data, bytes) and len(data) > 0, kind, "save_to_bytes() returned no bytes")
    _check(fb2.save_to_bytes() == data, kind, "two fallback builds serialize differently (non-deterministic)")
    _check(_artifact(fb1) == _artifact(fb2), kind, "two fallback builds export different artifacts")

    real = None
    if registry.get(f"module.create.{kind}") is not None:
        with forced_fallback(None):
            real = build()
        _check(real.kind == kind, kind, f"real module kind is {real.kind!r}")
        _check(real.is_runnable is True, kind, "module.create is registered but the module is not runnable")
        _check(real.save_to_bytes() == data, kind, "fallback and real modules serialize differently")
        _check(real.functions == fb1.functions, kind, "fallback and real modules describe different functions")
        _check(_artifact(real) == _artifact(fb1), kind, "fallback and real modules export different artifacts")

    _check_payload_verdicts(kind, fb1)

    display = backends.display_name(kind)
    for name in fb1.functions:
        try:
            fb1.get_function(name)
        except RuntimeNotLinkedError as e:
            text = str(e)
            for needle in (f"'{name}'", display):
                _check(needle in text, kind, f"get_function error does not mention {needle!r}: {text}")
            # The fix: every way to get the runtime that this backend has (and no other), or
            # (runtime present) stop forcing the fallback.
            _check(_offers_its_fixes(kind, text), kind, f"get_function error does not say how to fix it: {text}")
        except Exception as e:  # the contract names the exception type exactly
            _fail(kind, f"get_function({name!r}) raised {type(e).__name__}, not RuntimeNotLinkedError: {e}")
        else:
            _fail(kind, f"get_function({name!r}) on a fallback did not raise")

    default = fb1.inspect_source()
    _check(isinstance(default, str) and default.strip() != "", kind, "inspect_source() returned no text")
    for fmt, text in fb1.sources.items():
        _check(fb1.inspect_source(fmt) == text, kind, f"inspect_source({fmt!r}) differs from sources[{fmt!r}]")
        if real is not None:
            _check(real.inspect_source(fmt) == text, kind, f"real inspect_source({fmt!r}) differs from fallback")
    if real is not None:
        _check(real.inspect_source() == default, kind, "real and fallback default inspect_source() differ")
    return {"kind": kind, "compared_with_real": real is not None, "functions": sorted(fb1.functions),
            "bytes": len(data), "source_formats": sorted(fb1.sources)}


def _verdict(data: bytes) -> str:
    """What loading ``data`` gives: "loaded" or the ArtifactError's message."""
    try:
        artifact.load(data)
    except ArtifactError as e:
        return str(e)
    return "loaded"


def _verdicts(kind: str, data: bytes) -> Dict[str, str]:
    """{"runtime": verdict with the kind's loader (when registered), "fallback": verdict without it}."""
    key = f"module.load_from_bytes.{kind}"
    loader = registry.get(key)
    out = {"fallback": ""}
    if loader is not None:
        out["runtime"] = _verdict(data)
        registry.remove(key)
    try:
        out["fallback"] = _verdict(data)
    finally:
        if loader is not None:
            registry.register(key, loader, override=True)
    return out


def _check_payload_verdicts(kind: str, fb: Module) -> None:
    accepted = registry.get(registry_key(kind))
    _check(isinstance(accepted, PayloadFormats), kind, f"{registry_key(kind)} is {accepted!r}, not the "
           "PayloadFormats its codegen registers (the layout and fmts its modules hold)")
    assert isinstance(accepted, PayloadFormats)
    layout = getattr(fb, "layout", "")
    _check(layout == accepted.layout and fb.fmt in accepted.fmts, kind,
           f"the module (layout {layout}, fmt {fb.fmt!r}) is not one the kind declares: {accepted.describe()}")
    good = _artifact(fb)
    for verdict in _verdicts(kind, good).values():
        _check(verdict == "loaded", kind, f"its own artifact does not load: {verdict}")
    other = "bytes" if accepted.layout == "smap" else "smap"
    unheld = "x" + "".join(accepted.fmts)  # a fmt none of the accepted ones is
    for change, layout_id, fmt in ((dict(fmt=unheld), accepted.layout, unheld), (dict(layout=other), other, fb.fmt)):
        verdicts = _verdicts(kind, rewrite_module(good, 1, **change))
        _check(len(set(verdicts.values())) == 1, kind, f"with {change} the runtime and the fallback disagree: {verdicts}")
        text = verdicts["fallback"]
        for needle in (f"{kind} module", f"layout {wire.LAYOUTS.index(layout_id)} ({layout_id})",
                       f"fmt {quote(fmt)}", accepted.describe()):
            _check(needle in text, kind, f"loading with {change} does not say {needle!r}: {text}")
