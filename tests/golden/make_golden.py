"""Write the golden .kbin artifacts and, next to each, a .json of what a reader must find.

    python tests/golden/make_golden.py [OUTDIR]     (default: this folder)

The artifacts are built from synthetic modules (no compiler, no runtime), so they only change
when the byte format changes. tests/test_golden.py regenerates them and requires identical
bytes (``POLYKERN_UPDATE_GOLDEN=1`` rewrites them instead); the native C reader is tested against
the same files and .json descriptions. They are in the format this writer writes (version 2);
``v1/`` keeps the version-1 files of the first three, written before version 2 existed, which
every reader must keep reading (and which re-export to the version-2 files here).

The .json is computed from the in-memory modules, not by reading the file back, so it is an
independent statement of the expected content. Hashes are SHA-256 of the raw bytes; "size"
and "offset" count bytes; module "offset" is where its payload's bytes start in the file.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import zlib
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from polykern.kbin import wire  # noqa: E402
from polykern.ir.types import bool_, f16, f32, f64, i32, i64, u8  # noqa: E402
from polykern.module import ArgInfo, DeviceModule, FunctionInfo, Module, RootModule  # noqa: E402

META = {"compiler": "polykern golden"}


def _fi(name, args, tags=(), shared=0, **attrs) -> FunctionInfo:
    return FunctionInfo(name, tuple(args), tuple(tags), shared, attrs)


SAXPY = _fi("saxpy", [ArgInfo.scalar("n", i32), ArgInfo.scalar("a", f32), ArgInfo.buffer("x", f32, True),
                      ArgInfo.buffer("y", f32)], ["global_id.0"], entry="saxpy_kernel")
REDUCE = _fi("reduce_sum", [ArgInfo.scalar("n", i64), ArgInfo.buffer("src", f64, True), ArgInfo.buffer("dst", f64)],
             ["group_id.0", "local_id.0", "local_size.0"], 2048, uses_barrier="1", uses_atomics="1")
MIXED = _fi("mixed", [ArgInfo.scalar("flag", bool_), ArgInfo.scalar("h", f16), ArgInfo.buffer("bytes", u8),
                      ArgInfo.buffer("out", i32)], ["global_id.0", "global_id.1"])

# Recognizable but synthetic payloads: an ELF header, SPIR-V magic + version word, text.
ELF_X86_REL = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x01\x00\x3e\x00" + b"synthetic object"
SPIRV_13 = (0x07230203).to_bytes(4, "little") + (0x00010300).to_bytes(4, "little") + bytes(12)


def _dev(kind, payload, fmt, infos, sources) -> DeviceModule:
    return DeviceModule(kind, payload, fmt, {i.name: i for i in infos}, sources)


def artifacts() -> Dict[str, Dict[str, Any]]:
    """name -> {"root": RootModule, "strip": bool, "meta": dict}."""
    llvm = _dev("llvm", ELF_X86_REL, "o", [SAXPY], {"llvm": "; ModuleID = 'saxpy'\ndefine void @saxpy__range()\n"})
    out = {"saxpy_llvm": {"root": RootModule.collect([llvm], ["llvm"]), "strip": False, "meta": {}}}

    ptx = ".version 8.0\n.target sm_90\n.visible .entry saxpy_kernel()\n{\n  ret;\n}\n"
    cuda = _dev("cuda", ptx.encode(), "ptx", [SAXPY, REDUCE],
                {"cuda": "extern \"C\" __global__ void saxpy_kernel() {}\n", "ptx": ptx})
    vulkan = _dev("vulkan", {"saxpy": SPIRV_13, "reduce_sum": SPIRV_13 + b"\x01\x00\x00\x00"}, "spirv",
                  [SAXPY, REDUCE], {"spirv-asm": "; SPIR-V\n; Version: 1.3\n"})
    wgsl = _dev("webgpu", {"saxpy": b"@compute @workgroup_size(64) fn saxpy() {}\n"}, "wgsl", [SAXPY],
                {"wgsl": "@compute @workgroup_size(64) fn saxpy() {}\n"})
    out["multi_target"] = {"root": RootModule.collect([cuda, vulkan, wgsl], ["cuda -arch=sm_90", "vulkan", "webgpu"]),
                           "strip": False, "meta": {}}

    metal = _dev("metal", {"mixed": b"kernel void mixed() {}\n", "saxpy": b"kernel void saxpy() {}\n"}, "msl",
                 [MIXED, SAXPY], {"msl": "// metal\n"})
    hexagon = _dev("hexagon", b"\x7fELF\x01\x01\x01" + bytes(9) + b"\x01\x00\xa4\x00", "o", [MIXED], {})
    opencl = _dev("opencl", "__kernel void saxpy() {}\n".encode(), "cl", [SAXPY], {"cl": "ignored"})
    metal.import_module(opencl)  # a nested import: exercises the CSR import tree
    root = RootModule.collect([metal, hexagon], ["metal", "hexagon -mcpu=hexagonv68"])
    out["stripped_nested"] = {"root": root, "strip": True, "meta": {"build": "golden", "zz": "last"}}

    # A kind no backend of this tree provides, first, beside an llvm module: every reader must decode,
    # show and re-export it from its payload layout alone; launches go to the llvm module.
    future = _dev("zzfuture", {"saxpy": b"\x00future section\xff", "notes": b"text section\n"}, "zzbin", [SAXPY],
                  {"zz-asm": "future assembly\n"})
    llvm2 = _dev("llvm", ELF_X86_REL, "o", [SAXPY], {})
    out["unknown_kind"] = {"root": RootModule.collect([future, llvm2], ["zzfuture", "llvm"]), "strip": False,
                           "meta": {}}
    return out


def _blob(data: bytes) -> Dict[str, Any]:
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def describe(name: str, root: RootModule, strip: bool, meta: Dict[str, str], data: bytes) -> Dict[str, Any]:
    mods: List[Module] = list(root.walk())
    index = {id(m): i for i, m in enumerate(mods)}
    modules = []
    pos = 8 + 4 + 8 + 8 * (len(mods) + 1) + 8 * sum(len(m.imports) for m in mods)
    for i, m in enumerate(mods):
        payload = m.save_to_bytes()
        pos += 8 + len(m.kind.encode()) + 8
        d: Dict[str, Any] = {"index": i, "kind": m.kind, "offset": pos, **_blob(payload),
                             "imports": [index[id(c)] for c in m.imports], "fmt": m.fmt,
                             "functions": sorted(m.functions),
                             "sources": {} if strip else dict(sorted(m.sources.items()))}
        pos += len(payload)
        if i == 0:
            d["targets"] = list(root.targets)
        else:
            d["function_info"] = [m.functions[k].to_dict() for k in sorted(m.functions)]
            if isinstance(m.payload, bytes):
                d["payload"] = _blob(m.payload)
            else:
                d["shaders"] = {k: _blob(v) for k, v in sorted(m.payload.items())}
        modules.append(d)
    return {"file": f"{name}.kbin", "format_version": wire.VERSION, "size": len(data),
            "crc32": f"0x{zlib.crc32(data[:-4]):08x}",
            "metadata": {**META, "targets": "\n".join(root.targets), **meta}, "targets": list(root.targets),
            "sources_embedded": not strip, "functions": [root.functions[k].to_dict() for k in sorted(root.functions)],
            "modules": modules}


def generate(outdir: str = HERE) -> List[str]:
    written = []
    for name, spec in artifacts().items():
        path = os.path.join(outdir, f"{name}.kbin")
        data = spec["root"].export(path, strip_sources=spec["strip"], metadata={**META, **spec["meta"]})
        desc = describe(name, spec["root"], spec["strip"], spec["meta"], data)
        with open(os.path.join(outdir, f"{name}.json"), "w", encoding="utf-8", newline="\n") as f:
            json.dump(desc, f, indent=2, sort_keys=True, ensure_ascii=False)
            f.write("\n")
        written += [path, path[:-5] + ".json"]
    return written


if __name__ == "__main__":
    for p in generate(sys.argv[1] if len(sys.argv) > 1 else HERE):
        print(p)
