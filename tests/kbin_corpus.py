"""The damaged-artifact corpus, generated (not stored): seeds x deterministic mutations.

Seeds are the golden artifacts of both format versions (tests/golden, tests/golden/v1) plus
synthetic ones that reach every payload layout, module kinds no backend provides, nested imports,
every attribute type of polykern.kbin.function_schema, and hostile strings (control characters, NUL,
invisible/bidi characters, names longer than a quoted message shows). Besides the random damage,
every version-2 seed gets each module's layout id replaced by every id that matters (known ones
in the wrong place, the first unknown one, 0x7F, 0xFF).
:func:`corpus` yields (label, bytes); the same seed always gives the same bytes.
tests/test_native.py feeds each to Python and to the C reader and compares the verdicts byte for
byte (accepted or not, offset, message, and the full `polykern inspect` / `kbin-inspect` output).
"""
from __future__ import annotations

import random
import zlib
from pathlib import Path
from typing import Iterator, List, Tuple

GOLDEN = Path(__file__).resolve().parent / "golden"
SEED = 20261123
HOSTILE = "k\x00\x1b[31m\u202e\x7f\x85\\'\"é"
SOURCE = "line\x1b[2J\n\ttab\\n\u2028\r\n\n"


def _hostile_root(long_names: bool) -> bytes:
    from polykern.ir.types import f32, i32
    from polykern.module import ArgInfo, FunctionInfo, RootModule
    from polykern.testing.synthetic import device_module

    name = ("k" * 70 + HOSTILE) if long_names else HOSTILE
    info = FunctionInfo(name, (ArgInfo.scalar("n" + HOSTILE, i32), ArgInfo.buffer("x\x1b", f32, True)),
                        ("global_id.0", "local_size.2"), 64,
                        {"entry": "k_range", "private_bytes": "16", "item_bytes": "4096", "uses_barrier": "1",
                         "descriptor_set": "0", "features": "a, b", "zz_extra": "é ok"})
    llvm = device_module("llvm", names=("other",))
    llvm.functions = {name: info, "other": llvm.functions["other"]}
    llvm.sources = {"src" + HOSTILE: "line\x1b\n\ttab\\n\u2028\n", "asm": SOURCE}
    vk = device_module("vulkan", names=(name,))
    vk.sources = {}
    web = device_module("webgpu", names=("other",))
    vk.import_module(web)
    root = RootModule({name: info, "other": llvm.functions["other"]}, [llvm, vk], ["llvm", "vulkan\x1b"])
    return root.export(metadata={"note" + HOSTILE: "v\x1b[2J" + HOSTILE, "empty": ""})


def seeds() -> List[Tuple[str, bytes]]:
    from polykern.module import DeviceModule
    from polykern.testing.isolation import isolated
    from polykern.testing.synthetic import device_module, synthetic_root

    out = [(f.name, f.read_bytes()) for f in sorted(GOLDEN.glob("*.kbin"))]
    out += [(f"v1/{f.name}", f.read_bytes()) for f in sorted(GOLDEN.glob("v1/*.kbin"))]
    with isolated():
        every = synthetic_root(("cuda", "rocm", "opencl", "hexagon", "metal", "webgpu"), names=("a", "saxpy"))
        every.imports[0].import_module(device_module("vulkan", names=("a",)))
        out.append(("every_layout", every.export(strip_sources=True)))
        unknown = synthetic_root(("zz_blob", "llvm"), names=("a", "saxpy"))
        unknown.imports[0].import_module(DeviceModule("zz_sections", {"a": b"\x00\x01", "b\x1b": b"text\n"}, "zzfmt",
                                                      {"a": unknown.functions["a"]}, {"zz": "source\n"}))
        out.append(("unknown_kinds", unknown.export()))
        out.append(("hostile_strings", _hostile_root(False)))
        out.append(("hostile_long_names", _hostile_root(True)))
    return out


_BYTES = (0x00, 0x01, 0x1B, 0x7F, 0x80, 0xC3, 0xE2, 0xFF, ord("0"), ord("9"), ord("."), ord(" "), ord("x"))


def mutants(data: bytes, rng: random.Random, count: int) -> Iterator[bytes]:
    """``count`` damaged copies of ``data``; most get a recomputed CRC so that the structural
    checks, not the checksum, must catch the damage."""
    n = len(data)
    for i in range(count):
        b = bytearray(data)
        op = i % 6
        if op == 0:      # truncate
            b = b[:rng.randrange(n)]
        elif op == 1:    # flip a few bits anywhere
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif op == 2:    # overwrite a u64 with an extreme length
            at = rng.randrange(max(1, n - 8))
            b[at:at + 8] = rng.choice([2 ** 64 - 1, 2 ** 63, 1 << 32, 0, 1, n, n - at]).to_bytes(8, "little")
        elif op == 3:    # insert or delete bytes
            at = rng.randrange(n)
            if rng.random() < 0.5:
                del b[at:at + rng.randint(1, 16)]
            else:
                b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 4:    # one byte set to anything
            b[rng.randrange(n)] = rng.randrange(256)
        else:            # one byte set to a character that strings, numbers and tags care about
            b[rng.randrange(n)] = rng.choice(_BYTES)
        if rng.random() < 0.8 and len(b) >= 4:
            b[-4:] = zlib.crc32(bytes(b[:-4])).to_bytes(4, "little")
        yield bytes(b)


#: Layout ids to try in every module: each known id (wrong for most modules), the first unknown one, 0x7F, 0xFF.
LAYOUT_IDS = (0, 1, 2, 3, 0x7F, 0xFF)


def layout_mutants(data: bytes) -> Iterator[Tuple[str, bytes]]:
    """(label, bytes): ``data`` (format version 2) with one module's layout id replaced, CRC fixed."""
    from polykern.kbin import wire

    c = wire.decode_container(data)
    if c.version < 2:
        return
    for i, m in enumerate(c.modules):
        for lid in LAYOUT_IDS:
            if lid != m.payload[0]:
                b = bytearray(data)
                b[m.offset] = lid
                b[-4:] = zlib.crc32(bytes(b[:-4])).to_bytes(4, "little")
                yield f"module {i} layout {lid}", bytes(b)


def corpus(per_seed: int = 500) -> Iterator[Tuple[str, bytes]]:
    """(label, bytes) for every seed, its layout mutants and ``per_seed`` random mutants; deterministic."""
    rng = random.Random(SEED)
    for name, data in seeds():
        yield f"{name}", data
        for label, m in layout_mutants(data):
            yield f"{name} {label}", m
        for j, m in enumerate(mutants(data, rng, per_seed)):
            yield f"{name}#{j}", m
