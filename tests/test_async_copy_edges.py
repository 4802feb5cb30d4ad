"""Edge cases of pk.copy_async found red-teaming the feature (docs/language.md "Asynchronous copies")."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f16, f32
from polykern.testing.interp import OracleError, interpret


@pk.kernel
def frag_of_pending(x: Buffer[f16, "readonly"], y: Buffer[f32]):
    t = pk.shared(f16, 256)
    l = pk.local_id(0)
    pk.copy_async(t, l, x, l, 8)
    pk.copy_commit()
    a = pk.frag_a(f16, 16, 16, 16)
    b = pk.frag_b(f16, 16, 16, 16)
    c = pk.frag_acc(f32, 16, 16, 16)
    pk.frag_fill(c, 0.0)
    pk.frag_load(a, t, 0, 16)  # the copies are still pending
    pk.frag_load(b, x, 0, 16)
    c = pk.mma(a, b, c)
    pk.copy_wait(0)
    pk.frag_store(y, 0, 16, c)


def test_frag_load_of_a_pending_copy_names_the_copy():
    """The oracle refused it as a read of memory 'no work-item has written', hiding the cause."""
    with pytest.raises(OracleError, match=r"t\[0\] read by frag_load of the subgroup of work-item 0 while an "
                                          r"asynchronous copy into it is pending \(pk.copy_async by work-item 0"):
        interpret(frag_of_pending, [np.ones(256, np.float16), np.zeros(256, np.float32)], grid=1, block=32)


@pk.kernel
def copy16(x: Buffer[f16, "readonly"], y: Buffer[f16]):
    t = pk.shared(f16, 8)
    pk.copy_async(t, 0, x, 0, 8)
    pk.copy_commit()
    pk.copy_wait(0)
    y[0] = t[7]


def test_a_misaligned_copy_source_names_the_copy():
    """The launch error said the kernel's 'pk.vload/pk.vstore accesses' need the alignment (it has none)."""
    from polykern.errors import LaunchError

    x = np.arange(16, dtype=np.float16)
    with pytest.raises(LaunchError, match=r"argument 0 \('x'\) .* not aligned to 16 bytes; its wide accesses "
                                          r"\(pk.vload/pk.vstore, pk.copy_async\) need that alignment"):
        pk.build([copy16], ["llvm"])["copy16"](x[1:9], np.zeros(1, np.float16), grid=1, block=1)
