"""The host's load average around CPU figures, and whether a ratio may count against a target.

The CPU hosts are shared: another job on the cores slows the contenders unequally (a thread pool
more than a single-threaded NumPy call), so a ratio measured on a loaded host says little about the
code. Every CPU benchmark records the load average (1, 5, 15 minutes) before and after each timed
problem, and a ratio counts as a target met or missed only when every 1-minute sample was at most
:data:`PER_CORE_LIMIT` per core (1.0 on a 2-core host); otherwise the verdict is
``loaded host (load X): ratio not counted``.
"""
from __future__ import annotations

import os
from typing import List, Optional, Sequence, Tuple

__all__ = ["PER_CORE_LIMIT", "Load", "sample", "limit", "peak", "verdict", "describe"]

#: Highest 1-minute load average per core at which a ratio counts.
PER_CORE_LIMIT = 0.5

Load = Tuple[float, float, float]


def sample() -> Optional[Load]:
    """The load average now (1, 5, 15 minutes), or None where the system does not report it."""
    try:
        return tuple(round(x, 2) for x in os.getloadavg())  # type: ignore[return-value]
    except OSError:
        return None


def limit(cores: Optional[int] = None) -> float:
    """The highest 1-minute load at which a ratio counts on a host of ``cores`` cores (default: this one's)."""
    return PER_CORE_LIMIT * (cores or os.cpu_count() or 1)


def peak(samples: Sequence[Optional[Load]]) -> Optional[float]:
    """The highest 1-minute load of ``samples``; None when any is missing (the load is not known)."""
    if not samples or any(s is None for s in samples):
        return None
    return max(s[0] for s in samples)  # type: ignore[index]


def verdict(ratio: float, target: float, samples: Sequence[Optional[Load]], cores: Optional[int] = None) -> str:
    """``met`` / ``missed`` for ``ratio <= target`` (time ours / time theirs) when the host was quiet
    throughout ``samples``; otherwise why the ratio does not count."""
    top = peak(samples)
    if top is None:
        return "load not known: ratio not counted"
    if top > limit(cores):
        return f"loaded host (load {top:.2f}): ratio not counted"
    return "met" if ratio <= target else "missed"


def describe(samples: List[Optional[Load]]) -> str:
    """``load 0.42 -> 0.51`` (the 1-minute averages of the samples), for a log line."""
    return "load " + " -> ".join("?" if s is None else f"{s[0]:.2f}" for s in samples)
