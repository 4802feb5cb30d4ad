"""What a FunctionInfo's attributes and launch tags may hold: the one schema, checked at load.

A runtime trusts these strings (``int(attrs["private_bytes"])``, the ``entry`` symbol, ...), so
an artifact whose attribute is not of its type or out of range is refused when it is read
(:class:`~polykern.errors.ArtifactError` naming the function and the attribute), never at
launch. ``wire.Reader.function_info`` calls :func:`attr_problem` and :func:`tag_ok`; the C
reader checks the same table (generated into ``native/src/kbin_tables.h``).

Attributes a backend adds that are not listed here are accepted as ``text`` if their name is a
lowercase identifier; list them here to check more.
"""
from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from ..ir import hopper
from ..ir.nodes import SPECIAL_REGS
from .messages import INVISIBLE

__all__ = ["ATTR_TYPES", "ATTRS", "attr_problem", "tag_ok", "expectation", "ATTR_NAME_RE", "TEXT_MAX",
           "NAME_MAX", "LAUNCH_TAG_KINDS"]

TEXT_MAX = 4096
NAME_MAX = 1024
LAUNCH_TAG_KINDS = tuple(sorted(SPECIAL_REGS))
ATTR_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")  # used with fullmatch ($ would allow a final newline)
_UINT_RE = re.compile(r"0|[1-9][0-9]{0,19}")

#: type -> (what it expects, the largest value for integers else 0)
ATTR_TYPES: Dict[str, Tuple[str, int]] = {
    "flag": ("0 or 1", 1),
    "u32": ("a decimal integer from 0 to %u", (1 << 32) - 1),
    "size": ("a decimal integer from 0 to %u", 1 << 40),
    "name": ("a non-empty name without spaces or control characters, at most %u bytes", NAME_MAX),
    "text": ("text without control characters, at most %u bytes", TEXT_MAX),
    # Hopper launch facts (polykern.ir.hopper; docs/internals.md, the attribute schema)
    "warpgroups": ("a decimal integer from 1 to %u", hopper.WARPGROUPS_MAX),
    "align": ("%u", hopper.SWIZZLE_ALIGN),
    "tensor_maps": ("a JSON list of at most " + str(hopper.TMAP_MAX) + " tensor maps {name, buffer, elem, shape, "
                    "box, swizzle} of at most %u bytes", TEXT_MAX),
}

#: attribute -> type. Backends: llvm/hexagon (entry, triple, cpu, features, item_bytes,
#: private_bytes), cuda (arch), rocm (mcpu, code_object), vulkan, webgpu, metal (bindings ...).
ATTRS: Dict[str, str] = {
    "arch": "name",
    "arg_binding": "name",
    "atomic_buffers": "text",
    "bindings": "text",
    "code_object": "u32",
    "cpu": "name",
    "descriptor_set": "u32",
    "entry": "name",
    "features": "text",
    "item_bytes": "size",
    "launch_binding": "u32",
    "mcpu": "name",
    "params_binding": "u32",
    "params_layout": "text",
    "params_size": "u32",
    "private_bytes": "size",
    "push_constant_size": "u32",
    "push_constants": "text",
    hopper.ATTR_DYNAMIC_ALIGN: "align",
    "spec_ids": "text",
    "spirv": "name",
    hopper.ATTR_TENSOR_MAPS: "tensor_maps",
    "triple": "name",
    "uses_atomics": "flag",
    "uses_barrier": "flag",
    hopper.ATTR_WARPGROUPS: "warpgroups",
    "uses_print": "flag",
    "workgroup_size": "text",
}


def expectation(type_name: str) -> str:
    text, limit = ATTR_TYPES[type_name]
    return text.replace("%u", str(limit))


def _printable(value: str) -> bool:
    for ch in value:
        cp = ord(ch)
        if cp < 0x20 or 0x7F <= cp <= 0x9F or any(lo <= cp <= hi for lo, hi in INVISIBLE):
            return False
    return True


def _parses(reader, name: str, value: str) -> bool:
    try:
        reader({name: value})
    except ValueError:
        return False
    return True


def _value_ok(type_name: str, value: str) -> bool:
    limit = ATTR_TYPES[type_name][1]
    if type_name in ("flag", "u32", "size"):
        return bool(_UINT_RE.fullmatch(value)) and int(value) <= limit
    if type_name == "align":
        return value == str(limit)
    if type_name == "warpgroups":
        return _parses(hopper.warpgroups_of, hopper.ATTR_WARPGROUPS, value)
    if len(value.encode("utf-8")) > limit or not _printable(value):
        return False
    if type_name == "tensor_maps":
        return _parses(hopper.tensor_maps_of, hopper.ATTR_TENSOR_MAPS, value)
    return type_name == "text" or (bool(value) and " " not in value)


def attr_problem(name: str, value: str) -> Optional[Tuple[str, str]]:
    """``None`` when ``name=value`` is a valid attribute, else ``(message key, expectation)``."""
    if not ATTR_NAME_RE.fullmatch(name):
        return "ATTR_NAME", ""
    type_name = ATTRS.get(name, "text")
    if not _value_ok(type_name, value):
        return "ATTR_VALUE", expectation(type_name)
    return None


def tag_ok(tag: str) -> bool:
    """A launch tag is ``KIND.DIM``: a special register the kernel reads, in dimension 0, 1 or 2."""
    kind, dot, dim = tag.rpartition(".")
    return bool(dot) and kind in LAUNCH_TAG_KINDS and dim in ("0", "1", "2")
