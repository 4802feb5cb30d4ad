"""F13: PoCL 3.1's kernel compiler crashed (SIGSEGV) on pow(NaN, NaN) with NaNs it could see, and hung on
the same inside a loop (fuzz seed 8001165 stopped a long run). The OpenCL C emitter keeps NaN operands
away from pow (pk_pow_float/double). The saved case runs in a child process with a time limit, so a
regression fails this test instead of killing or hanging the test run."""
import os
import subprocess
import sys

import pytest

from polykern.testing import fuzzcase, tier_skip

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PATH = os.pathsep.join(p for p in sys.path if p)

CHILD = """
import sys
sys.path.insert(0, {cases!r})
from test_replay import load_case
from polykern.testing import fuzzcase
case, _ = load_case("fz8001165_opencl")
out = fuzzcase.check_target(case, case.oracle(), "opencl")
print("OUTCOME", out.status, out.detail[:300])
"""


@tier_skip.skipif("pocl", not fuzzcase.runtime_present("opencl"), reason="no OpenCL runtime (pocl) here")
def test_pow_of_visible_nans_builds_and_agrees_on_opencl():
    cases = os.path.join(REPO, "tests", "fuzz_regressions")
    try:
        p = subprocess.run([sys.executable, "-c", CHILD.format(cases=cases)], capture_output=True, text=True,
                           timeout=180, cwd=REPO, env=dict(os.environ, PYTHONPATH=os.pathsep.join([cases, _PATH])))
    except subprocess.TimeoutExpired:
        pytest.fail("the OpenCL build/launch of fz8001165 hung (F13)")
    assert p.returncode == 0, f"the child died (status {p.returncode}): {p.stderr[-2000:]}"
    assert "OUTCOME ok" in p.stdout, p.stdout + p.stderr[-2000:]


def test_the_emitted_pow_is_guarded():
    import polykern as pk

    case = fuzzcase.Case("k", "import polykern as pk\nfrom polykern import Buffer, f32, f64\n"
                              "@pk.kernel\ndef k(a: Buffer[f32], b: Buffer[f64]):\n"
                              "    a[0] = pk.pow(a[1], a[2])\n    b[0] = pk.pow(b[1], b[2])\n", (1, 1, 1), (1, 1, 1), [])
    m = pk.build([case.kernel()], ["opencl"])
    src = m.device_modules()[0].sources["cl"]
    assert "pk_pow_float(" in src and "pk_pow_double(" in src
    assert " = pow(" not in src
