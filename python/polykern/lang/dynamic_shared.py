"""Translation of ``tile = pk.shared_dynamic(T)`` (docs/language.md "Dynamic shared memory"; the IR
contract is in polykern/ir/dynamic_shared.py). ``tr`` is the frontend's FunctionTranslator."""
from __future__ import annotations

from ..ir.types import ArrayType, ScalarType

USAGE = "tile = pk.shared_dynamic(f32), and launch with shared_size=<elements>"


def declare(tr, target, call):
    if len(call.args) != 1 or call.keywords:
        raise tr.type_error(f"pk.shared_dynamic() takes the element type only: {USAGE}", call)
    try:
        elem = tr.static_value(call.args[0])
    except KeyError:
        elem = None
    if not isinstance(elem, ScalarType):
        raise tr.type_error("the argument of pk.shared_dynamic() must be a scalar type", call.args[0])
    if elem.is_bool:
        raise tr.type_error("pk.shared_dynamic() of bool is not supported; use u8 or i32", call.args[0])
    have = tr.facts.dynamic_shared  # the kernel's, or one of a device function it called earlier
    if have is not None:
        raise tr.type_error(f"a kernel has at most one pk.shared_dynamic array (the first is declared at "
                            f"{have[2]}); carve several tiles out of it by offset", call)
    name = target.id
    if name in tr.vars:
        raise tr.type_error(f"'{name}' is already defined; arrays must have a name of their own", target)
    t = ArrayType(elem, 0, "shared", dynamic=True)
    tr.vars[name] = t
    tr.fn.arrays[name] = t
    tr.facts.declare_dynamic_shared(name, elem, tr.loc(call))  # the kernel gets its size parameter (body_facts)
    return []
