"""The launch-time conditions of proven accesses (:mod:`polykern.passes.bounds_proof`): their text in a
function's attributes, and the check before each launch on the CPU runtimes.

Attributes: ``bounds_proof`` = the number ``N`` of proven accesses; for ``k < N``, ``bounds_proof_<k>``
= the access's condition and ``bounds_proof_at_<k>`` = where it is (``'y' at saxpy.py:12``). A
condition is alternatives joined by `` | `` (one must hold); an alternative is polynomials joined by
`` & `` (all must be ``>= 0``; ``true`` when there are none); a polynomial is terms joined by spaces,
each ``c`` or ``c*s*s...`` (a decimal coefficient times symbols); ``0`` is the zero polynomial.
Symbols: ``a<i>`` the value of integer scalar argument ``i``, ``L<i>`` the element count of buffer
argument ``i``, ``b<d>``/``g<d>`` the block and grid size in dimension ``d``. The C runtime
(native/src/launch_proof.c) reads the same text.

A failed condition is an out-of-bounds :class:`LaunchError` before anything runs.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from .errors import ArtifactError, LaunchError
from .launch import BufferArg, ScalarArg, check_args, fast_dims
from .passes.bounds_proof import ATTR, ATTR_AT, ATTR_CLAUSE

__all__ = ["decode", "ProvenKernel", "wrap_if_proven"]

_TERM = re.compile(r"-?[0-9]+(\*(a|L|b|g)[0-9]+)*")


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
    names = sorted({s for c in conds for alt in c for p in alt for _, syms in p for s in syms})
    fetch = "".join(f"{n} = v[{n!r}]\n    " for n in names)
    read = "".join(f"x = args[{n[1:]}]\n    if type(x) is not {'ndarray' if n[0] == 'L' else 'int'}:\n"
                   f"        return None\n    {n} = x{'.size' if n[0] == 'L' else ''}\n    "
                   for n in names if n[0] in "aL")

    def poly(p):
        return " + ".join("*".join([str(c), *syms]) for c, syms in p) or "0"

    def cond(c):
        return " or ".join("(" + (" and ".join(f"{poly(p)} >= 0" for p in alt) or "True") + ")" for alt in c)
    body = "".join(f"    if not ({cond(c)}):\n        return {k}\n" for k, c in enumerate(conds))
    ns: Dict[str, Any] = {"ndarray": np.ndarray}
    exec(f"def check(v):\n    {fetch}\n{body}    return -1\n"  # noqa: S102 (validated tokens)
         f"def fast(args, g, b):\n    b0, b1, b2 = b\n    g0, g1, g2 = g\n    {read}\n{body}    return -1\n", ns)
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
            i = int(s[1:])
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
        lens = ", ".join(f"len({a.name}) = {a.size}" for a in prepared if isinstance(a, BufferArg))
        raise LaunchError(
            f"kernel '{self.info.name}': out-of-bounds access to {where} with these arguments (grid {grid3}, "
            f"block {block3}; {lens}): its launch-time bounds condition {self.info.attrs[ATTR_CLAUSE + str(k)]} "
            "fails (a<i>: argument i, L<i>: length of buffer argument i, b/g: block/grid); nothing ran (the "
            "CPU runtimes' default safety, docs/correctness.md; bounds_check=False builds the raw kernel)")


def wrap_if_proven(info, user_info, fn: Callable) -> Callable:
    return ProvenKernel(info, user_info, fn) if ATTR in info.attrs else fn
