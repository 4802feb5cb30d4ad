"""Helpers around SPIRV-Tools (spirv-val, spirv-as, spirv-dis) for the tests."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import polykern as pk

TOOLS_MISSING = [t for t in ("spirv-val", "spirv-as", "spirv-dis") if shutil.which(t) is None]
TOOLS_REASON = f"SPIRV-Tools not installed ({', '.join(TOOLS_MISSING)} missing; apt install spirv-tools)"


def run_tool(args, data: bytes = b"", suffix=".spv"):
    """Run a SPIRV-Tools command on ``data`` written to a temp file; returns CompletedProcess."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / f"in{suffix}"
        src.write_bytes(data)
        out = Path(d) / "out.spv"
        argv = [a.replace("{in}", str(src)).replace("{out}", str(out)) for a in args]
        r = subprocess.run(argv, capture_output=True, text=True)
        r.output_bytes = out.read_bytes() if out.exists() else b""
        return r


def spirv_val(binary: bytes, env: str):
    return run_tool(["spirv-val", "--target-env", env, "{in}"], binary)


def shaders(kernel, target: str):
    """{kernel name: SPIR-V binary} built through the real pipeline."""
    return pk.build([kernel], targets=[target]).on("vulkan").payload
