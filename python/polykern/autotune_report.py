"""What ``pk.autotune`` tells the user on stderr: what it tried (each configuration's median time, or why
it was skipped) and what it chose.

``verbose=True`` reports every tuning (and a choice read from the cache); ``verbose=False`` never
reports; the default reports a tuning once it has taken longer than ``SLOW_SECONDS`` (building and
timing each configuration can take seconds): from then on each configuration as it finishes, the ones
before it at once. With ``verbose=`` not given, ``POLYKERN_AUTOTUNE_VERBOSE`` decides: ``0`` (also
``false``/``off``/``no``) silences the reports, ``1`` (``true``/``on``/``yes``) reports always.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO

__all__ = ["VERBOSE_ENV", "SLOW_SECONDS", "verbosity", "describe_key", "TuningReport", "report_cached"]

VERBOSE_ENV = "POLYKERN_AUTOTUNE_VERBOSE"
#: How long a tuning runs before the default verbosity starts reporting it.
SLOW_SECONDS = 1.0
_OFF = ("0", "false", "off", "no")
_ON = ("1", "true", "on", "yes")


def verbosity(flag: Optional[bool] = None) -> Optional[bool]:
    """True (report always), False (never) or None (report a tuning slower than ``SLOW_SECONDS``):
    ``verbose=`` when given, else ``POLYKERN_AUTOTUNE_VERBOSE``."""
    if flag is not None:
        return bool(flag)
    value = os.environ.get(VERBOSE_ENV, "").strip().lower()
    return False if value in _OFF else (True if value in _ON else None)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def describe_key(key: Sequence[Sequence[Any]]) -> str:
    """``n=1000, x=[1000] float32`` from ``TunedKernel.key_of``'s list."""
    return ", ".join(f"{k[0]}={k[1]}" + (f" {k[2]}" if len(k) > 2 else "") for k in key) or "no key"


class TuningReport:
    """The report of one tuning of kernel ``name`` (see the module docstring for when lines are written)."""

    def __init__(self, name: str, configs: Sequence[Dict[str, Any]], key: Sequence[Sequence[Any]],
                 mode: Optional[bool], stream: Optional[TextIO] = None,
                 clock: Callable[[], float] = time.perf_counter, start: Optional[float] = None):
        """``start``: when the tuning began (the ``clock()`` of its first build), default now."""
        self.name, self.configs, self.mode, self.clock = name, configs, mode, clock
        self.stream = stream
        self.start = clock() if start is None else start
        self.live = mode is True
        self.pending: List[str] = [f"tuning '{name}' over {len(configs)} configs for {describe_key(key)}"]
        self._flush()

    def _flush(self) -> None:
        if self.mode is None and not self.live and self.clock() - self.start > SLOW_SECONDS:
            self.live = True
        if self.live:
            out = self.stream or sys.stderr
            for line in self.pending:
                print(f"polykern autotune: {line}", file=out, flush=True)
            self.pending = []

    def _line(self, line: str) -> None:
        if self.mode is not False:
            self.pending.append(line)
            self._flush()

    def trying(self, i: int) -> None:
        """Configuration ``i`` starts (its build and runs): where a slow tuning starts reporting."""
        self._flush()

    def tried(self, i: int, seconds: Optional[float], error: Optional[BaseException] = None) -> None:
        why = str(error).splitlines()[0] if error is not None and str(error) else ""
        result = _ms(seconds) if seconds is not None else f"skipped ({type(error).__name__}: {why})"
        self._line(f"  config {i} {self.configs[i]!r}: {result}")

    def chose(self, i: int, seconds: float, reps: int) -> None:
        self._line(f"'{self.name}' chose config {i} {self.configs[i]!r} ({_ms(seconds)}, the median of {reps} "
                   f"runs); tuning took {self.clock() - self.start:.2f} s")


def report_cached(name: str, i: int, config: Dict[str, Any], path: str, mode: Optional[bool],
                  stream: Optional[TextIO] = None) -> None:
    """A choice read from the cache: reported only with ``verbose=True`` (it costs no time)."""
    if mode is True:
        print(f"polykern autotune: '{name}' uses config {i} {config!r}, chosen earlier (cache {path})",
              file=stream or sys.stderr, flush=True)
