"""polykern.torch (docs/frameworks.md): a kernel as a torch.library custom op — eager, under
torch.compile(fullgraph=True) (its fake implementation from the signature and the shape rule), with a
backward kernel through register_autograd, passing torch.library.opcheck; a tensor that requires grad
launched directly (read-only parameters only). CPU tensors here; CUDA tensors where torch sees a GPU
and polykern's CUDA runtime runs (the GPU machine)."""
import re

import pytest

torch = pytest.importorskip("torch", reason="polykern.torch needs PyTorch (pip install torch; docs/frameworks.md)")

import polykern as pk  # noqa: E402
import polykern.torch as pkt  # noqa: E402
from polykern import Buffer, f32, i32  # noqa: E402
from polykern.errors import LaunchError, OperatorError  # noqa: E402
from framework_support import double_bf16, run_script, square_and_count  # noqa: E402


@pk.kernel
def scale(n: i32, x: Buffer[f32, "readonly"], a: f32, y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i]


@pk.kernel
def square_grad(n: i32, x: Buffer[f32, "readonly"], g: Buffer[f32, "readonly"], dx: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        dx[i] = 2.0 * x[i] * g[i]


def _elementwise(x, *rest):
    return (x.numel() + 63) // 64


def _n(x, *rest):
    return x.numel()


SCALE = pkt.custom_op("pktest::scale", scale, outputs="y", shape_rule=lambda x, a: x.shape, scalars={"n": _n},
                      grid=_elementwise, block=64)
SQUARE_GRAD = pkt.custom_op("pktest::square_grad", square_grad, outputs="dx", shape_rule=lambda x, g: x.shape,
                            scalars={"n": _n}, grid=_elementwise, block=64)
SQUARE = pkt.custom_op("pktest::square_and_count", square_and_count, outputs=("y", "positive"),
                       shape_rule=lambda x: (x.shape, (1,)), scalars={"n": _n}, zeroed="positive",
                       grid=_elementwise, block=64)
SQUARE.register_autograd(lambda inputs, outputs, gy, gcount: SQUARE_GRAD(inputs[0], gy))
SCALE.register_autograd(lambda inputs, outputs, gy: (SCALE(gy, inputs[1]), None))

CUDA = torch.cuda.is_available()


def _cuda_runs():
    if not CUDA:
        pytest.skip("torch sees no CUDA device here (the GPU machine runs these)")
    if "cuda" not in pk.backends.runnable_kinds():
        pytest.skip("polykern's CUDA runtime is not usable here (polykern backends says why)")


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    if request.param == "cuda":
        _cuda_runs()
    return request.param


def test_polykern_torch_imports_the_real_torch():
    assert pkt.torch is torch and pkt.__name__ == "polykern.torch"  # the module's name does not shadow torch


def test_schema_comes_from_the_kernel_signature():
    assert SCALE.schema == "(Tensor x, float a) -> Tensor"
    assert SQUARE.schema == "(Tensor x) -> (Tensor, Tensor)"


def test_eager_results_on_the_tensors_device(device):
    x = torch.randn(5, 7, device=device)
    y = SCALE(x, 3.0)
    assert y.shape == x.shape and y.device == x.device and y.dtype == torch.float32
    torch.testing.assert_close(y, 3 * x)
    sq, count = SQUARE(x)
    torch.testing.assert_close(sq, x * x)
    assert count.dtype == torch.int32 and int(count[0]) == int((x > 0).sum())  # zeroed before the atomics


def test_a_non_contiguous_input_is_read_as_its_values(device):
    x = torch.randn(6, 4, device=device).t()
    assert not x.is_contiguous()
    torch.testing.assert_close(SCALE(x, 2.0), 2 * x)


def test_backward_kernels_through_register_autograd(device):
    x = torch.randn(33, device=device, requires_grad=True)
    (SCALE(x, 0.5).sum() + SQUARE(x)[0].sum()).backward()
    torch.testing.assert_close(x.grad, 0.5 + 2 * x.detach())


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_fullgraph_traces_it_without_a_graph_break(device, dynamic):
    def step(x):
        return SCALE(torch.relu(x), 2.0).sum() + SQUARE(x)[0].mean()

    compiled = torch.compile(step, fullgraph=True, dynamic=dynamic, backend="aot_eager")
    for n in (16, 40):  # a second shape: the shape rule runs on symbolic sizes when dynamic
        x = torch.randn(n, device=device)
        torch.testing.assert_close(compiled(x), step(x))


def test_opcheck_passes(device):
    for op, args in ((SCALE, (torch.randn(5, 3, device=device), 2.0)),
                     (SCALE, (torch.randn(9, device=device, requires_grad=True), -1.5)),
                     (SQUARE, (torch.randn(12, device=device, requires_grad=True),))):
        torch.library.opcheck(op.op, args)


def test_a_tensor_that_requires_grad_launches_directly_where_read_only(device):
    mod = pk.build([scale], targets=["llvm" if device == "cpu" else "cuda"])
    x = torch.arange(8.0, device=device, requires_grad=True)
    y = torch.zeros(8, device=device)
    mod["scale"](8, x, 2.0, y, grid=1, block=8)
    torch.testing.assert_close(y, 2 * x.detach())
    with pytest.raises(LaunchError, match=r"argument 'y' .*requires grad and the kernel may write it"):
        mod["scale"](8, x, 2.0, torch.zeros(8, device=device, requires_grad=True), grid=1, block=8)


def test_raw_capsules_of_torch_tensors(device):
    mod = pk.build([scale], targets=["llvm" if device == "cpu" else "cuda"])
    x, y = torch.arange(8.0, device=device), torch.zeros(8, device=device)
    mod["scale"](8, torch.utils.dlpack.to_dlpack(x), 3.0, torch.utils.dlpack.to_dlpack(y), grid=1, block=8)
    torch.testing.assert_close(y, 3 * x)  # written through the capsule, into y's own memory
    with pytest.raises(LaunchError, match=r"argument 'x' .*DLPack capsule is not C-contiguous"):
        mod["scale"](8, torch.utils.dlpack.to_dlpack(torch.zeros(4, 2, device=device).t()), 1.0, y, grid=1, block=8)


def test_bf16_tensors(device):
    """A bf16 CPU tensor reaches the kernel through its DLPack capsule (NumPy has no bfloat16 to import it as)."""
    op = pkt.custom_op(f"pktest::double_bf16_{device}", double_bf16, outputs="y", shape_rule=lambda x: x.shape,
                       scalars={"n": _n}, grid=_elementwise, block=64)
    x = torch.arange(-4, 4, device=device).to(torch.bfloat16)
    torch.testing.assert_close(op(x), 2 * x)
    y = torch.zeros(8, dtype=torch.bfloat16, device=device)
    op.binding.launcher(device)(8, x, y, grid=1, block=8)
    torch.testing.assert_close(y, 2 * x)


def test_binding_mistakes_are_named():
    with pytest.raises(OperatorError, match=r"parameter 'positive' \(Buffer\[i32\]\) is written by the kernel but is "
                                            r"an input"):
        pkt.custom_op("pktest::bad1", square_and_count, outputs="y", shape_rule=lambda x: x.shape, grid=1, block=1)
    with pytest.raises(OperatorError, match=r"outputs= names at least one buffer parameter"):
        pkt.custom_op("pktest::bad0", scale, outputs=(), shape_rule=lambda x, a, y: x.shape, grid=1, block=1)
    with pytest.raises(OperatorError, match=r"output 'z' is not one of its buffer parameters"):
        pkt.custom_op("pktest::bad2", scale, outputs="z", shape_rule=lambda x, a: x.shape, grid=1, block=1)
    with pytest.raises(OperatorError, match=r"output 'x' is declared Buffer\[f32, readonly\]"):
        pkt.custom_op("pktest::bad3", scale, outputs=("y", "x"), shape_rule=lambda a: a, grid=1, block=1)
    with pytest.raises(OperatorError, match=r"scalars= names 'x', which is not one of its scalar parameters"):
        pkt.custom_op("pktest::bad4", scale, outputs="y", scalars={"x": 1}, shape_rule=lambda a: a, grid=1, block=1)
    with pytest.raises(OperatorError, match=r"'namespace::name'"):
        pkt.custom_op("scale", scale, outputs="y", shape_rule=lambda x, a: x.shape, grid=1, block=1)
    wrong = (r"operator pktest::scale: input 'x' is a torch.float64 tensor; kernel 'scale' declares "
             r"Buffer\[f32, readonly\] \(torch.float32\)")
    with pytest.raises(OperatorError, match=wrong):
        SCALE(torch.ones(3, dtype=torch.float64), 2.0)
    with pytest.raises(torch._dynamo.exc.TorchRuntimeError, match=wrong):  # named while tracing (the fake impl)
        torch.compile(lambda x: SCALE(x, 2.0), fullgraph=True, backend="aot_eager")(torch.ones(3, dtype=torch.float64))
    bad_rule = pkt.custom_op("pktest::bad5", scale, outputs="y", shape_rule=lambda x, a: "rows", scalars={"n": _n},
                             grid=1, block=1)
    with pytest.raises(OperatorError, match=r"shape_rule returned 'rows'; it gives the shape of output 'y'"):
        bad_rule(torch.ones(3), 1.0)


def test_the_example_runs(device):
    assert run_script("examples", "torch_op.py", "--device", device).count(f"[{device}]") == 3


def test_the_benchmark_runs_on_the_cpu():
    out = run_script("benchmarks", "torch_compile_step.py", "--device", "cpu", "--batch", "8", "--dim", "8",
                     "--repeat", "2")
    assert re.search(r"^  polykern silu +[0-9.]+ ms$", out, re.M), out
    assert re.search(r"^  polykern / torch: [0-9.]+$", out, re.M), out
