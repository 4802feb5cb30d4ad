"""VkResult codes and names, and the translation of binding exceptions into DeviceError.

The ``vulkan`` binding raises one exception class per VkResult (``VkErrorOutOfDeviceMemory``,
``VkTimeout``...), without the numeric code. :func:`device_error` turns one into a
:class:`polykern.errors.DeviceError` carrying the code and the spec name
(``VK_ERROR_OUT_OF_DEVICE_MEMORY``); :func:`vk_call` does it around any call.
"""
from __future__ import annotations

import contextlib
import re
from typing import Dict, Iterator, Tuple, Type

import vulkan as vk

from polykern.errors import DeviceError

__all__ = ["result_of", "device_error", "vk_call", "BINDING_ERRORS"]

#: Every exception the binding raises for a non-success VkResult.
BINDING_ERRORS = (vk.VkError, vk.VkException)


def _spec_name(cls: Type[BaseException]) -> str:
    """``VkErrorOutOfDateKhr`` -> ``VK_ERROR_OUT_OF_DATE_KHR``."""
    words = re.findall(r"[A-Z][a-z0-9]*", cls.__name__)
    return "_".join(w.upper() for w in words)


def _table() -> Dict[type, Tuple[int, str]]:
    out: Dict[type, Tuple[int, str]] = {}
    for code, cls in vk.exception_codes.items():
        if code is None:
            continue
        name = _spec_name(cls)
        if getattr(vk, name, code) != code:  # trust the binding's constant over our spelling
            name = f"VkResult {code}"
        out[cls] = (int(code), name)
    return out


_BY_CLASS = _table()


def result_of(exc: BaseException) -> Tuple[int, str]:
    """(VkResult code, name) of a binding exception (instance or class)."""
    cls = exc if isinstance(exc, type) else type(exc)
    for klass in cls.__mro__:
        if klass in _BY_CLASS:
            return _BY_CLASS[klass]
    return -13, "VK_ERROR_UNKNOWN"


def device_error(what: str, exc: BaseException) -> DeviceError:
    code, name = result_of(exc)
    return DeviceError(f"Vulkan: {what} failed", code=code, name=name)


@contextlib.contextmanager
def vk_call(what: str) -> Iterator[None]:
    """``with vk_call("vkCreateBuffer"): ...`` raises DeviceError(code, name) for a VkResult error."""
    try:
        yield
    except BINDING_ERRORS as e:
        raise device_error(what, e) from None
