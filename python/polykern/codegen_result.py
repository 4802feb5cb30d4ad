"""Calling a target's code generator and checking what it returns: the one place where the result of
``target.build.<target kind>`` (a backend plugin's codegen) is validated (docs/backends.md "Codegen").

A codegen returns the device :class:`~polykern.module.Module` it built (``create_with_fallback``). What
else it returns (``None``, a root module, a module of another kind, without a fmt, missing a kernel),
and a failure that is not a :class:`~polykern.errors.PolykernError` (a bug in the plugin), is a
:class:`~polykern.errors.CompileError` naming the plugin: its registry key, function, backend and
where the backend was loaded from (:func:`polykern.backends.describe_entry`).
"""
from __future__ import annotations

from typing import Any, List, Optional

from . import backends
from .errors import CompileError, PolykernError
from .kbin.function_info import FunctionInfo
from .module import Module, RootModule

__all__ = ["run_codegen"]


def _problem(m: Any, target: Any, names: List[str]) -> Optional[str]:
    if not isinstance(m, Module) or isinstance(m, RootModule):
        what = "None" if m is None else f"a {type(m).__name__}"
        return f"returned {what}, not the device Module it built (create_with_fallback(...))"
    want = target.module_kind
    if m.kind != want:
        return f"returned a module of kind {m.kind!r}; target kind '{target.kind}' builds {want!r} modules"
    if not isinstance(m.fmt, str) or not m.fmt:
        return f"returned a {m.kind} module without a payload format (fmt {m.fmt!r})"
    functions = getattr(m, "functions", None)
    if not isinstance(functions, dict) or not all(isinstance(v, FunctionInfo) for v in functions.values()):
        return f"returned a {m.kind} module whose functions are not a map of names to FunctionInfo"
    missing = [n for n in names if n not in functions]
    if missing:
        return f"returned a {m.kind} module without the kernel(s) it was given: {', '.join(missing)}"
    return None


def run_codegen(builder: Any, funcs: List[Any], target: Any) -> Module:
    """``builder(funcs, target)`` (registered as ``target.build.<target.kind>``), checked."""
    key = f"target.build.{target.kind}"
    try:
        m = builder(funcs, target)
    except PolykernError:
        raise
    except Exception as e:
        raise CompileError(f"the code generator {backends.describe_entry(key)} failed on target '{target}': "
                           f"{type(e).__name__}: {e}") from e
    problem = _problem(m, target, [f.name for f in funcs])
    if problem:
        raise CompileError(f"the code generator {backends.describe_entry(key)} {problem} for target '{target}'")
    return m
