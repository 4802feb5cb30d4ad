"""Device functions: ``@pk.func`` on a typed Python function, callable from kernels and other functions.

A call is inlined while the caller's IR is built: the function's body is translated anew at each call
site (by a translator of the function's own source, so errors point into the function's file and line,
with the call site named), with its parameters bound to the call's arguments:

- a scalar parameter is a local of the function, assigned the (type-checked) argument: a copy;
- a ``Buffer[T]`` parameter aliases the caller's buffer (readonly when either side says readonly);
- a ``Shared[T]`` / ``Local[T]`` parameter aliases the caller's ``pk.shared`` / ``pk.local`` array;
- a ``pk.WgAcc`` / ``pk.WgVec`` / ``pk.MBarriers`` / ``pk.TensorMap`` parameter aliases the caller's
  warpgroup accumulator, row vector, barrier set or tensor map (the body sees its type: its shape too);
- a ``pk.constexpr`` / ``pk.dtype`` parameter takes a compile-time argument (a constant, or a type
  such as ``f32`` or the caller's own ``T``) and specializes the body.

The function's names are renamed to fresh names of the caller (``sq__x_0``); its locals and local
arrays start at zero on every call, as a kernel's do. ``return`` anywhere (inside loops and ifs too)
becomes an assignment to a result local plus a ``returned`` flag that guards the rest of the body and
breaks out of loops. Recursion, direct or mutual, is refused at the call that closes the cycle, and
calls nest at most ``MAX_CALL_DEPTH`` deep. What the body records for the kernel beyond its statements
(a pk.shared_dynamic array's size parameter, buffers' alignment, swizzled arrays ...) is merged into the
caller's ``BodyFacts`` (lang/body_facts.py). Uniformity (barriers) and bounds checking then see the calls'
bodies like any other code.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
from typing import List, Optional

from ..errors import KernelSyntaxError, KernelTypeError, PolykernError
from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType, ScalarType, bool_, i32
from ..ir.vector import lane_of
from . import hopper
from .annotations import ArrayParam, HopperParam, hopper_object
from .decorate import decorate
from .source import get_kernel_source
from .specialize import check_value, type_params
from .typing_rules import coerce, is_weak

__all__ = ["Func", "func", "FunctionCalls", "MAX_CALL_DEPTH", "names_its_calls"]

#: How deep device function calls may nest (kernel -> f1 -> ... -> f32): each level of inlining
#: translates the called body inside its caller's translation, on Python's stack, and this leaves
#: room for the bodies' own nesting under Python's default recursion limit.
MAX_CALL_DEPTH = 32


class Func:
    """A device function: its Python function and, parsed on first use, its source."""

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc
        self.name = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__
        self.__wrapped__ = pyfunc

    @functools.cached_property
    def src(self):
        """The parsed source (read once; parsing twice in a race gives the same result)."""
        return get_kernel_source(self.pyfunc)

    def __call__(self, *args, **kwargs):
        raise PolykernError(f"device function '{self.name}' can only be called inside a @pk.kernel or another "
                            "@pk.func function; it is compiled into them, not run by Python")

    def __repr__(self) -> str:
        return f"<polykern device function {self.name}>"


def func(fn=None):
    """Decorate a typed Python function as a device function (``@pk.func`` or ``@pk.func()``)."""
    return decorate(fn, Func, func)


class InlineCall:
    """What the translator of one inlined call knows about it."""

    __slots__ = ("func", "stack", "call_loc", "kernel", "warpgroups", "in_wg_loop", "ret_type", "ret_name",
                 "done_name")

    def __init__(self, fn: Func, stack, call_loc, kernel: str, warpgroups: int, in_wg_loop: bool):
        self.func, self.stack, self.call_loc, self.kernel = fn, stack, call_loc, kernel
        self.warpgroups = warpgroups  # the block's warpgroups the kernel has declared before the call (0: none)
        self.in_wg_loop = in_wg_loop  # the call is in the body of a pk.wg_elements / pk.wg_rows loop
        self.ret_type = self.ret_name = self.done_name = None


class FunctionCalls:
    """Mixin of the frontend's translator: calls of device functions, and ``return`` inside them.
    The host class provides the translator (``expr``, ``block``, ``_fresh``, ``vars``, ``fn`` ...)
    and accepts ``type(self)(pyfunc, check_barriers, bindings=, src=, inline=)``."""

    inline: Optional[InlineCall] = None

    # ------------------------------------------------------------------ the call site
    def call_function(self, fn: Func, node, want_value: bool) -> Optional[ir.Expr]:
        stack = self.inline.stack if self.inline is not None else ()
        if fn in stack:
            cycle = " -> ".join(f.name for f in stack[stack.index(fn):] + (fn,))
            raise self.type_error(f"recursive call of device function '{fn.name}' ({cycle}): device functions "
                                  "are inlined into their callers, so recursion is not supported", node)
        if len(stack) >= MAX_CALL_DEPTH:
            kernel = self.inline.kernel if self.inline is not None else self.name
            chain = " -> ".join([kernel] + [f.name for f in stack + (fn,)])
            raise names_its_calls(self.type_error(
                f"this call of device function '{fn.name}' is nested {len(stack) + 1} calls deep ({chain}); device "
                f"functions are inlined into their callers, and calls nest at most {MAX_CALL_DEPTH} deep", node))
        fdef = fn.src.tree
        a = fdef.args
        if len(node.args) != len(a.args):
            names = ", ".join(x.arg for x in a.args)
            raise self.type_error(f"{fn.name}() takes {len(a.args)} argument{'s' if len(a.args) != 1 else ''} "
                                  f"({names}), got {len(node.args)}", node)
        kinds = dict(type_params(fn.pyfunc, None))
        bindings = {p.arg: self._static_argument(fn, p.arg, kinds[p.arg], arg)
                    for p, arg in zip(a.args, node.args) if p.arg in kinds}
        call_loc = self.loc(node)
        if self.inline is not None:
            kernel, warpgroups = self.inline.kernel, self.inline.warpgroups
        else:
            kernel, warpgroups = self.name, self.fn.hopper.warpgroups if self.fn.hopper is not None else 0
        in_wg_loop = hopper.in_wg_loop(self)
        sub = type(self)(fn.pyfunc, self.check_barriers, bindings=bindings, src=fn.src,
                         inline=InlineCall(fn, stack + (fn,), call_loc, kernel, warpgroups, in_wg_loop))
        binds = []  # (parameter, type, argument)
        for p, arg in zip(a.args, node.args):
            if p.arg in kinds:
                continue
            t = _noted(lambda p=p: sub.parameter_type(p), fn, call_loc)
            binds.append((p.arg,) + self._bind_argument(fn, p.arg, t, arg))
        body = _noted(lambda: sub.translate_inline(binds), fn, call_loc)
        return self._splice(sub, binds, body, call_loc, want_value, node)

    def _static_argument(self, fn, name, kind, arg):
        what = f"argument '{name}' of {fn.name}()"
        if kind == "dtype":
            try:
                value = self.static_value(arg)
            except KeyError:
                value = None
            if not isinstance(value, ScalarType):
                raise self.type_error(f"{what} is a pk.dtype parameter: pass a scalar type (f32, i32, ... or a "
                                      f"pk.dtype parameter of the caller), got '{ast.unparse(arg)}'", arg)
            return value
        e = self.expr(arg)
        if not (isinstance(e, ir.Const) and (is_weak(e) or e.type == bool_)):
            raise self.type_error(f"{what} is a pk.constexpr parameter: pass a compile-time constant (a literal, "
                                  f"a Python number or a pk.constexpr parameter of the caller), got "
                                  f"'{ast.unparse(arg)}'", arg)
        return check_value(f"device function '{fn.name}'", name, kind, e.value, self.loc(arg))

    def _bind_argument(self, fn, name, t, arg):
        """(the parameter's type inside the function, the argument: an Expr or the caller's Var)."""
        what = f"argument '{name}' of {fn.name}()"
        obj = self.vars.get(arg.id) if isinstance(arg, ast.Name) else None
        if isinstance(t, HopperParam):
            if not t.accepts(obj):
                got = f"{hopper_object(obj) or obj} '{arg.id}'" if obj is not None else f"'{ast.unparse(arg)}'"
                raise self.type_error(f"{what} is a {t} parameter: pass {t.what} of the caller, got {got}", arg)
            v = ir.Var(arg.id, obj)
            v.loc = self.loc(arg)
            return obj, v
        if hopper_object(obj) is not None:
            kind = "Buffer" if isinstance(t, BufferType) else "scalar" if isinstance(t, ScalarType) else "array"
            raise self.type_error(f"{what} is a {kind} parameter ({t}), got {hopper_object(obj)} '{arg.id}' "
                                  "(a Hopper object is passed to a pk.WgAcc, pk.WgVec, pk.MBarriers or pk.TensorMap "
                                  "parameter)", arg)
        if isinstance(t, ScalarType):
            return t, coerce(self.scalar_expr(arg), t, what)
        if isinstance(t, BufferType):
            v = self.array_ref(arg)
            if not isinstance(v.type, BufferType) or v.type.elem != t.elem:
                raise self.type_error(f"{what} must be a {t}, got {v.type} '{v.name}'", arg)
            return BufferType(t.elem, t.readonly or v.type.readonly), v
        v = self.array_ref(arg)
        if not t.accepts(v.type):
            raise self.type_error(f"{what} must be a {t} array, got {v.type} '{v.name}'", arg)
        return v.type, v

    def _splice(self, sub, binds, body, call_loc, want_value, node):
        """Rename the function's names into the caller and queue its statements before the call's value."""
        ctx = sub.inline
        rename = {}
        for name, t, arg in binds:
            if isinstance(arg, ir.Var) and not isinstance(t, ScalarType):
                rename[name] = (arg.name, arg.type)
        for table, mine in ((sub.fn.locals, self.fn.locals), (sub.fn.arrays, self.fn.arrays),
                            (sub.fn.fragments, self.fn.fragments)):
            for name, t in table.items():
                new = self._fresh(f"{ctx.func.name}__{name}_")
                mine[new] = t
                rename[name] = (new, t)
        _rename(body, rename)
        if sub.fn.params or sub.fn.attrs or sub.fn.hopper is not None:  # kernel facts: in sub.facts only
            raise RuntimeError(f"internal error: inlining '{ctx.func.name}' recorded "
                               f"{sub.fn.params or sub.fn.attrs or sub.fn.hopper} on the function instead of its "
                               "BodyFacts (lang/body_facts.py)")
        hopper.check_call(self, body, ctx.func.name, node)
        self.facts.merge(sub.facts, lambda n: rename[n][0], body, f"device function '{ctx.func.name}'",
                         lambda msg: self.type_error(msg, node))
        stmts = []
        for name, t, arg in binds:
            if isinstance(t, ScalarType):
                stmts.append(_at(ir.Assign(rename[name][0], arg), call_loc))
        params = {name for name, _, _ in binds}
        for name, t in sub.fn.locals.items():  # a call in a loop must not see the previous call's values
            if name not in params:
                stmts.append(_at(ir.Assign(rename[name][0], _zero(t)), call_loc))
        for name, t in sub.fn.arrays.items():
            if t.scope == "local":
                stmts.extend(self._zero_array(rename[name][0], t, call_loc))
        for s in ir.walk_stmts(body):  # uniformity's messages name the call
            if isinstance(s, (ir.Barrier, ir.MatrixOp)) or ir.subgroup_collective(s) is not None:
                s.called_at = getattr(s, "called_at", ()) + (call_loc,)
        self.pending.extend(stmts + body)
        if not want_value:
            return None
        if ctx.ret_type is None:
            raise self.type_error(f"device function '{ctx.func.name}' returns nothing (it has no '-> type' "
                                  "annotation); call it as a statement", node)
        v = ir.Var(rename[ctx.ret_name][0], ctx.ret_type)
        v.loc = call_loc
        return v

    def _zero_array(self, name, t: ArrayType, loc):
        k = self._fresh("_zi")
        self.fn.locals[k] = i32
        store = _at(ir.Store(_var(name, t, loc), _var(k, i32, loc), _zero(t.elem)), loc)
        return [_at(ir.For(k, ir.Const(0, i32), ir.Const(t.size, i32), 1, [store]), loc)]

    # ------------------------------------------------------------------ inside the function
    def parameter_type(self, p: ast.arg):
        if p.annotation is None:
            raise self.type_error(f"parameter '{p.arg}' needs a type annotation, e.g. {p.arg}: f32, "
                                  f"{p.arg}: Buffer[f32] or {p.arg}: Shared[f32]", p)
        t = self._eval_annotation(p.annotation)
        if not isinstance(t, (ScalarType, BufferType, ArrayParam, HopperParam)):
            raise self.type_error(f"parameter '{p.arg}' has annotation {t!r}; use a scalar type (f32, ...), "
                                  "Buffer[T], Shared[T], Local[T], pk.WgAcc, pk.WgVec, pk.MBarriers, pk.TensorMap, "
                                  "pk.constexpr or pk.dtype", p.annotation)
        return t

    def translate_inline(self, binds) -> List[ir.Stmt]:
        """The function's body with its parameters bound (``binds`` from the call site)."""
        fdef, ctx = self.src.tree, self.inline
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.syntax_error("device function parameters must be plain positional parameters with "
                                    "types (no defaults, *args, **kwargs or keyword-only parameters)", fdef)
        self.fn = ir.Function(fdef.name, [], [], loc=self.loc(fdef), source=self.src.text)
        for name, t, _ in binds:
            self.vars[name] = t
            if isinstance(t, ScalarType):
                self.fn.locals[name] = t  # a copy of the argument: the function may assign it
            else:
                self.params.add(name)
        if fdef.returns is not None:
            t = self._eval_annotation(fdef.returns)
            if t is not None and not isinstance(t, ScalarType):
                hint = "; write bool_, i32 or f32 for Python's bool, int or float" if t in (bool, int, float) else ""
                raise self.type_error(f"a device function returns one scalar value (-> f32, ...) or nothing, "
                                      f"got {t!r}{hint}", fdef.returns)
            ctx.ret_type = t
        body = fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # docstring
        if ctx.ret_type is not None:
            if not _always_returns(body):
                raise self.type_error(f"device function '{fdef.name}' returns {ctx.ret_type} but can reach its "
                                      "end without 'return'; end it with a return statement", fdef)
            ctx.ret_name = self._fresh("result")
            self._declare_scalar(ctx.ret_name, ctx.ret_type, fdef)
        ctx.done_name = self._fresh("returned")
        self._declare_scalar(ctx.done_name, bool_, fdef)
        out, _ = _lower_returns(self.block(body), ctx.done_name, False)
        if not any(isinstance(e, ir.Var) and e.name == ctx.done_name for e in ir.walk_all_exprs(out)):
            out = _drop_assigns(out, ctx.done_name)  # no return before the end: no flag needed
            del self.fn.locals[ctx.done_name]
        return out

    def inline_return(self, node) -> List[ir.Stmt]:
        ctx = self.inline
        out = []
        if node.value is None:
            if ctx.ret_type is not None:
                raise self.type_error(f"device function '{ctx.func.name}' must return a {ctx.ret_type} value",
                                      node)
        else:
            if ctx.ret_type is None:
                raise self.type_error(f"device function '{ctx.func.name}' has no return type annotation, so it "
                                      "cannot return a value; annotate it, e.g. -> f32", node)
            value = self.scalar_expr(node.value)
            out.append(ir.Assign(ctx.ret_name, coerce(value, ctx.ret_type,
                                                      f"return value of '{ctx.func.name}'")))
        out.append(ir.Assign(ctx.done_name, ir.Const(True, bool_)))
        out.append(ir.Return())  # a marker, lowered by _lower_returns
        return out


# ---------------------------------------------------------------------- helpers


def names_its_calls(exc):
    """Mark a located error whose message already names the chain of calls it is in: the calls around
    it add no note of their own (:func:`_noted`)."""
    exc.names_its_calls = True
    return exc


def _noted(thunk, fn: Func, call_loc):
    """Run ``thunk``; a located error from inside the function names the call site too."""
    try:
        return thunk()
    except (KernelSyntaxError, KernelTypeError) as exc:
        if getattr(exc, "names_its_calls", False):
            raise
        note = f" (in device function '{fn.name}', called at {call_loc})"
        raise type(exc)(exc.message + note, exc.loc) from None


def _always_returns(stmts) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def _lower_returns(stmts, done: str, in_loop: bool):
    """Replace the Return markers: the rest of a block after a statement that may return runs under
    ``if not done``; a return in a loop breaks out of it (and out of each enclosing loop of the
    function). Returns (statements, whether they may return)."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ir.Return):
            if in_loop:
                out.append(_at(ir.Break(), s.loc))
            return out, True  # what follows is unreachable
        may = False
        if isinstance(s, ir.If):
            s.then, a = _lower_returns(s.then, done, in_loop)
            s.orelse, b = _lower_returns(s.orelse, done, in_loop)
            may = a or b
        elif isinstance(s, (ir.For, ir.While)):
            s.body, may = _lower_returns(s.body, done, True)
        out.append(s)
        if may:
            flag = ir.Var(done, bool_)
            if in_loop and isinstance(s, (ir.For, ir.While)):
                out.append(_at(ir.If(flag, [_at(ir.Break(), s.loc)], []), s.loc))
            rest, _ = _lower_returns(stmts[i + 1:], done, in_loop)
            if rest:
                out.append(_at(ir.If(ir.UnaryOp("not", ir.Var(done, bool_)), rest, []), s.loc))
            return out, True
    return out, False


def _drop_assigns(stmts, name):
    out = []
    for s in stmts:
        if isinstance(s, ir.Assign) and s.name == name:
            continue
        if isinstance(s, ir.If):
            s.then, s.orelse = _drop_assigns(s.then, name), _drop_assigns(s.orelse, name)
        elif isinstance(s, (ir.For, ir.While)):
            s.body = _drop_assigns(s.body, name)
        out.append(s)
    return out


def _rename(body, rename):
    """Rename variables (and retype aliased buffers/arrays) in place; a node is renamed once."""
    seen = set()

    def var(v):
        if id(v) in seen or v.name not in rename:
            return
        seen.add(id(v))
        v.name, t = rename[v.name]
        v.vtype = v.type = t

    for s in ir.walk_stmts(body):
        lane = lane_of(s)
        if lane is not None and isinstance(lane.index, str) and lane.index in rename:  # pk.vload/vstore's k
            s.vec = dataclasses.replace(lane, index=rename[lane.index][0])
        if isinstance(s, ir.Assign) and s.name in rename:
            s.name = rename[s.name][0]
        elif isinstance(s, ir.For) and s.var in rename:
            s.var = rename[s.var][0]
        elif isinstance(s, ir.Store):
            var(s.base)
        elif isinstance(s, ir.CopyAsync):  # its arrays are fields, not expressions
            var(s.dst)
            var(s.src)
        elif isinstance(s, ir.HopperOp):  # its arrays, buffers and Hopper objects are names
            s.names = [rename.get(n, (n,))[0] for n in s.names]
        elif isinstance(s, ir.MatrixOp):  # its fragments are names, its memory a field
            s.frag = rename.get(s.frag, (s.frag,))[0]
            s.srcs = [rename.get(f, (f,))[0] for f in s.srcs]
            if s.base is not None:
                var(s.base)
        for e in ir.stmt_exprs(s):
            for x in ir.walk_expr(e):
                if isinstance(x, ir.Var):
                    var(x)
                elif isinstance(x, (ir.Load, ir.Atomic)):
                    var(x.base)
                elif isinstance(x, ir.WgReg) and id(x) not in seen:  # an accumulator's / row vector's register
                    seen.add(id(x))
                    x.name = rename.get(x.name, (x.name,))[0]


def _zero(t: ScalarType) -> ir.Const:
    return ir.Const(False if t == bool_ else (0.0 if t.is_float else 0), t)


def _var(name, t, loc):
    v = ir.Var(name, t)
    v.loc = loc
    return v


def _at(node, loc):
    node.loc = loc
    return node
