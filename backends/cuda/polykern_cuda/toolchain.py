"""CUDA C -> PTX / cubin, shared by the codegen (compile host) and the runtime (receiver side).

Tools, in order of preference:
1. NVRTC through ctypes: ``libnvrtc.so.*`` from the pip wheel ``nvidia-cuda-nvrtc`` (``nvidia/cu13/lib``
   or ``nvidia/cuda_nvrtc/lib``), ``$CUDA_HOME``/``$CUDA_PATH``, or the dynamic loader's path;
2. ``nvcc`` on PATH (or in ``$CUDA_HOME/bin``).

NVRTC comes first because it is pinned by pip (``nvidia-cuda-nvrtc==13.0.*``) and gives the same
bytes on every host. Keep NVRTC at the version of the ``ptxas``/driver that consumes its PTX: a
newer NVRTC emits a PTX ISA version an older ptxas rejects. ``POLYKERN_CUDA_COMPILER`` =
``nvrtc`` | ``nvcc`` | ``none`` forces a choice (``none``: behave as if neither existed).
"""
from __future__ import annotations

import ctypes
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import List, Optional, Tuple

from polykern.build_cache import files_identity
from polykern.errors import BackendUnavailableError, CompileError

__all__ = ["compile_cuda", "available_compiler", "identity", "nvrtc_library", "find_nvcc", "find_ptxas", "ptxas_check",
           "compute_arch", "finish_on_receiver", "COMPILER_ENV", "INSTALL_HINT"]

COMPILER_ENV = "POLYKERN_CUDA_COMPILER"
INSTALL_HINT = ("install NVRTC with `pip install nvidia-cuda-nvrtc==13.0.*` (or polykern[nvrtc]), "
                "or put the CUDA toolkit's nvcc on PATH")
_lock = threading.RLock()
_nvrtc: dict = {}


def compute_arch(arch: str) -> str:
    """``sm_90`` -> ``compute_90`` (the virtual architecture PTX is generated for)."""
    return "compute_" + arch[len("sm_"):] if arch.startswith("sm_") else arch


def _forced() -> str:
    return os.environ.get(COMPILER_ENV, "").strip().lower()


# ------------------------------------------------------------------ NVRTC
def _nvrtc_candidates() -> List[str]:
    dirs = []
    for entry in sys.path:
        for sub in ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib", "nvidia/cu12/lib"):
            d = os.path.join(entry or ".", sub)
            if os.path.isdir(d):
                dirs.append(d)
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            dirs += [os.path.join(os.environ[env], "lib64"), os.path.join(os.environ[env], "lib")]
    dirs.append("/usr/local/cuda/lib64")
    out = []
    for d in dirs:
        out += sorted(p for p in glob.glob(os.path.join(d, "libnvrtc.so*")) if ".alt." not in p)
    return out


def nvrtc_library():
    """``(ctypes library, path)`` of NVRTC, or raise BackendUnavailableError with the reason."""
    with _lock:
        if "lib" in _nvrtc:
            return _nvrtc["lib"], _nvrtc["path"]
        if "error" in _nvrtc:
            raise BackendUnavailableError(_nvrtc["error"])
        errors = []
        for path in _nvrtc_candidates() + ["libnvrtc.so"]:
            try:
                d = os.path.dirname(path)
                # NVRTC dlopen()s its builtins library by soname; load it first from the same folder.
                for b in sorted(glob.glob(os.path.join(d, "libnvrtc-builtins.so.*")) if d else []):
                    if ".alt." not in b:
                        ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
                lib = ctypes.CDLL(path)
                lib.nvrtcGetErrorString.restype = ctypes.c_char_p
                _nvrtc.update(lib=lib, path=path)
                return lib, path
            except OSError as e:
                errors.append(f"{path}: {e}")
        _nvrtc["error"] = "NVRTC was not found (" + ("; ".join(errors[-2:]) or "no candidate") + ")"
        raise BackendUnavailableError(_nvrtc["error"])


def nvrtc_version() -> Tuple[int, int]:
    lib, _ = nvrtc_library()
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


def _nvrtc_compile(source: str, arch: str, output: str, name: str) -> bytes:
    lib, _ = nvrtc_library()

    def check(code, what):
        if code != 0:
            raise CompileError(f"NVRTC {what} failed: {lib.nvrtcGetErrorString(code).decode()}")

    prog = ctypes.c_void_p()
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), f"{name}.cu".encode(), 0, None, None),
          "nvrtcCreateProgram")
    try:
        target = compute_arch(arch) if output == "ptx" else arch
        opts = [f"--gpu-architecture={target}".encode(), b"--std=c++17", b"--fmad=false"]  # no a*b+c -> fma contraction (polykern.numerics)
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if rc != 0:
            raise CompileError(f"NVRTC could not compile the CUDA C for {arch} "
                               f"({lib.nvrtcGetErrorString(rc).decode()})", log.value.decode(errors="replace"))
        get_size, get = (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX) if output == "ptx" else \
            (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN)
        check(get_size(prog, ctypes.byref(size)), "get output size")
        buf = ctypes.create_string_buffer(size.value)
        check(get(prog, buf), "get output")
        data = buf.raw
        return data.rstrip(b"\x00") if output == "ptx" else data  # PTX comes NUL-terminated
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


# ------------------------------------------------------------------ nvcc / ptxas
def _find_tool(name: str) -> Optional[str]:
    found = shutil.which(name)
    if found:
        return found
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            p = os.path.join(os.environ[env], "bin", name)
            if os.access(p, os.X_OK):
                return p
    p = f"/usr/local/cuda/bin/{name}"
    return p if os.access(p, os.X_OK) else None


def find_nvcc() -> Optional[str]:
    return _find_tool("nvcc")


def find_ptxas() -> Optional[str]:
    return _find_tool("ptxas")


def _run(cmd: List[str], what: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompileError(f"{what}: could not run {cmd[0]}: {e}") from e
    if proc.returncode != 0:
        raise CompileError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}", proc.stdout + proc.stderr)


def _nvcc_compile(source: str, arch: str, output: str, name: str) -> bytes:
    nvcc = find_nvcc()
    if nvcc is None:
        raise BackendUnavailableError("nvcc was not found on PATH")
    with tempfile.TemporaryDirectory(prefix="polykern-cuda-") as tmp:
        src = os.path.join(tmp, f"{name}.cu")
        out = os.path.join(tmp, f"{name}.{output}")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        flag, target = ("-ptx", f"-arch={compute_arch(arch)}") if output == "ptx" else ("-cubin", f"-arch={arch}")
        _run([nvcc, flag, target, "-std=c++17", "--fmad=false", "-o", out, src], f"nvcc ({arch}, {output})")
        with open(out, "rb") as f:
            return f.read()


def ptxas_check(ptx: bytes, arch: str) -> None:
    """Assemble ``ptx`` for ``arch`` with ptxas, discarding the output; CompileError on rejection."""
    ptxas = find_ptxas()
    if ptxas is None:
        raise BackendUnavailableError("ptxas was not found on PATH")
    with tempfile.TemporaryDirectory(prefix="polykern-ptxas-") as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "wb") as f:
            f.write(ptx)
        _run([ptxas, f"-arch={arch}", "-o", os.path.join(tmp, "k.cubin"), src], f"ptxas ({arch})")


def identity(target=None) -> str:
    """What decides the compiler's output, for the compile cache (``target.cache_key.cuda``): the forced
    choice, NVRTC's candidate libraries and builtins, nvcc and ptxas, as files (no dlopen, no run)."""
    libs = _nvrtc_candidates()
    builtins = [b for d in sorted({os.path.dirname(p) for p in libs})
                for b in sorted(glob.glob(os.path.join(d, "libnvrtc-builtins.so.*")))]
    tools = [t for t in (find_nvcc(), find_ptxas()) if t]
    return f"{COMPILER_ENV}={_forced()}\n" + files_identity(libs + builtins + tools)


# ------------------------------------------------------------------ the entry point
def available_compiler() -> Optional[str]:
    """"nvrtc", "nvcc" or None: what :func:`compile_cuda` would use here."""
    forced = _forced()
    if forced == "none":
        return None
    if forced in ("", "nvrtc"):
        try:
            nvrtc_library()
            return "nvrtc"
        except BackendUnavailableError:
            if forced == "nvrtc":
                return None
    if forced in ("", "nvcc") and find_nvcc() is not None:
        return "nvcc"
    return None


def compile_cuda(source: str, arch: str, output: str = "ptx", name: str = "polykern") -> Tuple[bytes, str]:
    """Compile CUDA C ``source`` for ``arch`` (``sm_90``) to ``output`` ("ptx" or "cubin").
    Returns ``(bytes, tool)``. Raises BackendUnavailableError when no compiler exists here and
    CompileError (with the tool's log) when the compiler rejects the source."""
    if output not in ("ptx", "cubin"):
        raise ValueError(f"output must be 'ptx' or 'cubin', got {output!r}")
    tool = available_compiler()
    if tool is None:
        why = f"{COMPILER_ENV}={_forced()}" if _forced() else "neither NVRTC nor nvcc was found"
        raise BackendUnavailableError(f"cannot compile CUDA C to {output} here ({why}); {INSTALL_HINT}")
    if tool == "nvrtc":
        with _lock:  # one NVRTC compile at a time: cheap, and safe with every NVRTC version
            return _nvrtc_compile(source, arch, output, name), tool
    return _nvcc_compile(source, arch, output, name), tool


def finish_on_receiver(fmt: str, payload: bytes, arch: str) -> Tuple[str, bytes]:
    """Receiver-side completion for ``module.load_from_bytes.cuda``: a ``cuda`` payload (CUDA C) is
    compiled to PTX for ``arch`` (the device's, e.g. ``sm_90``); ``ptx``/``cubin`` pass through."""
    if fmt in ("ptx", "cubin"):
        return fmt, payload
    if fmt != "cuda":
        raise CompileError(f"unknown cuda module format {fmt!r} (expected ptx, cubin or cuda)")
    ptx, _ = compile_cuda(payload.decode("utf-8"), arch, "ptx")
    return "ptx", ptx
