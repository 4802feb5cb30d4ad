"""The FunctionInfo of CUDA kernels, shared by both ways to make a cuda module (CUDA C in
codegen.py, LLVM NVPTX in nvptx.py): the frontend's facts plus ``entry`` (the kernel's symbol in the
PTX/cubin) and ``arch`` (the GPU architecture it was compiled for)."""
from __future__ import annotations

from typing import Dict

from polykern.module import FunctionInfo


def function_map(funcs, symbols: Dict[str, str], arch: str) -> Dict[str, FunctionInfo]:
    out = {}
    for fn in funcs:
        info = FunctionInfo.from_ir(fn)
        attrs = dict(info.attrs, entry=symbols[fn.name], arch=arch)
        out[fn.name] = FunctionInfo(info.name, info.args, info.launch_tags, info.shared_bytes, attrs)
    return out
