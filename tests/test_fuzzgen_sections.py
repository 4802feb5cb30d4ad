"""kernelgen's session-6 sections (vector groups, pk.shared_dynamic, matrix fragments, rotates past the width,
device functions with memory): each appears exactly when its own random stream draws it, at its
probability; programs are valid and deterministic; seeds without them keep their programs; checked programs
with an out-of-bounds group or fragment stop with a LaunchError (docs/correctness.md, "Generator")."""
import hashlib
import random
import re

import numpy as np
import pytest

from polykern.testing import fuzzcase, kernelgen
from polykern.testing.kernelgen_generator import Generator
from polykern.testing.kernelgen_matrix import matrix_possible

SEEDS = range(400)
#: what the source of a program with each section has (and one without it lacks)
MARKERS = {"vectors": r"= pk\.vload\(a|pk\.vstore\(mo", "shared_dynamic": r"^    dyn\d+ = pk\.shared_dynamic\(",
           "matrix": r"pk\.mma\(", "rotates": r"^    k\d+ = [iu]\d+\(\(g \* \d \+ \d+\) % \d+\)",
           "memory_functions": r"^def mo\d+\("}
#: sha256 of the sources of seeds 0..199 made by the generator before these sections (tree b12ecd5)
OLD_PROGRAMS_SHA = "73b915534a97aec2e665e7594f07cda5755c7c618eaa8666ea4a7b3468374410"


def _drawn(section, seed):
    return random.Random(f"{section}-{seed}").random() < kernelgen.PROBABILITY[section]


def test_seeds_keep_the_programs_they_had_before_the_sections():
    h = hashlib.sha256()
    for s in range(200):
        h.update(kernelgen.generate(s, avoid=kernelgen.BEFORE_MEMORY).source.encode())
    assert h.hexdigest() == OLD_PROGRAMS_SHA
    for s in range(60):  # a seed none of whose streams draws its section is unchanged without avoid
        if not any(_drawn(k, s) for k in kernelgen.PROBABILITY):
            assert kernelgen.generate(s).source == kernelgen.generate(s, avoid=kernelgen.BEFORE_MEMORY).source


@pytest.mark.parametrize("section", sorted(MARKERS))
def test_each_section_appears_when_its_stream_draws_it_at_its_probability(section):
    p = kernelgen.PROBABILITY[section]
    drawn = got = 0
    for s in SEEDS:
        prog = kernelgen.generate(s)
        has = bool(re.search(MARKERS[section], prog.source, re.M))
        want = _drawn(section, s)
        if section == "matrix":  # only for blocks of whole CPU subgroups
            g = Generator(s, "x", kernelgen.PROBABILITY)
            want = want and matrix_possible(g)
        if section == "shared_dynamic" and "pk.shared_dynamic(" in prog.source.split("@pk.kernel")[0]:
            want = False  # the kernel's one dynamic array is in its memory device function
        assert has == want, (section, s)
        drawn += _drawn(section, s)
        got += has
    n = len(SEEDS)
    sigma = (n * p * (1 - p)) ** 0.5
    assert abs(drawn - n * p) < 4 * sigma, (section, drawn, n * p)
    assert got > 0.3 * n * p  # the conditions above leave most draws in
    assert "matrix" not in kernelgen.generate(1, probability={"matrix": 0.0}).features
    always = [kernelgen.generate(s, probability={section: 1.0}, avoid={"function_shared_dynamic"}) for s in range(8)]
    possible = [matrix_possible(Generator(s, "x", kernelgen.PROBABILITY)) if section == "matrix" else True for s in range(8)]
    assert [bool(re.search(MARKERS[section], q.source, re.M)) for q in always] == possible


def test_probability_and_avoid_are_checked_and_leave_sections_out():
    with pytest.raises(ValueError, match="unknown probability"):
        kernelgen.generate(1, probability={"vector": 0.5})
    for s in range(40):
        src = kernelgen.generate(s, avoid=kernelgen.BEFORE_MEMORY - {"rotates"}).source
        assert "pk.vload(" not in src and "pk.shared_dynamic(" not in src and "pk.mma(" not in src


def test_same_seed_same_program_with_the_sections():
    for s in (3, 28, 68):
        a, b = kernelgen.generate(s, checked=True), kernelgen.generate(s, checked=True)
        assert (a.source, a.shared_size, a.violation, a.features) == (b.source, b.shared_size, b.violation,
                                                                      b.features)
        for x, y in zip(a.make_args(), b.make_args()):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_rotate_amounts_reach_past_the_width():
    srcs = "\n".join(kernelgen.generate(s, probability={"rotates": 1.0}).source for s in range(30))
    spans = {(t, int(span)) for t, span in re.findall(r"= ([iu]\d+)\(\(g \* \d \+ \d+\) % (\d+)\)", srcs)}
    assert {t for t, _ in spans} >= {"u8", "u32", "u64", "i16"}
    assert all(span == 2 * int(t[1:]) + 4 for t, span in spans)  # k in 0 .. 2W+3
    assert re.search(r"<< k\d+\) \| \(.*>> \(\d+ - k\d+\)\)", srcs)  # left and right forms
    assert re.search(r">> k\d+\) \| \(.*<< \(\d+ - k", srcs)


def _avoid(section):
    """What a test of ``section`` leaves out: device functions with memory (their alignment record is open,
    docs/correctness.md) unless they are the section, and their pk.shared_dynamic (its size is open too)."""
    return {"function_shared_dynamic"} if section == "memory_functions" else {"memory_functions"}


def _seeds_with(section, count, pred=lambda p: True):
    out = []
    for s in range(2000):
        p = kernelgen.generate(s, avoid=_avoid(section))
        if re.search(MARKERS[section], p.source, re.M) and pred(p):
            out.append(s)
        if len(out) == count:
            return out
    raise AssertionError(f"no seed with {section}")


@pytest.mark.parametrize("section", sorted(MARKERS))
def test_programs_with_each_section_are_valid_and_agree_on_llvm(section, tmp_path):
    for s in _seeds_with(section, 2):
        p = kernelgen.generate(s, avoid=_avoid(section))
        # the alignment record is checked below (open for device functions)
        align = {} if section == "memory_functions" else p.vector_align
        case = fuzzcase.Case(p.name, p.source, p.grid, p.block, p.make_args(), p.features, p.shared_size, align)
        case.kernel(str(tmp_path))
        oracle = case.oracle()  # an OracleError if the program had no single meaning
        out = fuzzcase.check_target(case, oracle, "llvm")
        assert out.status == "ok", (s, out.detail)




@pytest.mark.parametrize("section", ["vectors", "shared_dynamic", "memory_functions"])
def test_the_build_records_the_alignment_the_vector_groups_need(section):
    import polykern as pk

    for s in _seeds_with(section, 3, lambda p: bool(p.vector_align)):
        p = kernelgen.generate(s, avoid=_avoid(section))
        case = fuzzcase.Case(p.name, p.source, p.grid, p.block, p.make_args(), p.features, p.shared_size,
                             p.vector_align)
        assert fuzzcase._lost_alignment(case, pk.build([case.kernel()], ["llvm"])) == "", s


def test_a_program_with_shared_dynamic_launches_with_its_size():
    s = _seeds_with("shared_dynamic", 1)[0]
    p = kernelgen.generate(s, avoid=_avoid("shared_dynamic"))
    assert p.shared_size is not None and p.shared_size >= p.block[0]  # a group of n >= 1 per work-item
    case = fuzzcase.Case(p.name, p.source, p.grid, p.block, p.make_args(), p.features)
    with pytest.raises(fuzzcase.OracleError, match="takes"):
        case.oracle()  # without the hidden size argument


def test_checked_programs_with_an_out_of_bounds_access_stop_with_a_launch_error():
    found = {}
    for s in range(400):
        p = kernelgen.generate(s, checked=True, avoid={"memory_functions", "matrix_huge_ld"})
        if p.violation:  # each one is out of bounds where the oracle runs (not in dead code)
            case = fuzzcase.Case(p.name, p.source, p.grid, p.block, p.make_args(), p.features, p.shared_size)
            with pytest.raises(fuzzcase.OracleError, match="out of bounds|do not fit|out-of-bounds"):
                case.oracle()
        if p.violation and p.violation not in found:
            found[p.violation] = p
        assert not kernelgen.generate(s, avoid={"function_shared_dynamic"}).violation  # unchecked: never
    assert set(found) == {"vector group", "matrix fragment"}
    for p in found.values():
        case = fuzzcase.Case(p.name, p.source, p.grid, p.block, p.make_args(), p.features, p.shared_size)
        with pytest.raises(fuzzcase.OracleError, match="out of bounds|do not fit|out-of-bounds"):
            case.oracle()
        out = fuzzcase.check_violation(case, "llvm")
        assert out.status == "ok", (p.seed, out.detail)
        assert "out-of-bounds" in out.detail


def test_a_saved_case_keeps_its_shared_size_and_alignment(tmp_path, monkeypatch):
    """tools/fuzz.py saves shared_size and vector_align with a case; tests/fuzz_regressions replays it with them."""
    import json
    import os
    import sys

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(repo, "tools"))
    sys.path.insert(0, os.path.join(repo, "tests", "fuzz_regressions"))
    import fuzz
    import test_replay

    s = _seeds_with("shared_dynamic", 1, lambda p: bool(p.vector_align))[0]
    p = kernelgen.generate(s, avoid=_avoid("shared_dynamic"))
    args = p.make_args()
    case = fuzzcase.Case(p.name, p.source, p.grid, p.block, args, p.features, p.shared_size, p.vector_align)
    path = fuzz.save_case(str(tmp_path), p, p.source, fuzzcase.Outcome("llvm", "disagree", "x", "y"), case.oracle(),
                          ["llvm"], args)
    meta = json.loads(open(path[:-3] + ".json").read())
    assert meta["shared_size"] == p.shared_size and meta["vector_align"] == p.vector_align
    monkeypatch.setattr(test_replay, "HERE", str(tmp_path))
    loaded, _ = test_replay.load_case(os.path.basename(path)[:-3])
    assert (loaded.shared_size, loaded.vector_align) == (p.shared_size, p.vector_align)
    test_replay.test_oracle_still_gives_the_saved_outputs(os.path.basename(path)[:-3])


def test_an_out_of_bounds_dynamic_shared_group_starts_past_the_end():
    """Fuzz seed 67000099 (vulkan's profile, checked): a shared_dynamic array of 33 f32 and groups of 4; the
    violating group started at element 32 (33 // 4 groups in), in bounds and never written, so the oracle
    refused the program for reading uninitialized memory instead of for the out-of-bounds group."""
    p = kernelgen.generate(67000099, avoid={"math_f64"}, checked=True)
    assert p.violation == "vector group" and p.shared_size == 33
    case = fuzzcase.Case(p.name, p.source, p.grid, p.block, p.make_args(), p.features, p.shared_size)
    with pytest.raises(fuzzcase.OracleError, match=r"index \d+ is out of bounds of 'dyn\d+' \(33 elements\)"):
        case.oracle()
