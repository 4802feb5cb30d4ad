"""Helpers of the Hopper language tests (test_hopper_lang.py, test_hopper_named_barrier.py): the located
KernelTypeError a kernel gets, and nvcc assembling CUDA C for sm_90a (skipped without the CUDA toolkit)."""
import subprocess

import pytest

from polykern.errors import KernelTypeError


def located_error(kernel, line_text: str) -> str:
    """The located KernelTypeError ``kernel`` gets, which must point at the line holding ``line_text``."""
    with pytest.raises(KernelTypeError) as e:
        kernel.ir
    loc = e.value.loc
    assert loc is not None and line_text in loc.source_line, (loc, line_text)
    return e.value.message


def find_nvcc():
    from polykern_cuda import toolchain

    nvcc = toolchain.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc (CUDA toolkit) is not on PATH")
    return nvcc


def assemble_sm90a(src: str, tmp_path) -> None:
    """nvcc compiles CUDA C ``src`` for sm_90a into a cubin (skipped without the CUDA toolkit)."""
    nvcc = find_nvcc()
    cu, cubin = tmp_path / "g.cu", tmp_path / "g.cubin"
    cu.write_text(src)
    run = subprocess.run([nvcc, "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-o", str(cubin), str(cu)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    assert cubin.read_bytes()[:4] == b"\x7fELF"
