"""The benchmark kernels in Apache TVM's tensor expression language (TE), compiled by
``tvm.compile(..., target="llvm")`` with TVM's default schedule (no tuning) and shapes left
symbolic, as polykern's kernels take their sizes at run time. Used for compile time, artifact
size (``export_library``: a shared object linked by the system C compiler) and load time
(``tvm.runtime.load_module``)."""
from __future__ import annotations


def _defs():
    from tvm import te

    def saxpy():
        n = te.var("n")
        a = te.var("a", "float32")
        x = te.placeholder((n,), "float32", name="x")
        y = te.placeholder((n,), "float32", name="y")
        out = te.compute((n,), lambda i: a * x[i] + y[i], name="out")
        return te.create_prim_func([a, x, y, out])

    def reduction():
        n = te.var("n")
        x = te.placeholder((n,), "float32", name="x")
        k = te.reduce_axis((0, n), name="k")
        s = te.compute((1,), lambda _: te.sum(x[k], axis=k), name="s")
        return te.create_prim_func([x, s])

    def matmul():
        m, n, kk = te.var("m"), te.var("n"), te.var("k")
        a = te.placeholder((m, kk), "float32", name="a")
        b = te.placeholder((kk, n), "float32", name="b")
        k = te.reduce_axis((0, kk), name="kr")
        c = te.compute((m, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
        return te.create_prim_func([a, b, c])

    def stencil():
        h, w = te.var("h"), te.var("w")
        s = te.placeholder((h, w), "float32", name="src")

        def f(y, x):
            edge = te.any(x == 0, y == 0, x == w - 1, y == h - 1)
            inner = te.const(0.2, "float32") * (s[y, x] + s[y, te.max(x - 1, 0)] + s[y, te.min(x + 1, w - 1)]
                                                + s[te.max(y - 1, 0), x] + s[te.min(y + 1, h - 1), x])
            return te.if_then_else(edge, s[y, x], inner)

        return te.create_prim_func([s, te.compute((h, w), f, name="dst")])

    return {"saxpy": saxpy, "reduction": reduction, "matmul": matmul, "stencil": stencil}


def compile_kernel(name: str):
    """A compiled TVM runtime module for kernel ``name``."""
    import tvm

    return tvm.compile(_defs()[name](), target="llvm")


def version():
    import tvm

    return tvm.__version__
