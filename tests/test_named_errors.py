"""Bad input that used to escape as a raw TypeError/ValueError/RuntimeError/IndexError is a named
polykern error saying what was wrong and where: a constexpr value no kernel type
holds (``specialize(N=10**5000)``), a user's object whose repr() raises (a specialization value, a
build hook's closure), and host array protocols that are malformed or masked, on every runtime (all
array protocols are read in one place, polykern/runtime/launch.py ``_buffer``)."""
import functools
import warnings

import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, hooks
from polykern.errors import CompileError, KernelTypeError, LaunchError
from polykern.testing import tier_skip
from runtimes import runnable_targets


@pk.kernel
def scaled(x: Buffer[f32], N: pk.constexpr, T: pk.dtype):
    i = pk.global_id(0)
    x[i] = x[i] * T(N)


class _ReprRaises:
    __slots__ = ()

    def __repr__(self):
        raise RuntimeError("repr is broken")


# ------------------------------------------------------------------ specialization values

@pytest.mark.parametrize("values,text", [
    (dict(N=10 ** 5000), "pk.constexpr parameter 'N' takes an integer in -9223372036854775808..18446744073709551615 "
                         "(what i64 or u64 holds), got an integer of 16610 bits"),
    (dict(N=2 ** 64), "got 18446744073709551616"),
    (dict(N=-2 ** 63 - 1), "got -9223372036854775809"),
    (dict(N=np.longdouble(10) ** 400), "takes a float that float64 holds"),
    (dict(N=_ReprRaises()), "takes a Python number or bool, got a _ReprRaises (whose repr() raised RuntimeError)"),
    (dict(T=_ReprRaises()), "pk.dtype parameter 'T' takes a scalar type (f32, i32, ...), got a _ReprRaises "
                            "(whose repr() raised RuntimeError)"),
])
def test_a_value_no_kernel_type_holds_is_a_kernel_type_error(values, text):
    if isinstance(values.get("N"), np.longdouble) and np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("long double is float64 here: 1e400 is already inf")
    with pytest.raises(KernelTypeError) as e:  # was: ValueError (int too large to convert to str), RuntimeError
        scaled.specialize(**values)
    assert text in str(e.value)


def test_the_extremes_of_the_range_are_taken():
    assert scaled.specialize(N=2 ** 64 - 1).name.endswith("N_18446744073709551615")
    assert scaled.specialize(N=-2 ** 63).name.endswith("N_m9223372036854775808")


# ------------------------------------------------------------------ build hook identity

def _closing_over(value):
    def postproc(source, target):
        return source if value is not None else source
    return postproc


@pytest.mark.parametrize("hook", [_closing_over(_ReprRaises()),
                                  functools.partial(lambda source, target, extra: source, extra=_ReprRaises())],
                         ids=["closure", "partial"])
def test_a_hook_whose_value_cannot_be_described_is_a_compile_error_naming_it(hook):
    with pytest.raises(CompileError) as e:  # was: RuntimeError("repr is broken") out of the build
        hooks.identity(hook)
    assert "cannot be identified" in str(e.value) and "RuntimeError: repr is broken" in str(e.value)
    assert f"the build hook {__name__}." in str(e.value) and "polykern_hook_identity" in str(e.value)


def test_such_a_hook_runs_once_it_declares_its_identity():
    hook = _closing_over(_ReprRaises())
    hook.polykern_hook_identity = "adds nothing, v1"
    assert hooks.identity(hook).startswith(f"{__name__}._closing_over.<locals>.postproc sha256:")


def test_a_partial_hook_identity_does_not_depend_on_addresses():
    # its bound arguments are described like closure values (a function by its name and code), not by repr(),
    # which shows a memory address: two equal hooks (or one hook in two processes) had two identities
    def make():
        def helper(s):
            return s
        return functools.partial(lambda source, target, f: f(source), f=helper)
    assert hooks.identity(make()) == hooks.identity(make())


# ------------------------------------------------------------------ host array protocols, every runtime

def _runtimes():
    have = {kind: t for t, kind, _ in runnable_targets()}
    return [pytest.param(have.get(k), id=k, marks=tier_skip.runtime_skipif(k, k not in have, f"no {k} runtime here"))
            for k in ("llvm", "opencl", "vulkan", "webgpu")]


@pytest.fixture(scope="module", params=_runtimes())
def doubler(request):
    @pk.kernel
    def double(x: Buffer[f32, "readonly"], y: Buffer[f32]):
        i = pk.global_id(0)
        y[i] = x[i] * 2.0
    return pk.build([double], targets=[request.param])["double"]


class _ArrayInterface:
    def __init__(self, description):
        self.__array_interface__ = description


class _PolykernBuffer:
    def __init__(self, result):
        self.result = result

    def __polykern_buffer__(self):
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


_GOOD = {"ptr": 0, "size": 4, "code": 2, "bits": 32, "device": ("cpu", 0)}
_BAD = {
    "masked": (np.ma.masked_array(np.arange(4, dtype=np.float32), mask=[0, 1, 0, 0]),
               "a masked array: a kernel reads and writes every element, masked or not; pass its .data"),
    "ai_no_shape": (_ArrayInterface({"typestr": "<f4", "data": (1, False), "version": 3}),
                    "cannot read its __array_interface__ (ValueError: Missing __array_interface__ shape)"),
    "ai_not_dict": (_ArrayInterface("not a dict"), "cannot read its __array_interface__ (ValueError: "),
    "ai_negative": (_ArrayInterface({"shape": (-1,), "typestr": "<f4", "data": (0, False), "version": 3}),
                    "cannot read its __array_interface__ (ValueError: negative dimensions are not allowed)"),
    "ai_masked": (_ArrayInterface({**np.ones(4, np.float32).__array_interface__, "mask": np.zeros(4, bool)}),
                  "masked __array_interface__ arrays are not supported"),
    "pb_none": (_PolykernBuffer(None), "malformed __polykern_buffer__ description (__polykern_buffer__() returned "
                                       "a NoneType, not a dict)"),
    "pb_device_name": (_PolykernBuffer({**_GOOD, "device": "cpu"}), "device must be a (name, index) pair, got 'cpu'"),
    "pb_device_short": (_PolykernBuffer({**_GOOD, "device": ("cpu",)}), "device must be a (name, index) pair"),
    "pb_negative_ptr": (_PolykernBuffer({**_GOOD, "ptr": -8}), "__polykern_buffer__ reports a negative address"),
    "pb_readonly_array": (_PolykernBuffer({**_GOOD, "readonly": np.array([1, 2])}),
                          "cannot read its __polykern_buffer__ (ValueError: The truth value of an array"),
    "pb_raises": (_PolykernBuffer(RuntimeError("device lost")),
                  "cannot read its __polykern_buffer__ (RuntimeError: device lost)"),
}


@pytest.mark.parametrize("case", sorted(_BAD))
def test_a_malformed_or_masked_host_array_is_a_launch_error_naming_the_argument(doubler, case):
    arg, text = _BAD[case]
    y = np.zeros(4, np.float32)
    with pytest.raises(LaunchError) as e:  # was: ValueError/TypeError/IndexError/RuntimeError, or a masked write
        doubler(arg, y, grid=1, block=4)
    assert str(e.value).startswith("kernel 'double', argument 'x' (#1, Buffer[f32, readonly]): ")
    assert text in str(e.value)
    np.testing.assert_array_equal(y, 0)  # nothing ran


def test_an_ndarray_subclass_is_passed_as_its_memory(doubler):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        x = np.asmatrix(np.arange(4, dtype=np.float32).reshape(2, 2))  # reshape(-1) of a matrix stays 2-D
    y = np.zeros(4, np.float32)
    doubler(x, y, grid=1, block=4)
    np.testing.assert_array_equal(y, [0, 2, 4, 6])
