"""Launching a kernel built in checked mode (:mod:`polykern.passes.bounds_check`), on every runtime.

``DeviceModule.get_function`` wraps a checked kernel's device function in a :class:`CheckedKernel`:
the caller passes the user's arguments only; the wrapper validates them (``check_args`` on the user's
signature), appends the hidden arguments (a buffer of the buffers' lengths, saturated at the check
type's maximum, and a zeroed error record, a NumPy ``int32`` array that every runtime copies back), launches,
and reads the record: the first violation raises a :class:`LaunchError` naming the kernel, the array,
the kind of access, the index, the array's length and the source line.

A zero-size NumPy buffer is passed as a one-element scratch array (its length stays 0), so that a
redirected bad access (a load or nested atomic goes to element 0 instead) never leaves the memory.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, List

import numpy as np

from ..errors import ArtifactError, LaunchError
from ..ir.dynamic_shared import ATTR as DYNAMIC_ATTR
from ..ir.dynamic_shared import parse_attr
from ..ir.types import scalar_from_code
from .launch import BufferArg, check_args
from ..kbin.messages import escape
from ..passes.bounds_check import ATTR, ATTR_USER_ARGS, RECORD_WORDS, Access, decode_metadata, decode_user_args

__all__ = ["CheckedKernel", "is_checked", "user_visible", "wrap_if_checked"]


def is_checked(info) -> bool:
    """Whether a FunctionInfo describes a kernel built in checked mode."""
    return info.attrs.get(ATTR) == "1"


def user_visible(info):
    """The FunctionInfo a caller sees: a checked kernel without its hidden parameters (as is otherwise)."""
    if not is_checked(info):
        return info
    try:
        n_user = decode_user_args(info.attrs)
    except KeyError:
        raise ArtifactError(f"checked kernel '{escape(info.name)}': malformed bounds-check attributes "
                            f"({ATTR_USER_ARGS} is missing)") from None
    except ValueError as e:
        raise ArtifactError(f"checked kernel '{escape(info.name)}': malformed bounds-check attributes "
                            f"({escape(str(e))})") from None
    if not 0 <= n_user < len(info.args):
        raise ArtifactError(f"checked kernel '{escape(info.name)}': its hidden bounds-check parameters do not match "
                            "its arguments")
    return dataclasses.replace(info, args=info.args[:n_user])


def wrap_if_checked(info, fn: Callable) -> Callable:
    return CheckedKernel(info, fn) if is_checked(info) else fn


class CheckedKernel:
    """``kernel(*user_args, grid=, block=)`` for a checked kernel: hidden arguments, then the record."""

    def __init__(self, info, fn: Callable):
        self.info = info
        self.fn = fn
        where = f"checked kernel '{escape(info.name)}'"
        try:
            meta = decode_metadata(info.attrs)
        except KeyError as e:
            raise ArtifactError(f"{where}: malformed bounds-check attributes ({escape(str(e.args[0]))} is "
                                "missing)") from None
        except ValueError as e:
            raise ArtifactError(f"{where}: malformed bounds-check attributes ({escape(str(e))})") from None
        n_user, lengths, self.index_bits = meta.user_args, meta.lengths, meta.index_bits
        self.accesses: List[Access] = meta.accesses
        args = info.args
        # what the pass adds: a lengths buffer (one slot per user buffer, in order) if any, then the record
        buffers = [i for i, a in enumerate(args[:n_user]) if a.is_buffer] if 0 <= n_user <= len(args) else None
        ok = (buffers is not None and lengths == buffers and self.index_bits in (32, 64)
              and n_user + (1 if lengths else 0) + 1 == len(args))
        hidden = args[n_user:] if ok else ()
        if ok:
            rec = hidden[-1]
            ok = rec.is_buffer and rec.dtype == scalar_from_code(0, 32) and not rec.readonly
        if ok and lengths:
            lens = hidden[0]
            ok = (lens.is_buffer and lens.readonly and lens.dtype.is_int and not lens.dtype.is_signed
                  and lens.dtype.bits == self.index_bits)
        if not ok:
            raise ArtifactError(f"{where}: its hidden bounds-check parameters do not match its arguments")
        self.lengths = lengths
        self.lens_dtype = hidden[0].dtype.numpy if lengths else None
        self.length_max = (1 << self.index_bits) - 1
        self.user_info = dataclasses.replace(info, args=args[:n_user])

    @property
    def name(self) -> str:
        return self.info.name

    def __getattr__(self, name: str):
        """The runtime kernel's own attributes (``module``, ``last_threads`` ...) stay reachable."""
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __repr__(self) -> str:
        return f"<CheckedKernel {self.user_info.signature()}>"

    def __call__(self, *args: Any, grid=None, block=None) -> None:
        _, _, prepared = check_args(self.user_info, args, grid, block)
        call = list(args)
        for a in prepared:
            if isinstance(a, BufferArg) and a.size == 0 and isinstance(a.obj, np.ndarray):
                call[a.index] = np.zeros(1, a.obj.dtype)
        if self.lengths:
            call.append(np.array([min(prepared[i].size, self.length_max) for i in self.lengths], self.lens_dtype))
        record = np.zeros(RECORD_WORDS, np.int32)
        call.append(record)
        self.fn(*call, grid=grid, block=block)
        if record[0]:
            raise LaunchError(self.message(record, prepared))

    def message(self, record: np.ndarray, prepared) -> str:
        """The LaunchError text. Every string in it that comes from the artifact (the access table, the
        kernel's and its arguments' names) is escaped (``polykern.kbin.messages.escape``), as everywhere else."""
        name = escape(self.name)
        aid = int(record[0]) - 1
        if not 0 <= aid < len(self.accesses):
            return f"kernel '{name}': an out-of-bounds access was detected (unknown access id {aid})"
        acc = self.accesses[aid]
        index = _as_index(_bits(record, 1), acc.index_type, self.index_bits)
        if acc.length >= 0:
            what, length = "array", acc.length
        else:
            what = "buffer"
            pos = next((i for i, a in enumerate(self.user_info.args) if a.name == acc.array), None)
            length = prepared[pos].size if pos is not None else "?"
            if pos is None and DYNAMIC_ATTR in self.info.attrs:  # the pk.shared_dynamic array
                what, length = "shared array", prepared[parse_attr(self.info.attrs[DYNAMIC_ATTR])[0]].value
        op = {"read": "read of", "write": "write to"}.get(acc.op, f"{acc.op} on")
        at = f"at index {index}"
        if acc.group:  # the record holds the group index (passes/bounds_check.py fit_guard)
            n = acc.group
            at = (f"at group index {index} of a {n}-element group: its elements {n * index} .. {n * index + n - 1} "
                  f"do not fit the index type {escape(acc.index_type)}")
        elif acc.fragment:  # the record holds the offset and ld (passes/bounds_check.py matrix_guard)
            major, minor, ld_type = acc.fragment
            ld = _as_index(_bits(record, 3), ld_type, self.index_bits)
            span = (major - 1) * ld
            at = (f"at offset {index} with leading dimension {ld}: its elements {index} + r * {ld} + c "
                  f"(r < {major}, c < {minor}) span {index + min(0, span)} .. {index + max(0, span) + minor - 1}")
        text = (f"kernel '{name}': out-of-bounds {escape(op)} {what} '{escape(acc.array)}' {at} (length {length}), "
                f"at {escape(acc.where)}")
        if acc.source_line:
            text += f": {escape(acc.source_line)}"
        return text + " (the first violation of this launch; checked mode, bounds_check=True)"


def _bits(record: np.ndarray, word: int) -> int:
    """The 64 bits a guard stored in record words ``word`` and ``word + 1``."""
    return (int(record[word]) & 0xFFFFFFFF) | ((int(record[word + 1]) & 0xFFFFFFFF) << 32)


def _as_index(bits: int, index_type: str, width: int) -> int:
    """The index as the kernel computed it: the check type's bits read as the index's signedness."""
    bits &= (1 << width) - 1
    if index_type.startswith("i") and bits >> (width - 1):
        bits -= 1 << width
    return bits
