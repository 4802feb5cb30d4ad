"""aarch64 artifacts built on this host, run under QEMU user-mode emulation by polykern's C runtime.

The conformance suite's kernels are built for ``llvm -mtriple=aarch64-linux-gnu``, exported to a
``.kbin``, and launched by ``kbin-run`` (native/tools/kbin_run.c) cross-built for aarch64
(``make -C native aarch64``) under ``qemu-aarch64-static``: the aarch64 ELF relocator in
native/src/elf_reloc_aarch64.c links the object, the runtime's thread pool runs it, and the
results come back over polykern's launch stream (:mod:`polykern.runtime.launch_stream`) to be compared with
NumPy by the same checks as every backend. Every conformance case runs (no skips).

Needs (Debian) gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static and make; skipped
with the reason where any is missing.
"""
from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

import polykern as pk
from conformance import ALL_CASES
from polykern.runtime import launch_stream
from polykern.errors import DeviceError
from polykern.runtime.launch import BufferArg, check_args
from native_support import (AARCH64_MISSING as MISSING, AARCH64_TARGET as TARGET, NATIVE, QEMU_AARCH64 as QEMU,
                            SYSROOT_AARCH64 as SYSROOT, build_kbin_run_aarch64)

pytestmark = pytest.mark.skipif(bool(MISSING), reason="aarch64 emulation needs " + ", ".join(MISSING))


@pytest.fixture(scope="module")
def kbin_run():
    return build_kbin_run_aarch64()


class EmulatedModule:
    """``mod[name](*args, grid=, block=)`` for an aarch64 ``.kbin``: each launch is one
    ``kbin-run`` process under QEMU. Arguments are checked as every runtime checks them.
    ``kind`` is the module kind the conformance cases look numeric promises up by (the CPU's)."""

    kind = "llvm"

    def __init__(self, runner: str, path: str, functions):
        self.runner, self.path, self.functions = runner, path, functions
        self.launches = 0

    def __getitem__(self, name):
        info = self.functions[name]

        def launch(*args, grid=None, block=None):
            grid3, block3, prepared = check_args(info, args, grid, block)
            items, written = [], []
            for a in prepared:
                if isinstance(a, BufferArg):
                    kind = launch_stream.READ if a.info.readonly else launch_stream.WRITE
                    items.append((kind, a.array.view(np.uint8).tobytes()))
                    if kind == launch_stream.WRITE:
                        written.append(a.array)
                else:
                    items.append((launch_stream.SCALAR, a.tobytes()))
            r = subprocess.run([QEMU, "-L", SYSROOT, self.runner, self.path, name, "--on", "llvm"],
                               input=launch_stream.encode(items, (*grid3, *block3)), capture_output=True)
            if r.returncode != 0:
                raise DeviceError(f"kbin-run {name} under qemu-aarch64: {r.stderr.decode(errors='replace')}")
            for arr, raw in zip(written, launch_stream.split_outputs(r.stdout, [a.nbytes for a in written])):
                arr.view(np.uint8)[:] = np.frombuffer(raw, np.uint8)
            self.launches += 1

        return launch


def test_runner_stream_constants_match():
    path = NATIVE / "tools" / "kbin_run.c"
    if not path.exists():
        pytest.skip("native/ sources are not here (under Bazel: //tests:cross_compile_emulated)")
    src = path.read_text()
    defines = dict(re.findall(r"#define (PK_\w+) (\w+)", src))
    assert int(defines["PK_MAGIC"].rstrip("u"), 16) == launch_stream.MAGIC
    assert int(defines["PK_RECORD"].rstrip("u")) == launch_stream.RECORD
    assert int(defines["PK_MAX_ARGS"].rstrip("u")) == launch_stream.MAX_ARGS


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.name for c in ALL_CASES])
def test_conformance_aarch64_emulated(case, kbin_run, tmp_path):
    root = pk.build(case.kernels, targets=[TARGET])
    dev = root.imports[0]
    assert dev.kind == "llvm" and not dev.is_runnable  # an aarch64 object on this x86-64 host
    path = tmp_path / f"{case.name}.kbin"
    root.export(str(path))
    mod = EmulatedModule(kbin_run, str(path), root.functions)  # the user's arguments: kbin-run adds hidden ones
    case.run(mod, np.random.default_rng(1234))
    assert mod.launches >= 1


def test_a_host_object_is_refused_by_the_aarch64_runtime(kbin_run, tmp_path):
    """The aarch64 runtime checks the object's machine before mapping it, and says so."""
    from conformance.kernels_parallel import ODD

    root = pk.build(ODD.kernels, targets=["llvm -mtriple=x86_64-unknown-linux-gnu"])
    path = tmp_path / "x86.kbin"
    root.export(str(path))
    mod = EmulatedModule(kbin_run, str(path), root.imports[0].functions)
    x = np.zeros(4, np.float32)
    with pytest.raises(DeviceError, match="x86_64|machine 62"):
        mod["saxpy"](4, 1.0, x, x.copy(), grid=1, block=4)


FUZZ_PROGRAMS = int(os.environ.get("POLYKERN_EMULATION_FUZZ", "12"))  # CI: 12; full runs: see docs/cross-compile.md


def test_fuzz_programs_agree_with_the_oracle_on_aarch64(kbin_run, tmp_path):
    """The differential fuzzer's programs (polykern.testing.kernelgen, seeded) built for aarch64 and
    run under emulation agree with the IR interpreter, as tools/fuzz.py judges in-process targets."""
    from polykern.testing import fuzzcase, kernelgen
    from polykern.testing.compare import compare

    bad = []
    for i in range(FUZZ_PROGRAMS):
        seed = 7 * 1_000_000 + i
        prog = kernelgen.generate(seed, avoid=kernelgen.BEFORE_MEMORY)  # the programs this test was written for
        case = fuzzcase.Case(prog.name, prog.source, prog.grid, prog.block, prog.make_args(), prog.features)
        oracle = case.oracle()
        kernel = case.kernel(str(tmp_path))
        root = pk.build([kernel], targets=[TARGET])
        path = tmp_path / f"fuzz{i}.kbin"
        root.export(str(path))
        args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
        EmulatedModule(kbin_run, str(path), root.functions)[kernel.name](*args, grid=case.grid,
                                                                   block=case.block)
        params = [p.name for p in kernel.ir.params]
        got = {n: a for n, a, p in zip(params, args, kernel.ir.params) if p.is_buffer}
        result = compare(oracle, got, "llvm")
        if result.mismatches:
            bad.append(f"seed {seed}: " + "; ".join(str(m) for m in result.mismatches[:3]))
    assert not bad, "\n".join(bad)
