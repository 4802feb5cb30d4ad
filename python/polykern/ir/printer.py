"""A readable text form of the IR (``polykern inspect --source ir``, debugging, golden tests)."""
from __future__ import annotations

from . import nodes as ir

_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "and": "&", "or": "|",
        "xor": "^", "shl": "<<", "shr": ">>", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
        "ne": "!=", "land": "and", "lor": "or"}


def expr_str(e: ir.Expr) -> str:
    if isinstance(e, ir.Const):
        return f"{e.value!r}:{e.type}"
    if isinstance(e, ir.Var):
        return e.name
    if isinstance(e, ir.BinOp):
        return f"({expr_str(e.a)} {_SYM[e.op]} {expr_str(e.b)})"
    if isinstance(e, ir.UnaryOp):
        return f"{ {'neg': '-', 'not': 'not ', 'invert': '~'}[e.op]}{expr_str(e.a)}"
    if isinstance(e, ir.Cast):
        return f"{e.to}({expr_str(e.a)})"
    if isinstance(e, ir.Bitcast):
        return f"bitcast<{e.to}>({expr_str(e.a)})"
    if isinstance(e, ir.Select):
        return f"select({expr_str(e.cond)}, {expr_str(e.a)}, {expr_str(e.b)})"
    if isinstance(e, ir.Load):
        return f"{e.base.name}[{expr_str(e.index)}]"
    if isinstance(e, ir.Call):
        return f"{e.func}({', '.join(expr_str(a) for a in e.args)})"
    if isinstance(e, ir.SpecialReg):
        return f"{e.kind}({e.dim})"
    if isinstance(e, ir.WgReg):
        return f"{e.name}.reg[{expr_str(e.index)}]"
    if isinstance(e, ir.Subgroup):
        return f"subgroup_{e.op}({', '.join(expr_str(a) for a in e.args)})"
    if isinstance(e, ir.Atomic):
        extra = f"{expr_str(e.compare)}, " if e.compare is not None else ""
        return f"atomic_{e.op}({e.base.name}, {expr_str(e.index)}, {extra}{expr_str(e.value)})"
    return f"<{type(e).__name__}>"


def _stmts(stmts, ind, out):
    pad = "  " * ind
    for s in stmts:
        if isinstance(s, ir.Assign):
            out.append(f"{pad}{s.name} = {expr_str(s.value)}")
        elif isinstance(s, ir.Store):
            out.append(f"{pad}{s.base.name}[{expr_str(s.index)}] = {expr_str(s.value)}")
        elif isinstance(s, ir.ExprStmt):
            out.append(f"{pad}{expr_str(s.expr)}")
        elif isinstance(s, ir.If):
            out.append(f"{pad}if {expr_str(s.cond)}:")
            _stmts(s.then, ind + 1, out)
            if s.orelse:
                out.append(f"{pad}else:")
                _stmts(s.orelse, ind + 1, out)
        elif isinstance(s, ir.For):
            out.append(f"{pad}for {s.var} in range({expr_str(s.start)}, {expr_str(s.stop)}, {s.step}):")
            _stmts(s.body, ind + 1, out)
        elif isinstance(s, ir.While):
            out.append(f"{pad}while {expr_str(s.cond)}:")
            _stmts(s.body, ind + 1, out)
        elif isinstance(s, ir.MatrixOp):
            ops = [s.base.name] if s.base is not None else []
            ops += list(s.srcs) + [expr_str(a) for a in s.args]
            out.append(f"{pad}{s.frag} <- frag_{s.op}({', '.join(ops)}){' col' if s.layout == 'col' else ''}")
        elif isinstance(s, ir.HopperOp):
            out.append(f"{pad}{s.op}({', '.join(list(s.names) + [expr_str(a) for a in s.args])})")
        elif isinstance(s, ir.CopyAsync):
            out.append(f"{pad}copy_async({s.dst.name}, {expr_str(s.dst_k)}, {s.src.name}, {expr_str(s.src_k)}, "
                       f"{s.count})")
        elif isinstance(s, ir.CopyWait):
            out.append(f"{pad}copy_wait({s.pending})")
        elif isinstance(s, ir.CopyCommit):
            out.append(f"{pad}copy_commit()")
        elif isinstance(s, ir.Print):
            out.append(f"{pad}debug_print({', '.join([repr(s.fmt)] + [expr_str(a) for a in s.args])})")
        else:
            out.append(f"{pad}{type(s).__name__.lower()}")


def function_str(fn: ir.Function) -> str:
    params = ", ".join(f"{p.name}: {p.type}" for p in fn.params)
    out = [f"kernel {fn.name}({params}):"]
    for name, t in sorted(fn.locals.items()):
        out.append(f"  local {name}: {t}")
    for name, t in sorted(fn.arrays.items()):
        out.append(f"  {t.scope} {name}: {t.elem}[{t.size}]")
    for name, ft in sorted(fn.fragments.items()):
        out.append(f"  fragment {name}: {ft}")
    _stmts(fn.body, 1, out)
    return "\n".join(out) + "\n"
