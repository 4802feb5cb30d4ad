"""Replays every case tools/fuzz.py saved here (``<name>.py`` kernel + ``<name>.json`` launch, inputs,
the oracle's outputs, and where it disagreed) on every runtime present, against the oracle.

A case's ``open_on`` lists the target kinds (``kind``, or ``kind@word`` for the devices whose name has that
word) where the disagreement it records is still unfixed: there it is an expected failure (strict: once the bug is fixed the test fails until the kind is removed from
``open_on``), and it must pass everywhere else. The oracle's outputs must still equal the saved ones.
"""
import glob
import json
import os

import numpy as np
import pytest

import polykern as pk
from polykern.ir.bfloat16 import bf16_array, is_bf16_dtype
from polykern.testing import fuzzcase
from runtimes import runnable_targets

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(HERE, "*.json")))


def _dec(x):
    return float(x) if isinstance(x, str) else x


def load_case(name):
    with open(os.path.join(HERE, name + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(HERE, name + ".py")) as f:
        source = f.read()
    args = []
    for a in meta["args"]:
        if "values" in a and a["dtype"] == "bf16":  # bf16 bits (tools/fuzz.py)
            args.append(bf16_array(np.array(a["values"], np.uint16)))
        elif "values" in a:
            args.append(np.array([_dec(x) for x in a["values"]], dtype=a["dtype"]))
        else:
            args.append(np.dtype(a["dtype"]).type(_dec(a["value"])))
    case = fuzzcase.Case(meta["kernel"], source, tuple(meta["grid"]), tuple(meta["block"]), args,
                         frozenset(meta["features"]), meta.get("shared_size"),
                         meta.get("vector_align", {}), meta.get("fast_math", False))
    return case, meta


def test_cases_are_complete():
    for name in CASES:
        assert os.path.exists(os.path.join(HERE, name + ".py")), f"{name}.json has no {name}.py"
        _, meta = load_case(name)
        assert isinstance(meta["open_on"], list), f"{name}: open_on must list target kinds"


@pytest.mark.parametrize("name", CASES)
def test_oracle_still_gives_the_saved_outputs(name):
    case, meta = load_case(name)
    got = case.oracle().buffers
    for buf, values in meta["expected"].items():
        if is_bf16_dtype(got[buf].dtype):  # saved as bits
            np.testing.assert_array_equal(got[buf].view(np.uint16), np.array(values, np.uint16),
                                          err_msg=f"{name}: oracle output {buf} changed")
            continue
        want = np.array([_dec(x) for x in values], dtype=got[buf].dtype)
        np.testing.assert_array_equal(got[buf], want, err_msg=f"{name}: oracle output {buf} changed")


def _open_here(open_on, kind):
    """The ``open_on`` entry that applies to ``kind`` on this host: ``"vulkan"`` (every device of the kind)
    or ``"vulkan@lavapipe"`` (only where the kind's runtime lists a device whose name has that word)."""
    for entry in open_on:
        k, _, word = entry.partition("@")
        if k != kind:
            continue
        if not word:
            return entry
        rec = pk.backends.record_for_kind(kind)
        if rec is not None and any(word.lower() in d.lower() for d in rec.devices()["devices"]):
            return entry
    return None


@pytest.mark.parametrize("target", [t for t, _, _ in runnable_targets()])
@pytest.mark.parametrize("name", CASES)
def test_case_on_runtime(name, target, request):
    case, meta = load_case(name)
    kind = target.split()[0]
    where = _open_here(meta["open_on"], kind)
    if where:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"open fuzz finding on {where} "
                                                                 "(docs/correctness.md, 'Open')"))
    out = fuzzcase.check_target(case, case.oracle(), target)
    assert not out.bad, f"{name} on {target}: {out.kind}: {out.detail}"
