"""F13: pow of NaN operands the compiler can see crashed (SIGSEGV) or, inside a loop, hung PoCL 3.1's kernel
compiler (reduced from fuzz seed 8001165)."""
import polykern as pk
from polykern import Buffer, f32, i32, u32  # noqa: F401

NAN = float("nan")


@pk.kernel
def fz8001165(a3: Buffer[u32, "readonly"], m5: Buffer[f32]):
    g = pk.global_id(0)
    v9: f32 = f32(a3[g & 15]) * NAN
    m5[g * 4 + 0] = pk.pow(v9 * (-v9), v9)
    m5[g * 4 + 1] = pk.pow(v9, f32(0.0))
    m5[g * 4 + 2] = pk.pow(f32(1.0), v9)
    w = 0
    while w < 2:
        w += 1
        if a3[g & 15] > u32(3):
            m5[g * 4 + 3] = pk.pow(NAN, v9)
        else:
            m5[g * 4 + 3] = pk.pow(f32(2.0), f32(a3[g & 15]))
