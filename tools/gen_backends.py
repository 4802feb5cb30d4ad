"""Write every mirror of THE backend list, BACKENDS in backends/backends.bzl, and check the tree
against it.

Bazel reads the list directly (backends/backends.bzl generates the flags, configs and targets). The
files that cannot load Starlark hold blocks that this tool writes from the list:

  .bazelrc           the `build:<config>` lines of the backends with a `config`
  pyproject.toml     the per-backend pip extras and the `polykern.backends` entry points
  requirements.txt   the codegen and runtime pip requirements (Bazel's lock is made from it)

Tests read the list through :func:`read_backends` (tests/test_compile_all_backends.py: the target
kinds; tests/test_backend_list.py: the declared records and the mirrors).

    python tools/gen_backends.py          # rewrite the generated blocks
    python tools/gen_backends.py --check  # exit 1 naming each stale file or broken rule

The check also finds what the tool cannot write: a listed backend without its folder, a folder
that is not listed, a `needs` tool that toolchains/extensions.bzl does not detect, a requirement
that requirements_lock.txt does not pin (run tools/update_lock.sh).
The .bzl file is read with Python's own parser: the `backend(...)` lines are literal calls.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST_FILE = "backends/backends.bzl"
TOOLS_FILE = "toolchains/extensions.bzl"
LOCK_FILE = "requirements_lock.txt"
COMMAND = "python tools/gen_backends.py"


@dataclass(frozen=True)
class Backend:
    """One backend(...) line of BACKENDS (the fields of backend() in backends/backends.bzl)."""

    name: str
    needs: Tuple[str, ...]
    runtime_pip: Tuple[str, ...] = ()
    runtime_modules: Tuple[str, ...] = ()
    codegen_pip: Tuple[str, ...] = ()
    runtime_srcs: Tuple[str, ...] = ()
    config: Optional[str] = None
    os: Optional[str] = None
    gpu_tag: Optional[str] = None
    targets: Tuple[str, ...] = ()
    codegen_extra: Optional[str] = None
    doc: str = ""

    @property
    def extra(self) -> str:
        """The pip extra polykern[<name>] ("" where the backend has no pip requirement)."""
        return self.name if (self.codegen_pip or self.runtime_pip) else ""

    @property
    def extra_requirements(self) -> Tuple[str, ...]:
        return self.codegen_pip + self.runtime_pip

    @property
    def entry_point(self) -> str:
        return f"polykern_{self.name}:register_backend"


class ListError(ValueError):
    """backends/backends.bzl (or toolchains/extensions.bzl) cannot be read as the list it should be."""


def _parse(root: str, rel: str) -> ast.Module:
    """``rel`` (a .bzl file) as a Python syntax tree; a missing or unparsable file is a ListError."""
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            return ast.parse(f.read(), filename=rel)
    except OSError as e:
        raise ListError(f"{rel}: cannot read it ({e.strerror})") from None
    except SyntaxError as e:
        raise ListError(f"{rel}:{e.lineno}: cannot parse it ({e.msg}); the list is read with Python's parser, so "
                        "keep it to literal backend(...) calls") from None


def _assignment(tree: ast.Module, name: str, path: str) -> ast.expr:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
    raise ListError(f"{path}: no top-level `{name} = ...`")


def _literal(node: ast.expr, path: str, what: str):
    try:
        value = ast.literal_eval(node)
    except ValueError:
        raise ListError(f"{path}:{node.lineno}: {what} must be a literal (a string, a list of strings or "
                        f"None), got `{ast.unparse(node)}`") from None
    return tuple(value) if isinstance(value, list) else value


#: The backend() arguments that are lists of strings, and those that are a string or None (the rest: a string).
_LIST_FIELDS = ("needs", "runtime_pip", "runtime_modules", "codegen_pip", "runtime_srcs", "targets")
_OPTIONAL_FIELDS = ("config", "os", "gpu_tag", "codegen_extra")


def _check_type(key: str, value, lineno: int) -> None:
    if key in _LIST_FIELDS:
        ok, want = isinstance(value, tuple) and all(isinstance(v, str) for v in value), "a list of strings"
    elif key in _OPTIONAL_FIELDS:
        ok, want = value is None or isinstance(value, str), "a string or None"
    else:
        ok, want = isinstance(value, str), "a string"
    if not ok:
        raise ListError(f"{LIST_FILE}:{lineno}: backend() argument {key} must be {want}, got {value!r}")


def read_backends(root: str = ROOT) -> List[Backend]:
    """BACKENDS of backends/backends.bzl under ``root``, in list order."""
    tree = _parse(root, LIST_FILE)
    value = _assignment(tree, "BACKENDS", LIST_FILE)
    for node in tree.body:  # the one literal list is the whole list: Bazel would see what this tool would not
        if isinstance(node, ast.Assign):
            changed = [] if node.value is value else node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            changed = [node.target]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func,
                                                                                           ast.Attribute):
            changed = [node.value.func.value]  # BACKENDS.append(...)
        else:
            changed = []
        if any(isinstance(c, ast.Name) and c.id == "BACKENDS" for c in changed):
            raise ListError(f"{LIST_FILE}:{node.lineno}: BACKENDS is changed after its `BACKENDS = [...]`; "
                            "add a backend(...) line to that list instead")
    if not isinstance(value, ast.List):
        raise ListError(f"{LIST_FILE}:{value.lineno}: BACKENDS must be a list of backend(...) lines")
    fields = set(Backend.__dataclass_fields__)
    out: List[Backend] = []
    for call in value.elts:
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "backend"):
            raise ListError(f"{LIST_FILE}:{call.lineno}: every BACKENDS entry is a backend(...) call")
        if len(call.args) > 2:
            raise ListError(f"{LIST_FILE}:{call.lineno}: backend() takes name and needs by position, the rest by keyword")
        kw = {k: _literal(v, LIST_FILE, k) for k, v in zip(("name", "needs"), call.args)}
        for k in call.keywords:
            if k.arg not in fields:
                raise ListError(f"{LIST_FILE}:{call.lineno}: backend() has no argument {k.arg!r}")
            kw[k.arg] = _literal(k.value, LIST_FILE, k.arg)
        if "name" not in kw or "needs" not in kw:
            raise ListError(f"{LIST_FILE}:{call.lineno}: backend() needs a name and needs")
        for k, v in kw.items():
            _check_type(k, v, call.lineno)
        kw["targets"] = kw.get("targets") or (kw["name"],)
        out.append(Backend(**kw))
    names = [b.name for b in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ListError(f"{LIST_FILE}: backend(s) listed twice: {', '.join(dup)}")
    return out


def read_tools(root: str = ROOT) -> List[str]:
    """TOOLS of toolchains/extensions.bzl: the host tools that detection looks for."""
    tree = _parse(root, TOOLS_FILE)
    return list(_literal(_assignment(tree, "TOOLS", TOOLS_FILE), TOOLS_FILE, "TOOLS"))


def target_kinds(backends: List[Backend]) -> List[str]:
    """Every target kind the listed backends register."""
    return [t for b in backends for t in b.targets]


# ------------------------------------------------------------------ the generated blocks

def _begin(block: str) -> str:
    return f"# BEGIN {block}: generated by {COMMAND} from {LIST_FILE}; do not edit"


def _end(block: str) -> str:
    return f"# END {block}"


def _toml_list(items) -> str:
    return "[" + ", ".join('"' + i.replace("\\", "\\\\").replace('"', '\\"') + '"' for i in items) + "]"


def render_bazelrc(backends: List[Backend]) -> List[str]:
    return [f"build:{b.config} --//backends:no_runtimes=false --//backends:runtime_{b.name}=true"
            for b in backends if b.config]


def render_extras(backends: List[Backend]) -> List[str]:
    lines = []
    for b in backends:
        if b.extra:
            lines.append(f"{b.extra} = {_toml_list(b.extra_requirements)}")
        if b.codegen_extra and b.codegen_pip:
            lines.append(f"{b.codegen_extra} = {_toml_list(b.codegen_pip)}")
    return lines


def render_entry_points(backends: List[Backend]) -> List[str]:
    return [f'{b.name} = "{b.entry_point}"' for b in backends]


def render_requirements(backends: List[Backend]) -> List[str]:
    seen: Dict[str, None] = {}
    for b in backends:
        for r in b.codegen_pip + b.runtime_pip:
            seen.setdefault(r, None)
    return list(seen)


# file -> [(block name, renderer)]
BLOCKS = {
    ".bazelrc": [("backend configs", render_bazelrc)],
    "pyproject.toml": [("backend extras", render_extras), ("backend entry points", render_entry_points)],
    "requirements.txt": [("backend requirements", render_requirements)],
}


def _replace_block(text: str, block: str, lines: List[str], path: str) -> str:
    begin, end = _begin(block), _end(block)
    pat = re.compile(r"^# BEGIN " + re.escape(block) + r":[^\n]*\n(.*?)^" + re.escape(end) + r"[ \t]*$",
                     re.S | re.M)
    found = list(pat.finditer(text))
    if len(found) != 1:
        raise ListError(f"{path}: expected one generated block '{block}' (a line starting `# BEGIN {block}:` "
                        f"and a line `{end}`), found {len(found)}")
    body = "".join(line + "\n" for line in lines)
    m = found[0]
    return text[:m.start()] + begin + "\n" + body + end + text[m.end():]


def render_file(root: str, rel: str, backends: List[Backend]) -> Tuple[str, str]:
    """(current text, text with every generated block of ``rel`` rewritten)."""
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ListError(f"{rel}: cannot read it ({e.strerror}); it holds generated blocks") from None
    new = text
    for block, fn in BLOCKS[rel]:
        new = _replace_block(new, block, fn(backends), rel)
    return text, new


# ------------------------------------------------------------------ rules the tool cannot fix

def _norm(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip_name(requirement: str) -> str:
    return _norm(re.split(r"[<>=!~;\[ (]", requirement, maxsplit=1)[0].strip())


def _lock_pins(root: str) -> Dict[str, str]:
    try:
        with open(os.path.join(root, LOCK_FILE), encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    return {_norm(m.group(1)): m.group(2)
            for m in re.finditer(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", text, re.M)}


def problems(root: str, backends: List[Backend]) -> List[str]:
    """What is wrong with the tree beyond stale generated blocks (each names the file to fix)."""
    out = []
    tools = read_tools(root)
    listed = {b.name for b in backends}
    for b in backends:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", b.name):
            out.append(f"{LIST_FILE}: backend name {b.name!r} must be a lowercase identifier (it names the "
                       f"folder backends/{b.name}/ and the package polykern_{b.name})")
            continue
        for t in b.needs:
            if t not in tools:
                out.append(f"{LIST_FILE}: backend '{b.name}' needs '{t}', which {TOOLS_FILE} does not detect "
                           f"(TOOLS: {', '.join(tools)}); add its detection there or name a listed tool")
        folder = f"backends/{b.name}"
        init = f"{folder}/polykern_{b.name}/__init__.py"
        build = f"{folder}/BUILD.bazel"
        if not os.path.isfile(os.path.join(root, init)):
            out.append(f"{init} is missing: backend '{b.name}' is listed in {LIST_FILE}; its package needs "
                       "register_backend()")
        elif "def register_backend" not in open(os.path.join(root, init), encoding="utf-8").read():
            out.append(f"{init} defines no register_backend() (the entry point {b.entry_point})")
        if not os.path.isfile(os.path.join(root, build)):
            out.append(f"{build} is missing: it holds `polykern_backend()` (load it from //backends:backends.bzl)")
        elif "polykern_backend(" not in open(os.path.join(root, build), encoding="utf-8").read():
            out.append(f"{build} does not call polykern_backend()")
    bdir = os.path.join(root, "backends")
    for entry in sorted(os.listdir(bdir)):
        if os.path.isdir(os.path.join(bdir, entry, f"polykern_{entry}")) and entry not in listed:
            out.append(f"backends/{entry}/ holds a backend that BACKENDS in {LIST_FILE} does not list: add a "
                       f'backend("{entry}", ...) line there (or remove the folder)')
    for what, values in (("config", [(b.name, b.config) for b in backends if b.config]),
                         ("target kind", [(b.name, t) for b in backends for t in b.targets])):
        owners: Dict[str, List[str]] = {}
        for backend_name, value in values:
            owners.setdefault(value, []).append(backend_name)
        for value, names in owners.items():
            if len(names) > 1:
                out.append(f"{LIST_FILE}: {what} {value!r} belongs to more than one backend ({', '.join(names)}); "
                           "each backend needs its own")
    for b in backends:
        if b.config and not re.fullmatch(r"[a-z][a-z0-9_-]*", b.config):
            out.append(f"{LIST_FILE}: backend '{b.name}' config {b.config!r} must be a lowercase name (it becomes "
                       f"the .bazelrc line build:{b.config} and --config={b.config})")
    pins = _lock_pins(root)
    for r in render_requirements(backends):
        try:
            from packaging.requirements import InvalidRequirement, Requirement
        except ImportError:  # the generator runs with a bare python3 too; the pin check needs packaging
            Requirement = None  # type: ignore[assignment,misc]
        else:
            try:
                Requirement(r)
            except InvalidRequirement as e:
                out.append(f"{LIST_FILE}: {r!r} is not a pip requirement (PEP 508): {str(e).splitlines()[0]}")
                continue
        name = _pip_name(r)
        if name not in pins:
            out.append(f"{LOCK_FILE} pins no {name} (requirements.txt: {r}): run tools/update_lock.sh")
            continue
        if Requirement is None:
            continue
        if not Requirement(r).specifier.contains(pins[name], prereleases=True):
            out.append(f"{LOCK_FILE} pins {name}=={pins[name]}, outside {r}: run tools/update_lock.sh")
    return out


def check(root: str = ROOT) -> List[str]:
    """Every reason the tree disagrees with the list ([] when it agrees)."""
    try:
        backends = read_backends(root)
        out = problems(root, backends)
        for rel in BLOCKS:
            text, new = render_file(root, rel, backends)
            if text != new:
                out.append(f"{rel} is stale (its generated blocks differ from {LIST_FILE}): run `{COMMAND}`")
    except ListError as e:
        return [str(e)]
    return out


def write(root: str = ROOT) -> List[str]:
    """Rewrite the generated blocks; returns the files that changed."""
    backends = read_backends(root)
    changed = []
    for rel in BLOCKS:
        text, new = render_file(root, rel, backends)
        if text != new:
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(new)
            changed.append(rel)
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the tree disagrees with the list")
    ap.add_argument("--root", default=ROOT, help="the repository root (default: this checkout)")
    args = ap.parse_args(argv)
    if not args.check:
        try:
            for rel in write(args.root):
                print(f"wrote {rel}")
        except ListError as e:
            print(f"gen_backends: {e}", file=sys.stderr)
            return 1
    bad = check(args.root)
    for line in bad:
        print(f"gen_backends: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
