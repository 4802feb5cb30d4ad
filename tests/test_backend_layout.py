"""Every in-tree backend keeps its runtime in ``polykern_<x>/runtime.py`` or ``polykern_<x>/runtime/``
(docs/backends.md): no module at the package's top level serves the runtime alone (llvm kept its ELF
loader, thread pool and relocations there, webgpu its device context and device arrays, each listed by
hand in backends.bzl's ``runtime_srcs``)."""
import ast
import os

import pytest

from backend_list import REPO, gen

BACKENDS = gen.read_backends(REPO)
# What the rest of polykern imports of a backend package without its runtime: the entry point, the
# codegen (registered by name), the compile-only module and the conformance suite's skip list; besides
# these, whatever tools/ or the core import of it (a table a generator reads is not the runtime's alone).
CODEGEN_ROOTS = ("__init__", "codegen", "fallback", "conformance")
OUTSIDE = ("tools", "python")


def _imported_from_outside(pkg):
    out = set()
    for top in OUTSIDE:
        for d, _, files in os.walk(os.path.join(REPO, top)):
            for f in files:
                path = os.path.join(d, f)
                if f.endswith(".py") and pkg in open(path).read():
                    out |= _top_level_imports(path, pkg, -1)
    return out


def _top_level_imports(path, pkg, depth):
    """The top-level modules of ``pkg`` that the file at ``path`` (``depth`` folders below the package;
    -1: outside it) imports, relatively or by the package's name."""
    out = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                if depth < 0 or node.level != depth + 1:  # inside its own subpackage, or outside the package
                    continue
                parts = (node.module or "").split(".")
            elif (node.module or "").split(".")[0] == pkg:
                parts = node.module.split(".")[1:]
            else:
                continue
            out.update([parts[0]] if parts and parts[0] else [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names
                       if a.name.split(".")[0] == pkg and "." in a.name)
    return out


def _reach(graph, roots):
    seen, todo = set(), [r for r in roots if r in graph]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(n for n in graph.get(m, ()) if n in graph)
    return seen


@pytest.mark.parametrize("b", BACKENDS, ids=[b.name for b in BACKENDS])
def test_runtime_files_live_in_the_runtime_folder(b):
    pkg = f"polykern_{b.name}"
    root = os.path.join(REPO, "backends", b.name, pkg)
    assert not b.runtime_srcs, (f"backends/backends.bzl lists runtime files of {b.name} outside runtime/ "
                                f"({list(b.runtime_srcs)}): move them into {pkg}/runtime/")
    assert not (os.path.exists(os.path.join(root, "runtime.py")) and os.path.isdir(os.path.join(root, "runtime"))), (
        f"{pkg} has both runtime.py and runtime/")
    top = {f[:-3]: os.path.join(root, f) for f in os.listdir(root) if f.endswith(".py")}
    graph = {m: _top_level_imports(p, pkg, 0) for m, p in top.items()}
    runtime_uses = set(graph.get("runtime", ()))
    for d, _, files in os.walk(os.path.join(root, "runtime")):
        depth = os.path.relpath(d, root).count(os.sep) + 1
        for f in files:
            if f.endswith(".py"):
                runtime_uses |= _top_level_imports(os.path.join(d, f), pkg, depth)
    serving_codegen = _reach(graph, [r for r in CODEGEN_ROOTS if r in graph] + sorted(_imported_from_outside(pkg)))
    runtime_only = sorted(_reach(graph, runtime_uses) - serving_codegen - {"runtime"})
    assert not runtime_only, (f"{pkg}: {', '.join(m + '.py' for m in runtime_only)} serve only the runtime; "
                              f"move them into {pkg}/runtime/ (docs/backends.md)")
