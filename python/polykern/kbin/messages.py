"""THE messages of the .kbin readers, and how artifact strings are shown — one table for Python and C.

``polykern inspect`` (Python) and ``kbin-inspect`` (native/, C) must word every error the same
way. Both take their messages from :data:`MESSAGES`; ``native/src/kbin_tables.h`` is generated
from this module (and :mod:`polykern.kbin.function_schema`) by ``tools/gen_native_tables.py``, and
``tests/test_native.py`` fails, naming that command, when the header is stale.

Format strings use only ``%s`` (a string the caller already quoted or escaped), ``%u`` (an
unsigned integer; ``%llu`` in C) and ``%08x`` (a CRC-32), so one string works for Python's ``%``
and C's printf.

Strings that come from an artifact are attacker-controlled: they are never printed raw.
:func:`quote` (in messages) and :func:`escape` (in listings) turn control characters, C1
controls and invisible/bidirectional format characters into ``\\xNN`` / ``\\uNNNN``; the C
reader implements the same rule (``pk_quote`` / ``pk_escape``), byte for byte.
"""
from __future__ import annotations

from typing import Dict

__all__ = ["MESSAGES", "message", "quote", "escape", "escape_source", "QUOTE_LIMIT", "INVISIBLE"]

#: The most bytes of escaped text :func:`quote` shows; longer strings end in ``'...``.
QUOTE_LIMIT = 48

#: Invisible or bidirectional format characters, shown as ``\\uNNNN`` (start, end inclusive).
INVISIBLE = ((0x061C, 0x061C), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2069), (0xFEFF, 0xFEFF))

MESSAGES: Dict[str, str] = {
    # primitives (wire.Reader / native/src/reader.c)
    "TRUNCATED": "truncated %s: needs %u bytes but only %u remain",
    "FLAG": "%s must be 0 or 1, got %u",
    "LENGTH": "%s claims %u %s, more than the %u bytes that remain",
    "UTF8": "%s is not valid UTF-8",
    "EMPTY": "%s is empty",
    "UNSORTED": "%s keys are not strictly sorted (%s after %s)",
    "TRAILING": "%u unexpected trailing bytes after %s",
    # function descriptions (wire.Reader.function_info / native/src/payload.c)
    "ARG_KIND": "%s (%s) has unknown kind %u",
    "ARG_TYPE": "%s (%s) has unknown type code %u bits %u",
    "ARG_LANES": "%s (%s) has %u lanes; only 1 is supported",
    "ARG_RO_SCALAR": "%s (%s) is a scalar marked readonly",
    "ARG_DUP": "%s has two arguments named %s",
    "TAGS_UNSORTED": "%s launch tags are not sorted and unique",
    "TAG_BAD": "%s has an unknown launch tag %s (expected KIND.DIM: KIND one of %s, DIM 0, 1 or 2)",
    "ATTR_NAME": "%s has an attribute with an invalid name %s (expected a lowercase identifier)",
    "ATTR_VALUE": "%s attribute %s has an invalid value %s (expected %s)",
    "FMAP_NAME": "%s entry %s describes a function named %s",
    "NOT_DEVICE_KIND": "%s is not a device module kind of format version 1; known: %s",
    # payload layouts (format version 2: wire._layout_id / native/src/payload.c)
    "LAYOUT_UNKNOWN": "%s has unknown payload layout %u; known layouts: %s",
    "LAYOUT_NOT_ROOT": "%s has payload layout 0 (root), which only the root module may have",
    "ROOT_LAYOUT": "the root module has payload layout %u (%s); it must be 0 (root)",
    # container (wire.decode_container / native/src/kbin.c)
    "DATA_EMPTY": "not a polykern artifact: the data is empty",
    "BAD_MAGIC": "not a polykern artifact: bad magic (the first bytes are %s in hex, expected 504b42494e000d0a)",
    "VERSION": "unsupported artifact format version %u; this reader supports versions %u to %u",
    "NO_MODULES": "artifact has no modules (the root module is required)",
    "MODULE_COUNT": "module count %u needs an import index larger than the %u bytes that remain",
    "INDEX_START": "import index must start at 0, got %u",
    "INDEX_DECREASES": "import index decreases at module %u",
    "TOO_MANY_EDGES": "import tree has %u edges for %u modules (at most %u)",
    "CHILD_RANGE": "import child index %u out of range (modules 1..%u)",
    "IMPORTED_TWICE": "module %u is imported twice (the import tree must be a tree)",
    "UNREACHABLE": "module %u is not reachable from the root (import cycle or orphan)",
    "PREORDER": "module %u comes at position %u of a preorder walk of the import tree; modules are stored in "
                "that order (root first, each module before the modules it imports, in import order)",
    "UNKNOWN_KIND": "module %u has unknown kind %s; known kinds: %s",
    "KIND_NAME": "module %u kind %s is not a module kind name (a lowercase identifier of at most 64 characters)",
    "ROOT_FIRST": "module 0 must be the root module and no other module may be a root",
    "SECOND_ROOT": "module %u is a second root module",
    "CRC_TRAILING": "%u trailing bytes after the checksum",
    "CHECKSUM": "checksum mismatch: stored CRC-32 0x%08x, computed 0x%08x (the artifact is corrupted)",
    # artifact.load / check_root_functions
    "ROOT_MISSING": "the root lists %u kernel(s) that no module provides; the first is %s",
    # reading the file (kbin.file.read / pk_artifact_load)
    "NOT_REGULAR": "cannot read %s: it is %s, not a regular file",
    "FILE_CHANGED": "cannot read %s: the file changed size while being read (%u bytes expected)",
}


def message(key: str, *args: object) -> str:
    """``MESSAGES[key]`` filled in with ``args`` (the same text C's printf gives)."""
    return MESSAGES[key].replace("%u", "%d") % args


def _is_invisible(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in INVISIBLE)


def _unit(ch: str, quote_char: str, keep: str) -> str:
    cp = ord(ch)
    if ch in keep:
        return ch
    if ch == "\\" or ch == quote_char:
        return "\\" + ch
    if cp < 0x20 or 0x7F <= cp <= 0x9F:
        return f"\\x{cp:02x}"
    if 0xDC80 <= cp <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{cp - 0xDC00:02x}"
    if _is_invisible(cp):
        return f"\\u{cp:04x}"
    return ch


def quote(s: str, limit: int = QUOTE_LIMIT) -> str:
    """``'s'`` for a message: escaped, and cut after ``limit`` bytes of escaped UTF-8 (then ``'...``)."""
    out, used = [], 0
    for ch in s:
        u = _unit(ch, "'", "")
        n = len(u.encode("utf-8"))
        if used + n > limit:
            return "'" + "".join(out) + "'..."
        out.append(u)
        used += n
    return "'" + "".join(out) + "'"


def escape(s: str) -> str:
    """A one-line string for a listing: backslash and every control/invisible character escaped."""
    return "".join(_unit(ch, "", "") for ch in s)


def escape_source(s: str) -> str:
    """Source text for a terminal: tabs and newlines kept, other control/invisible characters
    escaped as ``\\xNN``/``\\uNNNN``; backslashes are left alone (sources are full of them)."""
    return "".join(_unit(ch, "", "\t\n\\") for ch in s)
