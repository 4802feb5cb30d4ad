"""Small helpers to build IR by hand (for type matrices the frontend would make verbose) and to
compile kernels with the llvm backend directly."""
from __future__ import annotations

from typing import Dict, List

from polykern.ir import nodes as N
from polykern.ir.types import SCALAR_TYPES, ArrayType, BufferType, ScalarType, i32
from polykern.ir.verifier import verify
from polykern.passes.clone import clone_function
from polykern.passes.legalize_target import legalize_for_target
from polykern.target import Target

# bf16 is not here: its arithmetic reaches a backend only rewritten into f32 (passes/widen_bf16.py), and
# hand-built IR skips the passes; tests/test_bf16.py covers it on every runtime.
ALL_TYPES: List[ScalarType] = [t for t in SCALAR_TYPES.values() if t.name != "bf16"]
INT_TYPES = [t for t in ALL_TYPES if t.is_int]
FLOAT_TYPES = [t for t in ALL_TYPES if t.is_float]


def var(name: str, t) -> N.Var:
    return N.Var(name, t)


def const(v, t: ScalarType) -> N.Const:
    return N.Const(v, t)


def buf(name: str, t: ScalarType, readonly: bool = False) -> N.Param:
    return N.Param(name, BufferType(t, readonly))


def scalar(name: str, t: ScalarType) -> N.Param:
    return N.Param(name, t)


def load(p: N.Param, index: N.Expr) -> N.Load:
    return N.Load(N.Var(p.name, p.type), index)


def store(p: N.Param, index: N.Expr, value: N.Expr) -> N.Store:
    return N.Store(N.Var(p.name, p.type), index, value)


def gid(dim: int = 0) -> N.SpecialReg:
    return N.SpecialReg("global_id", dim)


def elementwise(name: str, n_param: N.Param, params: List[N.Param], body_for_i, extra_locals=None) -> N.Function:
    """``i = global_id(0); if i < n: <body_for_i(i)>``."""
    i = var("i", i32)
    body = [N.Assign("i", gid()), N.If(N.BinOp("lt", i, var(n_param.name, i32)), body_for_i(i))]
    locals_: Dict[str, ScalarType] = {"i": i32}
    locals_.update(extra_locals or {})
    return N.Function(name, [n_param] + params, body, locals_)


def compile_llvm(funcs, target: str = "llvm"):
    """The device module the llvm backend builds for ``funcs`` (verified and legalized first, as pk.build
    does: passes/legalize_target.py)."""
    from polykern_llvm.codegen import build

    t = Target(target)
    return build([legalize_for_target(clone_function(verify(f)), t) for f in funcs], t)


def launch_1d(mod, name: str, n: int, *args, block: int = 64):
    mod[name](*args, grid=max(1, (n + block - 1) // block), block=block)


__all__ = ["ArrayType", "N"]
