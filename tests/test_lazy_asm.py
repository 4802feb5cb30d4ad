"""The lazily rendered assembly listing (``polykern.codegen.cpu.lazy_asm``) is one implementation for the llvm
and hexagon modules: on both, a fallback module copies and pickles with its ``asm`` still pending, and the
copy gives the same bytes and the same listing (the llvm copy of the mechanism did not pickle: its
pending listing was rebuilt from "" and failed)."""
import copy
import pickle

import pytest

import polykern as pk
from polykern import Buffer, f32, i32
from polykern.codegen.cpu.lazy_asm import PendingAsm
from polykern.module import FORCE_FALLBACK_ENV


@pk.kernel
def scale(n: i32, a: f32, x: Buffer[f32]):
    i = pk.global_id(0)
    if i < n:
        x[i] = a * x[i]


TARGETS = {"llvm": "llvm", "hexagon": "hexagon"}


@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_fallback_pickles_with_its_asm_pending(kind, monkeypatch):
    monkeypatch.setenv(FORCE_FALLBACK_ENV, "1")
    dev = pk.build([scale], [TARGETS[kind]]).on(kind)
    dev = getattr(dev, "fallback", dev)  # a deferred module's bytes and sources are its fallback's
    assert not dev.is_runnable
    pending = dev.__dict__["_sources"]["asm"]
    assert isinstance(pending, PendingAsm), f"the {kind} build renders asm eagerly"
    for twin in (pickle.loads(pickle.dumps(dev)), copy.deepcopy(dev)):
        assert type(twin) is type(dev)
        assert isinstance(twin.__dict__["_sources"]["asm"], PendingAsm)  # still pending after the copy
        assert twin.save_to_bytes() == dev.save_to_bytes()
        assert twin.inspect_source("asm") == dev.inspect_source("asm") != ""
    assert not isinstance(dev.__dict__["_sources"]["asm"], PendingAsm)  # rendered once read


@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_both_backends_use_the_one_mechanism(kind):
    import importlib

    from polykern.codegen.cpu.lazy_asm import LazyAsmSources

    fallback = importlib.import_module(f"polykern_{kind}.fallback")
    (cls,) = [v for v in vars(fallback).values() if isinstance(v, type) and v.__module__ == fallback.__name__]
    assert issubclass(cls, LazyAsmSources)


def test_pending_asm_round_trips():
    p = PendingAsm("define void @f() {\n  ret void\n}\n", "x86_64-unknown-linux-gnu", "generic", "", 2, True)
    for twin in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p)):
        assert isinstance(twin, PendingAsm) and twin.target == p.target and twin == ""
    assert "ret" in p.render()
