"""Refusal profiles of the differential fuzzer (polykern.testing.fuzzprofile, tools/fuzz.py --profile):
a share of the programs leaves out what one target refuses, decided by the program's index alone."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import polykern as pk
from polykern.testing import fuzzcase, fuzzprofile, kernelgen
from polykern.testing.kernelgen_values import TYPE_ORDER
from runtimes import all_target_kinds

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(REPO, "tools", "fuzz.py")
sys.path.insert(0, os.path.join(REPO, "tools"))
_PATH = os.pathsep.join(p for p in sys.path if p)  # a child process sees this process's imports
KINDS = all_target_kinds()
WEBGPU = "webgpu -shader_f16=true"


def _body(source):
    return source.split('INF = float("inf")', 1)[1]  # after kernelgen.HEADER's imports


def test_every_feature_a_backend_may_refuse_can_be_left_out():
    assert set(kernelgen.FEATURES) <= set(kernelgen.AVOIDABLE)
    for kind in KINDS:  # raises for a declared refusal the generator cannot leave out
        assert fuzzprofile.refused_features(kind) == frozenset(fuzzcase.declared_refusals(kind))
    for feature in kernelgen.FEATURES:
        seen = 0
        for seed in range(120):
            seen += feature in kernelgen.generate(seed).features
            p = kernelgen.generate(seed, avoid={feature})
            assert feature not in p.features, (feature, seed)
            if feature in TYPE_ORDER:
                assert not re.search(rf"\b{feature}\b", _body(p.source)), (feature, seed)
        assert seen, f"no program of seeds 0..119 uses {feature}: the check did not run"


def test_webgpu_profile_programs_use_no_refused_feature_and_compile(tmp_path):
    (kind, avoid), = fuzzprofile.profiles([WEBGPU, "llvm"])
    # its refusals, and no NaN/inf literals or inputs: WGSL promises no IEEE specials (numerics)
    # and matrix fragments: webgpu registers no matrix support (ir/matrix.py), it refuses every fragment
    assert kind == "webgpu" and avoid == set(fuzzcase.declared_refusals("webgpu")) | {"specials", "matrix"}
    assert "f64" in avoid and fuzzprofile.profile_features("vulkan") == {"math_f64"}  # vulkan keeps specials
    for seed in range(200):
        p = kernelgen.generate(seed, avoid=avoid)
        assert not p.features & avoid, (seed, sorted(p.features & avoid))
        if seed < 25:  # the webgpu backend accepts them (compiled, not run)
            pk.build([fuzzcase.load_kernel(p.source, p.name, str(tmp_path))], [WEBGPU])


def test_specials_left_out_means_no_nan_or_inf_literal_or_input():
    seen = 0
    for seed in range(60):
        plain = kernelgen.generate(seed)
        seen += bool(re.search(r"\b(NAN|INF)\b", _body(plain.source)))
        p = kernelgen.generate(seed, avoid={"specials"})
        assert not re.search(r"\b(NAN|INF)\b", _body(p.source)), seed
        for a in p.make_args():
            a = np.asarray(a)
            if a.dtype.kind == "f":
                assert np.isfinite(a).all(), (seed, a)
            elif a.dtype.names:  # bf16 bits
                assert ((a.view(np.uint16) & 0x7F80) != 0x7F80).all(), (seed, a)
    assert seen  # the unprofiled programs have them


def test_the_profile_depends_on_the_index_only_and_the_same_seed_gives_the_same_program():
    import fuzz  # tools/fuzz.py

    a = fuzz._parser().parse_args(["--seed", "5", "--targets", "llvm,opencl,vulkan,webgpu"])
    profs, every = fuzz.run_profiles(a)
    assert [k for k, _ in profs] == ["opencl", "vulkan", "webgpu"] and every == 2
    made = [fuzzprofile.profile_for(i, profs, every) for i in range(12)]
    assert [m and m[0] for m in made] == [None, "opencl", None, "vulkan", None, "webgpu"] * 2
    for i in range(12):
        p, made_for = fuzz.program_for(a, i, profs, every)
        q, _ = fuzz.program_for(a, i, profs, every)
        assert made_for == (made[i] and made[i][0])
        assert p.source == q.source
        for x, y in zip(p.make_args(), q.make_args()):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        plain = kernelgen.generate(5 * fuzz.SEED_STRIDE + i)
        if made_for is None:  # an unprofiled program is the one the generator always gave this seed
            assert p.source == plain.source
        else:
            assert not p.features & made[i][1]
    # --profile KIND (what a replay line names) gives the profiled program of any index
    w = fuzz._parser().parse_args(["--seed", "5", "--targets", "vulkan", "--profile", "webgpu"])
    wp, wev = fuzz.run_profiles(w)
    assert fuzz.program_for(w, 5, wp, wev)[0].source == fuzz.program_for(a, 5, profs, every)[0].source
    assert fuzz.run_profiles(fuzz._parser().parse_args(["--profile", "none"])) == ([], 0)
    with pytest.raises(ValueError, match="--profile llvm: that target kind declares no refusals"):
        fuzz.run_profiles(fuzz._parser().parse_args(["--profile", "llvm"]))


def test_a_saved_case_names_its_profile(tmp_path):
    import fuzz  # tools/fuzz.py

    p = kernelgen.generate(5, avoid=fuzzprofile.refused_features("webgpu"))
    args = p.make_args()
    oracle = fuzzcase.Case(p.name, p.source, p.grid, p.block, args, p.features).oracle()
    out = fuzzcase.Outcome(WEBGPU, "disagree", "example", "mismatch")
    path = fuzz.save_case(str(tmp_path), p, p.source, out, oracle, [WEBGPU], args, "webgpu")
    assert json.loads(open(path[:-3] + ".json").read())["profile"] == "webgpu"
    path = fuzz.save_case(str(tmp_path), kernelgen.generate(6), p.source, out, oracle, [WEBGPU], args)
    assert "profile" not in json.loads(open(path[:-3] + ".json").read())


def _fuzz(*argv):
    # the programs these tests name are those of before the generator's 2026-11-28 sections (kernelgen.BEFORE_MEMORY)
    before = ("--avoid", ",".join(sorted(kernelgen.BEFORE_MEMORY)))
    return subprocess.run([sys.executable, FUZZ, *argv, *before], capture_output=True, text=True, timeout=600,
                          cwd=REPO, env=dict(os.environ, PYTHONPATH=_PATH))


def _counts(stdout, target):
    line = next(ln for ln in stdout.splitlines() if ln.startswith(f"fuzz: {target}: "))
    statuses, _, compared = line[len(f"fuzz: {target}: "):].partition("; ")
    return dict((k, int(v)) for k, v in (s.rsplit(" ", 1) for s in statuses.split(", "))), compared


def test_the_summary_counts_what_each_target_ran_and_compared():
    # seed 5, programs 0..7, targets llvm and webgpu: webgpu is the one refusing target, so programs 1, 3,
    # 5, 7 are made for it; the others use what it refuses in part (5000001 uses i16, i64, u8, bf16)
    p = _fuzz("--seed", "5", "--count", "8", "--targets", f"llvm,{WEBGPU}", "--no-save", "-v")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "fuzz: profiles: one program in 2 leaves out what a target refuses, in turn (webgpu: no bf16" in p.stdout
    per = {}
    for ln in p.stdout.splitlines():
        m = re.match(r"fuzz: seed=(\d+) (llvm|webgpu -shader_f16=true): (\w+)", ln)
        if m:
            per.setdefault(m.group(2), []).append((int(m.group(1)) - 5000000, m.group(3)))
    for target in ("llvm", WEBGPU):
        statuses, compared = _counts(p.stdout, target)
        seen = [s for _, s in per[target]]
        assert statuses == {s: seen.count(s) for s in set(seen)}, (target, p.stdout)
        ran = sum(s == "ok" for s in seen)
        own = sum(s == "ok" and i % 2 == 1 for i, s in per[target]) if target == WEBGPU else 0
        assert compared == f"compared {ran} of 8 ({100 * ran / 8:.0f}%)" + (
            f", {own} of them made for its profile" if own else ""), (target, p.stdout)
    assert all(s != "refused" for i, s in per[WEBGPU] if i % 2 == 1), p.stdout  # its profile's programs run
    assert kernelgen.generate(5000001).features & fuzzprofile.refused_features("webgpu")  # unprofiled: refused
    assert "fuzz: seed=5000001 webgpu -shader_f16=true: ok  [made for webgpu]" in p.stdout or \
        "fuzz: seed=5000001 webgpu -shader_f16=true: unchecked" in p.stdout, p.stdout
    # a program replayed alone with the profile its run gave it is the same program: same statuses
    r = _fuzz("--seed", "5", "--start", "1", "--count", "1", "--targets", WEBGPU, "--profile", "webgpu",
              "--no-save", "-v")
    assert re.search(r"fuzz: seed=5000001 webgpu -shader_f16=true: (\w+)", r.stdout).group(1) == dict(
        per[WEBGPU])[1], r.stdout + r.stderr


def test_profile_none_gives_the_programs_of_before():
    p = _fuzz("--seed", "5", "--count", "2", "--targets", f"llvm,{WEBGPU}", "--no-save", "--profile", "none",
              "--profile-every", "1")
    assert "fuzz: profiles: no program is profiled" in p.stdout, p.stdout + p.stderr
    statuses, _ = _counts(p.stdout, WEBGPU)
    assert statuses.get("refused") == 1  # program 1 (i16, i64, u8, bf16) as ever
    bad = _fuzz("--seed", "5", "--count", "1", "--targets", "llvm", "--profile", "llvm")
    assert bad.returncode == 2 and "--profile llvm: that target kind declares no refusals" in bad.stderr
