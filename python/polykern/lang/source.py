"""Getting a kernel's Python source and its AST, and mapping AST nodes to SourceLocs."""
from __future__ import annotations

import ast
import inspect
import linecache
import sys
import textwrap
import threading
from dataclasses import dataclass
from typing import List

from ..errors import KernelSyntaxError, SourceLoc


@dataclass
class KernelSource:
    filename: str
    first_line: int  # line number of the first source line in the file (1-based)
    lines: List[str]  # the file's lines as the user wrote them (not dedented)
    tree: ast.FunctionDef
    indent: int  # columns removed by dedent
    text: str  # the kernel's source, as written

    def loc(self, node) -> SourceLoc:
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        file_line = self.first_line + lineno - 1
        idx = lineno - 1
        text = self.lines[idx] if 0 <= idx < len(self.lines) else ""
        return SourceLoc(self.filename, file_line, col + 1 + self.indent, text)


_PARSE_LOCK = threading.Lock()
_DEEP_PARSE_LIMIT = 50_000


def _parse(text: str, filename: str) -> ast.Module:
    """Parse a kernel's source. CPython compiled this function already, possibly under a higher
    recursion limit than now (a 5,000-term ``a + b + ...`` needs one): a recursion error gets one more
    try under a raised limit before it is reported as a located-by-file error."""
    try:
        return ast.parse(text)
    except SyntaxError as exc:  # pragma: no cover - CPython already compiled the function
        raise KernelSyntaxError(f"cannot parse kernel source: {exc}") from None
    except RecursionError:
        pass
    with _PARSE_LOCK:
        old = sys.getrecursionlimit()
        try:
            sys.setrecursionlimit(max(old, _DEEP_PARSE_LIMIT))
            return ast.parse(text)
        except (RecursionError, MemoryError):
            raise KernelSyntaxError(f"the kernel in {filename} is nested too deeply for Python's parser; "
                                    "split its longest expression into several statements") from None
        finally:
            sys.setrecursionlimit(old)


def get_kernel_source(fn) -> KernelSource:
    try:
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise KernelSyntaxError(
            f"cannot read the source of kernel '{getattr(fn, '__name__', fn)}' ({exc}); kernels must be "
            "defined in a file (or registered with linecache) so polykern can parse them"
        ) from None
    linecache.checkcache(filename)
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    first = next((ln for ln in lines if ln.strip()), "")
    indent = len(first) - len(first.lstrip())
    module = _parse(dedented, str(filename))
    fdefs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not fdefs:
        raise KernelSyntaxError(f"@pk.kernel must decorate a function (got {fn!r})")
    fdef = fdefs[0]
    # inspect.getsourcelines starts at the first decorator; SourceLoc lines are file lines.
    ks = KernelSource(str(filename), first_line, lines, fdef, indent, text)
    if isinstance(fdef, ast.AsyncFunctionDef):
        raise KernelSyntaxError("kernels cannot be async functions", ks.loc(fdef))
    return ks
