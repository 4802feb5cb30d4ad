"""polykern.jax (docs/frameworks.md): a kernel as a JAX function — eager, inside jax.jit, under
jax.vmap, with several outputs and zeroed outputs, as an XLA FFI custom call (the CPU) and through
jax.pure_callback; launch errors reach the caller; binding mistakes are named OperatorErrors."""
import re

import numpy as np
import pytest

from polykern.testing import require, tier_skip

if require.absent("jax"):  # a tier: CI installs jax (./dev setup), and a skip there fails
    tier_skip.skip("jax", f"polykern.jax needs JAX: {require.absent('jax')}")
import jax  # noqa: E402

jnp = jax.numpy

import polykern as pk  # noqa: E402
import polykern.jax as pkj  # noqa: E402
from polykern import Buffer, f32, i32  # noqa: E402
from polykern.errors import OperatorError  # noqa: E402
from framework_support import double_bf16, run_script, square_and_count  # noqa: E402


@pk.kernel
def row_scale(rows: i32, cols: i32, x: Buffer[f32, "readonly"], w: Buffer[f32, "readonly"], a: f32,
              y: Buffer[f32]):
    i = pk.global_id(0)
    if i < rows * cols:
        y[i] = a * x[i] * w[i % cols]


def _functions(via):
    row_scale_fn = pkj.kernel_function(row_scale, outputs="y", shape_rule=lambda x, w, a: x.shape, via=via,
                                       scalars={"rows": lambda x, w, a: x.shape[0], "cols": lambda x, w, a: x.shape[1]},
                                       grid=lambda x, w, a: (x.size + 63) // 64, block=64)
    square = pkj.kernel_function(square_and_count, outputs=("y", "positive"), shape_rule=lambda x: (x.shape, 1),
                                 scalars={"n": lambda x: x.size}, zeroed="positive", via=via,
                                 grid=lambda x: (x.size + 63) // 64, block=64)
    return row_scale_fn, square


ROW_SCALE, SQUARE = _functions("ffi")
VIAS = {"ffi": (ROW_SCALE, SQUARE), "callback": _functions("callback")}


def test_polykern_jax_imports_the_real_jax():
    assert pkj.jax is jax and pkj.__name__ == "polykern.jax"  # the module's name does not shadow jax


@pytest.mark.parametrize("via", sorted(VIAS))
def test_eager_and_jit_results(via):
    row_scale_fn, square = VIAS[via]
    x = jnp.asarray(np.random.default_rng(0).standard_normal((5, 7)), jnp.float32)
    w = jnp.arange(7, dtype=jnp.float32)
    np.testing.assert_allclose(row_scale_fn(x, w, 2.0), 2.0 * x * w, rtol=1e-6)
    jitted = jax.jit(lambda x, w, a: row_scale_fn(x + 1, w, a) - 1)
    np.testing.assert_allclose(jitted(x, w, 0.5), 0.5 * (x + 1) * w - 1, rtol=1e-5, atol=1e-6)
    for _ in range(2):  # the zeroed output starts at zero on every call (XLA may reuse its buffer)
        y, count = jax.jit(square)(x.reshape(-1))
        np.testing.assert_allclose(y, (x * x).reshape(-1), rtol=1e-6)
        assert count.dtype == jnp.int32 and count.shape == (1,) and int(count[0]) == int((x > 0).sum())


@pytest.mark.parametrize("via", sorted(VIAS))
def test_vmap_runs_the_kernel_per_batch_element(via):
    row_scale_fn = VIAS[via][0]
    xs = jnp.asarray(np.random.default_rng(1).standard_normal((3, 4, 2)), jnp.float32)
    w = jnp.asarray([1.0, -2.0], jnp.float32)
    got = jax.jit(jax.vmap(lambda x: row_scale_fn(x, w, 3.0)))(xs)
    np.testing.assert_allclose(got, 3.0 * xs * w, rtol=1e-6)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="JAX cannot lower a callback for the CPU where its "
                    "backend is a GPU (the GPU route has its own tests below)")
def test_on_the_cpu_it_is_an_xla_custom_call():
    x = jnp.ones((2, 3), jnp.float32)
    lowered = jax.jit(lambda x: ROW_SCALE(x, jnp.ones(3, jnp.float32), 1.0)).trace(x).lower(
        lowering_platforms=("cpu",)).as_text()
    assert re.search(r"stablehlo.custom_call @polykern_row_scale_[0-9a-f]+_cpu\(", lowered), lowered
    callback = jax.jit(lambda x: VIAS["callback"][0](x, jnp.ones(3, jnp.float32), 1.0)).trace(x).lower(
        lowering_platforms=("cpu",)).as_text()
    assert "polykern_row_scale" not in callback


@pytest.mark.parametrize("via", sorted(VIAS))
def test_a_launch_error_reaches_the_caller(via):
    huge = pkj.kernel_function(square_and_count, outputs=("y", "positive"), shape_rule=lambda x: (x.shape, 1),
                               scalars={"n": lambda x: x.size}, grid=2 ** 31, block=1, via=via)
    wrong = r"LaunchError: kernel 'square_and_count': grid dimensions must be in 1\.\.2147483647, got 2147483648"
    with pytest.raises(jax.errors.JaxRuntimeError, match=wrong):
        jax.block_until_ready(jax.jit(huge)(jnp.ones(4, jnp.float32)))


def test_binding_mistakes_are_named():
    with pytest.raises(OperatorError, match=r"parameter 'positive' \(Buffer\[i32\]\) is written by the kernel"):
        pkj.kernel_function(square_and_count, outputs="y", shape_rule=lambda x: x.shape, grid=1, block=1)
    with pytest.raises(OperatorError, match=r"zeroed= names 'x', which is not an output \(y\)"):
        pkj.kernel_function(row_scale, outputs="y", zeroed="x", shape_rule=lambda x, w, a: x.shape, grid=1, block=1)
    with pytest.raises(OperatorError, match=r"takes 3 arguments \(x, w, a\), got 1"):
        ROW_SCALE(jnp.ones((2, 2), jnp.float32))
    with pytest.raises(OperatorError, match=r"input 'x' is a int32 tensor; kernel 'row_scale' declares "
                                            r"Buffer\[f32, readonly\] \(float32\)"):
        jax.jit(lambda x: ROW_SCALE(x, jnp.ones(2, jnp.float32), 1.0))(jnp.ones((2, 2), jnp.int32))
    with pytest.raises(OperatorError, match=r"input 'a' is a scalar parameter \(f32\), got an array of shape \(2,\)"):
        ROW_SCALE(jnp.ones((2, 2), jnp.float32), jnp.ones(2, jnp.float32), jnp.ones(2, jnp.float32))
    bad = pkj.kernel_function(square_and_count, outputs=("y", "positive"), shape_rule=lambda x: (x.shape,),
                              scalars={"n": lambda x: x.size}, grid=1, block=1)
    with pytest.raises(OperatorError, match=r"one shape \(a tuple of ints\) per output \(y, positive\)"):
        bad(jnp.ones((4, 2), jnp.float32))


def test_the_example_runs():
    out = run_script("examples", "jax_op.py")
    assert "rms_norm inside jax.jit matches jax.numpy's" in out and "once per batch element" in out


def test_a_bf16_jax_array_launches_directly():
    """NumPy cannot import a bfloat16 DLPack tensor; the launch reads its capsule (no copy). The array is on JAX's
    CPU device (the kernel is a CPU one; on the GPU machine JAX's default device is the GPU)."""
    x = jax.device_put(jnp.arange(-4, 4, dtype=jnp.bfloat16), jax.devices("cpu")[0])
    y = np.zeros(8, jnp.bfloat16)
    pk.build([double_bf16], targets=["llvm"])["double_bf16"](8, x, y, grid=1, block=8)
    assert y.astype(np.float32).tolist() == [2.0 * v for v in range(-4, 4)]


def _lowered_for_cuda(f, *args) -> str:
    """StableHLO of ``jax.jit(f)`` lowered for a CUDA GPU (JAX lowers for a platform it has no device of)."""
    return jax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


@pytest.fixture
def cuda_ready(monkeypatch):
    """The GPU route is taken where polykern's CUDA runtime is ready; lowering for cuda needs no GPU, so these
    tests take it whatever the runtime says here."""
    monkeypatch.setattr(pkj, "_cuda_runtime_ready", lambda: True)


def test_on_a_gpu_it_is_a_custom_call_with_the_scalars_as_attributes(cuda_ready):
    x = jnp.ones((2, 3), jnp.float32)
    lowered = _lowered_for_cuda(lambda x: ROW_SCALE(x, jnp.ones(3, jnp.float32), 1.5), x)
    call = re.search(r"stablehlo.custom_call @polykern_row_scale_[0-9a-f]+_cuda\((.*)", lowered)
    assert call, lowered
    assert "a = 1.500000e+00 : f32" in call.group(1)  # the scalar input, known when traced: an attribute
    assert "pure_callback" not in lowered and "xla_python_gpu_callback" not in lowered
    # a zeroed output is an operand XLA fills with zeros, aliased to that output
    squared = _lowered_for_cuda(lambda x: SQUARE(x), x)
    assert re.search(r"custom_call @polykern_square_and_count_[0-9a-f]+_cuda\(.*output_operand_alias<"
                     r"output_tuple_indices = \[1\], operand_index = 1", squared), squared


def test_on_a_gpu_a_traced_scalar_is_an_operand_not_a_callback(cuda_ready):
    x, w = jnp.ones((2, 3), jnp.float32), jnp.ones(3, jnp.float32)
    # a known scalar is an attribute of the custom call ...
    known = _lowered_for_cuda(lambda x: ROW_SCALE(x, w, 2.0), x)
    assert re.search(r"custom_call @polykern_row_scale_[0-9a-f]+_cuda\(%arg0, %[0-9a-z_]+\) .*a = 2.0", known), known
    # ... a traced one (a jax.jit argument) a 0-d operand after the buffers, read by the handler when it runs
    traced = _lowered_for_cuda(lambda x, a: ROW_SCALE(x, w, a), x, jnp.float32(2))
    call = re.search(r"custom_call @polykern_row_scale_[0-9a-f]+_cuda\((.*?)\) (.*)", traced)
    assert call and len(call.group(1).split(",")) == 3 and "a = " not in call.group(2), traced
    assert "callback" not in traced
    squared = _lowered_for_cuda(lambda x, k: ROW_SCALE(x * k, w, k), x, jnp.float32(3))
    assert "callback" not in squared and "_cuda(" in squared


def test_without_polykerns_cuda_runtime_a_gpu_takes_the_callback(monkeypatch):
    monkeypatch.setattr(pkj, "_cuda_runtime_ready", lambda: False)
    jaxpr = str(jax.make_jaxpr(lambda x: ROW_SCALE(x, jnp.ones(3, jnp.float32), 2.0))(jnp.ones((2, 3), jnp.float32)))
    assert not re.search(r"polykern_row_scale_[0-9a-f]+_cuda", jaxpr) and "pure_callback" in jaxpr, jaxpr
    # (with the runtime ready, the cuda branch is the custom call: the test above)


@pytest.mark.skipif(jax.default_backend() != "gpu", reason="JAX has no GPU here (the GPU machine runs this)")
def test_on_a_gpu_the_kernel_runs_on_xlas_stream_in_order():
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((64, 33)).astype(np.float32)
    w0 = rng.standard_normal(33).astype(np.float32)
    x, w = jnp.asarray(x0), jnp.asarray(w0)
    step = jax.jit(lambda y: ROW_SCALE(y * 0.5, w, 1.5) + 1.0)
    want = x0
    for _ in range(20):  # each call reads what the one before wrote: XLA's stream orders them
        x = step(x)
        want = 1.5 * (want * 0.5) * w0 + 1.0
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-5, atol=1e-5)
    assert "cuda" in ROW_SCALE.binding._launchers  # the kernel ran on the CUDA runtime, not the CPU callback
    scaled = jax.jit(lambda y, a: ROW_SCALE(y, w, a * 2))  # a traced scalar: a 0-d operand the handler reads
    for a in (0.25, -3.0):
        np.testing.assert_allclose(np.asarray(scaled(jnp.asarray(x0), a)), 2 * a * x0 * w0, rtol=1e-6)
    assert any(key[0] == "cuda" and key[2] == ("a",) for key in ROW_SCALE._targets), ROW_SCALE._targets
    for _ in range(2):  # a zeroed output starts at zero on every call, on the GPU too
        y, count = jax.jit(SQUARE)(jnp.asarray(x0))
        np.testing.assert_allclose(np.asarray(y), x0 * x0, rtol=1e-6)
        assert int(count[0]) == int((x0 > 0).sum())


@pytest.mark.parametrize("via", sorted(VIAS))
def test_empty_arrays_give_empty_outputs(via):
    """An output with no elements is still an output: the custom call hands it over writable (it was read-only, and the
    launch refused it)."""
    square = pkj.kernel_function(square_and_count, outputs=("y", "positive"), shape_rule=lambda x: (x.shape, 1),
                                 scalars={"n": lambda x: x.size}, zeroed="positive", via=via,
                                 grid=lambda x: max(1, (x.size + 63) // 64), block=64)
    y, count = jax.jit(square)(jnp.zeros(0, jnp.float32))
    assert y.shape == (0,) and y.dtype == jnp.float32 and count.tolist() == [0]


def test_scalar_inputs_are_checked_as_a_launch_checks_them():
    """A scalar input was converted to XLA's type unchecked: 2.7 for an i32 became 2, True became 1, a string or None
    was a raw JAX error, and an i64 beyond int32 (jax_enable_x64 off) a raw OverflowError."""
    x, w = jnp.ones((2, 3), jnp.float32), jnp.ones(3, jnp.float32)
    for bad, said in ((True, r"expected a f32 value, got bool True"), ("2", r"expected a scalar f32, got str"),
                      (None, r"expected a scalar f32, got NoneType"), (1e39, r"value 1e\+39 is out of range for f32")):
        with pytest.raises(OperatorError, match=r"kernel 'row_scale', argument 'a' \(#5, f32\): " + said):
            ROW_SCALE(x, w, bad)
    with pytest.raises(OperatorError, match=r"input 'a' is a f32 scalar, got a traced bool value"):
        jax.jit(lambda x, a: ROW_SCALE(x, w, a))(x, True)
    np.testing.assert_allclose(ROW_SCALE(x, w, np.int64(3)), 3 * x * w)  # an integer for a float: as a launch takes it
    np.testing.assert_allclose(ROW_SCALE(x, w, jnp.float32(2)), 2 * x * w)  # a concrete 0-d JAX array


@pk.kernel
def offset_by(k: pk.i64, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < 1:
        y[i] = x[i] + f32(k % 1024)


def test_a_64_bit_scalar_that_jax_cannot_hold_is_named():
    add = pkj.kernel_function(offset_by, outputs="y", shape_rule=lambda k, x: x.shape, grid=1, block=1)
    x = jnp.zeros(1, jnp.float32)
    assert float(add(5, x)[0]) == 5.0
    if jax.config.jax_enable_x64:
        assert float(add(2 ** 40 + 7, x)[0]) == 7.0
    else:
        with pytest.raises(OperatorError, match=r"input 'k' \(i64\) = .*1099511627783.* does not fit the int32 JAX "
                                                r"holds it in \(64-bit values need jax.config.update"):
            add(2 ** 40 + 7, x)


@pk.kernel
def iota64(n: i32, y: Buffer[pk.i64]):
    i = pk.global_id(0)
    if i < n:
        y[i] = pk.i64(i) * 3


def test_jax_enable_x64_may_change_between_calls():
    """A 64-bit output without jax_enable_x64 was a raw JAX ValueError; the types the custom call checks were fixed when
    the function was made, so turning x64 on later refused an i64 scalar that now fits."""
    iota = pkj.kernel_function(iota64, outputs="y", shape_rule=lambda: (4,), scalars={"n": 4}, grid=1, block=4)
    add = pkj.kernel_function(offset_by, outputs="y", shape_rule=lambda k, x: x.shape, grid=1, block=1)
    with jax.enable_x64(False):
        with pytest.raises(OperatorError, match=r"output 'y' is Buffer\[i64\]; JAX has int64 arrays only with "
                                                r"jax.config.update\('jax_enable_x64', True\)"):
            jax.jit(iota)()
        assert float(jax.jit(add)(5, jnp.zeros(1, jnp.float32))[0]) == 5.0
    with jax.enable_x64(True):
        assert jax.jit(iota)().tolist() == [0, 3, 6, 9]
        assert float(jax.jit(add)(2 ** 40 + 7, jnp.zeros(1, jnp.float32))[0]) == 7.0


@pk.kernel
def every_scalar(flag: pk.bool_, h: pk.f16, a: pk.u8, b: pk.i8, c: pk.u16, d: pk.i16, e: pk.u64, f: pk.f64,
                 x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < 1:
        y[i] = x[i] + f32(h) + f32(a) + f32(b) + f32(c) + f32(d) + f32(e) + f32(f)
        if flag:
            y[i] = y[i] + 1.0


def test_every_scalar_attribute_is_one_xla_decodes(cuda_ready):
    """XLA's FFI attributes have no 16-bit float (xla/ffi/attribute_map.cc: "Unsupported float attribute bit width"):
    an f16 scalar input was an f16 attribute, and the call failed to compile on the GPU. It goes as an f32 (exact)."""
    every = pkj.kernel_function(every_scalar, outputs="y", shape_rule=lambda *a: (1,), grid=1, block=1)
    x = jnp.zeros(1, jnp.float32)
    args = (True, 0.5, 1, -2, 3, -4, 5, 0.25)
    call = re.search(r"custom_call @polykern_every_scalar_[0-9a-f]+_cuda\(.*mhlo.backend_config = \{([^}]*)\}",
                     _lowered_for_cuda(lambda x: every(*args, x), x))
    attrs = dict(re.fullmatch(r"(\w+) = (.*)", kv).groups() for kv in call.group(1).split(", "))
    types = {k: v.split(" : ")[-1] if " : " in v else v for k, v in attrs.items()}
    want = {"flag": "true", "h": "f32", "a": "ui8", "b": "i8", "c": "ui16", "d": "i16", "e": "ui64", "f": "f64"}
    assert types == want, attrs
    assert attrs["h"] == "5.000000e-01 : f32"
    assert float(every(*args, x)[0]) == 1 + 0.5 + 1 - 2 + 3 - 4 + 5 + 0.25  # the CPU custom call: the same values


@pytest.mark.parametrize("via", sorted(VIAS))
def test_differentiating_through_the_kernel_is_named(via):
    """jax.grad through the kernel was JAX's error about an "FFI call to `polykern_..._cpu`" (or a pure callback);
    a kernel that only sees constants still runs inside a differentiated function."""
    row_scale_fn = VIAS[via][0]
    x, w = jnp.ones((2, 3), jnp.float32), jnp.arange(3, dtype=jnp.float32)
    with pytest.raises(OperatorError, match=r"kernel 'row_scale' has no derivative: .* jax.custom_vjp"):
        jax.grad(lambda x: row_scale_fn(x, w, 2.0).sum())(x)
    with pytest.raises(OperatorError, match=r"kernel 'row_scale' has no derivative"):
        jax.jit(jax.grad(lambda a: row_scale_fn(x, w, a).sum()))(2.0)
    got = jax.grad(lambda c: (row_scale_fn(x, w, 2.0) * c).sum())(1.5)
    assert float(got) == float((2.0 * x * w).sum())
