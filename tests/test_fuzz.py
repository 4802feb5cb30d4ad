"""The random kernel generator, the reducer, the declared refusals, and tools/fuzz.py run for real
(a bounded budget; long runs are recorded in docs/correctness.md)."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import polykern as pk
from polykern.errors import KernelSyntaxError, KernelTypeError
from polykern.testing import fuzzcase, kernelgen
from polykern.testing.reduce import reduce_source
from runtimes import compile_targets

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(REPO, "tools", "fuzz.py")
#: generator features left out while a bug they find is open (device-function inlining drops
#: the hidden size of a pk.shared_dynamic array declared in a device function, and the alignment that
#: its pk.vload/pk.vstore/pk.copy_async groups need)
OPEN = "memory_functions"
sys.path.insert(0, os.path.join(REPO, "tools"))


def test_same_seed_same_program_and_inputs():
    a, b = kernelgen.generate(123), kernelgen.generate(123)
    assert a.source == b.source and a.grid == b.grid and a.block == b.block
    for x, y in zip(a.make_args(), b.make_args()):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert kernelgen.generate(124).source != a.source


def test_generator_covers_the_language():
    text = "\n".join(kernelgen.generate(s).source for s in range(300))
    for t in ("bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"):
        assert re.search(rf"\bBuffer\[{t}\b", text), t
    needles = ['"readonly"', "pk.local(", "pk.shared(", "pk.barrier()", "if ", "elif ", "else:", "for ",
               "while ", "break", "continue", "return", "pk.atomic_add(", "pk.atomic_min(", "pk.atomic_max(",
               "pk.select(", " if ", "NAN", "INF", "pk.sin(", "pk.exp(", "pk.pow(", "pk.fma(", "pk.sqrt(",
               "pk.rsqrt(", "pk.floor(", "pk.min(", " // ", " % ", " << ", " >> ", "~", "i32(", "u8(",
               "f16(", " += ", "pk.group_id(0)", "range(", "@pk.func", "pk.constexpr", ".specialize(",
               "pk.copy_async(", "pk.copy_commit()", "pk.copy_wait(1)", "pk.vload(", "pk.vstore(",
               "pk.shared_dynamic(", "pk.frag_load(", "pk.frag_fill(", "pk.frag_scale(", "pk.mma(",
               "pk.frag_store(", "Buffer[u64", "<< (64 - k"]
    missing = [n for n in needles if n not in text]
    assert not missing, missing


@pytest.mark.parametrize("seed", [*range(0, 40, 4), 4000262])  # 4000262: a constant `<<=` amount
def test_generated_programs_are_valid_for_the_frontend_and_the_oracle(seed, tmp_path):
    p = kernelgen.generate(seed, avoid=kernelgen.BEFORE_FUNCTIONS if seed == 4000262 else {OPEN})
    case = fuzzcase.Case(p.name, p.source, p.grid, p.block, p.make_args(), p.features, p.shared_size)
    case.kernel(str(tmp_path))
    r = case.oracle()  # raises OracleError for a program without one meaning
    assert set(r.buffers) == {n for n, _, role in p.params if role is not None}


COMPILE_TARGETS = compile_targets()  # one per registered target kind


def test_every_refusal_is_declared_and_nothing_else_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYKERN_COMPILE_FORCE_FALLBACK", "1")  # compile only
    refused = {t: 0 for t in COMPILE_TARGETS}
    for seed in range(12):
        p = kernelgen.generate(seed, avoid={OPEN})
        k = fuzzcase.load_kernel(p.source, p.name, str(tmp_path))
        for t in COMPILE_TARGETS:
            declared = fuzzcase.declared_refusals(t.split()[0])
            try:
                pk.build([k], [t])
            except (KernelTypeError, KernelSyntaxError) as e:
                refused[t] += 1
                if "matrix" in p.features and fuzzcase.matrix_refusal(k, t) == str(e).splitlines()[0]:
                    continue  # a fragment combination the kind does not declare it compiles (ir/matrix.py)
                assert p.features & set(declared), (
                    f"{t} refused seed {seed}, which uses only {sorted(p.features)} (declared: "
                    f"{sorted(declared)}): {e}")
    assert refused["webgpu -shader_f16=true"] > 0 and refused["metal"] > 0  # the check did run
    assert refused["llvm"] == 0


def test_declared_refusals_are_real():
    """A declared feature is refused: a kernel using f64 does not compile for webgpu or metal."""
    declared = fuzzcase.declared_refusals("webgpu")
    assert {"f64", "i64", "u64", "i8", "u8", "i16", "u16", "bool_buffer"} <= set(declared)
    assert "f64" in fuzzcase.declared_refusals("metal")
    assert fuzzcase.declared_refusals("llvm") == {}


def test_reducer_keeps_the_failure_and_shrinks():
    p = kernelgen.generate(7)
    src = p.source.replace("    g = pk.global_id(0)\n", "    g = pk.global_id(0)\n    o_mark = pk.sqrt(f32(2.0))\n", 1)
    small = reduce_source(src, p.name, lambda s: "o_mark = pk.sqrt" in s, time_budget=30)
    assert "o_mark = pk.sqrt" in small
    assert len(small.splitlines()) < len(src.splitlines()) / 2
    compile(small, "reduced", "exec")


def test_saved_case_round_trips(tmp_path, monkeypatch):
    import fuzz  # tools/fuzz.py

    p = kernelgen.generate(5, avoid={OPEN})
    args = p.make_args()
    case = fuzzcase.Case(p.name, p.source, p.grid, p.block, args, p.features, p.shared_size)
    oracle = case.oracle()
    out = fuzzcase.Outcome("opencl", "disagree", "example", "mismatch")
    path = fuzz.save_case(str(tmp_path), p, p.source, out, oracle, ["opencl"], args)
    meta = json.loads(open(path[:-3] + ".json").read())
    assert meta["open_on"] == ["opencl"] and meta["kernel"] == p.name and meta["seed"] == 5
    sys.path.insert(0, os.path.join(REPO, "tests", "fuzz_regressions"))
    import test_replay

    monkeypatch.setattr(test_replay, "HERE", str(tmp_path))
    loaded, _ = test_replay.load_case(os.path.basename(path)[:-3])
    for x, y in zip(loaded.args, args):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    for name, arr in loaded.oracle().buffers.items():
        np.testing.assert_array_equal(arr, oracle.buffers[name])


def test_fuzzer_programs_with_bf16_save_and_replay(tmp_path, monkeypatch):
    """kernelgen adds bf16 (its own random stream; avoid={"bf16"} leaves it out); a saved case keeps bf16
    arguments and outputs as bits (dtype "bf16") and replays to the same oracle outputs."""
    import fuzz  # tools/fuzz.py

    sys.path.insert(0, os.path.join(REPO, "tests", "fuzz_regressions"))
    import test_replay

    seed = next(s for s in range(100) if "bf16" in kernelgen.generate(s).features)
    p = kernelgen.generate(seed)
    assert "Buffer[bf16" in p.source and "bf16(" not in kernelgen.generate(seed, avoid={"bf16"}).source
    args = p.make_args()
    case = fuzzcase.Case(p.name, p.source, p.grid, p.block, args, p.features)
    oracle = case.oracle()
    path = fuzz.save_case(str(tmp_path), p, p.source, fuzzcase.Outcome("opencl", "disagree", "x", "y"), oracle,
                          ["opencl"], args)
    meta = json.loads(open(path[:-3] + ".json").read())
    assert any(a["dtype"] == "bf16" and all(isinstance(v, int) for v in a["values"]) for a in meta["args"])
    monkeypatch.setattr(test_replay, "HERE", str(tmp_path))
    loaded, _ = test_replay.load_case(os.path.basename(path)[:-3])
    for x, y in zip(loaded.args, args):
        np.testing.assert_array_equal(np.atleast_1d(x).view(np.uint8), np.atleast_1d(y).view(np.uint8))
    test_replay.test_oracle_still_gives_the_saved_outputs(os.path.basename(path)[:-3])


# The runner in a child process sees this process's imports (a Bazel test has no installed polykern).
_PATH = os.pathsep.join(p for p in sys.path if p)


def _fuzz(*argv, timeout=300):
    return subprocess.run([sys.executable, FUZZ, *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, env=dict(os.environ, PYTHONPATH=_PATH))


def test_runner_bounded_budget_on_the_cpu_backend_finds_nothing():
    p = _fuzz("--seed", "0", "--count", "400", "--time-budget", "40", "--targets", "llvm", "--no-save")
    # every section, device functions with memory too (the inlining fixes landed)
    last = p.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"fuzz: (\d+) programs x 1 targets, (\d+) disagreements", last)
    assert m, p.stdout[-3000:] + p.stderr[-3000:]
    assert int(m.group(1)) >= 10 and m.group(2) == "0", p.stdout[-3000:]
    assert p.returncode == 0


def test_runner_names_absent_runtimes_as_skipped_and_is_deterministic():
    a = _fuzz("--seed", "5", "--count", "2", "--targets", "llvm,rocm", "--no-save", "--avoid", OPEN)
    b = _fuzz("--seed", "5", "--count", "2", "--targets", "llvm,rocm", "--no-save", "--avoid", OPEN)
    assert "fuzz: rocm: skipped (no runtime here" in a.stdout, a.stdout + a.stderr
    assert a.stdout.strip().splitlines()[-1] == "fuzz: 2 programs x 1 targets, 0 disagreements", a.stdout
    strip = [ln for ln in a.stdout.splitlines() if not re.match(r"fuzz: [\d.]+ s,", ln)]
    assert strip == [ln for ln in b.stdout.splitlines() if not re.match(r"fuzz: [\d.]+ s,", ln)]


def test_a_runtime_that_kills_the_process_is_reported_and_the_run_goes_on(tmp_path):
    # Every Python process started with this PYTHONPATH makes the llvm check of program 1 die, as a crashing
    # driver would (SIGKILL: the CPU runtime handles SIGSEGV itself); the supervisor must blame that program
    # and target, and run program 2.
    (tmp_path / "sitecustomize.py").write_text(
        "import os, signal\n"
        "from polykern.testing import fuzzcase\n"
        "_real = fuzzcase.check_target\n"
        "def check_target(case, oracle, target, **kw):\n"
        "    if case.name == 'fz5000001' and target == 'llvm':\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return _real(case, oracle, target, **kw)\n"
        "fuzzcase.check_target = check_target\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), _PATH]))
    p = subprocess.run([sys.executable, FUZZ, "--seed", "5", "--count", "3", "--targets", "llvm", "--no-save",
                        "--avoid", OPEN],
                       capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert "DISAGREE seed=5000001 target=llvm process-crash" in p.stdout, p.stdout + p.stderr
    assert "--start 1 --count 1" in p.stdout  # the replay command
    assert p.stdout.strip().splitlines()[-1] == "fuzz: 3 programs x 1 targets, 1 disagreements", p.stdout
    assert "fuzz: llvm: disagree 1, ok 2" in p.stdout, p.stdout
    assert p.returncode == 1


def test_a_program_that_hangs_is_a_timeout_and_the_run_goes_on(tmp_path):
    # The llvm check of program 1 sleeps for an hour in every worker started with this PYTHONPATH, as a
    # hanging compiler would: the supervisor must kill that worker (and nothing else), count a "timeout"
    # for program 1 on llvm, still run program 1 on opencl, and run program 2.
    pidfile = tmp_path / "hung.pid"
    (tmp_path / "sitecustomize.py").write_text(
        "import os, time\n"
        "from polykern.testing import fuzzcase\n"
        "_real = fuzzcase.check_target\n"
        "def check_target(case, oracle, target, **kw):\n"
        "    if case.name == 'fz5000001' and target == 'llvm':\n"
        f"        open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "        time.sleep(3600)\n"
        "    return _real(case, oracle, target, **kw)\n"
        "fuzzcase.check_target = check_target\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), _PATH]))
    p = subprocess.run([sys.executable, FUZZ, "--seed", "5", "--count", "3", "--targets", "llvm,opencl",
                        "--no-save", "--program-timeout", "8", "--avoid", "subgroups," + OPEN],  # opencl runs all 3
                       capture_output=True, text=True, timeout=240, cwd=REPO, env=env)
    assert "DISAGREE seed=5000001 target=llvm timeout: building or running it took more than 8 s" in p.stdout, \
        p.stdout + p.stderr
    assert "--start 1 --count 1 --targets 'llvm'" in p.stdout  # the replay command
    assert p.stdout.strip().splitlines()[-1] == "fuzz: 3 programs x 2 targets, 1 disagreements", p.stdout
    assert "fuzz: llvm: ok 2, timeout 1" in p.stdout and "fuzz: opencl: ok 3" in p.stdout, p.stdout
    assert p.returncode == 1
    with pytest.raises(ProcessLookupError):  # the hung worker was killed, not left sleeping
        os.kill(int(pidfile.read_text()), 0)


def test_jobs_give_the_same_programs_and_report_order():
    one = _fuzz("--seed", "5", "--count", "5", "--targets", "llvm", "--no-save", "-v", "--avoid", OPEN)
    two = _fuzz("--seed", "5", "--count", "5", "--targets", "llvm", "--no-save", "-v", "--jobs", "2",
                "--avoid", OPEN)

    def strip(p):
        return [ln for ln in p.stdout.splitlines() if not re.match(r"fuzz: [\d.]+ s,", ln)]

    assert strip(one) == strip(two), one.stdout + "\n----\n" + two.stdout + two.stderr
    assert [ln.split()[1] for ln in strip(two) if ln.startswith("fuzz: seed=")] == \
        [f"seed={5000000 + i}" for i in range(5)]
    assert two.stdout.strip().splitlines()[-1] == "fuzz: 5 programs x 1 targets, 0 disagreements"


def test_runner_help_prints():
    # argparse formats help strings with %: a '%' in the --avoid feature list crashed --help
    p = subprocess.run([sys.executable, FUZZ, "--help"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=_PATH),
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "--targets" in p.stdout and "--avoid" in p.stdout
