"""The staged launch (polykern/runtime/staged_launch.py): its fixed stage order, host-copy dedupe,
release in ``finally`` and error mapping, through a throwaway runtime built from the hooks; and that every
runtime runnable here (from the registry, tests/runtimes.py) launches through it, so a check added to
the staged launch applies to each of them."""
import contextlib

import numpy as np
import pytest

import polykern as pk
from polykern.errors import DeviceError, LaunchError
from polykern import Buffer, f32, i32
from polykern.runtime import staged_launch
from polykern.runtime.staged_launch import StagedLaunch
from polykern.testing.synthetic import saxpy_info
from runtimes import runnable_targets


class Throwaway(StagedLaunch):
    """A runtime made of the hooks only: records each call; ``fail_in`` names a hook that raises."""
    runtime = "throwaway"

    def __init__(self, fail_in=None, copies_host=True):
        self.info = saxpy_info()
        self.calls = []
        self.fail_in = fail_in
        self.copies_host = copies_host

    def _note(self, what):
        self.calls.append(what)
        if what.split(" ")[0] == self.fail_in:
            raise RuntimeError(f"{what} failed")

    def limits(self, launch):
        self._note("limits")

    def prepare(self, launch):
        self._note("prepare")

    @contextlib.contextmanager
    def exclusive(self, launch):
        self._note("exclusive")
        try:
            yield
        finally:
            self.calls.append("exclusive end")

    def bind_scalar(self, launch, arg):
        self._note(f"bind_scalar {arg.name}")
        return arg.value

    def bind_device(self, launch, arg):
        self._note(f"bind_device {arg.name}")
        return ("device", arg.ptr)

    def stage_in(self, launch, arg):
        self._note(f"stage_in {arg.name}")
        return ("copy", arg.ptr)

    def dispatch(self, launch):
        self._note("dispatch")
        self.bindings = list(launch.bindings)

    def stage_out(self, launch, copies):
        self._note("stage_out " + ",".join(hc.arg.name for hc in copies))

    def launch_failed(self, launch, error):
        self.calls.append("launch_failed")
        return DeviceError(f"throwaway: {error}") if isinstance(error, RuntimeError) else None

    def release(self, launch):
        self.calls.append("release")


def _args(n=8):
    return [n, 2.0, np.ones(n, np.float32), np.zeros(n, np.float32)]


def test_stages_run_in_their_fixed_order():
    k = Throwaway()
    k(*_args(), grid=1, block=8)
    assert k.calls == ["limits", "prepare", "exclusive", "bind_scalar n", "bind_scalar a", "stage_in x", "stage_in y",
                       "dispatch", "stage_out y", "release", "exclusive end"]
    assert staged_launch.STAGES.index("limits") < staged_launch.STAGES.index("dispatch") < \
        staged_launch.STAGES.index("release")


def test_one_host_array_for_two_parameters_is_one_copy_written_back():
    k = Throwaway()
    n, a, x, _ = _args()
    k(n, a, x, x, grid=1, block=8)
    # one copy (named by its first parameter, readonly 'x'), written back because 'y' writes it
    assert [c for c in k.calls if c.startswith("stage_")] == ["stage_in x", "stage_out x"]
    assert k.bindings[2] is k.bindings[3]


@pytest.mark.parametrize("hook", ["bind_scalar", "stage_in", "dispatch", "stage_out"])
def test_release_runs_and_the_error_is_mapped_whatever_stage_fails(hook):
    k = Throwaway(fail_in=hook)
    with pytest.raises(DeviceError, match=f"throwaway: {hook}"):
        k(*_args(), grid=1, block=8)
    assert k.calls[-3:] == ["launch_failed", "release", "exclusive end"]


def test_bad_arguments_and_overlaps_are_refused_before_any_hook():
    k = Throwaway()
    with pytest.raises(LaunchError, match="argument 'n'"):
        k(1.5, 2.0, np.ones(8, np.float32), np.zeros(8, np.float32), grid=1, block=8)
    whole = np.zeros(9, np.float32)
    with pytest.raises(LaunchError, match="'x' and 'y'"):
        k(8, 2.0, whole[1:], whole[:8], grid=1, block=8)
    assert k.calls == []


def test_a_runtime_using_host_memory_in_place_binds_it_and_allows_overlaps():
    k = Throwaway(copies_host=False)
    whole = np.zeros(9, np.float32)
    k(8, 2.0, whole[1:], whole[:8], grid=1, block=8)
    assert "bind_device x" in k.calls and "bind_device y" in k.calls
    assert not any(c.startswith("stage_in") for c in k.calls)


@pk.kernel
def _scale(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        y[i] = a * x[i]


@pytest.mark.parametrize("target,kind", [pytest.param(t, k, id=k) for t, k, _ in runnable_targets()])
def test_every_runtime_launches_through_the_staged_launch(target, kind, monkeypatch):
    kernel = pk.build([_scale], targets=[target]).on(kind)["_scale"]
    runtime_kernel = kernel
    while not isinstance(runtime_kernel, StagedLaunch) and "fn" in vars(runtime_kernel):  # a wrapper's own
        runtime_kernel = vars(runtime_kernel)["fn"]                                   # checks (launch_proof.py)
    assert isinstance(runtime_kernel, StagedLaunch), \
        f"{kind}'s kernel {type(runtime_kernel).__name__} is not a StagedLaunch"
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    kernel(8, np.float16(2), x, y, grid=1, block=8)  # a NumPy half for the f32: not any runtime's fast path
    np.testing.assert_array_equal(y, 2 * x)

    checked = staged_launch.check_args

    def with_a_new_check(info, *rest):
        checked(info, *rest)
        raise LaunchError(f"kernel '{info.name}': the new staged check")

    monkeypatch.setattr(staged_launch, "check_args", with_a_new_check)
    with pytest.raises(LaunchError, match="the new staged check"):
        kernel(8, np.float16(3), x, y, grid=1, block=8)
    np.testing.assert_array_equal(y, 2 * x)  # refused before anything ran

    # a check added in StagedLaunch.staged itself (after check_args) applies too: no runtime launches around it
    monkeypatch.setattr(staged_launch, "check_args", checked)

    def staged_with_a_check(self, args, grid=None, block=None, note=None):
        raise LaunchError(f"kernel '{self.info.name}': the new check in staged()")

    monkeypatch.setattr(StagedLaunch, "staged", staged_with_a_check)
    with pytest.raises(LaunchError, match=r"the new check in staged\(\)"):
        kernel(8, np.float16(4), x, y, grid=1, block=8)
    np.testing.assert_array_equal(y, 2 * x)
