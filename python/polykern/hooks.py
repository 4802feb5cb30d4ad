"""Build hooks: user functions registered under documented registry keys that post-process the
generated source or replace a device compiler (docs/backends.md "Hooks"), as TVM's
``tvm_callback_cuda_postproc`` / ``tvm_callback_cuda_compile`` / ``tvm_callback_metal_compile``.

Register one with :func:`polykern.registry.register` (``override=True`` to replace it)::

    @polykern.registry.register("polykern.hook.cuda.postproc")
    def add_banner(source, target):
        return "// built by the nightly job\\n" + source

A hook is part of the build's identity: every function of the module it touched records it in a
FunctionInfo attribute (``hook_cuda_postproc = "pkg.mod.add_banner sha256:..."``, see
:func:`identity`), so ``polykern inspect`` shows it and an artifact built with a hook never has the
bytes of one built without it. The keys are :data:`HOOKS`; a backend calls :func:`postprocess` or
:func:`call` where its codegen reaches that point, and :func:`record` to stamp its functions.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from . import registry
from .errors import CompileError, PolykernError

__all__ = ["HOOKS", "PREFIX", "ATTR_PREFIX", "key", "attr_name", "get", "identity", "label", "call", "postprocess",
           "record", "record_on_root"]

PREFIX = "polykern.hook."
ATTR_PREFIX = "hook_"

#: registry key -> (signature, when it is called). The one list of hook keys (docs/backends.md).
HOOKS: Dict[str, Tuple[str, str]] = {
    "polykern.hook.cuda.postproc": (
        "(source: str, target: Target) -> str",
        "the CUDA C of a `cuda` target, before NVRTC/nvcc (or the compile hook) sees it and before it "
        "is stored (payload of -fmt=cuda, embedded source `cuda`)"),
    "polykern.hook.cuda.compile": (
        "(source: str, target: Target, output: str) -> bytes",
        "replaces NVRTC/nvcc for a `cuda` target: `output` is 'ptx' (UTF-8 PTX text) or 'cubin' (an ELF "
        "file); -fmt=auto then means ptx even where no CUDA compiler is installed. Not called for -fmt=cuda"),
    "polykern.hook.opencl.postproc": (
        "(source: str, target: Target) -> str",
        "the OpenCL C of an `opencl` target, before it is stored (payload and embedded source `cl`)"),
    "polykern.hook.metal.postproc": (
        "(source: str, target: Target) -> str",
        "each kernel's MSL shader of a `metal` target, before it is compiled (compile hook) or stored"),
    "polykern.hook.metal.compile": (
        "(source: str, target: Target) -> bytes",
        "compiles each kernel's MSL to a metallib (e.g. `xcrun metal` + `xcrun metallib` on a Mac): the "
        "module then has fmt `metallib` (kernel -> metallib bytes, which start with b'MTLB') and keeps "
        "the MSL as its embedded source `metal`"),
    "polykern.hook.webgpu.postproc": (
        "(source: str, target: Target) -> str",
        "each kernel's WGSL shader of a `webgpu` target, before it is stored"),
}


def key(kind: str, point: str) -> str:
    """``polykern.hook.<kind>.<point>``; ValueError for a key that is not in :data:`HOOKS`."""
    name = f"{PREFIX}{kind}.{point}"
    if name not in HOOKS:
        raise ValueError(f"{name!r} is not a polykern hook; the hooks are: {', '.join(sorted(HOOKS))}")
    return name


def attr_name(kind: str, point: str) -> str:
    """The FunctionInfo attribute that records hook ``kind``/``point`` (``hook_cuda_postproc``)."""
    key(kind, point)
    return f"{ATTR_PREFIX}{kind}_{point}"


def get(kind: str, point: str) -> Optional[Callable[..., Any]]:
    """The function registered for hook ``kind``/``point``, or None. A registered name under
    ``polykern.hook.`` that is not a hook (a typo would silently never run) is an error."""
    unknown = [n for n in registry.names(PREFIX) if n not in HOOKS]
    if unknown:
        raise PolykernError(f"{unknown[0]!r} is registered but is not a polykern hook, so it would never run; "
                            f"the hooks are: {', '.join(sorted(HOOKS))} (docs/backends.md \"Hooks\")")
    fn = registry.get(key(kind, point))
    if fn is not None and not callable(fn):
        raise PolykernError(f"{key(kind, point)} is registered but not callable ({type(fn).__name__})")
    return fn


def _qualified_name(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or type(fn).__module__
    qual = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}.{qual}"


def _code_text(fn: Any, depth: int = 0) -> str:
    """What defines ``fn``'s behaviour, as text that is the same in every process: its source (else
    its bytecode), its defaults, the values it closes over, and the state of the object it is bound
    to or is (a callable object: its attributes)."""
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    parts = []
    try:
        parts.append(inspect.getsource(target))
    except (OSError, TypeError):
        code = getattr(target, "__code__", None)
        parts.append(code.co_code.hex() + repr(code.co_consts) if code is not None else "")
    func = getattr(target, "__func__", target)
    parts.append(_value_text(getattr(func, "__defaults__", None), depth))
    parts.append(_value_text(sorted((getattr(func, "__kwdefaults__", None) or {}).items()), depth))
    for cell in getattr(func, "__closure__", None) or ():
        try:
            parts.append(_value_text(cell.cell_contents, depth))
        except ValueError:  # an empty cell
            parts.append("<empty>")
    bound = getattr(fn, "__self__", None) if inspect.ismethod(fn) else fn if target is not fn else None
    if bound is not None and not inspect.ismodule(bound):
        parts.append(_value_text(bound, depth))
    return "\n".join(parts)


def _value_text(value: Any, depth: int) -> str:
    """``repr(value)`` where that is stable across processes; else what stands for it: a function by
    its name and :func:`_code_text`, a set sorted, an object of default repr (which shows a memory
    address) by its type and attributes. Nested values are followed 4 levels deep."""
    if depth > 4:
        return f"<{type(value).__qualname__}>"
    if inspect.isfunction(value) or inspect.ismethod(value):
        return f"{_qualified_name(value)}:{_code_text(value, depth + 1)}"
    if isinstance(value, functools.partial):
        return (f"partial({_value_text(value.func, depth + 1)}, {_value_text(value.args, depth + 1)}, "
                f"{_value_text(sorted(value.keywords.items()), depth + 1)})")
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_value_text(v, depth + 1) for v in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_value_text(k, depth + 1)}: {_value_text(v, depth + 1)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return type(value).__name__ + "(" + ", ".join(_value_text(v, depth + 1) for v in value) + ")"
    text = repr(value)
    if type(value).__repr__ is object.__repr__:  # "<pkg.T object at 0x...>": its attributes instead
        state = getattr(value, "__dict__", None)
        text = f"<{type(value).__module__}.{type(value).__qualname__} {_value_text(state, depth + 1)}>"
    return text


def identity(fn: Callable[..., Any]) -> str:
    """``"<module>.<qualname> sha256:<16 hex>"``: the hook's name and a digest of what defines it
    (its source, defaults and closure values; for a ``functools.partial`` also its bound
    arguments). A hook whose behaviour depends on anything else (a tool's version, a global)
    says so with a string attribute ``polykern_hook_identity``, which is digested instead."""
    base = fn.func if isinstance(fn, functools.partial) else fn
    name = _qualified_name(base)
    declared = getattr(fn, "polykern_hook_identity", None)
    if declared is not None:
        if not isinstance(declared, str):
            raise CompileError(f"the build hook {name}: polykern_hook_identity must be a str, got "
                               f"{type(declared).__name__}")
        text = "declared:" + declared
    else:
        try:  # the hook's own values (closure, defaults, state): their repr() is the user's code
            text = _code_text(base)
            if isinstance(fn, functools.partial):
                text += "\n" + _value_text(fn.args, 0) + _value_text(sorted(fn.keywords.items()), 0)
        except Exception as e:
            raise CompileError(f"the build hook {name} cannot be identified: describing a value it closes over, "
                               f"takes as a default or holds raised {type(e).__name__}: {e}; give it a string "
                               "attribute polykern_hook_identity naming its behaviour (docs/backends.md "
                               "\"Hooks\")") from e
    digest = hashlib.sha256(f"{name}\n{text}".encode("utf-8")).hexdigest()[:16]
    return f"{name} sha256:{digest}"


def label(kind: str, point: str, fn: Callable[..., Any]) -> str:
    """``"the polykern.hook.cuda.compile hook pkg.mod.fn"``: how messages name a hook."""
    return f"the {key(kind, point)} hook {_qualified_name(fn)}"


def call(kind: str, point: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Call hook ``fn`` (registered for ``kind``/``point``); its failures become CompileErrors
    naming the hook (a PolykernError it raises passes through)."""
    try:
        return fn(*args)
    except PolykernError:
        raise
    except Exception as e:
        raise CompileError(f"{label(kind, point, fn)} failed: {type(e).__name__}: {e}") from e


def postprocess(kind: str, source: str, target: Any) -> Tuple[str, Dict[str, str]]:
    """``(source, attrs)``: ``source`` after the ``polykern.hook.<kind>.postproc`` hook (unchanged
    without one) and the FunctionInfo attributes that record the hook ({} without one)."""
    fn = get(kind, "postproc")
    if fn is None:
        return source, {}
    out = call(kind, "postproc", fn, source, target)
    if not isinstance(out, str):
        raise CompileError(f"{label(kind, 'postproc', fn)} returned {type(out).__name__}; it must return the "
                           "new source as str")
    try:
        out.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate (os.fsdecode, errors="surrogateescape")
        raise CompileError(f"{label(kind, 'postproc', fn)} returned text that cannot be stored as UTF-8 (a lone "
                           f"surrogate {out[e.start]!r} at index {e.start}); decode what it reads as UTF-8 "
                           "or escape it") from None
    return out, {attr_name(kind, "postproc"): identity(fn)}


def record(fmap: Mapping[str, Any], attrs: Mapping[str, str]) -> Dict[str, Any]:
    """``fmap`` (name -> FunctionInfo) with ``attrs`` (from :func:`postprocess`) added to every function."""
    if not attrs:
        return dict(fmap)
    return {name: dataclasses.replace(info, attrs={**info.attrs, **attrs}) for name, info in fmap.items()}


def record_on_root(root: Any) -> None:
    """Copy every kernel's hook records from the device modules that ran hooks into the root's
    description of that kernel, so the artifact's kernel list (``polykern inspect``, ``kbin-inspect``)
    shows which hooks built it."""
    for name, info in list(root.functions.items()):
        found = {k: v for m in root.device_modules() if name in m.functions
                 for k, v in m.functions[name].attrs.items() if k.startswith(ATTR_PREFIX)}
        if found:
            root.functions[name] = dataclasses.replace(info, attrs={**info.attrs, **dict(sorted(found.items()))})
