"""The launch-time conditions of proven accesses (:mod:`polykern.passes.bounds_proof`): their text in a
function's attributes, and the check before each launch on the CPU runtimes.

Attributes: ``bounds_proof`` = the number ``N`` of proven accesses; for ``k < N``, ``bounds_proof_<k>``
= the access's condition and ``bounds_proof_at_<k>`` = where it is (``'y' at saxpy.py:12``). A
condition is alternatives joined by `` | `` (one must hold); an alternative is polynomials joined by
`` & `` (all must be ``>= 0``; ``true`` when there are none); a polynomial is terms joined by spaces,
each ``c`` or ``c*s*s...`` (a decimal coefficient times symbols); ``0`` is the zero polynomial.
Symbols: ``a<i>`` the value of integer scalar argument ``i``, ``L<i>`` the element count of buffer
argument ``i``, ``b<d>``/``g<d>`` the block and grid size in dimension ``d``, ``q<i>_<c>`` argument ``i``
divided by ``c > 0`` truncated toward zero (the kernel's ``a // c``), ``r<i>_<c>`` the same rounded down
(``a >> s`` with ``c = 2**s``). The C runtime (native/src/launch_proof.c) reads the same text.

A failed condition is an out-of-bounds :class:`LaunchError` before anything runs; its message names the
access and the inequalities that failed in the kernel's own names (:func:`describe`).
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from ..errors import ArtifactError, LaunchError
from .launch import BufferArg, ScalarArg, check_args, fast_dims
from ..passes.bounds_proof import ATTR, ATTR_AT, ATTR_CLAUSE

__all__ = ["decode", "describe", "ProvenKernel", "wrap_if_proven"]

_SYM = r"(a|L|b|g)[0-9]+|[qr][0-9]+_[1-9][0-9]*"
_SEEN_MAX = 64  # verdicts kept per kernel (by the values of the condition's symbols)
_TERM = re.compile(rf"-?[0-9]+(\*({_SYM}))*")


def _derived(s: str) -> Tuple[int, int]:
    """(argument index, divisor) of a ``q<i>_<c>``/``r<i>_<c>`` symbol."""
    i, c = s[1:].split("_")
    return int(i), int(c)


def _derive(s: str, a: int) -> int:
    """The value of derived symbol ``s`` for argument value ``a``."""
    c = _derived(s)[1]
    return a // c if s[0] == "r" or a >= 0 else -(-a // c)


def decode(text: str) -> List[List[List[Tuple[int, Tuple[str, ...]]]]]:
    """A condition's alternatives, each a list of polynomials, each a list of (coefficient, symbols);
    ``ValueError`` if malformed."""
    out = []
    for alt in text.split(" | "):
        polys = []
        if alt != "true":
            for p in alt.split(" & "):
                terms = []
                for t in p.split(" "):
                    if not _TERM.fullmatch(t):
                        raise ValueError(f"malformed term {t!r}")
                    c, *syms = t.split("*")
                    terms.append((int(c), tuple(syms)))
                polys.append(terms)
        out.append(polys)
    return out


def _compile(conds):
    """(``check(values)``, ``fast(args, grid3, block3)``): the index of the first condition that fails,
    -1 when all hold; ``fast`` reads the symbols from the arguments themselves and returns None unless
    they are the common case (NumPy arrays, exact ints). The conditions' text is made only of the tokens
    :func:`decode` accepted (integers, symbol names)."""
    used = {s for c in conds for alt in c for p in alt for _, syms in p for s in syms}
    derived = sorted(s for s in used if s[0] in "qr")
    names = sorted((used - set(derived)) | {f"a{_derived(s)[0]}" for s in derived})
    fetch = "".join(f"{n} = v[{n!r}]\n    " for n in names)
    read = "".join(f"x = args[{n[1:]}]\n    if type(x) is not {'ndarray' if n[0] == 'L' else 'int'}:\n"
                   f"        return None\n    {n} = x{'.size' if n[0] == 'L' else ''}\n    "
                   for n in names if n[0] in "aL")
    derive = "".join(f"{s} = derive({s!r}, a{_derived(s)[0]})\n    " for s in derived)
    fetch += derive

    def poly(p):
        return " + ".join("*".join([str(c), *syms]) for c, syms in p) or "0"

    def cond(c):
        return " or ".join("(" + (" and ".join(f"{poly(p)} >= 0" for p in alt) or "True") + ")" for alt in c)
    body = "".join(f"    if not ({cond(c)}):\n        return {k}\n" for k, c in enumerate(conds))
    # fast: the verdict depends only on the symbols' values, so it is kept per tuple of them (a launch
    # repeated with the same sizes reads its arguments and looks the verdict up)
    inputs = sorted(set(names) | {"b0", "b1", "b2", "g0", "g1", "g2"})
    key = "(" + "".join(f"{n}, " for n in inputs) + ")"
    ns: Dict[str, Any] = {"ndarray": np.ndarray, "derive": _derive, "seen": {}, "SEEN_MAX": _SEEN_MAX}
    exec(f"def check(v):\n    {fetch}\n{body}    return -1\n"  # noqa: S102 (validated tokens)
         f"def decide({', '.join(inputs)}):\n    {derive}\n{body}    return -1\n"
         f"def fast(args, g, b):\n    b0, b1, b2 = b\n    g0, g1, g2 = g\n"
         f"    {read}\n"
         f"    key = {key}\n    r = seen.get(key)\n    if r is None:\n        r = decide(*key)\n"
         f"        if len(seen) >= SEEN_MAX:\n            seen.clear()\n        seen[key] = r\n    return r\n", ns)
    return ns["check"], ns["fast"]


def symbols(prepared: Sequence[Any], grid3, block3) -> Dict[str, int]:
    values: Dict[str, int] = {}
    for i, a in enumerate(prepared):
        if isinstance(a, BufferArg):
            values[f"L{i}"] = int(a.size)
        elif isinstance(a, ScalarArg) and a.info.dtype.is_int and not a.info.dtype.is_bool:
            values[f"a{i}"] = int(a.value)
    for d in range(3):
        values[f"b{d}"], values[f"g{d}"] = int(block3[d]), int(grid3[d])
    return values


def _user_symbol(s: str, names: Sequence[str]) -> str:
    if s[0] in "bg":
        return f"{'block' if s[0] == 'b' else 'grid'}[{s[1:]}]"
    if s[0] == "L":
        return f"len({names[int(s[1:])]})"
    if s[0] == "a":
        return names[int(s[1:])]
    i, c = _derived(s)
    if s[0] == "r" and c & (c - 1) == 0:
        return f"({names[i]} >> {c.bit_length() - 1})"
    return f"({names[i]} // {c})" if s[0] == "q" else f"floor({names[i]} / {c})"


def _side(terms, names) -> str:
    out = []
    for c, syms in terms:
        text = "*".join(_user_symbol(s, names) for s in syms)
        out.append(str(c) if not syms else text if c == 1 else f"{c}*{text}")
    return " + ".join(out) or "0"


def describe(cond, values: Dict[str, int], names: Sequence[str]) -> str:
    """The inequalities of ``cond`` that fail for ``values``, in the kernel's names (``names``: its
    parameters): ``h*w <= len(src) + 7 (2516 > ...)``; one line per alternative."""
    def value(p):
        return sum(c * math.prod(values[s] for s in syms) for c, syms in p)

    lines = []
    for alt in cond:
        bad = []
        for p in alt:
            v = value(p)
            if v >= 0:
                continue  # the inequalities that hold are left out
            pos = [(c, syms) for c, syms in p if c > 0]
            neg = [(-c, syms) for c, syms in p if c < 0]
            bad.append(f"{_side(neg, names)} <= {_side(pos, names)} (here {value(neg)} > {value(pos)})")
        lines.append(" and ".join(bad) if bad else "(holds)")
    return "; or ".join(lines)


class ProvenKernel:
    """``kernel(*args, grid=, block=)``: the conditions of the proven accesses, then the launch."""

    def __init__(self, info, user_info, fn: Callable):
        self.info, self.user_info, self.fn = info, user_info, fn
        try:
            n = int(info.attrs[ATTR])
            self.conds = [(decode(info.attrs[f"{ATTR_CLAUSE}{k}"]), info.attrs[f"{ATTR_AT}{k}"]) for k in range(n)]
        except (KeyError, ValueError) as e:
            raise ArtifactError(f"kernel '{info.name}': malformed launch-proof attributes ({e})") from None
        need = {s for c, _ in self.conds for alt in c for p in alt for _, syms in p for s in syms}
        args = user_info.args
        for s in need:
            i = _derived(s)[0] if s[0] in "qr" else int(s[1:])
            ok = (i <= 2 if s[0] in "bg" else i < len(args) and args[i].is_buffer == (s[0] == "L")
                  and (s[0] == "L" or (args[i].dtype.is_int and not args[i].dtype.is_bool)))
            if not ok:
                raise ArtifactError(f"kernel '{info.name}': launch-proof symbol {s} does not name a "
                                    "suitable argument")
        self.check, self.fast = _compile([c for c, _ in self.conds])
        self.nargs = len(args)

    def __getattr__(self, name: str) -> Any:  # the runtime kernel's own attributes (name, last_threads ...)
        return getattr(self.fn, name)

    def __repr__(self) -> str:
        return f"<ProvenKernel {self.user_info.signature()}>"

    def __call__(self, *args: Any, grid=None, block=None, **launch) -> None:
        g, b = fast_dims(grid), fast_dims(block)
        failed = self.fast(args, g, b) if g is not None and b is not None and len(args) == self.nargs else None
        if failed is None:
            grid3, block3, prepared = check_args(self.user_info, args, grid, block)
            failed = self.check(symbols(prepared, grid3, block3))
        if failed >= 0:
            self.fail(failed, args, grid, block)
        return self.fn(*args, grid=grid, block=block, **launch)

    def fail(self, k: int, args, grid, block) -> None:
        grid3, block3, prepared = check_args(self.user_info, args, grid, block)
        cond, where = self.conds[k]
        values = symbols(prepared, grid3, block3)
        values.update({s: _derive(s, values[f"a{_derived(s)[0]}"]) for alt in cond for p in alt
                       for _, syms in p for s in syms if s[0] in "qr"})
        names = [a.name for a in self.user_info.args]
        lens = ", ".join(f"len({a.name}) = {a.size}" for a in prepared if isinstance(a, BufferArg))
        raise LaunchError(
            f"kernel '{self.info.name}': possible out-of-bounds access to {where} with these arguments "
            f"(grid {grid3}, block {block3}; {lens}): its launch-time bounds condition fails: "
            f"{describe(cond, values, names)}. Nothing ran (the CPU runtimes' default safety, "
            "docs/correctness.md 5.5: the condition bounds every index the launch could form, so a launch "
            "that would stay in bounds can still fail it; bounds_check=True checks each access as it "
            "runs, bounds_check=False builds the raw kernel)")


def wrap_if_proven(info, user_info, fn: Callable) -> Callable:
    return ProvenKernel(info, user_info, fn) if ATTR in info.attrs else fn
