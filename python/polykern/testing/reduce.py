"""Delta reduction of a failing kernel's source, keeping the failure (the fuzzer's shrinker).

``reduce_source(source, kernel_name, still_fails)`` greedily tries smaller variants of the kernel
(drop a statement, replace an ``if``/loop by one of its bodies, replace an expression by one of its
operands) and keeps each variant for which ``still_fails(variant_source)`` is true, until no variant
helps or the budget runs out. ``still_fails`` must itself reject variants that no longer compile
or that the oracle refuses; the result is then a smaller program with the same disagreement.
"""
from __future__ import annotations

import ast
import copy
import time
from typing import Callable, Iterator, List, Optional


def _kernel_def(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise ValueError(f"no function '{name}' in the source to reduce")


def _stmt_lists(fdef: ast.FunctionDef) -> List[list]:
    out = [fdef.body]
    for node in ast.walk(fdef):
        if node is fdef:
            continue
        for attr in ("body", "orelse"):
            lst = getattr(node, attr, None)
            if isinstance(lst, list) and lst and isinstance(lst[0], ast.stmt):
                out.append(lst)
    return out


def _variants(source: str, name: str) -> Iterator[str]:
    """Smaller programs than ``source``, roughly largest cut first."""
    tree = ast.parse(source)
    fdef = _kernel_def(tree, name)
    n_lists = len(_stmt_lists(fdef))
    # 1. drop statements (whole blocks first, then single statements), 2. inline if/loop bodies
    for li in range(n_lists):
        for i in range(len(_stmt_lists(fdef)[li])):
            t = copy.deepcopy(tree)
            lst = _stmt_lists(_kernel_def(t, name))[li]
            if i >= len(lst):
                break
            node = lst[i]
            repl: List[List[ast.stmt]] = [[]]
            if isinstance(node, ast.If):
                repl = [[], node.body, node.orelse]
            elif isinstance(node, (ast.For, ast.While)):
                repl = [[], node.body]
            for r in repl:
                t2 = copy.deepcopy(t)
                lst2 = _stmt_lists(_kernel_def(t2, name))[li]
                new = copy.deepcopy(r)
                lst2[i:i + 1] = new
                if not lst2:
                    lst2.append(ast.Pass())
                yield ast.unparse(t2)
    # 3. replace an expression by one of its operands
    exprs = [n for n in ast.walk(fdef) if isinstance(n, (ast.BinOp, ast.BoolOp, ast.UnaryOp, ast.IfExp,
                                                           ast.Call, ast.Compare))]
    for k in range(len(exprs)):
        node = exprs[k]
        kids = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)
                and not (isinstance(node, ast.Call) and c is node.func)]
        for j in range(len(kids)):
            t = copy.deepcopy(tree)
            target = [n for n in ast.walk(_kernel_def(t, name)) if isinstance(
                n, (ast.BinOp, ast.BoolOp, ast.UnaryOp, ast.IfExp, ast.Call, ast.Compare))][k]
            kid = [c for c in ast.iter_child_nodes(target) if isinstance(c, ast.expr)
                   and not (isinstance(target, ast.Call) and c is target.func)][j]
            if not _replace(_kernel_def(t, name), target, kid):
                continue
            yield ast.unparse(t)


def _replace(root: ast.AST, old: ast.AST, new: ast.AST) -> bool:
    for parent in ast.walk(root):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return True
            if isinstance(value, list):
                for i, v in enumerate(value):
                    if v is old:
                        value[i] = new
                        return True
    return False


def reduce_source(source: str, name: str, still_fails: Callable[[str], bool], *,
                  max_tries: int = 400, time_budget: Optional[float] = 120.0) -> str:
    """The smallest variant of ``source`` found for which ``still_fails`` holds (``source`` itself if
    none). ``max_tries`` bounds the number of variants tried, ``time_budget`` the seconds spent."""
    start = time.monotonic()
    tries = 0
    best = source
    progress = True
    while progress:
        progress = False
        for cand in _variants(best, name):
            if tries >= max_tries or (time_budget is not None and time.monotonic() - start > time_budget):
                return best
            if len(cand) >= len(best):
                continue
            tries += 1
            if still_fails(cand):
                best = cand
                progress = True
                break
    return best
