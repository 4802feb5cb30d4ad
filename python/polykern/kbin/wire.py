"""THE byte format of polykern — the only definition (docs/internals.md, "Byte format").

Primitives are little-endian; ``str``/``bytes`` are a u64 length + data (str is
UTF-8); a ``map`` is a u64 count + entries sorted by the UTF-8 bytes of the key;
a ``list`` is a u64 count + items.

Format version 2 (written): every module payload starts with a u8 *layout id* from the
closed set :data:`LAYOUTS` (root, bytes, smap), so a reader decodes, inspects and re-exports a
module of any kind, including kinds it has never heard of. Version 1 (still read): the layout
came from the module's kind, through the frozen table :data:`V1_KINDS`.

The :class:`Reader` trusts nothing: every length and count is checked against
the bytes that remain *before* anything is sliced or looped over, so no
allocation or loop is ever sized by an unchecked field. Every failure is an
:class:`ArtifactError` carrying the absolute byte offset. Decoding is also
canonical: map keys must be strictly increasing and flags must be 0/1, so a
decoded value re-encodes to exactly the bytes it came from.
"""
from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import ArtifactError, PolykernError
from .function_info import ARG_KINDS, ArgInfo, FunctionInfo
from .function_schema import LAUNCH_TAG_KINDS, attr_problem, tag_ok
from ..ir.types import scalar_from_code
from .messages import message, quote

__all__ = [
    "MAGIC", "VERSION", "VERSIONS", "HEADER_SIZE", "check_header", "LAYOUTS", "V1_KINDS", "Reader", "Writer", "Container", "ContainerModule",
    "encode_function_info", "decode_function_info", "encode_device_payload", "decode_device_payload",
    "encode_root_payload", "decode_root_payload", "encode_container", "decode_container", "payload_layout",
    "function_problem", "check_function_info", "check_kind", "KIND_RE",
]

MAGIC = b"PKBIN\x00\r\n"
#: The version this writer writes; :data:`VERSIONS` are those this reader reads.
VERSION = 2
VERSIONS = (1, 2)

#: Version 2's payload layouts, by id (the u8 that starts every module payload). A closed set:
#: a new layout is a new format version. root: fmap; list targets. bytes: str fmt; fmap; bytes.
#: smap: str fmt; fmap; map<str, bytes> (named sections, e.g. one shader per kernel).
LAYOUTS = ("root", "bytes", "smap")
#: Version 1 only: the module kinds a version-1 artifact may hold and their layouts. Frozen (it
#: describes files already written; a new kind never goes here). "webgpu" is version 1's
#: fourth layout: fmap; map<str, bytes>, with no fmt field (the fmt is "wgsl").
V1_KINDS: Mapping[str, str] = {
    "root": "root", "llvm": "bytes", "cuda": "bytes", "rocm": "bytes", "opencl": "bytes", "hexagon": "bytes",
    "vulkan": "smap", "metal": "smap", "webgpu": "webgpu",
}
V1_WEBGPU_FMT = "wgsl"
#: What a module kind may be: also what keeps an artifact's kind safe to print unquoted.
KIND_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")  # used with fullmatch


def check_kind(kind: object) -> str:
    """``kind`` if it is a device module kind name (``KIND_RE``, not "root"), else ValueError."""
    if not isinstance(kind, str) or not KIND_RE.fullmatch(kind) or kind == "root":
        raise ValueError(f"a device module kind is a lowercase identifier of at most 64 characters other than "
                         f"'root', got {kind!r}")
    return kind


def _fail(key: str, at: int, *args: object) -> "ArtifactError":
    """The ArtifactError of ``messages.MESSAGES[key]`` at byte ``at`` (raise the result)."""
    return ArtifactError(message(key, *args), at)


def _sorted_items(mapping: Mapping[str, object]):
    return sorted(mapping.items(), key=lambda kv: kv[0].encode("utf-8"))


# ------------------------------------------------------------------ writer


class Writer:
    """Appends primitives to a growing buffer; ``getvalue()`` returns the bytes."""

    __slots__ = ("_buf",)

    def __init__(self):
        self._buf = bytearray()

    def __len__(self) -> int:
        return len(self._buf)

    def getvalue(self) -> bytes:
        return bytes(self._buf)

    def _int(self, fmt: str, value: int, bits: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << bits):
            raise ValueError(f"u{bits} value out of range: {value!r}")
        self._buf += struct.pack(fmt, value)

    def u8(self, v: int) -> None:
        self._int("<B", v, 8)

    def u16(self, v: int) -> None:
        self._int("<H", v, 16)

    def u32(self, v: int) -> None:
        self._int("<I", v, 32)

    def u64(self, v: int) -> None:
        self._int("<Q", v, 64)

    def raw(self, data: bytes) -> None:
        self._buf += data

    def bytes_(self, data: Union[bytes, bytearray, memoryview]) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"expected bytes, got {type(data).__name__}")
        data = bytes(data)
        self.u64(len(data))
        self._buf += data

    def str_(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"expected str, got {type(text).__name__}")
        self.bytes_(text.encode("utf-8"))

    def list_str(self, items: Sequence[str]) -> None:
        self.u64(len(items))
        for s in items:
            self.str_(s)

    def map_str_str(self, mapping: Mapping[str, str]) -> None:
        self.u64(len(mapping))
        for k, v in _sorted_items(mapping):
            self.str_(k)
            self.str_(v)

    def map_str_bytes(self, mapping: Mapping[str, bytes]) -> None:
        self.u64(len(mapping))
        for k, v in _sorted_items(mapping):
            self.str_(k)
            self.bytes_(v)

    def function_info(self, info: FunctionInfo) -> None:
        self.str_(info.name)
        self.u64(len(info.args))
        for a in info.args:
            self.str_(a.name)
            self.u8(ARG_KINDS.index(a.kind))
            self.u8(a.code)
            self.u8(a.bits)
            self.u16(a.lanes)
            self.u8(1 if a.readonly else 0)
        self.list_str(info.launch_tags)
        self.u64(info.shared_bytes)
        self.map_str_str(info.attrs)

    def fmap(self, fmap: Mapping[str, FunctionInfo]) -> None:
        self.u64(len(fmap))
        for name, info in _sorted_items(fmap):
            if not isinstance(info, FunctionInfo) or info.name != name:
                raise ValueError(f"function map entry {name!r} must be a FunctionInfo of that name")
            self.str_(name)
            self.function_info(info)


# ------------------------------------------------------------------ reader


class Reader:
    """Bounds-checked cursor over ``data[start:end]``; offsets reported are absolute."""

    __slots__ = ("_data", "_pos", "_end")

    def __init__(self, data: Union[bytes, memoryview], start: int = 0, end: Optional[int] = None):
        self._data = data
        self._pos = start
        self._end = len(data) if end is None else end

    @property
    def pos(self) -> int:
        return self._pos

    @property
    def remaining(self) -> int:
        return self._end - self._pos

    def _need(self, n: int, what: str) -> int:
        if n > self._end - self._pos:
            raise _fail("TRUNCATED", self._pos, what, n, self._end - self._pos)
        start = self._pos
        self._pos += n
        return start

    def _unpack(self, fmt: str, size: int, what: str) -> int:
        start = self._need(size, what)
        return struct.unpack_from(fmt, self._data, start)[0]

    def u8(self, what: str = "u8") -> int:
        return self._unpack("<B", 1, what)

    def u16(self, what: str = "u16") -> int:
        return self._unpack("<H", 2, what)

    def u32(self, what: str = "u32") -> int:
        return self._unpack("<I", 4, what)

    def u64(self, what: str = "u64") -> int:
        return self._unpack("<Q", 8, what)

    def flag(self, what: str) -> bool:
        at = self._pos
        v = self.u8(what)
        if v > 1:
            raise _fail("FLAG", at, what, v)
        return v == 1

    def raw(self, n: int, what: str) -> bytes:
        start = self._need(n, what)
        return bytes(self._data[start:start + n])

    def length(self, what: str, item_size: int = 1) -> int:
        """A u64 length/count whose items take at least ``item_size`` bytes each; checked
        against the bytes that remain before the caller allocates or loops."""
        at = self._pos
        n = self.u64(f"length of {what}")
        if n * item_size > self.remaining:
            raise _fail("LENGTH", at, what, n, "bytes" if item_size == 1 else "entries", self.remaining)
        return n

    def bytes_(self, what: str = "bytes") -> bytes:
        return self.raw(self.length(what), what)

    def sub(self, what: str) -> "Reader":
        """A reader over the next length-prefixed byte string (no copy)."""
        n = self.length(what)
        start = self._need(n, what)
        return Reader(self._data, start, start + n)

    def str_(self, what: str = "string") -> str:
        at = self._pos + 8
        data = self.bytes_(what)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _fail("UTF8", at + e.start, what) from None

    def name(self, what: str) -> str:
        at = self._pos
        s = self.str_(what)
        if not s:
            raise _fail("EMPTY", at, what)
        return s

    def list_str(self, what: str) -> List[str]:
        return [self.str_(f"{what}[{i}]") for i in range(self.length(what, 8))]

    def _map(self, what: str, read_value, item_size: int, names: bool = False) -> dict:
        out = {}
        prev = None
        for _ in range(self.length(what, item_size)):
            at = self._pos
            key = self.str_(f"key of {what}")
            if names and not key:
                raise _fail("EMPTY", at, f"key of {what}")
            enc = key.encode("utf-8")
            if prev is not None and enc <= prev:
                raise _fail("UNSORTED", at, what, quote(key), quote(prev.decode()))
            prev = enc
            out[key] = read_value(f"{what}[{quote(key)}]")
        return out

    def map_str_str(self, what: str, names: bool = False) -> Dict[str, str]:
        """A map of str to str; ``names``: every key is non-empty (a format name, a metadata key)."""
        return self._map(what, self.str_, 16, names)

    def map_str_bytes(self, what: str) -> Dict[str, bytes]:
        return self._map(what, self.bytes_, 16)

    def function_info(self, what: str = "function") -> FunctionInfo:
        name = self.name(f"{what} name")
        args = []
        for i in range(self.length(f"{what} args", 8 + 6)):
            a_what = f"{what} arg {i}"
            aname = self.name(f"{a_what} name")
            at = self._pos
            kind = self.u8(f"{a_what} kind")
            code = self.u8(f"{a_what} type code")
            bits = self.u8(f"{a_what} bits")
            lanes = self.u16(f"{a_what} lanes")
            readonly = self.flag(f"{a_what} readonly flag")
            if kind > 1:
                raise _fail("ARG_KIND", at, a_what, quote(aname), kind)
            try:
                scalar_from_code(code, bits)
            except ValueError:
                raise _fail("ARG_TYPE", at + 1, a_what, quote(aname), code, bits) from None
            if lanes != 1:
                raise _fail("ARG_LANES", at + 3, a_what, quote(aname), lanes)
            if readonly and kind == 0:
                raise _fail("ARG_RO_SCALAR", at + 5, a_what, quote(aname))
            args.append(ArgInfo(aname, ARG_KINDS[kind], code, bits, lanes, readonly))
        at = self._pos
        tags = self.list_str(f"{what} launch tags")
        if tags != sorted(set(tags)):
            raise _fail("TAGS_UNSORTED", at, what)
        shared = self.u64(f"{what} shared bytes")
        attrs_at = self._pos
        attrs = self.map_str_str(f"{what} attrs")
        problem = function_problem(what, [a.name for a in args], tags, attrs)
        if problem is not None:
            key, margs = problem
            raise _fail(key, {"ARG_DUP": self._pos, "TAG_BAD": at}.get(key, attrs_at), *margs)
        try:
            return FunctionInfo(name, args, tags, shared, attrs)
        except ValueError as e:
            raise ArtifactError(f"invalid {what}: {e}", self._pos) from None  # unreachable: checked above

    def fmap(self, what: str = "function map") -> Dict[str, FunctionInfo]:
        out = {}
        prev = None
        for _ in range(self.length(what, 8 + 8 + 8 + 8 + 8 + 8)):
            at = self._pos
            key = self.name(f"key of {what}")
            enc = key.encode("utf-8")
            if prev is not None and enc <= prev:
                raise _fail("UNSORTED", at, what, quote(key), quote(prev.decode()))
            prev = enc
            info = self.function_info(f"function {quote(key)}")
            if info.name != key:
                raise _fail("FMAP_NAME", at, what, quote(key), quote(info.name))
            out[key] = info
        return out

    def expect_end(self, what: str) -> None:
        if self._pos != self._end:
            raise _fail("TRAILING", self._pos, self._end - self._pos, what)


# ------------------------------------------------------------------ FunctionInfo


def function_problem(what: str, arg_names: Sequence[str], tags: Sequence[str],
                     attrs: Mapping[str, str]) -> Optional[Tuple[str, Tuple[object, ...]]]:
    """The first thing a reader refuses in a function description beyond the byte format
    (duplicate argument names, launch tags and attributes against ``function_schema``), as
    ``(message key, message args)``; ``None`` when there is none. Same order as the C reader."""
    seen = set()
    for name in arg_names:
        if name in seen:
            return "ARG_DUP", (what, quote(name))
        seen.add(name)
    for t in tags:
        if not tag_ok(t):
            return "TAG_BAD", (what, quote(t), ", ".join(LAUNCH_TAG_KINDS))
    for k, v in attrs.items():
        problem = attr_problem(k, v)
        if problem is not None:
            if problem[0] == "ATTR_NAME":
                return "ATTR_NAME", (what, quote(k))
            return "ATTR_VALUE", (what, quote(k), quote(v), problem[1])
    return None


def check_function_info(info: FunctionInfo) -> None:
    """What a reader would refuse in ``info`` (``export`` calls this: never write what we would
    refuse to read), as a PolykernError naming the function and the attribute or tag."""
    problem = function_problem(f"function {quote(info.name)}", [a.name for a in info.args], info.launch_tags,
                               info.attrs)
    if problem is not None:
        raise PolykernError(f"cannot export: {message(problem[0], *problem[1])}")



def encode_function_info(info: FunctionInfo) -> bytes:
    w = Writer()
    w.function_info(info)
    return w.getvalue()


def decode_function_info(data: bytes) -> FunctionInfo:
    r = Reader(data)
    info = r.function_info()
    r.expect_end("function info")
    return info


# ------------------------------------------------------------------ module payloads

Payload = Union[bytes, Dict[str, bytes]]
_KNOWN_LAYOUTS = ", ".join(f"{i} ({name})" for i, name in enumerate(LAYOUTS))


def payload_layout(payload: object) -> str:
    """The version-2 layout of a device payload: "bytes" for one blob, "smap" for named sections."""
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return "bytes"
    if isinstance(payload, Mapping) and all(isinstance(k, str) and isinstance(v, (bytes, bytearray))
                                            for k, v in payload.items()):
        return "smap"
    raise TypeError(f"a device payload is bytes or a dict[str, bytes] of named sections, got "
                    f"{type(payload).__name__}")


def encode_device_payload(kind: str, fmt: str, fmap: Mapping[str, FunctionInfo], payload: Payload) -> bytes:
    """The one serializer of device modules (real, fallback and unavailable modules alike), in
    format version 2: the layout id, then fmt, the function map and the payload."""
    check_kind(kind)
    if not isinstance(fmt, str) or not fmt:
        raise ValueError(f"a {kind} module's fmt is a non-empty string, got {fmt!r}")
    layout = payload_layout(payload)
    w = Writer()
    w.u8(LAYOUTS.index(layout))
    w.str_(fmt)
    w.fmap(fmap)
    if layout == "bytes":
        w.bytes_(payload)  # type: ignore[arg-type]
    else:
        w.map_str_bytes(payload)  # type: ignore[arg-type]
    return w.getvalue()


def _layout_id(r: Reader, what: str, root: bool) -> str:
    """Read a version-2 payload's layout id; it must be known, and root exactly for the root."""
    at = r.pos
    lid = r.u8(f"{what} payload layout")
    if lid >= len(LAYOUTS):
        raise _fail("LAYOUT_UNKNOWN", at, what, lid, _KNOWN_LAYOUTS)
    if root and lid != 0:
        raise _fail("ROOT_LAYOUT", at, lid, LAYOUTS[lid])
    if not root and lid == 0:
        raise _fail("LAYOUT_NOT_ROOT", at, what)
    return LAYOUTS[lid]


def decode_device_payload(kind: str, data: Union[bytes, memoryview], start: int = 0, end: Optional[int] = None,
                          version: int = VERSION) -> Tuple[str, Dict[str, FunctionInfo], Payload]:
    """(fmt, fmap, payload) of a device module of format ``version``; offsets in errors are
    relative to ``data``. A version-1 payload's layout comes from its kind (:data:`V1_KINDS`)."""
    r = Reader(data, start, end)
    what = f"{kind} module"
    if version == 1:
        layout = V1_KINDS.get(kind)
        if layout is None or layout == "root":
            raise _fail("NOT_DEVICE_KIND", start, quote(kind), ", ".join(k for k in sorted(V1_KINDS) if k != "root"))
    else:
        layout = _layout_id(r, what, False)
    fmt = V1_WEBGPU_FMT if layout == "webgpu" else r.name(f"{what} fmt")
    fmap = r.fmap(f"{what} function map")
    if layout == "bytes":
        payload: Payload = r.bytes_(f"{what} payload")
    else:
        payload = r.map_str_bytes(f"{what} shader map")
    r.expect_end(f"{what} payload")
    return fmt, fmap, payload


def encode_root_payload(fmap: Mapping[str, FunctionInfo], targets: Sequence[str]) -> bytes:
    w = Writer()
    w.u8(0)
    w.fmap(fmap)
    w.list_str(list(targets))
    return w.getvalue()


def decode_root_payload(data: Union[bytes, memoryview], start: int = 0, end: Optional[int] = None,
                        version: int = VERSION) -> Tuple[Dict[str, FunctionInfo], List[str]]:
    r = Reader(data, start, end)
    if version != 1:
        _layout_id(r, "root module", True)
    fmap = r.fmap("root function map")
    targets = r.list_str("root targets")
    r.expect_end("root payload")
    return fmap, targets


# ------------------------------------------------------------------ container


@dataclass(frozen=True)
class ContainerModule:
    kind: str
    payload: bytes
    offset: int  # absolute offset of the payload's first byte (after its length)


@dataclass(frozen=True)
class Container:
    version: int
    modules: List[ContainerModule]
    children: List[List[int]]
    sources: Optional[List[Dict[str, str]]]
    meta: Dict[str, str]
    crc32: int
    size: int


def encode_container(modules: Sequence[Tuple[str, bytes]], children: Sequence[Sequence[int]],
                     sources: Optional[Sequence[Mapping[str, str]]], meta: Mapping[str, str]) -> bytes:
    n = len(modules)
    if n < 1 or len(children) != n:
        raise ValueError("a container needs at least the root module and one child list per module")
    if sources is not None and len(sources) != n:
        raise ValueError("sources must have one map per module")
    for i, (kind, _) in enumerate(modules):
        if (kind == "root") != (i == 0):
            raise ValueError("module 0, and only module 0, is the root")
        if i:
            check_kind(kind)
    w = Writer()
    w.raw(MAGIC)
    w.u32(VERSION)
    w.u64(n)
    flat: List[int] = []
    w.u64(0)
    for kids in children:
        flat.extend(kids)
        w.u64(len(flat))
    for c in flat:
        w.u64(c)
    for kind, payload in modules:
        w.str_(kind)
        w.bytes_(payload)
    if sources is None:
        w.u8(0)
    else:
        w.u8(1)
        for s in sources:
            w.map_str_str(s)
    w.map_str_str(meta)
    w.u32(zlib.crc32(w.getvalue()))
    data = w.getvalue()
    decode_container(data)  # never write what we would refuse to read
    return data


#: Magic and format version: what :func:`check_header` needs to accept or refuse a file.
HEADER_SIZE = len(MAGIC) + 4


def check_header(data: bytes) -> int:
    """The format version of an artifact whose first bytes are ``data`` (its first
    ``HEADER_SIZE`` bytes, or all of a shorter artifact); raises what :func:`decode_container` raises
    for an empty artifact, a bad magic or an unsupported version. The file reader calls it before
    reading the rest of a file."""
    if not data:
        raise _fail("DATA_EMPTY", 0)
    if data[:len(MAGIC)] != MAGIC[:min(len(data), len(MAGIC))]:
        raise _fail("BAD_MAGIC", 0, data[:len(MAGIC)].hex())
    r = Reader(data)
    r.raw(len(MAGIC), "magic")
    version = r.u32("format version")
    if version not in VERSIONS:
        raise _fail("VERSION", len(MAGIC), version, VERSIONS[0], VERSIONS[-1])
    return version


def decode_container(data: Union[bytes, bytearray, memoryview]) -> Container:
    """Validate and split a .kbin container. Raises :class:`ArtifactError` with the offset."""
    if isinstance(data, memoryview):
        data = data.tobytes()
    elif not isinstance(data, bytes):
        data = bytes(data)
    version = check_header(data)
    r = Reader(data, HEADER_SIZE)
    at = r.pos
    n = r.u64("module count")
    if n < 1:
        raise _fail("NO_MODULES", at)
    if (n + 1) * 8 > r.remaining:
        raise _fail("MODULE_COUNT", at, n, r.remaining)
    indptr_at = r.pos
    indptr = [r.u64("import index") for _ in range(n + 1)]
    if indptr[0] != 0:
        raise _fail("INDEX_START", indptr_at, indptr[0])
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            raise _fail("INDEX_DECREASES", indptr_at + 8 * (i + 1), i)
    n_edges = indptr[n]
    if n_edges > n - 1:
        raise _fail("TOO_MANY_EDGES", indptr_at + 8 * n, n_edges, n, n - 1)
    child_at = r.pos
    flat = [r.u64("import child index") for _ in range(n_edges)]
    children = [flat[indptr[i]:indptr[i + 1]] for i in range(n)]
    _check_tree(children, flat, n, child_at)
    modules: List[ContainerModule] = []
    for i in range(n):
        k_at = r.pos
        kind = r.str_(f"module {i} kind")
        if version == 1 and kind not in V1_KINDS:
            raise _fail("UNKNOWN_KIND", k_at, i, quote(kind), ", ".join(sorted(V1_KINDS)))
        if not KIND_RE.fullmatch(kind):
            raise _fail("KIND_NAME", k_at, i, quote(kind))
        if (kind == "root") != (i == 0):
            raise _fail("ROOT_FIRST", k_at) if i == 0 else _fail("SECOND_ROOT", k_at, i)
        payload = r.bytes_(f"module {i} ({kind}) payload")
        modules.append(ContainerModule(kind, payload, r.pos - len(payload)))
    sources = None
    if r.flag("sources flag"):
        sources = [r.map_str_str(f"module {i} sources", names=True) for i in range(n)]
    meta = r.map_str_str("metadata", names=True)
    crc_at = r.pos
    crc = r.u32("checksum")
    if r.remaining:
        raise _fail("CRC_TRAILING", r.pos, r.remaining)
    actual = zlib.crc32(memoryview(data)[:crc_at])
    if actual != crc:
        raise _fail("CHECKSUM", crc_at, crc, actual)
    return Container(version, modules, children, sources, meta, crc, len(data))


def _check_tree(children: List[List[int]], flat: List[int], n: int, child_at: int) -> None:
    seen = [False] * n
    seen[0] = True
    for j, c in enumerate(flat):
        if not 1 <= c < n:
            raise _fail("CHILD_RANGE", child_at + 8 * j, c, n - 1)
        if seen[c]:
            raise _fail("IMPORTED_TWICE", child_at + 8 * j, c)
        seen[c] = True
    # Every non-root module has exactly one parent; it is a tree iff all are reachable from 0. The
    # walk is Module.walk's preorder, the only order a writer stores modules in (so re-export keeps bytes).
    order, stack = [], [0]
    while stack:
        m = stack.pop()
        order.append(m)
        stack.extend(reversed(children[m]))
    if len(order) != n:
        missing = min(set(range(n)) - set(order))
        raise _fail("UNREACHABLE", child_at, missing)
    for position, m in enumerate(order):
        if m != position:
            raise _fail("PREORDER", child_at, m, position)
