"""One meaning in one place: the integer, conversion, fmod and pow promises of docs/language.md 7 are
written by passes/legalize_numerics.py (selected by ``Capabilities.ints`` / ``Capabilities.floats``), never
again by an emitter or the frontend. A grep over the code generators: a match names the file to fix (move
the rule into the pass, or declare the target's instruction "native" in its capabilities)."""
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]

#: the semantic -> what an emitter's own copy of it looks like (the names and tokens the copies had)
COPIES = {
    "integer division by 0 / MIN // -1": r"SAFE_INT_DIVISION|safe_divisor|def int_divide\b|pk_div_i(8|16|32|64)\b",
    "signed remainder": r"signed_remainder|pk_rem_i(8|16|32|64)\b",
    "shift amount modulo the width": (r"shift amount modulo|and_\(b, ll\.Constant\(b\.type, st\.bits - 1|& \{bits - 1\}u"
                                      r"|mask = ir\.Const\(t\.bits - 1|BitwiseAnd, self\.ty\(t\), b, self\.const\(t, t\.bits - 1"),
    "saturating float -> int": r"saturation_bounds|pk_cvt_|pk_[iu]\d+_from_f32|def float_to_int\b",
    "float % (fmod)": r"pm_fmod|pk_fmod_|FMOD_F32|EXACT_FREM|\|y\| \* 2\^k",
    "pow's C99 special cases": r"pk_pow_f32|POW_F32|def pow\(self",
    "log of f32 subnormals": r"log_subnormal_safe|pk_log2?_f32|LOG2?_F32",
    "float division never by +0.0": r"float_divide|pk_div_f32|DIV_F32",
}


def _emitter_files():
    """The code generators and the frontend (runtimes and tests are not code generation)."""
    roots = [REPO / "python" / "polykern" / "codegen", REPO / "python" / "polykern" / "lang"]
    roots += sorted(p for p in (REPO / "backends").glob("*/polykern_*") if p.is_dir())
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "runtime" not in path.relative_to(root).parts:
                yield path


def test_the_scan_sees_every_backend():
    names = {p.relative_to(REPO).parts[1] for p in _emitter_files() if p.parts[-4] == "backends"
             or "backends" in p.relative_to(REPO).parts[:1]}
    assert {"llvm", "cuda", "rocm", "opencl", "vulkan", "metal", "webgpu", "hexagon"} <= names


@pytest.mark.parametrize("semantic", sorted(COPIES))
def test_no_emitter_keeps_its_own_copy(semantic):
    pattern = re.compile(COPIES[semantic])
    found = []
    for path in _emitter_files():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not found, (f"{semantic} is defined once, by passes/legalize_numerics.py; these files define it "
                       "again:\n" + "\n".join(found))


def test_the_patterns_find_the_copies_they_name():
    """Each pattern matches the code it was written against (the pass itself writes the rules)."""
    text = (REPO / "python" / "polykern" / "passes" / "legalize_numerics.py").read_text()
    assert re.search(COPIES["saturating float -> int"], text)
    assert re.search(COPIES["pow's C99 special cases"], "    def pow(self, t, x, y):")
    assert re.search(COPIES["float % (fmod)"], "C's fmod, exactly: with t = |y| * 2^k the largest such t")
    assert re.search(COPIES["shift amount modulo the width"], "            mask = ir.Const(t.bits - 1, t)")
    assert re.search(COPIES["shift amount modulo the width"], "amount = bld.and_(b, ll.Constant(b.type, st.bits - 1))")
    assert re.search(COPIES["integer division by 0 / MIN // -1"], "    SAFE_INT_DIVISION = True")
