"""A small SPIR-V module builder: result ids, deduplicated types and constants, decorations,
capabilities and extensions, and the logical sections in the order SPIR-V 2.4 requires.

The builder knows nothing about kernels; :mod:`polykern_vulkan.lower` drives it. Ids are
handed out in creation order and every table is an insertion-ordered list, so the same calls
give the same bytes on every host and run.
"""
from __future__ import annotations

import struct
from typing import Dict, List, Optional, Sequence, Tuple, Union

from .spirv_spec import (BFLOAT16_KHR, CAPABILITY, DECORATION, GENERATOR, MAGIC, STORAGE_CLASS, Op,
                         version_word)

Operand = Union[int, str]


def encode_string(s: str) -> List[int]:
    """A literal string: UTF-8, NUL-terminated, zero-padded to a whole word, little-endian words."""
    data = s.encode("utf-8") + b"\x00"
    data += b"\x00" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def encode_inst(op: int, operands: Sequence[Operand]) -> List[int]:
    words: List[int] = []
    for o in operands:
        if isinstance(o, str):
            words.extend(encode_string(o))
        else:
            if not 0 <= o <= 0xFFFFFFFF:
                raise ValueError(f"SPIR-V operand word out of range: {o}")
            words.append(o)
    count = len(words) + 1
    if count > 0xFFFF:
        raise ValueError("SPIR-V instruction too long")
    return [(count << 16) | op] + words


def scalar_literal_words(value, bits: int, is_float: bool, signed: bool) -> List[int]:
    """Words of a numeric literal of the given type (SPIR-V 2.2.1: low-order word first; narrow
    integers sign-extended if signed, zero-extended otherwise; narrow floats zero-extended)."""
    if is_float:
        if bits == 16:
            import numpy as np

            return [int(np.array(value, dtype=np.float16).view(np.uint16))]
        if bits == 32:
            return [struct.unpack("<I", struct.pack("<f", value))[0]]
        lo, hi = struct.unpack("<II", struct.pack("<d", value))
        return [lo, hi]
    v = int(value) & ((1 << bits) - 1)
    if signed and v >> (bits - 1):
        v -= 1 << bits  # back to negative, then sign-extend to the word size
    if bits <= 32:
        return [v & 0xFFFFFFFF]
    v &= (1 << 64) - 1
    return [v & 0xFFFFFFFF, v >> 32]


class Block:
    def __init__(self, label: int):
        self.label = label
        self.insts: List[List[int]] = []
        self.terminated = False


class FunctionBuilder:
    """One function: OpVariable (Function storage) declarations are collected apart and placed at the
    top of the entry block, as SPIR-V requires; blocks appear in the order they were begun."""

    TERMINATORS = (Op.Branch, Op.BranchConditional, Op.Return, Op.Unreachable)

    def __init__(self, mod: "ModuleBuilder", result_type: int, fn_type: int, fid: int):
        self.mod = mod
        self.result_type = result_type
        self.fn_type = fn_type
        self.id = fid
        self.local_vars: List[List[int]] = []
        self.blocks: List[Block] = []
        self.cur: Optional[Block] = None

    def new_label(self) -> int:
        return self.mod.new_id()

    def begin(self, label: Optional[int] = None) -> int:
        if self.cur is not None and not self.cur.terminated:
            raise RuntimeError("beginning a block before the current one is terminated")
        block = Block(label if label is not None else self.new_label())
        self.blocks.append(block)
        self.cur = block
        return block.label

    @property
    def terminated(self) -> bool:
        return self.cur is None or self.cur.terminated

    def structured_loop(self, cond_fn, body_fn, step_fn=None) -> None:
        """A structured loop: header (OpLoopMerge), a condition block (``cond_fn()`` -> the bool id: to the
        body or the merge block), the body (``body_fn(merge, cont)``: the labels a break/continue branches
        to), the continue block (``step_fn()``, then the back-edge), and the merge block begun last."""
        header, cond_l, body_l, cont, merge = (self.new_label() for _ in range(5))
        self.op(Op.Branch, header)
        self.begin(header)
        self.op(Op.LoopMerge, merge, cont, 0)
        self.op(Op.Branch, cond_l)
        self.begin(cond_l)
        self.op(Op.BranchConditional, cond_fn(), body_l, merge)
        self.begin(body_l)
        body_fn(merge, cont)
        if not self.terminated:
            self.op(Op.Branch, cont)
        self.begin(cont)
        if step_fn is not None:
            step_fn()
        self.op(Op.Branch, header)
        self.begin(merge)

    def op(self, opcode: int, *operands: Operand) -> None:
        """Emit an instruction without a result id."""
        if self.cur is None or self.cur.terminated:
            raise RuntimeError(f"emitting Op {opcode} outside a live block")
        self.cur.insts.append(encode_inst(opcode, operands))
        if opcode in self.TERMINATORS:
            self.cur.terminated = True

    def val(self, opcode: int, rtype: int, *operands: Operand) -> int:
        """Emit an instruction with a result type and a fresh result id; returns the id."""
        rid = self.mod.new_id()
        self.op(opcode, rtype, rid, *operands)
        return rid

    def variable(self, ptr_type: int, name: str = "", init: Optional[int] = None) -> int:
        """A Function-storage variable; ``init``: the id of a constant it starts as."""
        rid = self.mod.new_id()
        operands = [ptr_type, rid, STORAGE_CLASS["Function"]] + ([init] if init is not None else [])
        self.local_vars.append(encode_inst(Op.Variable, operands))
        if name:
            self.mod.name(rid, name)
        return rid

    def words(self) -> List[int]:
        out = encode_inst(Op.Function, [self.result_type, self.id, 0, self.fn_type])
        for i, block in enumerate(self.blocks):
            if not block.terminated:
                raise RuntimeError(f"block %{block.label} has no terminator")
            out += encode_inst(Op.Label, [block.label])
            if i == 0:
                for v in self.local_vars:
                    out += v
            for inst in block.insts:
                out += inst
        out += encode_inst(Op.FunctionEnd, [])
        return out


class ModuleBuilder:
    def __init__(self, version: Tuple[int, int] = (1, 3)):
        self.version = version
        self._bound = 1
        self.capabilities: List[str] = []
        self.extensions: List[str] = []
        self._ext_imports: Dict[str, int] = {}
        self._memory_model = encode_inst(Op.MemoryModel, [0, 1])  # Logical GLSL450
        self.vulkan_memory_model = False
        self._entry_points: List[List[int]] = []
        self._exec_modes: List[List[int]] = []
        self._names: List[List[int]] = []
        self._annotations: List[List[int]] = []
        self._globals: List[List[int]] = []
        self._functions: List[FunctionBuilder] = []
        self._types: Dict[tuple, int] = {}
        self._consts: Dict[tuple, int] = {}
        self._scalar_info: Dict[int, Tuple[str, int, bool]] = {}  # type id -> (kind, bits, signed)

    # ------------------------------------------------------------- ids and module-level
    def new_id(self) -> int:
        rid = self._bound
        self._bound += 1
        return rid

    def capability(self, name: str) -> None:
        if name not in CAPABILITY:
            raise KeyError(f"capability {name} is not in the emitter's table")
        if name not in self.capabilities:
            self.capabilities.append(name)

    def extension(self, name: str) -> None:
        if name not in self.extensions:
            self.extensions.append(name)

    def use_vulkan_memory_model(self) -> None:
        """The Vulkan memory model instead of GLSL450 (SPV_KHR_cooperative_matrix requires it)."""
        self.capability("VulkanMemoryModel")
        if self.version < (1, 5):
            self.extension("SPV_KHR_vulkan_memory_model")
        self._memory_model = encode_inst(Op.MemoryModel, [0, 3])  # Logical Vulkan
        self.vulkan_memory_model = True

    def ext_import(self, name: str) -> int:
        if name not in self._ext_imports:
            self._ext_imports[name] = self.new_id()
        return self._ext_imports[name]

    def entry_point(self, model: int, fid: int, name: str, interface: Sequence[int]) -> None:
        self._entry_points.append(encode_inst(Op.EntryPoint, [model, fid, name, *interface]))

    def execution_mode(self, fid: int, mode: int, *literals: int) -> None:
        self._exec_modes.append(encode_inst(Op.ExecutionMode, [fid, mode, *literals]))

    def name(self, target: int, name: str) -> None:
        self._names.append(encode_inst(Op.Name, [target, name]))

    def member_name(self, struct_id: int, member: int, name: str) -> None:
        self._names.append(encode_inst(Op.MemberName, [struct_id, member, name]))

    def decorate(self, target: int, decoration: str, *literals: int) -> None:
        self._annotations.append(encode_inst(Op.Decorate, [target, DECORATION[decoration], *literals]))

    def member_decorate(self, struct_id: int, member: int, decoration: str, *literals: int) -> None:
        self._annotations.append(
            encode_inst(Op.MemberDecorate, [struct_id, member, DECORATION[decoration], *literals]))

    # ------------------------------------------------------------- types (deduplicated)
    def _type(self, key: tuple, opcode: int, operands: Sequence[Operand]) -> int:
        tid = self._types.get(key)
        if tid is None:
            tid = self.new_id()
            self._types[key] = tid
            self._globals.append(encode_inst(opcode, [tid, *operands]))
        return tid

    def t_void(self) -> int:
        return self._type(("void",), Op.TypeVoid, [])

    def t_bool(self) -> int:
        tid = self._type(("bool",), Op.TypeBool, [])
        self._scalar_info[tid] = ("bool", 1, False)
        return tid

    def t_int(self, bits: int, signed: bool) -> int:
        tid = self._type(("int", bits, signed), Op.TypeInt, [bits, int(signed)])
        self._scalar_info[tid] = ("int", bits, signed)
        return tid

    def t_float(self, bits: int) -> int:
        tid = self._type(("float", bits), Op.TypeFloat, [bits])
        self._scalar_info[tid] = ("float", bits, True)
        return tid

    def t_bfloat16(self) -> int:
        """bfloat16 (SPV_KHR_bfloat16: OpTypeFloat 16 with the BFloat16KHR encoding); only matrix fragments
        use it (values of bf16 are u16 bits elsewhere: passes/legalize_f16.py)."""
        self.capability("BFloat16TypeKHR")
        self.extension("SPV_KHR_bfloat16")
        tid = self._type(("bfloat", 16), Op.TypeFloat, [16, BFLOAT16_KHR])
        self._scalar_info[tid] = ("bfloat", 16, True)
        return tid

    def t_vector(self, elem: int, n: int) -> int:
        return self._type(("vector", elem, n), Op.TypeVector, [elem, n])

    def t_array(self, elem: int, length: int) -> int:
        length_id = self.const_int(32, False, length)
        return self._type(("array", elem, length), Op.TypeArray, [elem, length_id])

    def t_array_of_length(self, elem: int, length_id: int) -> int:
        """An array whose length is the constant (or specialization constant) ``length_id``."""
        return self._type(("array_of", elem, length_id), Op.TypeArray, [elem, length_id])

    def t_runtime_array(self, elem: int, stride: int) -> int:
        key = ("rtarray", elem, stride)
        fresh = key not in self._types
        tid = self._type(key, Op.TypeRuntimeArray, [elem])
        if fresh:
            self.decorate(tid, "ArrayStride", stride)
        return tid

    def t_struct(self, members: Sequence[int], tag: str = "") -> int:
        """A struct type; ``tag`` keeps structs with different decorations apart."""
        return self._type(("struct", tag, tuple(members)), Op.TypeStruct, list(members))

    def t_pointer(self, storage: str, pointee: int) -> int:
        sc = STORAGE_CLASS[storage]
        return self._type(("ptr", sc, pointee), Op.TypePointer, [sc, pointee])

    def t_function(self, ret: int, params: Sequence[int] = ()) -> int:
        return self._type(("fn", ret, tuple(params)), Op.TypeFunction, [ret, *params])

    def float_widths(self) -> List[int]:
        """Bit widths of the float types declared so far, ascending."""
        return sorted(key[1] for key in self._types if key[0] == "float")

    def scalar_info(self, type_id: int) -> Tuple[str, int, bool]:
        return self._scalar_info[type_id]

    # ------------------------------------------------------------- constants (deduplicated)
    def const(self, type_id: int, value) -> int:
        kind, bits, signed = self._scalar_info[type_id]
        if kind == "bool":
            opcode = Op.ConstantTrue if value else Op.ConstantFalse
            key = ("bool", bool(value))
            words: List[int] = []
        else:
            words = scalar_literal_words(value, bits, kind == "float", signed)
            opcode = Op.Constant
            key = (type_id, tuple(words))
        cid = self._consts.get(key)
        if cid is None:
            cid = self.new_id()
            self._consts[key] = cid
            self._globals.append(encode_inst(opcode, [type_id, cid, *words]))
        return cid

    def const_null(self, type_id: int) -> int:
        """The all-zero constant of any type (scalar, array)."""
        key = ("null", type_id)
        cid = self._consts.get(key)
        if cid is None:
            cid = self.new_id()
            self._consts[key] = cid
            self._globals.append(encode_inst(Op.ConstantNull, [type_id, cid]))
        return cid

    def const_int(self, bits: int, signed: bool, value: int) -> int:
        return self.const(self.t_int(bits, signed), value)

    def const_u32(self, value: int) -> int:
        return self.const_int(32, False, value)

    def spec_const_u32(self, default: int, spec_id: int, name: str = "") -> int:
        tid = self.t_int(32, False)
        cid = self.new_id()
        self._globals.append(encode_inst(Op.SpecConstant, [tid, cid, default]))
        self.decorate(cid, "SpecId", spec_id)
        if name:
            self.name(cid, name)
        return cid

    def spec_const_composite(self, type_id: int, parts: Sequence[int]) -> int:
        cid = self.new_id()
        self._globals.append(encode_inst(Op.SpecConstantComposite, [type_id, cid, *parts]))
        return cid

    # ------------------------------------------------------------- variables and functions
    def global_variable(self, ptr_type: int, storage: str, name: str = "") -> int:
        vid = self.new_id()
        self._globals.append(encode_inst(Op.Variable, [ptr_type, vid, STORAGE_CLASS[storage]]))
        if name:
            self.name(vid, name)
        return vid

    def function(self, result_type: int, fn_type: int, name: str = "") -> FunctionBuilder:
        fb = FunctionBuilder(self, result_type, fn_type, self.new_id())
        if name:
            self.name(fb.id, name)
        self._functions.append(fb)
        return fb

    # ------------------------------------------------------------- output
    def assemble(self) -> bytes:
        """The module as a SPIR-V binary (little-endian words), sections in spec order."""
        body: List[int] = []
        for cap in self.capabilities:
            body += encode_inst(Op.Capability, [CAPABILITY[cap]])
        for ext in self.extensions:
            body += encode_inst(Op.Extension, [ext])
        for name, iid in self._ext_imports.items():
            body += encode_inst(Op.ExtInstImport, [iid, name])
        body += self._memory_model
        for section in (self._entry_points, self._exec_modes, self._names, self._annotations,
                        self._globals):
            for inst in section:
                body += inst
        for fb in self._functions:
            body += fb.words()
        header = [MAGIC, version_word(*self.version), GENERATOR, self._bound, 0]
        words = header + body
        return struct.pack(f"<{len(words)}I", *words)
