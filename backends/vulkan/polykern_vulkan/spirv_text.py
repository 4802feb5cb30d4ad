"""Our own SPIR-V disassembler: binary -> the textual form that ``spirv-as`` reads.

This is the "spirv-asm" source embedded in artifacts. It is produced by this module on every host
(never by an external tool), so an artifact's bytes do not depend on whether SPIRV-Tools happens
to be installed. Ids get friendly names the way spirv-dis names them (OpName'd ids by their name,
types as ``%float`` / ``%_ptr_StorageBuffer_float``, constants as ``%int_1``), unique and stable,
so golden files diff well. The tests check that ``spirv-as`` on this text and our disassembler
on the result round-trip to the same text.

Only the opcodes in :data:`polykern_vulkan.spirv_spec.GRAMMAR` are understood; anything else is a
``ValueError`` (the binary did not come from our emitter).
"""
from __future__ import annotations

import re
import struct
from typing import Dict, List, Tuple

from .spirv_spec import (BUILTIN, DECORATION_LITERALS, ENUM_NAMES, GLSL_NAMES, GRAMMAR, MAGIC, OP_NAMES,
                         Op)

_INT_NAMES = {(8, True): "char", (8, False): "uchar", (16, True): "short", (16, False): "ushort",
              (32, True): "int", (32, False): "uint", (64, True): "long", (64, False): "ulong"}
_FLOAT_NAMES = {16: "half", 32: "float", 64: "double"}
_BUILTIN_NAMES = {v: k for k, v in BUILTIN.items()}


def _decode_string(words: List[int], i: int) -> Tuple[str, int]:
    data = bytearray()
    while i < len(words):
        chunk = struct.pack("<I", words[i])
        i += 1
        if 0 in chunk:
            data += chunk[: chunk.index(0)]
            return data.decode("utf-8"), i
        data += chunk
    raise ValueError("unterminated literal string")


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def split_instructions(binary: bytes) -> Tuple[List[int], List[Tuple[int, List[int]]]]:
    if len(binary) % 4 or len(binary) < 20:
        raise ValueError("a SPIR-V binary is a whole number of words, at least 5")
    words = list(struct.unpack(f"<{len(binary) // 4}I", binary))
    if words[0] != MAGIC:
        raise ValueError(f"bad SPIR-V magic 0x{words[0]:08x}")
    insts = []
    i = 5
    while i < len(words):
        count, op = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > len(words):
            raise ValueError(f"bad instruction word count at word {i}")
        insts.append((op, words[i + 1:i + count]))
        i += count
    return words[:5], insts


def _format_float(bits: int, words: List[int]) -> str:
    import numpy as np

    if bits == 16:
        v = float(np.array(words[0] & 0xFFFF, dtype=np.uint16).view(np.float16))
    elif bits == 32:
        v = struct.unpack("<f", struct.pack("<I", words[0]))[0]
    else:
        v = struct.unpack("<d", struct.pack("<II", words[0], words[1]))[0]
    if v != v or v in (float("inf"), float("-inf")):
        # Non-finite values as spirv-dis writes them: hex floats with the exponent past the range.
        raw = words[0] if bits <= 32 else words[0] | (words[1] << 32)
        exp_bits, man_bits = {16: (5, 10), 32: (8, 23), 64: (11, 52)}[bits]
        sign = "-" if raw >> (bits - 1) else ""
        mantissa = raw & ((1 << man_bits) - 1)
        bias = (1 << (exp_bits - 1)) - 1
        frac = ""
        if mantissa:
            digits = (man_bits + 3) // 4
            frac = "." + format(mantissa << (digits * 4 - man_bits), f"0{digits}x").rstrip("0")
        return f"{sign}0x1{frac}p+{bias + 1}"
    return repr(v)


class _Namer:
    """Friendly, unique, deterministic names for result ids."""

    def __init__(self, insts):
        self.scalars: Dict[int, Tuple[str, int, bool]] = {}
        self.names: Dict[int, str] = {}
        wanted: Dict[int, str] = {}
        for op, ops in insts:
            if op == Op.Name and ops[0] not in wanted:
                wanted[ops[0]] = _decode_string(ops, 1)[0]
        taken = set()
        unnamed: List[int] = []
        for op, ops in insts:
            if op in (Op.Name, Op.MemberName):
                continue
            rid = self._result_id(op, ops)
            if rid is None:
                continue
            if op == Op.TypeInt:
                self.scalars[rid] = ("int", ops[1], bool(ops[2]))
            elif op == Op.TypeFloat:
                self.scalars[rid] = ("float", ops[1], True)
            want = wanted.get(rid) or self._suggest(op, ops)
            if not want:
                unnamed.append(rid)
                continue
            self.names[rid] = self._unique(re.sub(r"[^A-Za-z0-9_]", "_", want), taken)
        # Ids without a meaningful name are numbered in order of first appearance in the text, which is
        # also how spirv-as numbers ids: the text survives a trip through spirv-as unchanged.
        pending = set(unnamed)
        labels = {ops[0] for op, ops in insts if op == Op.Label}
        count = 0
        for rid in self._appearance_order(insts):
            if rid in pending:
                pending.discard(rid)
                count += 1
                self.names[rid] = self._unique(f"L{count}" if rid in labels else str(count), taken)
        for rid in sorted(pending):  # defined but never printed (cannot happen for our grammar)
            self.names[rid] = self._unique(str(rid), taken)

    @staticmethod
    def _unique(base: str, taken: set) -> str:
        name, n = base, 0
        while name in taken:
            name = f"{base}_{n}"
            n += 1
        taken.add(name)
        return name

    @staticmethod
    def _appearance_order(insts):
        for op, ops in insts:
            kinds = GRAMMAR[op]
            res = [k for k in kinds if k == "R"]
            i = 0
            ids = []
            for kind in kinds:
                if i >= len(ops):
                    break
                if kind in ("R", "T", "I"):
                    ids.append((kind, ops[i]))
                    i += 1
                elif kind == "I*":
                    ids.extend(("I", w) for w in ops[i:])
                    i = len(ops)
                elif kind == "S":
                    i = _decode_string(ops, i)[1]
                elif kind in ("L", "G") or kind.startswith("E:"):
                    i += 1
                else:  # literal tails (V, L*, D, X) hold no ids
                    i = len(ops)
            if res:
                yield from (w for k, w in ids if k == "R")
            yield from (w for k, w in ids if k != "R")

    @staticmethod
    def _result_id(op, ops):
        kinds = GRAMMAR.get(op)
        if kinds is None:
            raise ValueError(f"opcode {op} is not produced by this emitter")
        if kinds and kinds[0] == "R":
            return ops[0]
        if len(kinds) > 1 and kinds[1] == "R":
            return ops[1]
        return None

    def type_name(self, tid: int) -> str:
        return self.names.get(tid, str(tid))

    def _suggest(self, op, ops) -> str:
        if op == Op.TypeVoid:
            return "void"
        if op == Op.TypeBool:
            return "bool"
        if op == Op.TypeInt:
            return _INT_NAMES.get((ops[1], bool(ops[2])), f"i{ops[1]}")
        if op == Op.TypeFloat:
            return _FLOAT_NAMES.get(ops[1], f"f{ops[1]}")
        if op == Op.TypeVector:
            return f"v{ops[2]}{self.type_name(ops[1])}"
        if op == Op.TypeArray:
            return f"_arr_{self.type_name(ops[1])}_{self.type_name(ops[2])}"
        if op == Op.TypeRuntimeArray:
            return f"_runtimearr_{self.type_name(ops[1])}"
        if op == Op.TypePointer:
            return f"_ptr_{ENUM_NAMES['STORAGE_CLASS'][ops[1]]}_{self.type_name(ops[2])}"
        if op == Op.TypeStruct:
            return "_struct"
        if op == Op.TypeFunction:
            return f"fn_{self.type_name(ops[1])}"
        if op in (Op.ConstantTrue, Op.ConstantFalse):
            return "true" if op == Op.ConstantTrue else "false"
        if op == Op.Constant and ops[0] in self.scalars:
            text = _format_literal(self.scalars[ops[0]], ops[2:])
            if text.lstrip("-").startswith("0x"):  # non-finite
                text = ("n" if text.startswith("-") else "") + ("inf" if text.lstrip("-") in (
                    "0x1p+16", "0x1p+128", "0x1p+1024") else "nan")
            text = text.replace("-", "n").replace(".", "_").replace("+", "")
            return f"{self.type_name(ops[0])}_{text}"
        if op == Op.ConstantNull:
            return f"null{self.type_name(ops[0])}"
        if op == Op.ExtInstImport:
            return "ext"
        return ""

    def __getitem__(self, rid: int) -> str:
        return "%" + self.names.get(rid, str(rid))


def _format_literal(scalar, words: List[int]) -> str:
    kind, bits, signed = scalar
    if kind == "float":
        return _format_float(bits, words)
    v = words[0] if bits <= 32 else words[0] | (words[1] << 32)
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return str(v)


def disassemble(binary: bytes) -> str:
    """The module as SPIR-V assembly text (spirv-as syntax), deterministic."""
    header, insts = split_instructions(binary)
    names = _Namer(insts)
    version = header[1]
    lines = [
        "; SPIR-V",
        f"; Version: {(version >> 16) & 0xFF}.{(version >> 8) & 0xFF}",
        f"; Generator: 0x{header[2]:08x} (polykern vulkan emitter)",
        f"; Bound: {header[3]}",
        f"; Schema: {header[4]}",
    ]
    for op, ops in insts:
        kinds = GRAMMAR[op]
        parts: List[str] = []
        result = None
        rtype = None
        i = 0
        for kind in kinds:
            if kind == "R":
                result = names[ops[i]]
                i += 1
            elif kind == "T":
                rtype = ops[i]
                parts.append(names[ops[i]])
                i += 1
            elif kind == "I":
                parts.append(names[ops[i]])
                i += 1
            elif kind == "I*":
                parts.extend(names[w] for w in ops[i:])
                i = len(ops)
            elif kind == "L":
                parts.append(str(ops[i]))
                i += 1
            elif kind == "L*":
                parts.extend(str(w) for w in ops[i:])
                i = len(ops)
            elif kind == "S":
                s, i = _decode_string(ops, i)
                parts.append(_quote(s))
            elif kind == "V":
                scalar = names.scalars.get(rtype)
                if scalar is None:
                    raise ValueError(f"constant of non-numeric type %{rtype}")
                parts.append(_format_literal(scalar, ops[i:]))
                i = len(ops)
            elif kind == "G":
                parts.append(GLSL_NAMES.get(ops[i], str(ops[i])))
                i += 1
            elif kind.startswith("E:"):
                parts.append(ENUM_NAMES[kind[2:]][ops[i]])
                i += 1
            elif kind == "D":
                dec = ENUM_NAMES["DECORATION"][ops[i]]
                parts.append(dec)
                i += 1
                if dec == "BuiltIn":
                    parts.append(_BUILTIN_NAMES[ops[i]])
                    i += 1
                else:
                    n = DECORATION_LITERALS.get(dec, 0)
                    parts.extend(str(w) for w in ops[i:i + n])
                    i += n
            elif kind == "X":
                parts.append(ENUM_NAMES["EXECUTION_MODE"][ops[i]])
                parts.extend(str(w) for w in ops[i + 1:])
                i = len(ops)
            else:  # pragma: no cover - table error
                raise ValueError(f"unknown operand kind {kind}")
        if i != len(ops):
            raise ValueError(f"{OP_NAMES[op]}: {len(ops) - i} unexpected operand words")
        text = " ".join([OP_NAMES[op]] + parts)
        if result is not None:
            lines.append(f"{result:>20} = {text}")
        else:
            lines.append(" " * 23 + text)
    return "\n".join(lines) + "\n"
