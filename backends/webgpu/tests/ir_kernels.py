"""Kernels built directly as IR (no frontend needed), shared by the webgpu tests.

Each builder returns a fresh ``ir.Function``. ``KERNELS`` maps a name to its builder;
the golden files in ``golden/<name>.wgsl`` are the expected WGSL of each.
"""
from __future__ import annotations

from polykern.ir import nodes as ir
from polykern.ir.types import ArrayType, BufferType, bool_, f16, f32, i32, u32


def C(v, t=i32):
    return ir.Const(v, t)


def V(name, t=i32):
    return ir.Var(name, t)


def B(op, a, b):
    return ir.BinOp(op, a, b)


def gid(d=0):
    return ir.SpecialReg("global_id", d)


def saxpy():
    n, a = V("n"), V("a", f32)
    x, y = V("x", BufferType(f32, True)), V("y", BufferType(f32))
    i = V("i")
    body = [
        ir.Assign("i", gid()),
        ir.If(B("lt", i, n), [ir.Store(y, i, B("add", B("mul", a, ir.Load(x, i)), ir.Load(y, i)))]),
    ]
    return ir.Function("saxpy", [ir.Param("n", i32), ir.Param("a", f32), ir.Param("x", x.type),
                                 ir.Param("y", y.type)], body, locals={"i": i32})


def reduce_sum(block=64):
    """Per-workgroup tree reduction in shared memory with barriers."""
    n = V("n")
    x, out = V("x", BufferType(f32, True)), V("out", BufferType(f32))
    tile = V("tile", ArrayType(f32, block, "shared"))
    lid, i, s = V("lid"), V("i"), V("s")
    body = [
        ir.Assign("lid", ir.SpecialReg("local_id", 0)),
        ir.Assign("i", gid()),
        ir.Store(tile, lid, ir.Select(B("lt", i, n), ir.Load(x, i), C(0.0, f32))),
        ir.Barrier(),
        ir.Assign("s", B("floordiv", ir.SpecialReg("local_size", 0), C(2))),
        ir.While(B("gt", s, C(0)), [
            ir.If(B("lt", lid, s), [
                ir.Store(tile, lid, B("add", ir.Load(tile, lid), ir.Load(tile, B("add", lid, s))))]),
            ir.Barrier(),
            ir.Assign("s", B("shr", s, C(1))),
        ]),
        ir.If(B("eq", lid, C(0)), [ir.Store(out, ir.SpecialReg("group_id", 0), ir.Load(tile, C(0)))]),
    ]
    return ir.Function("reduce_sum", [ir.Param("n", i32), ir.Param("x", x.type), ir.Param("out", out.type)],
                       body, locals={"lid": i32, "i": i32, "s": i32}, arrays={"tile": tile.type})


def histogram():
    n, nbins = V("n"), V("nbins")
    data, hist = V("data", BufferType(i32, True)), V("hist", BufferType(u32))
    i, b = V("i"), V("b")
    body = [
        ir.Assign("i", gid()),
        ir.If(B("ge", i, n), [ir.Return()]),
        ir.Assign("b", ir.Load(data, i)),
        ir.Assign("b", B("mod", b, nbins)),
        ir.If(B("lt", b, C(0)), [ir.Assign("b", B("add", b, nbins))]),
        ir.ExprStmt(ir.Atomic("add", hist, b, C(1, u32))),
    ]
    return ir.Function("histogram", [ir.Param("n", i32), ir.Param("nbins", i32), ir.Param("data", data.type),
                                     ir.Param("hist", hist.type)], body, locals={"i": i32, "b": i32})


def atomics_mix():
    """Every atomic op on i32 and emulated f32 buffers, shared atomics, cas, private arrays."""
    ci, cf = V("ci", BufferType(i32)), V("cf", BufferType(f32))
    res = V("res", BufferType(i32))
    sh = V("counter", ArrayType(i32, 1, "shared"))
    pv = V("priv", ArrayType(f32, 4, "local"))
    i, old, fo = V("i"), V("old"), V("fo", f32)
    body = [
        ir.Assign("i", gid()),
        ir.If(B("eq", ir.SpecialReg("local_id", 0), C(0)), [ir.Store(sh, C(0), C(0))]),
        ir.Barrier(),
        ir.Assign("old", ir.Atomic("add", ci, C(0), C(1))),
        ir.ExprStmt(ir.Atomic("min", ci, C(1), i)),
        ir.ExprStmt(ir.Atomic("max", ci, C(2), i)),
        ir.ExprStmt(ir.Atomic("xchg", ci, C(3), i)),
        ir.ExprStmt(ir.Atomic("cas", ci, C(4), B("add", i, C(1)), compare=i)),
        ir.Assign("fo", ir.Atomic("add", cf, C(0), C(1.0, f32))),
        ir.ExprStmt(ir.Atomic("min", cf, C(1), ir.Cast(f32, i))),
        ir.ExprStmt(ir.Atomic("max", cf, C(2), ir.Cast(f32, i))),
        ir.ExprStmt(ir.Atomic("add", sh, C(0), C(1))),
        ir.Store(pv, C(0), ir.Cast(f32, old)),
        ir.Assign("fo", B("add", fo, ir.Atomic("add", pv, C(0), C(2.0, f32)))),
        ir.Barrier(),
        ir.If(B("eq", ir.SpecialReg("local_id", 0), C(0)), [
            ir.Store(res, ir.SpecialReg("group_id", 0), ir.Load(sh, C(0)))]),
        ir.Store(cf, C(3), B("add", ir.Load(cf, C(3)), ir.Load(pv, C(0)))),
    ]
    return ir.Function("atomics_mix", [ir.Param("ci", ci.type), ir.Param("cf", cf.type), ir.Param("res", res.type)],
                       body, locals={"i": i32, "old": i32, "fo": f32},
                       arrays={"counter": sh.type, "priv": pv.type})


def control_flow():
    """for/while with break, continue, early return, elif chains, short-circuit ops."""
    n, out = V("n"), V("out", BufferType(i32))
    flags = V("flags", BufferType(u32, True))
    i, k, acc, j = V("i"), V("k"), V("acc"), V("j", u32)
    ok = V("ok", bool_)
    body = [
        ir.Assign("i", gid()),
        ir.If(B("ge", i, n), [ir.Return()]),
        ir.Assign("acc", C(0)),
        ir.For("k", C(0), B("add", i, C(3)), 1, [
            ir.If(B("eq", B("mod", k, C(3)), C(1)), [ir.Continue()]),
            ir.If(B("gt", k, C(40)), [ir.Break()]),
            ir.Assign("acc", B("add", acc, k)),
        ]),
        ir.For("j", C(10, u32), C(0, u32), -2, [ir.Assign("acc", B("sub", acc, ir.Cast(i32, j)))]),
        ir.Assign("ok", B("land", B("lt", i, n), B("ne", ir.Load(flags, i), C(0, u32)))),
        ir.If(B("lor", ok, B("eq", i, C(0))), [ir.Assign("acc", B("mul", acc, C(2)))],
              [ir.If(B("eq", i, C(1)), [ir.Assign("acc", C(-2147483648))],
                     [ir.If(B("eq", i, C(2)), [ir.Assign("acc", ir.UnaryOp("neg", acc))],
                            [ir.Assign("acc", ir.UnaryOp("invert", acc))])])]),
        ir.While(C(True, bool_), [
            ir.Assign("acc", B("floordiv", acc, C(2))),
            ir.If(B("lt", ir.Call("abs", [acc]), C(1000)), [ir.Break()]),
        ]),
        ir.Store(out, i, acc),
    ]
    return ir.Function("control_flow", [ir.Param("n", i32), ir.Param("flags", flags.type),
                                        ir.Param("out", out.type)], body,
                       locals={"i": i32, "k": i32, "acc": i32, "j": u32, "ok": bool_})


def math_casts():
    """Math builtins, casts, shifts, bit ops, bool/f16-free scalar params."""
    n, scale, flag = V("n"), V("scale", f32), V("flag", bool_)
    x, y, bits = V("x", BufferType(f32, True)), V("y", BufferType(f32)), V("bits", BufferType(u32))
    i, v, u = V("i"), V("v", f32), V("u", u32)
    calls = [ir.Call(f, [v]) for f in ("sqrt", "rsqrt", "exp", "exp2", "sin", "cos", "tanh", "abs",
                                       "floor", "ceil")]
    acc = calls[0]
    for c in calls[1:]:
        acc = B("add", acc, c)
    body = [
        ir.Assign("i", gid()),
        ir.If(B("ge", i, n), [ir.Return()]),
        ir.Assign("v", ir.Call("abs", [ir.Load(x, i)])),
        ir.Assign("v", B("add", B("add", acc, ir.Call("log", [B("add", v, C(1.0, f32))])),
                         ir.Call("log2", [B("add", v, C(1.0, f32))]))),
        ir.Assign("v", ir.Call("fma", [v, scale, ir.Call("pow", [C(2.0, f32), C(0.5, f32)])])),
        ir.Assign("v", ir.Call("max", [ir.Call("min", [v, C(1e30, f32)]), C(-1e30, f32)])),
        ir.Assign("v", ir.Select(flag, B("mod", v, C(7.5, f32)), B("floordiv", v, C(3.0, f32)))),
        ir.Store(y, i, B("div", v, C(3.0, f32))),
        ir.Assign("u", ir.Cast(u32, i)),
        ir.Assign("u", B("or", B("shl", u, C(3, u32)), B("shr", u, ir.Cast(u32, B("and", i, C(7)))))),
        ir.Assign("u", B("xor", u, ir.Cast(u32, ir.Cast(i32, ir.Cast(f32, u))))),
        ir.Store(bits, i, B("add", u, ir.Cast(u32, B("shl", i, C(35))))),
        ir.Store(bits, i, B("sub", ir.Load(bits, i), ir.UnaryOp("neg", ir.Cast(u32, ir.Cast(bool_, i))))),
    ]
    return ir.Function("math_casts", [ir.Param("n", i32), ir.Param("scale", f32), ir.Param("flag", bool_),
                                      ir.Param("x", x.type), ir.Param("y", y.type), ir.Param("bits", bits.type)],
                       body, locals={"i": i32, "v": f32, "u": u32})


def reserved_names():
    """User names that collide with WGSL keywords/builtins/helper prefixes."""
    loop, mn, pk = V("loop"), V("min"), V("pk_args")
    arr = V("array", BufferType(i32))
    body = [
        ir.Assign("loop", gid()),
        ir.Assign("min", ir.Call("min", [loop, C(5)])),
        ir.Assign("pk_args", B("add", mn, V("select"))),
        ir.Assign("fn", B("add", V("select"), pk)),
        ir.Store(arr, loop, V("fn")),
    ]
    return ir.Function("loop", [ir.Param("select", i32), ir.Param("array", arr.type)], body,
                       locals={"loop": i32, "min": i32, "pk_args": i32, "fn": i32})


def half_precision():
    """f16 buffers and scalars (needs -shader_f16=true)."""
    n, s = V("n"), V("s", f16)
    x = V("x", BufferType(f16))
    i = V("i")
    body = [
        ir.Assign("i", gid()),
        ir.If(B("lt", i, n), [ir.Store(x, i, B("mul", ir.Load(x, i), B("add", s, C(0.5, f16))))]),
    ]
    return ir.Function("half_precision", [ir.Param("n", i32), ir.Param("s", f16), ir.Param("x", x.type)],
                       body, locals={"i": i32})


def grid_2d():
    """2-D indexing with every special register."""
    w, h = V("w"), V("h")
    out = V("out", BufferType(i32))
    x, y = V("x"), V("y")
    body = [
        ir.Assign("x", gid(0)),
        ir.Assign("y", B("add", B("mul", ir.SpecialReg("group_id", 1), ir.SpecialReg("local_size", 1)),
                         ir.SpecialReg("local_id", 1))),
        ir.If(B("land", B("lt", x, w), B("lt", y, h)), [
            ir.Store(out, B("add", B("mul", y, w), x),
                     B("add", B("mul", ir.SpecialReg("num_groups", 0), C(1000)),
                       ir.SpecialReg("num_groups", 1)))]),
    ]
    return ir.Function("grid_2d", [ir.Param("w", i32), ir.Param("h", i32), ir.Param("out", out.type)], body,
                       locals={"x": i32, "y": i32})


KERNELS = {
    "saxpy": saxpy,
    "reduce_sum": reduce_sum,
    "histogram": histogram,
    "atomics_mix": atomics_mix,
    "control_flow": control_flow,
    "math_casts": math_casts,
    "reserved_names": reserved_names,
    "half_precision": half_precision,
    "grid_2d": grid_2d,
}
F16_KERNELS = {"half_precision"}
