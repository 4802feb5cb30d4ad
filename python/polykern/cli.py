"""The ``polykern`` command line: compile | inspect | run | backends.

``inspect`` uses :func:`polykern.artifact.read_artifact` only, so it works on a host with
no runtime (and no backend) installed. Errors print ``polykern: error: ...`` to stderr and
exit 1 (2 for usage errors); a :class:`PolykernError` never shows a traceback.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys
import time
import traceback
from typing import Any, Dict, List, Optional, Sequence

from . import user_files
from .errors import PolykernError
from .kbin.messages import escape, escape_source

PROG = "polykern"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints "prog sub: error:"; we want one prefix everywhere
        raise _UsageError(f"{message}\n{self.format_usage().rstrip()}")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Cross-compiling compute-kernel compiler (.kbin artifacts).")
    p.add_argument("--version", action="store_true", help="print the polykern version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    c = sub.add_parser("compile", help="compile the kernels of a Python file into a .kbin")
    c.add_argument("file", metavar="FILE.py")
    c.add_argument("--target", "-t", action="append", required=True, metavar="T",
                   help='target string, e.g. "cuda -arch=sm_90"; repeat for several (launch order)')
    c.add_argument("-k", "--kernel", action="append", default=[], metavar="KERNEL",
                   help="compile only this kernel (repeatable; default: every kernel in FILE.py)")
    c.add_argument("-o", "--output", required=True, metavar="OUT.kbin")
    c.add_argument("--strip-sources", action="store_true", help="do not embed sources in the artifact")
    c.add_argument("--fast-math", action="store_true", help="build with fast_math=True: f32 exp exp2 log log2 "
                   "rsqrt and / within the fast-math promises (docs/language.md 7.2)")

    i = sub.add_parser("inspect", help="describe a .kbin (needs no runtime)")
    i.add_argument("artifact", metavar="K.kbin")
    i.add_argument("--source", metavar="FMT", help="print the embedded source of this format (e.g. cuda, ptx, "
                                                     "llvm, wgsl, msl, spirv-asm)")
    i.add_argument("--json", action="store_true", help="machine-readable output")

    r = sub.add_parser("run", help="smoke-run a kernel of a .kbin on generated inputs")
    r.add_argument("artifact", metavar="K.kbin")
    r.add_argument("kernel", metavar="KERNEL")
    r.add_argument("--n", type=int, default=1024, help="buffer length; int scalars get this value (default 1024)")
    r.add_argument("--grid", metavar="X[,Y[,Z]]", help="workgroups (default: ceil(n / block x))")
    r.add_argument("--block", metavar="X[,Y[,Z]]", help="workgroup size (default 64)")
    r.add_argument("--on", metavar="KIND", help="run on this module kind (default: first runnable)")
    r.add_argument("--shared-size", type=int, metavar="N", help="length (>= 1) of the kernel's pk.shared_dynamic "
                   "array, if it has one (default: the block's work-item count)")
    r.add_argument("--seed", type=int, default=0)

    b = sub.add_parser("backends", help="list backends: codegen, runtime, devices")
    b.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.version:
            from .artifact import compiler_version

            print(f"polykern {compiler_version()}")
            return 0
        if args.command is None:
            raise _UsageError("a command is required\n" + parser.format_usage().rstrip())
        return {"compile": _compile, "inspect": _inspect, "run": _run, "backends": _backends}[args.command](args)
    except _UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except PolykernError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


# ------------------------------------------------------------------ compile


def _import_user_file(path: str):
    if not os.path.isfile(path):
        raise PolykernError(f"{path}: no such file")
    name = "_polykern_user_" + "".join(ch if ch.isalnum() else "_" for ch in os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise PolykernError(f"{path}: cannot be imported as a Python file")
    mod = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except PolykernError:
        sys.modules.pop(name, None)
        raise
    except SystemExit as e:
        raise PolykernError(f"{path} called sys.exit({e.code}) while being imported") from None
    except Exception:
        tb = traceback.format_exc()
        raise PolykernError(f"importing {path} failed:\n{tb.rstrip()}") from None
    finally:  # the module stays in sys.modules: the frontend reads kernel source/globals later
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    return mod


def _kernel_name(var: str, obj: Any) -> str:
    for attr in ("name", "__name__"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    return var


def _compile(args) -> int:
    from . import target as target_mod

    targets = [target_mod.Target.parse(t) for t in args.target]  # fail fast on a bad target
    user_files.check_destination(args.output, inputs=[args.file])  # and on an output it would refuse
    try:
        from .lang import Kernel
    except ImportError as e:
        raise PolykernError(f"the kernel frontend (polykern.lang) cannot be imported: {e}") from None
    try:
        from .pipeline import build
    except ImportError as e:
        raise PolykernError(f"the build pipeline (polykern.pipeline) cannot be imported: {e}") from None
    mod = _import_user_file(args.file)
    found: Dict[str, Any] = {}
    for var, obj in vars(mod).items():
        if isinstance(obj, Kernel):
            found.setdefault(_kernel_name(var, obj), obj)
    if not found:
        raise PolykernError(f"{args.file} defines no @polykern.kernel functions")
    if args.kernel:
        missing = [k for k in args.kernel if k not in found]
        if missing:
            raise PolykernError(f"no kernel named {', '.join(map(repr, missing))} in {args.file}; "
                                f"kernels: {', '.join(found)}")
        selected = [found[k] for k in dict.fromkeys(args.kernel)]
    else:
        selected = list(found.values())
    root = build(selected, [str(t) for t in targets], fast_math=args.fast_math)
    data = root.export(strip_sources=args.strip_sources)
    user_files.write_atomic(args.output, data, inputs=[args.file])
    mods = ", ".join(f"{m.kind}/{m.fmt}" + ("" if m.is_runnable else " (fallback)") for m in root.device_modules())
    print(f"wrote {args.output}: {len(data)} bytes; kernels: {', '.join(root.functions)}; modules: {mods}")
    if any(not m.is_runnable for m in root.device_modules()):
        print("  (fallback) = built here without that runtime (or for another CPU): cross-compiled, it cannot "
              "run on this host but loads and runs where its runtime exists; `polykern backends` says why")
    return 0


# ------------------------------------------------------------------ inspect


def _inspect(args) -> int:
    from .artifact import read_artifact

    desc = read_artifact(args.artifact)
    if args.source:
        return _print_source(desc, args.source)
    if args.json:
        print(json.dumps(desc, indent=2, sort_keys=True))
        return 0
    print("\n".join(_describe_lines(desc)))
    return 0


def _size(n: int) -> str:
    return f"{n} B" if n < 10240 else f"{n / 1024:.1f} KiB"


def _describe_lines(desc: Dict[str, Any]) -> List[str]:
    """The text listing. Every string from the artifact goes through ``escape`` (no control
    characters reach the terminal); kbin-inspect prints the same bytes."""
    meta = dict(desc["metadata"])
    out = [f"{escape(desc['file'])}: polykern artifact (format {desc['format_version']}), {desc['size']} bytes, "
           f"crc32 {desc['crc32']}"]
    out.append(f"  compiler: {escape(meta.pop('compiler', '(unknown)'))}")
    meta.pop("targets", None)
    out.append(f"  targets:  {escape(' | '.join(desc['targets'])) or '(none)'}")
    out.append(f"  sources:  {'embedded' if desc['sources_embedded'] else 'stripped'}")
    for k, v in sorted(meta.items(), key=lambda kv: kv[0].encode("utf-8")):
        out.append(f"  {escape(k)}: {escape(v)}")
    out.append("kernels:")
    for f in desc["functions"]:
        extra = []
        if f["launch_tags"]:
            extra.append(escape(" ".join(f["launch_tags"])))
        if f["shared_bytes"]:
            extra.append(f"shared {f['shared_bytes']} B")
        extra += [f"{escape(k)}={escape(v)}" for k, v in f["attrs"].items()]
        out.append(f"  {escape(f['signature'])}" + (f"   [{'; '.join(extra)}]" if extra else ""))
    if not desc["functions"]:
        out.append("  (none)")
    out.append("modules:")
    width = max(len(m["kind"]) for m in desc["modules"])
    for m in desc["modules"]:
        head = f"  [{m['index']}] {m['kind']:<{width}}"
        if m["index"] == 0:
            out.append(f"{head}  imports {m['imports']}")
        else:
            out.append(f"{head}  fmt={escape(m['fmt'])}  {_size(m['size'])}  kernels: "
                       f"{escape(', '.join(m['functions'])) or '-'}"
                       + (f"  imports {m['imports']}" if m["imports"] else ""))
            if "payload" in m:
                out.append(f"        payload: {m['payload']['description']}")
            for name, s in m.get("shaders", {}).items():
                out.append(f"        shader {escape(name)}: {s['description']}")
        if m["sources"]:
            out.append("        sources: " + ", ".join(f"{escape(k)} ({_size(len(v.encode()))})"
                                                       for k, v in m["sources"].items()))
        elif m["index"] != 0:
            out.append("        sources: none embedded" + ("" if desc["sources_embedded"] else " (stripped)"))
    return out


def _print_source(desc: Dict[str, Any], fmt: str) -> int:
    shown, notes, avail = 0, [], set()
    for m in desc["modules"]:
        label = f"[{m['index']}] {m['kind']}"
        avail.update(m["sources"])
        text = m["sources"].get(fmt)  # every text is escaped (escape_source) before it is printed
        if text is not None:
            text = escape_source(text)
        elif m.get("fmt") == fmt:
            if "payload" in m and m["payload"].get("text") is not None:
                text = escape_source(m["payload"]["text"])
            elif m.get("shaders") and all(s.get("text") is not None for s in m["shaders"].values()):
                text = "\n".join(f"// ---- {escape(n)} ----\n{escape_source(s['text'])}"
                                 for n, s in m["shaders"].items())
            else:
                what = m["payload"]["description"] if "payload" in m else \
                    f"{len(m.get('shaders', {}))} binary shaders"
                notes.append(f"module {label}: fmt '{escape(fmt)}' is binary ({what}); no '{escape(fmt)}' source "
                             "is embedded")
        if m.get("fmt") and ("payload" in m and m["payload"]["is_text"]
                             or m.get("shaders") and all(s["is_text"] for s in m["shaders"].values())):
            avail.add(m["fmt"])
        if text is not None:
            print(f"// ===== module {label}: {escape(fmt)} =====")
            print(text.rstrip("\n"))
            shown += 1
    if shown:
        for n in notes:
            print(f"{PROG}: note: {n}", file=sys.stderr)
        return 0
    msg = f"no module of {escape(desc['file'])} has a '{escape(fmt)}' source"
    if notes:
        msg += "; " + "; ".join(notes)
    msg += f"; available: {', '.join(escape(a) for a in sorted(avail))}" if avail else \
        ("; the artifact was built with --strip-sources" if not desc["sources_embedded"] else "; none embedded")
    raise PolykernError(msg)


# ------------------------------------------------------------------ run


#: The largest --n, --grid/--block dimension and --shared-size: int scalars get --n, and global ids,
#: sizes and the pk.shared_dynamic length are i32 (docs/language.md).
_I32_MAX = 2**31 - 1


def _dims(text: Optional[str], what: str):
    if text is None:
        return None
    try:
        parts = tuple(int(p) for p in text.replace("x", ",").split(",") if p.strip())
    except ValueError:
        raise _UsageError(f"--{what} takes X[,Y[,Z]] positive integers, got {text!r}") from None
    if not 1 <= len(parts) <= 3:
        raise _UsageError(f"--{what} takes 1 to 3 integers, got {text!r}")
    if not all(1 <= p <= _I32_MAX for p in parts):
        raise _UsageError(f"--{what} takes positive integers of at most {_I32_MAX}, got {text!r}")
    return parts


def _run_options(args):
    """(block, grid, shared_size or None) of ``polykern run``, every value checked (usage errors)."""
    for name, value in (("n", args.n), ("shared-size", args.shared_size)):
        if value is not None and not 1 <= value <= _I32_MAX:
            raise _UsageError(f"--{name} must be between 1 and {_I32_MAX}, got {value}")
    if args.seed < 0:
        raise _UsageError(f"--seed must be >= 0, got {args.seed}")
    block = _dims(args.block, "block") or (64,)
    grid = _dims(args.grid, "grid") or (-(-args.n // block[0]),)
    return block, grid, args.shared_size


def _run(args) -> int:
    import numpy as np

    from .artifact import load
    from .runtime.checked_launch import user_visible
    from .ir.bfloat16 import bf16_array, bits_to_f32
    from .ir.types import bf16
    from .runtime.shared_launch import dynamic_shared_of

    block, grid, shared_size = _run_options(args)
    root = load(args.artifact)
    info = user_visible(root.function_info(args.kernel))  # a checked kernel's hidden arguments are passed for us
    dyn = dynamic_shared_of(info)
    if dyn is not None:  # its hidden length argument is passed as shared_size=
        info = dataclasses.replace(info, args=info.args[:dyn[0]])
    fn = root.on(args.on)[args.kernel] if args.on else root[args.kernel]
    rng = np.random.default_rng(args.seed)
    values: List[Any] = []
    try:
        for a in info.args:
            t = a.dtype
            if a.is_buffer:
                if t == bf16:
                    values.append(bf16_array(rng.random(args.n)))
                elif t.is_float:
                    values.append(rng.random(args.n).astype(t.numpy))
                elif t.is_bool:
                    values.append(rng.random(args.n) < 0.5)
                else:
                    values.append(rng.integers(0, 100, args.n).astype(t.numpy))
            else:
                values.append(t.numpy.type(1.5) if t.is_float else (True if t.is_bool else args.n))
    except MemoryError:  # NumPy's _ArrayMemoryError is one
        buffers = sum(a.is_buffer for a in info.args)
        raise PolykernError(f"--n {args.n}: the {buffers} buffers of {args.n} elements each do not fit in this "
                            "process's memory; use a smaller --n") from None
    where = fn.module.kind if hasattr(fn, "module") else (args.on or "?")
    launch: Dict[str, Any] = {}
    if dyn is not None:
        launch["shared_size"] = shared_size if shared_size is not None else \
            block[0] * (block[1] if len(block) > 1 else 1) * (block[2] if len(block) > 2 else 1)
    start = time.perf_counter()
    fn(*values, grid=grid, block=block, **launch)
    elapsed = time.perf_counter() - start
    print(f"ran {info.signature()} on {where}: grid {grid} block {block}, n={args.n}, {elapsed * 1e3:.3f} ms "
          "(first launch, includes any JIT)")
    for a, v in zip(info.args, values):
        if a.is_buffer:
            v = bits_to_f32(v) if a.dtype == bf16 else v  # bf16 shown as its values, not its bits
            head = np.array2string(v[:8], precision=6, separator=", ", max_line_width=10**6)
            print(f"  {a.name}[:8] = {head}  sum = {v.astype(np.float64).sum():.6g}")
    return 0


# ------------------------------------------------------------------ backends


def _backends(args) -> int:
    from . import backends

    rows = backends.status()
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
        return 0
    if not rows:
        note = " (autoload disabled: POLYKERN_BACKEND_AUTOLOAD=0)" if not backends.autoload_enabled() else ""
        print(f"no polykern backends found{note}")
        return 0
    print(f"{'BACKEND':<10} {'KINDS':<14} {'CODEGEN':<8} {'RUNTIME':<8} DEVICES / REASON")
    for r in rows:
        codegen = "ok" if r["codegen_ok"] else "error"
        runtime = "yes" if r["runtime_available"] else "no"
        if not r["codegen_ok"]:
            detail = r["codegen_error"]
        elif r["runtime_available"]:
            detail = ", ".join(r["devices"]) or (f"device query failed: {r['devices_error']}"
                                                 if r["devices_error"] else "no devices listed")
        else:  # the reason, and the command that installs the runtime where it does not say it already
            detail, step = r["runtime_reason"], backends.install_step(r["install"], r["extra"])
            if step and step not in detail:
                detail += f" (install: {step})"
        print(f"{r['name']:<10} {','.join(r['module_kinds']) or '-':<14} {codegen:<8} {runtime:<8} {detail}")
    return 0
