"""F12: PoCL ran a work-item's loop after its early return (ImplicitLoopBarriers in a kernel with a barrier);
reduced from fuzz seed 8001124 of the generator of 19:08 (o3[21], o3[53] were 24, not the prefill)."""
import polykern as pk
from polykern import Buffer, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
NAN = float('nan')
INF = float('inf')

@pk.kernel
def fz8001124(s1: u16, a2: Buffer[i8, 'readonly'], o3: Buffer[i8], a4: Buffer[i32, 'readonly'], o5: Buffer[i32], o6: Buffer[u16], m7: Buffer[f32], acc8: Buffer[i32]):
    g = pk.global_id(0)
    lid = pk.local_id(0)
    sh9 = pk.shared(u16, 16)
    sh9[lid] = s1
    pk.barrier()
    v10 = sh9[lid + 10 & 15]
    w12 = 0
    while w12 < 3:
        w12 += 1
        pk.atomic_add(acc8, i32(-23) & 7, pk.max(lid ^ lid, lid >> lid))
        if i8(76) >= i8(-33) if False else a2[lid & 15] == a2[i32(v10) & 15]:
            return
    v13: i8 = a2[i32(63) & 15]
    for k14 in range(3):
        v13 = ~v13
        o3[g * 2 + 1] = pk.max(~v13 << v13, v13 * ~v13)
