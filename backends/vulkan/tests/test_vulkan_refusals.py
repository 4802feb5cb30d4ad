"""What the Vulkan backend refuses, and that it says so clearly: KernelTypeError naming vulkan, the
feature or limit, the fix, and pointing at the user's source line."""
import pytest

import polykern as pk
from polykern import Buffer, bool_, f64, i16, i32, i64, u8
from polykern.errors import KernelTypeError, TargetError

import vulkan_kernels as K


@pk.kernel
def uses_f64(n: i32, x: Buffer[f64]):
    i = pk.global_id(0)
    if i < n:
        x[i] = x[i] * 2.0


@pk.kernel
def bool_buffer(n: i32, x: Buffer[bool_]):
    i = pk.global_id(0)
    if i < n:
        x[i] = not x[i]


@pk.kernel
def sin_f64(x: Buffer[f64]):
    x[0] = pk.sin(x[0])


@pk.kernel
def atomic_i16(x: Buffer[i16]):
    pk.atomic_add(x, 0, i16(1))


@pk.kernel
def atomic_u8_shared(x: Buffer[u8]):
    s = pk.shared(u8, 4)
    pk.atomic_max(s, 0, x[0])


@pk.kernel
def many_scalars(a0: f64, a1: f64, a2: f64, a3: f64, a4: f64, a5: f64, a6: f64, a7: f64, a8: f64, a9: f64,
                 a10: f64, a11: f64, a12: f64, a13: f64, a14: f64, a15: f64, a16: f64, out: Buffer[f64]):
    out[0] = a0 + a16


def build(kernel, target):
    return pk.build([kernel], targets=[target])


def test_int64_atomics_need_the_feature():
    with pytest.raises(KernelTypeError) as ei:
        build(K.make_atomics_64(i64), "vulkan")
    msg = str(ei.value)
    assert "vulkan" in msg and "int64_atomics" in msg and "-features=default,int64_atomics" in msg
    assert "vulkan_kernels.py" in msg  # points at the atomic in the user's source
    build(K.make_atomics_64(i64), "vulkan -features=default,int64_atomics")  # and the fix works


def test_f64_atomics_need_int64_atomics():
    with pytest.raises(KernelTypeError, match="int64_atomics"):
        build(K.make_atomics_64(f64), "vulkan")


def test_types_outside_the_feature_set_are_refused_with_location():
    with pytest.raises(KernelTypeError) as ei:
        build(uses_f64, "vulkan -features=int8,int16,float16")
    msg = str(ei.value)
    assert "'float64' feature" in msg and "uses_f64" in msg and "test_vulkan_refusals.py:" in msg
    with pytest.raises(KernelTypeError, match="'int8' feature"):
        build(bool_buffer, "vulkan -features=none")
    with pytest.raises(KernelTypeError, match="'int16' feature"):
        build(K.make_arith(i16), "vulkan -features=int8")


def test_required_features_are_recorded_for_the_runtime():
    info = build(uses_f64, "vulkan").on("vulkan").functions["uses_f64"]
    assert info.attrs["features"] == "float64"
    info = build(K.saxpy, "vulkan -features=none").on("vulkan").functions["saxpy"]
    assert info.attrs["features"] == ""


def test_f64_transcendentals_are_refused():
    with pytest.raises(KernelTypeError, match=r"sin\(\) on f64.*no 64-bit sin"):
        build(sin_f64, "vulkan")


def test_narrow_atomics_are_refused():
    with pytest.raises(KernelTypeError, match="32- and 64-bit atomics only"):
        build(atomic_i16, "vulkan")
    with pytest.raises(KernelTypeError, match="32- and 64-bit atomics only"):
        build(atomic_u8_shared, "vulkan")


def test_push_constant_limit():
    with pytest.raises(KernelTypeError, match="136 bytes of push constants; Vulkan guarantees only 128"):
        build(many_scalars, "vulkan")


@pytest.mark.parametrize("spec,needle", [
    ("vulkan -spirv=2.0", "valid choices: 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6"),
    ("vulkan -features=int128", "valid: default, none, float16, float64"),
    ("vulkan -vulkan=1.3", "valid attributes"),
])
def test_bad_target_strings(spec, needle):
    with pytest.raises(TargetError) as ei:
        build(K.saxpy, spec)
    assert needle in str(ei.value)
