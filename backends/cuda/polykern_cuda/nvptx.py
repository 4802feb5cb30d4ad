"""Target ``nvptx``: CUDA modules through LLVM's NVPTX backend (no CUDA toolkit needed).

The place for the LLVM-NVPTX code generator, to be written on top of
``polykern.codegen.llvm_base`` (a later issue). Its contract: ``build(funcs, target)`` returns
``create_with_fallback("cuda", ptx_bytes, "ptx", fmap, {"ptx": ptx_text, "llvm": llvm_ir},
fallback_cls=CUDAFallbackModule)`` with ``fmap`` from ``codegen.function_map`` (``entry`` = the PTX
``.entry`` name, ``arch``), so the CUDA runtime loads it exactly like the CUDA C path's PTX.
"""
from __future__ import annotations

from polykern.errors import CompileError


def build(funcs, target):
    raise CompileError(f"target '{target}': the LLVM NVPTX code generator is not implemented yet; "
                       f"use 'cuda -arch={target.attrs['arch']}' (CUDA C through NVRTC or nvcc) meanwhile")
