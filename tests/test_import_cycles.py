"""No import cycles among polykern's modules and its backends' packages, counting every import
statement wherever it is (a function-local import that hides a cycle is still a cycle); only
``if TYPE_CHECKING:`` blocks, which never run, are left out. And the layers (docs/internals.md
"Package layout"): what each named subpackage may import (:data:`LAYERS`), who may import the CPU
code generation, and that the oracle reaches no llvmlite.

An edge A -> B means A's source has ``import B`` / ``from B import x`` (``from P import m`` with
``P.m`` a module is an edge to ``P.m``). Importing a submodule also runs its parent packages'
``__init__``; those implicit edges are not counted (every module would then depend on
``polykern/__init__``), so a package's ``__init__`` must itself import no module that imports it
back through an explicit chain.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parent.parent
SOURCE_ROOTS = [ROOT / "python"] + sorted(p for p in (ROOT / "backends").iterdir() if p.is_dir())

#: Cycles someone is removing now: (members, who). The test fails when a listed cycle is gone
#: (delete its entry) or a cycle not listed exists.
KNOWN_CYCLES = [
]


def _modules() -> Dict[str, Path]:
    mods = {}
    for root in SOURCE_ROOTS:
        if not root.is_dir():
            continue
        for f in sorted(root.rglob("*.py")):
            rel = f.relative_to(root)
            top = rel.parts[0]
            if (top != "polykern" and not top.startswith("polykern_")) or "tests" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = f
    return mods


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, in_functions: bool = True):
    """Every Import/ImportFrom node, skipping the bodies of ``if TYPE_CHECKING:`` (and, with
    ``in_functions`` false, of functions: what importing the module runs)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if not in_functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(name: str, path: Path, node, mods: Dict[str, Path]) -> List[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in mods else prefix for a in node.names]
    out = []
    for target in names:
        while target not in mods and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in mods and target != name:
            out.append(target)
    return out


def import_graph(in_functions: bool = True) -> Dict[str, Set[str]]:
    mods = _modules()
    graph: Dict[str, Set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = {t for node in _imports(tree, in_functions) for t in _targets(name, path, node, mods)}
    return graph


def outside_imports() -> Dict[str, Set[str]]:
    """Each module's imports of top-level packages outside polykern (``llvmlite``, ``numpy``, ...)."""
    out: Dict[str, Set[str]] = {}
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        tops = set()
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                tops |= {a.name.split(".")[0] for a in node.names}
            elif not node.level and node.module:
                tops.add(node.module.split(".")[0])
        out[name] = {t for t in tops if t != "polykern" and not t.startswith("polykern_")}
    return out


def cycles(graph: Dict[str, Set[str]]) -> List[Set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[Set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def _describe(comp: Set[str], graph: Dict[str, Set[str]]) -> str:
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & comp))}" for m in sorted(comp))


def test_scanner_sees_function_local_imports_and_skips_type_checking():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [{"a", "b", "c"}]
    tree = ast.parse("import x\nif TYPE_CHECKING:\n    import y\ndef f():\n    from . import z\n")
    assert sorted(type(n).__name__ + ":" + (n.names[0].name) for n in _imports(tree)) == ["Import:x", "ImportFrom:z"]


def test_no_import_cycles():
    graph = import_graph()
    assert "polykern.kbin.wire" in graph and "polykern.module" in graph, "the scan found no polykern modules"
    found = cycles(graph)
    known = [members for members, _ in KNOWN_CYCLES]
    new = [c for c in found if c not in known]
    assert not new, "import cycles (function-local imports included):\n" + "\n".join(
        _describe(c, graph) for c in new)
    gone = [f"{sorted(members)} ({who})" for members, who in KNOWN_CYCLES if members not in found]
    assert not gone, f"these known cycles are gone: delete them from KNOWN_CYCLES in {__file__}: {gone}"


def test_wire_and_module_do_not_import_each_other():
    graph = import_graph()
    assert "polykern.module" not in graph["polykern.kbin.wire"]
    assert graph["polykern.kbin.function_info"] <= {"polykern.ir.nodes", "polykern.ir.types"}


def _in(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


#: package -> what its modules may import besides themselves (module or package prefixes). The
#: artifact format imports no runtime and no code generator; the runtime kit no code generator and
#: nothing that builds (module, pipeline, artifact); the code generators no runtime and no format.
LAYERS = {
    "polykern.kbin": ("polykern.errors", "polykern.ir", "polykern.registry", "polykern.user_files"),
    "polykern.runtime": ("polykern.errors", "polykern.ir", "polykern.kbin", "polykern.registry", "polykern.backends",
                         "polykern.passes.bounds_check", "polykern.passes.bounds_proof", "polykern.lang.body_facts"),
    "polykern.codegen": ("polykern.errors", "polykern.ir", "polykern.passes", "polykern.numerics"),
}
#: Who may import polykern.codegen.cpu: the CPU backends (llvm, hexagon), and its one leaf without llvmlite,
#: the CPU subgroup size, also the oracle and its test-case generators.
CPU_CODEGEN_USERS = ("polykern_llvm", "polykern_hexagon", "polykern.codegen.cpu")
CPU_SUBGROUP_SIZE = "polykern.codegen.cpu.subgroup_size"
#: The oracle: what judges every backend needs no LLVM.
ORACLE = ("polykern.interpreter", "polykern.testing.interp")


def layer_violations(graph: Dict[str, Set[str]], layers=None) -> List[str]:
    bad = []
    for pkg, allowed in (layers or LAYERS).items():
        for m in sorted(graph):
            if _in(m, (pkg,)):
                bad += [f"{m} -> {t} ({pkg} may import only {', '.join(allowed)})"
                        for t in sorted(graph[m]) if not _in(t, (pkg,) + allowed)]
    return bad


def closure(graph: Dict[str, Set[str]], roots, at_import: Dict[str, Set[str]]) -> Set[str]:
    """What using ``roots`` can run: their imports (``graph``: function-local ones too), transitively,
    and the parent packages Python imports first, of which only what importing them runs
    (``at_import``: ``import polykern`` does not build anything)."""
    seen: Set[str] = set()
    stack = [(m, graph) for m in roots]
    while stack:
        m, edges = stack.pop()
        if (m, edges is graph) in seen or m not in edges:
            continue
        seen.add((m, edges is graph))
        parts = m.split(".")
        stack += [(".".join(parts[:i]), at_import) for i in range(1, len(parts))]
        stack += [(t, graph) for t in edges[m]]
    return {m for m, _ in seen}


def test_layer_rules_catch_a_wrong_edge():
    graph = {"polykern.kbin.wire": {"polykern.runtime.launch", "polykern.errors", "polykern.kbin.messages"},
             "polykern.kbin.messages": set(), "polykern.runtime.launch": {"polykern.kbin.wire"}}
    assert layer_violations(graph, {"polykern.kbin": ("polykern.errors",), "polykern.runtime": ("polykern.kbin",)}) == [
        "polykern.kbin.wire -> polykern.runtime.launch (polykern.kbin may import only polykern.errors)"]
    calls = {"a.b.c": {"d"}, "d": set(), "a": {"f"}, "a.b": {"e"}, "e": set(), "f": set()}
    assert closure(calls, ["a.b.c"], dict(calls, a=set())) == {"a.b.c", "a.b", "a", "d", "e"}


def test_each_layer_imports_only_what_it_may():
    graph = import_graph()
    for pkg in LAYERS:
        assert any(_in(m, (pkg,)) and m != pkg for m in graph), f"no module of {pkg} was found"
    bad = layer_violations(graph)
    assert not bad, "imports across layers (docs/internals.md \"Package layout\"):\n" + "\n".join(bad)


def test_only_the_cpu_backends_import_cpu_code_generation():
    graph = import_graph()
    assert any(m.startswith("polykern.codegen.cpu.") for m in graph), "no polykern.codegen.cpu module was found"
    bad = [f"{m} -> {t}" for m in sorted(graph) for t in sorted(graph[m])
           if _in(t, ("polykern.codegen.cpu",)) and t != CPU_SUBGROUP_SIZE and not _in(m, CPU_CODEGEN_USERS)]
    assert not bad, "only llvm and hexagon use the CPU code generation:\n" + "\n".join(bad)
    assert not graph[CPU_SUBGROUP_SIZE], "the CPU subgroup size is a leaf (the oracle imports it)"


def test_the_oracle_reaches_no_llvmlite():
    graph, outside = import_graph(), outside_imports()
    roots = [m for m in graph if _in(m, ORACLE)]
    assert "polykern.interpreter.program" in roots and "polykern.testing.interp" in roots
    reach = closure(graph, roots, import_graph(in_functions=False))
    bad = sorted(m for m in reach if "llvmlite" in outside[m])
    assert not bad, f"the oracle ({', '.join(ORACLE)}) reaches modules that import llvmlite: {bad}"
