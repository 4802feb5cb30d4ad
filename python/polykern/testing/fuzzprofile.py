"""Refusal profiles: which programs of a fuzz run are made for a target that refuses some features.

The differential fuzzer (tools/fuzz.py) generates one program and runs it on every target; a target
whose target kind declares that it refuses a feature the program uses (``Capabilities.refuses``,
polykern/capabilities.py, read through :func:`fuzzcase.declared_refusals`) only counts "refused"
and compares nothing. So a share of the programs is generated with one such target's refusals left out
(``kernelgen.generate(avoid=...)``): its *profile*. Where the target's backend promises no IEEE specials
on any device (``numerics.specials_promised``: webgpu, whose WGSL allows finite math), the profile also
leaves out NaN and infinity literals and inputs ("specials"): a NaN/inf that reaches control flow or an
index leaves the whole program unchecked there. Program ``i`` of a run gets one by its index
alone (:func:`profile_for`), so a seed and an index (``--start``) still give the same program, whatever
the other programs of the run were.

With ``every`` = k, the programs with ``i % k == k - 1`` are profiled, in turn for each refusing target
(in the order the run names them): one in k programs, each refusing target's profile once in
k * (number of refusing targets). ``every`` = 0 profiles nothing.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from .. import numerics
from ..target import Target
from . import kernelgen
from .fuzzcase import declared_refusals, numerics_backend

Profile = Tuple[str, frozenset]  # (target kind, the generator features it leaves out)


def refused_features(kind: str) -> frozenset:
    """The generator features that target kind ``kind`` declares it refuses (``Capabilities.refuses``):
    what a program made for ``kind`` leaves out."""
    declared = set(declared_refusals(kind))
    unknown = declared - set(kernelgen.AVOIDABLE)
    if unknown:
        raise ValueError(f"target kind {kind!r} declares refusals the generator cannot leave out: "
                         f"{', '.join(sorted(unknown))} (kernelgen.AVOIDABLE names what it can)")
    return frozenset(declared)


def profile_features(kind: str) -> frozenset:
    """What a program made for target kind ``kind`` leaves out: its refusals, "matrix" where the kind
    declares no matrix support (``Capabilities.matrix``: it refuses every fragment at build), and
    "specials" where its backend promises no IEEE specials on any device (each the same on every
    machine, so a seed replays)."""
    from .. import capabilities

    refused = refused_features(kind)
    if not refused:
        return refused
    finite = not numerics.specials_promised(numerics_backend(kind))
    no_matrix = capabilities.of(kind).matrix is None
    return refused | ({"specials"} if finite else set()) | ({"matrix"} if no_matrix else set())


def profiles(targets: Sequence[str]) -> List[Profile]:
    """One profile per target kind of ``targets`` (target strings) that refuses something, in order."""
    out: List[Profile] = []
    for t in targets:
        kind = Target.parse(t).kind
        avoid = profile_features(kind)
        if avoid and kind not in [k for k, _ in out]:
            out.append((kind, avoid))
    return out


def profile_for(index: int, profs: Sequence[Profile], every: int) -> Optional[Profile]:
    """The profile of program ``index`` of a run (None: the program leaves nothing out)."""
    if every <= 0 or not profs or index % every != every - 1:
        return None
    return profs[(index // every) % len(profs)]


def describe(profs: Sequence[Profile], every: int) -> str:
    """One line saying which programs are profiled, for the fuzzer's report."""
    if every <= 0 or not profs:
        return "no program is profiled"
    which = "every program" if every == 1 else f"one program in {every}"
    kinds = "; ".join(f"{k}: no {', '.join(sorted(a))}" for k, a in profs)
    return f"{which} leaves out what a target refuses, in turn ({kinds})"


__all__ = ["Profile", "describe", "profile_for", "profile_features", "profiles", "refused_features"]
