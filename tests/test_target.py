"""polykern.target: parsing against registered schemas, canonical form, errors that list valid choices."""
import pytest

from polykern.errors import TargetError
from polykern.target import Attr, Target, TargetKind, get_kind, list_kinds
from polykern.testing.isolation import isolated


@pytest.fixture(autouse=True)
def _kinds(monkeypatch):
    monkeypatch.setenv("POLYKERN_BACKEND_AUTOLOAD", "0")  # only the kinds registered here exist
    with isolated():
        for name in [n for n in list_kinds()]:
            from polykern import registry

            registry.remove(f"target.kind.{name}")
        TargetKind("tcuda", "cuda", {
            "arch": Attr("str", "sm_80", ("sm_70", "sm_80", "sm_90"), "GPU architecture"),
            "maxregs": Attr("int", 0, None, "register limit, 0 = none"),
            "fast-math": Attr("bool", False, None, "allow fast math"),
            "mattr": Attr("str", None, None, "extra features"),
        }, doc="test CUDA").register()
        TargetKind("tnvptx", "cuda", {"arch": Attr("str", "sm_80")}).register()
        TargetKind("tplain", "opencl").register()
        yield


def test_parse_defaults_and_canonical():
    t = Target("tcuda")
    assert t.kind == "tcuda" and t.module_kind == "cuda"
    assert dict(t.attrs) == {"arch": "sm_80", "fast-math": False, "maxregs": 0, "mattr": None}
    assert str(t) == "tcuda"
    t2 = Target.parse("  tcuda   -maxregs=64 -arch=sm_90  -fast-math -mattr=+a,-b ")
    assert str(t2) == "tcuda -arch=sm_90 -fast-math=true -mattr=+a,-b -maxregs=64"
    assert t2["maxregs"] == 64 and t2.get("fast-math") is True
    assert Target(str(t2)) == t2 and hash(Target(str(t2))) == hash(t2) and t2 == str(t2)
    assert Target("tcuda -arch=sm_80") == Target("tcuda")  # default values are not printed
    assert Target.parse(t2) is t2
    assert str(Target("tnvptx -arch=sm_90")) == "tnvptx -arch=sm_90" and Target("tnvptx").module_kind == "cuda"


@pytest.mark.parametrize("text,value", [("true", True), ("1", True), ("YES", True), ("off", False),
                                        ("false", False), ("0", False)])
def test_bool_spellings(text, value):
    assert Target(f"tcuda -fast-math={text}")["fast-math"] is value


def test_double_dash_and_with_attrs():
    assert Target("tcuda --arch=sm_70")["arch"] == "sm_70"
    t = Target("tcuda").with_attrs(arch="sm_90", maxregs=32)
    assert str(t) == "tcuda -arch=sm_90 -maxregs=32"
    with pytest.raises(TargetError, match="must be a int"):
        Target("tcuda", maxregs="32")
    with pytest.raises(TargetError, match="valid choices"):
        Target("tcuda", arch="sm_10")


@pytest.mark.parametrize("spec,match", [
    ("", "empty target string; valid kinds: tcuda, tnvptx, tplain"),
    ("tcdua", r"unknown target kind 'tcdua'; valid kinds: tcuda, tnvptx, tplain \(did you mean 'tcuda'\?\)"),
    ("tcuda -arc=sm_90", r"no attribute -arc; valid attributes: -arch \(str; one of sm_70, sm_80, sm_90; default "
                         r"sm_80 — GPU architecture\);.*\(did you mean -arch\?\)"),
    ("tcuda -arch=sm_91", r"invalid value 'sm_91' for -arch; valid choices: sm_70, sm_80, sm_90 \(did you mean"),
    ("tcuda -maxregs=lots", "-maxregs takes an integer, not 'lots'"),
    ("tcuda -maxregs", "-maxregs needs a value, e.g. -maxregs=N"),
    ("tcuda -arch", "-arch needs a value, e.g. -arch=sm_70"),
    ("tcuda -fast-math=maybe", "-fast-math is a bool"),
    ("tcuda arch=sm_90", "expected -key=value, got 'arch=sm_90'"),
    ("tcuda -arch=sm_90 -arch=sm_70", "given twice"),
    ("-arch=sm_90", "must start with a target kind"),
    ("tplain -x=1", "target 'tplain' takes no attributes"),
])
def test_errors_list_valid_choices(spec, match):
    with pytest.raises(TargetError, match=match):
        Target(spec)


def test_non_string_spec():
    with pytest.raises(TargetError, match="a target is a string"):
        Target(42)


def test_kind_schema_validation_and_registry():
    with pytest.raises(ValueError):
        TargetKind("Bad Name", "cuda")
    with pytest.raises(ValueError):
        TargetKind("ok", "cuda", {"x": "not an Attr"})
    with pytest.raises(ValueError):
        Attr("float", 1.0)
    with pytest.raises(ValueError, match="already registered"):
        TargetKind("tplain", "opencl").register()
    assert get_kind("tcuda").doc == "test CUDA"
    assert "-arch: str; one of sm_70, sm_80, sm_90; default sm_80 — GPU architecture" in get_kind("tcuda").describe()


def test_no_kinds_registered_message():
    from polykern import registry

    for name in list_kinds():
        registry.remove(f"target.kind.{name}")
    with pytest.raises(TargetError, match="no backend is registered"):
        Target("cuda")
