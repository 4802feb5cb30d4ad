"""Moves polykern's modules into named layers and rewrites every reference to them (idempotent).

    python tools/relayout.py          # from anywhere inside the repository's work tree
    python tools/relayout.py --check  # exit 1 (listing what would change) when the tree is not laid out

The layers (docs/internals.md "Package layout"): ``polykern.kbin`` (the artifact format: byte format,
message table, function schema, payload formats), ``polykern.runtime`` (the kit every device runtime
shares: launch checks, device arrays, laziness, buffer pools, the launch stream) and
``polykern.codegen.cpu`` (the code generation only the CPU kinds, llvm and hexagon, use).

What it does, in order:

1. ``git mv`` each old module file of :data:`MOVES` to its new path (skipped when already moved; an
   error when both exist), and creates each new package's ``__init__.py`` (:data:`PACKAGES`).
2. In every tracked ``.py`` file, rewrites the import statements that name a moved module, by module
   (``from .wire import X``, ``from ..wire import X``, ``from polykern.wire import X``, ``from polykern
   import wire, registry`` -> split, ``from . import kbin_messages`` -> ``from .kbin import messages as
   kbin_messages``), resolving relative imports against the file's package. A moved file whose relative
   imports were written for its old place (the first run, or another branch's edit that git carried
   into the moved file) has them re-expressed for the new one.
3. In every tracked text file (sources, tests, docs, BUILD.bazel, native C comments, generators),
   rewrites the anchored dotted names (``polykern.wire`` -> ``polykern.kbin.wire``, not
   ``polykern.wire_x`` nor ``x.polykern.wire``) and paths (``polykern/wire.py`` ->
   ``polykern/kbin/wire.py``; ``codegen/llvm_workgroup.py`` -> ``codegen/cpu/workgroup.py``), and a
   one-name ``from polykern import kbin_file`` that no parser sees (inside a string: a child process's
   code) -> ``from polykern.kbin import file as kbin_file``.

A second run changes nothing: no new name matches an old one. Running it on a tree where other
branches added references to old paths rewrites those too. It does not touch itself or its test.
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

#: old module -> new module. Every new name is unlike every old one (no old dotted name or path is a
#: prefix-match of a new one), which is what makes a second run a no-op.
MOVES: Dict[str, str] = {
    # the artifact format
    "polykern.wire": "polykern.kbin.wire",
    "polykern.kbin_messages": "polykern.kbin.messages",
    "polykern.kbin_file": "polykern.kbin.file",
    "polykern.function_schema": "polykern.kbin.function_schema",
    "polykern.function_info": "polykern.kbin.function_info",
    "polykern.payload_formats": "polykern.kbin.payload_formats",
    # the runtime kit
    "polykern.launch": "polykern.runtime.launch",
    "polykern.launch_rules": "polykern.runtime.launch_rules",
    "polykern.launch_proof": "polykern.runtime.launch_proof",
    "polykern.launch_stream": "polykern.runtime.launch_stream",
    "polykern.aligned_launch": "polykern.runtime.aligned_launch",
    "polykern.checked_launch": "polykern.runtime.checked_launch",
    "polykern.shared_launch": "polykern.runtime.shared_launch",
    "polykern.hopper_launch": "polykern.runtime.hopper_launch",
    "polykern.host_aliasing": "polykern.runtime.host_aliasing",
    "polykern.buffer_pool": "polykern.runtime.buffer_pool",
    "polykern.device_array": "polykern.runtime.device_array",
    "polykern.devices": "polykern.runtime.devices",
    "polykern.lazy": "polykern.runtime.lazy",
    "polykern.kernel_output": "polykern.runtime.kernel_output",
    "polykern.runtime_dir": "polykern.runtime.xdg_runtime_dir",
    # CPU-only code generation (llvm, hexagon)
    "polykern.codegen.llvm_workgroup": "polykern.codegen.cpu.workgroup",
    "polykern.codegen.llvm_subgroups": "polykern.codegen.cpu.subgroups",
    "polykern.codegen.llvm_matrix": "polykern.codegen.cpu.matrix",
    "polykern.codegen.llvm_probe": "polykern.codegen.cpu.probe",
    "polykern.codegen.lazy_asm": "polykern.codegen.cpu.lazy_asm",
    "polykern.codegen.cpu_subgroup": "polykern.codegen.cpu.subgroup_size",
}

#: new package -> the docstring of its ``__init__.py`` (written only where the file does not exist).
PACKAGES: Dict[str, str] = {
    "polykern.kbin": "The artifact format: the byte format of a .kbin (wire), its message table, the "
                     "function schema and\nFunctionInfo, payload formats and file I/O. Imports no runtime "
                     "and no code generator.",
    "polykern.runtime": "The kit every device runtime shares: launch checks and rules, device arrays, "
                        "lazy realization,\nbuffer pools, host aliasing, the launch stream. Imports no code "
                        "generator.",
    "polykern.codegen.cpu": "Code generation only the CPU kinds (llvm, hexagon) use: the work-item loop, "
                            "subgroups and\nmatrix fragments on the CPU, the target probe, the lazy "
                            "assembly listing.",
}

SOURCE_ROOTS = ("python",)  # plus backends/<x>/, found at run time
#: Files left alone: this script and its test, whose tables and cases hold the old names on purpose.
SELF = {Path("tools/relayout.py"), Path("tests/test_relayout.py")}


def module_path(mod: str) -> Path:
    return Path("python", *mod.split(".")).with_suffix(".py")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


# ---------------------------------------------------------------------------------------------- moves

def move_files(root: Path, dry: bool, log: List[str]) -> None:
    for pkg, doc in PACKAGES.items():
        init = root / Path("python", *pkg.split("."), "__init__.py")
        if not init.exists():
            log.append(f"create {init.relative_to(root)}")
            if not dry:
                init.parent.mkdir(parents=True, exist_ok=True)
                init.write_text(f'"""{doc}"""\n', encoding="utf-8")
                git(root, "add", str(init.relative_to(root)))
    for old, new in MOVES.items():
        src, dst = module_path(old), module_path(new)
        if (root / src).exists() and (root / dst).exists():
            raise SystemExit(f"relayout: both {src} and {dst} exist; merge them by hand first")
        if (root / src).exists():
            log.append(f"git mv {src} {dst}")
            if not dry:
                (root / dst).parent.mkdir(parents=True, exist_ok=True)
                git(root, "mv", str(src), str(dst))


# ----------------------------------------------------------------------------------- module names

def module_index(root: Path, files: Sequence[Path]) -> Tuple[Dict[Path, str], set]:
    """Each Python source file's module name, and the set of every module and package name."""
    names: Dict[Path, str] = {}
    for f in files:
        if f.suffix != ".py":
            continue
        parts = f.parts
        if parts[0] == "python" and len(parts) > 1 and parts[1] == "polykern":
            rel = parts[1:]
        elif parts[0] == "backends" and len(parts) > 2 and parts[2].startswith("polykern_"):
            rel = parts[2:]
        else:
            continue
        mod = list(rel)
        mod[-1] = mod[-1][:-3]
        if mod[-1] == "__init__":
            mod.pop()
        names[f] = ".".join(mod)
    known = set(names.values())
    for n in list(known):
        while "." in n:
            n = n.rsplit(".", 1)[0]
            known.add(n)
    return names, known


def package_of(path: Path, mod: str) -> List[str]:
    return mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]


def resolve(pkg: List[str], level: int, module: Optional[str]) -> Optional[str]:
    if level - 1 > len(pkg):
        return None
    base = pkg[:len(pkg) - (level - 1)]
    return ".".join(base + (module.split(".") if module else []))


def relative(pkg: List[str], target: str) -> str:
    """``target`` written as a relative module from package ``pkg`` (``.x``, ``..y.z``, ``.``)."""
    t = target.split(".")
    common = 0
    while common < min(len(pkg), len(t)) and pkg[common] == t[common]:
        common += 1
    return "." * (len(pkg) - common + 1) + ".".join(t[common:])


REVERSE = {new: old for old, new in MOVES.items()}


# ------------------------------------------------------------------------------- import statements

def _fits(name: str, known: set) -> bool:
    return name in known or name in MOVES


def _choose_package(path: Path, mod: str, node: ast.ImportFrom, known: set) -> List[str]:
    """The package a relative import of ``path`` was written for: its own, or (a moved file whose
    import does not resolve here but does from where the file was) its old one."""
    pkg = package_of(path, mod)
    old = REVERSE.get(mod)
    if not old or not node.level:
        return pkg
    here = resolve(pkg, node.level, node.module)
    old_pkg = package_of(path, old)
    there = resolve(old_pkg, node.level, node.module)
    if there is None or not _fits(there, known):
        return pkg
    if here is None or not _fits(here, known):
        return old_pkg
    if not node.module:  # `from . import a, b`: which package has a, b as modules
        def modules(base):
            return sum(f"{base}.{a.name}" in known or f"{base}.{a.name}" in MOVES for a in node.names)
        if modules(there) > modules(here):
            return old_pkg
    return pkg


def _render_from(indent: str, module: str, names: List[Tuple[str, Optional[str]]]) -> List[str]:
    items = [n if a is None or a == n else f"{n} as {a}" for n, a in names]
    line = f"{indent}from {module} import {', '.join(items)}"
    if len(line) <= 110:
        return [line]
    out = [f"{indent}from {module} import ("]
    cur = indent + "    "
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else ",")
        if len(cur) + len(piece) + 1 > 110 and cur.strip():
            out.append(cur.rstrip())
            cur = indent + "    "
        cur += piece + " "
    out.append(cur.rstrip())
    out.append(f"{indent})")
    return out


def rewrite_imports(path: Path, text: str, mod: Optional[str], known: set) -> str:
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    edits: List[Tuple[int, int, List[str]]] = []  # (first line index, last line index, new lines)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level and mod is None:
            continue
        if node.level:
            pkg = _choose_package(path, mod, node, known)
            target = resolve(pkg, node.level, node.module)
            if target is None:
                continue
            cur_pkg = package_of(path, mod)
        else:
            pkg = cur_pkg = None
            target = node.module or ""

        def spell(m: str) -> str:
            return relative(cur_pkg, m) if node.level else m

        new_target = MOVES.get(target, target)
        moved_names = [a for a in node.names if f"{target}.{a.name}" in MOVES]
        same_spelling = spell(new_target) == (("." * node.level) + (node.module or ""))
        if not moved_names and same_spelling:
            continue
        first, last = node.lineno - 1, node.end_lineno - 1
        head = lines[first][:node.col_offset]
        tail = lines[last][node.end_col_offset:]
        if head.strip():  # `x; from a import b`: leave such lines alone
            continue
        stmt = "".join(lines[first:last + 1])[node.col_offset:]
        stmt = stmt[:len(stmt) - len(tail)] if tail else stmt
        nl = "\n" if lines[last].endswith("\n") else ""
        tail_text = tail.rstrip("\n")
        if not moved_names:
            new_stmt = re.sub(r"^(from\s+)(\.*[\w.]*)(\s+import\b)",
                              lambda m: m.group(1) + spell(new_target) + m.group(3), stmt, count=1)
            new_lines = (head + new_stmt + tail_text).split("\n")
            edits.append((first, last, new_lines))
            continue
        out: List[str] = []
        rest = [(a.name, a.asname) for a in node.names if a not in moved_names]
        if rest:
            out += _render_from(head, spell(new_target), rest)
        groups: Dict[str, List[Tuple[str, Optional[str]]]] = {}
        for a in moved_names:
            parent, base = MOVES[f"{target}.{a.name}"].rsplit(".", 1)
            groups.setdefault(parent, []).append((base, a.asname or a.name))
        for parent, names in groups.items():
            out += _render_from(head, spell(parent), names)
        out[0] += tail_text
        edits.append((first, last, out))
    if not edits:
        return text
    for first, last, new_lines in sorted(edits, reverse=True):
        nl = "\n" if lines[last].endswith("\n") else ""
        lines[first:last + 1] = [ln + "\n" for ln in new_lines[:-1]] + [new_lines[-1] + nl]
    return "".join(lines)


# ------------------------------------------------------------------------------------ text rewrite

def _text_pattern():
    dotted = {old: new for old, new in MOVES.items()}
    paths = {"/".join(old.split(".")) + ".py": "/".join(new.split(".")) + ".py" for old, new in MOVES.items()}
    # a subpackage's file as docs cite it without the package: codegen/llvm_workgroup.py
    paths.update({"/".join(old.split(".")[1:]) + ".py": "/".join(new.split(".")[1:]) + ".py"
                  for old, new in MOVES.items() if old.count(".") > 1})
    table = {**dotted, **paths}
    alts = sorted(table, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(a) for a in alts) + r")(?![\w])")
    return pattern, table


PATTERN, TABLE = _text_pattern()


#: ``from polykern import wire`` (one name) where no parser sees it: in a string (a child process's
#: code), a doc. Anchored: not inside a longer name (or right after an escaped ``\\n``); ending at the line's end, a quote,
#: ``;``, a backslash or a comment.
FROM_PATTERN = re.compile(r"(?:(?<![\w.])|(?<=\\n))from(\s+)(polykern(?:\.codegen)?)(\s+)import(\s+)(\w+)(\s+as\s+\w+)?"
                          r"(?=[ \t]*(?:$|[;#\"'\\]))", re.M)


def _from_one(m: "re.Match[str]") -> str:
    pkg, name, alias = m.group(2), m.group(5), m.group(6)
    new = MOVES.get(f"{pkg}.{name}")
    if new is None:
        return m.group(0)
    parent, base = new.rsplit(".", 1)
    alias = alias or ("" if base == name else f" as {name}")
    return f"from{m.group(1)}{parent}{m.group(3)}import{m.group(4)}{base}{alias}"


def rewrite_text(text: str) -> str:
    return PATTERN.sub(lambda m: TABLE[m.group(1)], FROM_PATTERN.sub(_from_one, text))


# -------------------------------------------------------------------------------------------- main

def tracked_files(root: Path) -> List[Path]:
    return [Path(p) for p in git(root, "ls-files", "-z").split("\0") if p]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything would change")
    args = ap.parse_args(argv)
    root = Path(git(Path.cwd(), "rev-parse", "--show-toplevel").strip())
    log: List[str] = []
    move_files(root, args.check, log)
    files = tracked_files(root)
    if args.check:  # where the files would be after the moves
        files = [Path(*MOVES_PATHS.get(f.as_posix(), f.as_posix()).split("/")) for f in files]
        files += [Path("python", *p.split("."), "__init__.py") for p in PACKAGES]
    names, known = module_index(root, files)
    known |= set(PACKAGES)
    for f in files:
        if f in SELF:
            continue
        real = root / f
        if args.check:
            rev = {v: k for k, v in MOVES_PATHS.items()}
            real = root / rev.get(f.as_posix(), f.as_posix())
        if not real.is_file():
            continue
        try:
            text = real.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = text
        if f.suffix == ".py":
            new = rewrite_imports(f, new, names.get(f), known)
        new = rewrite_text(new)
        if new != text:
            log.append(f"rewrite {f}")
            if not args.check:
                real.write_text(new, encoding="utf-8")
    for line in log:
        print(line)
    if args.check:
        return 1 if log else 0
    return 0


MOVES_PATHS = {module_path(o).as_posix(): module_path(n).as_posix() for o, n in MOVES.items()}

if __name__ == "__main__":
    sys.exit(main())
