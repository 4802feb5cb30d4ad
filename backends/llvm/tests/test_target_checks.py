"""A bad target attribute is a TargetError, never the death of the process.

LLVM prints a warning for an unknown -mcpu and then may abort ("64-bit code requested on a
subtarget that doesn't support it!"); the builds below run in a child interpreter, so a test
that would have killed pytest fails instead, and the child reports each verdict as JSON.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

from polykern.codegen.cpu.probe import llvm_choices
from polykern.target import get_kind, list_kinds

_CHILD = textwrap.dedent('''
    import json, sys
    import polykern as pk
    from polykern import Buffer, f32, i32
    from polykern.errors import PolykernError

    @pk.kernel
    def scale(n: i32, a: f32, y: Buffer[f32]):
        i = pk.global_id(0)
        if i < n:
            y[i] = a * y[i]

    out = []
    for spec in json.loads(sys.argv[1]):
        try:
            pk.build([scale], targets=[spec])
            out.append([spec, "ok", ""])
        except PolykernError as e:
            out.append([spec, type(e).__name__, str(e)])
        print(json.dumps(out[-1]), flush=True)
    ''')

# Each of these killed the interpreter or was silently ignored by LLVM before the check.
BAD_LLVM = {
    "llvm -mcpu=notacpu": "LLVM knows no -mcpu 'notacpu'",
    "llvm -mcpu=i686": "64-bit code requested",
    "llvm -mcpu=skylake-avx": "closest: skylake-avx512",
    "llvm -mattr=+notafeature": "no -mattr feature 'notafeature'",
    "llvm -mattr=+avx2,+fmaa": "closest: fma",
    "llvm -mattr=avx2": "+feature or -feature",
    "llvm -mattr=-64bit-mode": "LLVM cannot generate code",
    "llvm -mattr=-sse,-sse2": "SSE register return with SSE disabled",
    "llvm -mtriple=aarch64-linux-gnu -mcpu=skylake": "for aarch64-unknown-linux-gnu",
    "llvm -mtriple=notatriple": "no target for triple",
    "llvm -mtriple=x86_64-apple-darwin": "does not use ELF",
    "llvm -mcpu=native -mtriple=aarch64-linux-gnu": "needs the host triple",
    "llvm -opt=7": "valid choices",
}


def _bad_values_of_every_kind():
    """A bad value for every attribute of every registered target kind, plus an unknown attribute."""
    cases = {}
    for name in list_kinds():
        kind = get_kind(name)
        cases[f"{name} -nosuchattr=1"] = "no attribute"
        for key, attr in kind.attrs.items():
            if attr.type == "int":
                cases[f"{name} -{key}=99999"] = ""
                cases[f"{name} -{key}=x"] = "integer"
            elif attr.type == "bool":
                cases[f"{name} -{key}=maybe"] = "is a bool"
            elif attr.choices is not None:
                cases[f"{name} -{key}=notavalue"] = "valid choices"
            elif name == "llvm" and key == "mtriple":
                cases[f"{name} -{key}=bogus-triple-x"] = ""
            else:
                cases[f"{name} -{key}=notavalue"] = ""
    return cases


def _run(specs):
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "build_targets.py")  # kernels need a source file
        with open(script, "w") as f:
            f.write(_CHILD)
        proc = subprocess.run([sys.executable, script, json.dumps(list(specs))], capture_output=True,
                              text=True, timeout=300)
    assert proc.returncode == 0, f"the child died (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return {spec: (verdict, msg) for spec, verdict, msg in map(json.loads, proc.stdout.splitlines())}


def test_bad_llvm_cpu_features_and_triples_are_target_errors_in_a_surviving_process():
    got = _run(BAD_LLVM)
    for spec, needle in BAD_LLVM.items():
        verdict, msg = got[spec]
        assert verdict == "TargetError", (spec, verdict, msg)
        assert needle in msg, (spec, msg)


def test_every_target_kind_refuses_bad_attribute_values():
    cases = _bad_values_of_every_kind()
    assert any(s.startswith("llvm -mcpu") for s in cases) and any(s.startswith("rocm -mcpu") for s in cases)
    got = _run(cases)
    for spec, needle in cases.items():
        verdict, msg = got[spec]
        assert verdict == "TargetError", (spec, verdict, msg)
        assert needle in msg, (spec, msg)


def test_good_non_default_llvm_targets_still_build_and_the_check_is_cached():
    from polykern.codegen.cpu import probe as llvm_probe

    got = _run(["llvm -mcpu=skylake -mattr=+avx2,+fma", "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a77",
                "llvm -mtriple=riscv64-linux-gnu"])
    assert all(v == "ok" for v, _ in got.values()), got
    llvm_probe.check_cpu_and_features("llvm", "x86_64-unknown-linux-gnu", "haswell", "+avx2")
    calls = []
    real = llvm_probe._run_child
    llvm_probe._run_child = lambda *a: calls.append(a) or real(*a)
    try:
        llvm_probe.check_cpu_and_features("llvm", "x86_64-unknown-linux-gnu", "haswell", "+avx2")
    finally:
        llvm_probe._run_child = real
    assert calls == []


@pytest.mark.parametrize("module, table, triple", [
    ("polykern_cuda.codegen", "ARCHS", "nvptx64-nvidia-cuda"),
    ("polykern_rocm.codegen", "MCPUS", "amdgcn-amd-amdhsa"),
    ("polykern_hexagon.codegen", "MCPUS", "hexagon-unknown-elf"),
])
def test_gpu_and_dsp_cpu_tables_are_known_to_this_llvm(module, table, triple):
    """The choices the nvptx/cuda, rocm and hexagon kinds accept are checked when the target
    string is parsed; here every one of them is checked against LLVM's own list."""
    import importlib

    values = getattr(importlib.import_module(module), table)
    cpus, _ = llvm_choices(triple)
    assert cpus, f"LLVM listed no CPUs for {triple}"
    unknown = [v for v in values if v not in cpus]
    assert not unknown, f"{module}.{table}: LLVM ({triple}) does not know {unknown}"


def test_every_gpu_and_dsp_table_value_builds_in_a_surviving_process():
    from polykern_cuda.codegen import ARCHS
    from polykern_hexagon.codegen import MCPUS as HEXAGON
    from polykern_rocm.codegen import MCPUS as ROCM

    specs = ([f"nvptx -arch={a}" for a in ARCHS] + [f"rocm -mcpu={c}" for c in ROCM]
             + [f"hexagon -mcpu={c}" for c in HEXAGON])
    got = _run(specs)
    assert {s: v for s, (v, _) in got.items() if v != "ok"} == {}
