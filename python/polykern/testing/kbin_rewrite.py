"""Rewrite one device module of a ``.kbin`` (format version 2) to another layout or fmt, through the
wire helpers: the result is a valid container (checksum recomputed) whose module holds a payload its
kind's codegen never writes; what a loader makes of it is the test (docs/internals.md "Byte format")."""
from __future__ import annotations

from typing import Dict, Optional, Union

from ..kbin import wire

__all__ = ["replace_module", "rewrite_module", "relayout"]


def relayout(payload: Union[bytes, Dict[str, bytes]], layout: str, names) -> Union[bytes, Dict[str, bytes]]:
    """``payload`` in ``layout``: named sections become one blob (concatenated in name order); one
    blob becomes a section per name in ``names`` (each holding the whole blob)."""
    if layout == wire.payload_layout(payload):
        return payload
    if layout == "bytes":
        return b"".join(payload[k] for k in sorted(payload))  # type: ignore[index]
    if layout == "smap":
        return {name: bytes(payload) for name in names}  # type: ignore[arg-type]
    raise ValueError(f"a device payload layout is bytes or smap, got {layout!r}")


def replace_module(data: bytes, index: int, fmt: str, fmap, payload: Union[bytes, Dict[str, bytes]]) -> bytes:
    """``data`` with module ``index`` (a device module, kept in its place and kind) holding ``fmt``,
    ``fmap`` and ``payload`` instead: written by ``wire.encode_device_payload``, which checks nothing
    against the kind."""
    c = wire.decode_container(data)
    if c.version != wire.VERSION or not 0 < index < len(c.modules):
        raise ValueError(f"replace_module needs a version-{wire.VERSION} artifact and a device module index, got "
                         f"version {c.version}, index {index} of {len(c.modules)} modules")
    new = wire.encode_device_payload(c.modules[index].kind, fmt, fmap, payload)
    modules = [(m.kind, new if i == index else m.payload) for i, m in enumerate(c.modules)]
    return wire.encode_container(modules, c.children, c.sources, c.meta)


def rewrite_module(data: bytes, index: int, *, fmt: Optional[str] = None, layout: Optional[str] = None) -> bytes:
    """``data`` with module ``index`` (a device module) re-encoded with ``fmt`` and/or ``layout``."""
    entry = wire.decode_container(data).modules[index]
    old_fmt, fmap, payload = wire.decode_device_payload(entry.kind, entry.payload)
    if layout is not None:
        payload = relayout(payload, layout, fmap)
    return replace_module(data, index, old_fmt if fmt is None else fmt, fmap, payload)
