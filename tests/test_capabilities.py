"""One capability declaration per target kind (polykern/capabilities.py), and every list derived from it.

Each check that can find a declaration and a list that disagree fails naming the target kind and the
file to fix. The lists themselves are derived (tests/runtimes.py's skips, the fuzzer's refusals and
profiles, the support table of docs/language.md); what remains hand-kept is checked here against the
declarations: ``numerics.BACKENDS`` (the numeric profiles kinds name) and the backends' conformance modules.
"""
import importlib
import os

import pytest

from polykern import backends, capabilities, numerics, registry
from polykern.capabilities import Capabilities
from polykern.errors import TargetError
from polykern.target import TargetKind
from polykern.testing import fuzzcase, fuzzprofile, kernelgen, support_table
from polykern.testing.isolation import isolated
from runtimes import all_target_kinds, runnable_targets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the string-prefix registry keys the capability record replaced (docs/backends.md "Capabilities")
RETIRED_KEYS = ("matrix.support.", "async_copy.native.", "hopper.support.", "debug_print.support.")


def _codegen_file(kind):
    """Where target kind ``kind`` is declared: its backend's codegen module, relative to the repository."""
    rec = backends.record_for_kind(registry.get(f"target.kind.{kind}").module_kind)
    path = importlib.import_module(f"polykern_{rec.name}.codegen").__file__
    return os.path.relpath(path, ROOT)


def _in_tree(kind):
    return not _codegen_file(kind).startswith("..")


def test_every_target_kind_declares_capabilities_of_known_features():
    for kind in all_target_kinds():
        caps = capabilities.of(kind)
        assert isinstance(caps, Capabilities), kind
        unknown = set(caps.refuses) - set(kernelgen.FEATURES)
        assert not unknown, (f"{_codegen_file(kind)}: target kind {kind!r} declares refusals of "
                             f"{sorted(unknown)}, which are no polykern.testing.kernelgen.FEATURES name")


def test_every_kind_keeps_declared_promises_and_every_profile_is_kept():
    """numerics.BACKENDS (the columns of the promise table of docs/correctness.md) are the numeric profiles:
    every target kind keeps one of them (its own name unless its Capabilities.numerics names another,
    as a kind that reuses a code generator does), and each profile is some in-tree kind's own."""
    for kind in all_target_kinds():
        assert capabilities.of(kind).numerics in numerics.BACKENDS, (
            f"{_codegen_file(kind)}: target kind {kind!r} keeps the numeric promises "
            f"{capabilities.of(kind).numerics!r}, which python/polykern/numerics.py BACKENDS does not list: "
            f"name one of {list(numerics.BACKENDS)} in its Capabilities(numerics=...), or add its promises there")
    own = {k for k in all_target_kinds() if _in_tree(k) and capabilities.of(k).numerics == k}
    unkept = sorted(set(numerics.BACKENDS) - own)
    assert not unkept, (f"python/polykern/numerics.py: BACKENDS lists the profiles {unkept}, which no in-tree "
                        "target kind keeps as its own: remove them (and regenerate docs/correctness.md's table)")


def test_no_backend_keeps_a_hand_list_beside_its_declaration():
    """What a target kind refuses, lacks or promises is its Capabilities: a conformance module that
    still defines SKIPS, REFUSES or NUMERICS would be a second definition that nothing reads."""
    backends.load_all()
    for kind in all_target_kinds():
        rec = backends.record_for_kind(registry.get(f"target.kind.{kind}").module_kind)
        try:
            conf = importlib.import_module(f"polykern_{rec.name}.conformance")
        except ModuleNotFoundError:
            continue
        stale = [name for name in ("SKIPS", "REFUSES", "NUMERICS") if hasattr(conf, name)]
        assert not stale, (f"{os.path.relpath(conf.__file__, ROOT)} defines {', '.join(stale)}: declare what "
                           f"target kind {kind!r} refuses and promises in its Capabilities ({_codegen_file(kind)}) "
                           "and keep only TARGETS and device_skips there")


def test_the_retired_registry_keys_are_gone():
    backends.load_all()
    for prefix in RETIRED_KEYS:
        assert registry.names(prefix) == [], (
            f"{registry.names(prefix)} registered: declare it in the target kind's Capabilities "
            "(polykern/capabilities.py), which the pipeline reads, instead")


def test_derived_lists_agree_with_the_declarations():
    """The conformance skips, the fuzzer's refusals and profiles and the docs table, from one declaration."""
    for target, _, skips in runnable_targets():
        kind = target.split()[0]
        caps = capabilities.of(kind)
        for feature, why in caps.refuses.items():
            assert skips.get(feature) == why, (kind, feature, skips)
        if caps.matrix is None:  # (a device may lack what its kind declares: Vulkan without cooperative matrices)
            assert "matrix" in skips, (kind, skips)
    for kind in all_target_kinds():
        caps = capabilities.of(kind)
        assert fuzzcase.declared_refusals(kind) == dict(caps.refuses)
        assert fuzzprofile.refused_features(kind) == frozenset(caps.refuses)
        assert fuzzcase.numerics_backend(kind) == caps.numerics
    table = support_table.refusals()
    assert sorted(table) == all_target_kinds()
    for kind in all_target_kinds():
        assert table[kind] == dict(capabilities.of(kind).refuses), kind


def test_a_new_target_kind_joins_every_derived_list_from_its_declaration():
    """One declaration, no list edited: its refusals, its conformance skips (matrix where it declares no
    matrix support) and its fuzz profile follow."""
    def matrix(target, fn, stmt):
        return None

    with isolated():
        TargetKind("zzplain", "zzplain", capabilities=Capabilities(
            numerics="llvm", refuses={"f64": "zzplain has no doubles"}, no_matrix="no engine")).register()
        TargetKind("zzmatrix", "zzmatrix", capabilities=Capabilities(matrix=matrix, debug_print=True)).register()
        assert capabilities.conformance_skips("zzplain") == {
            "f64": "zzplain has no doubles",
            "matrix": "zzplain has no matrix fragments: they are refused at build (no engine)"}
        assert capabilities.conformance_skips("zzmatrix") == {}
        assert fuzzcase.declared_refusals("zzplain") == {"f64": "zzplain has no doubles"}
        assert fuzzprofile.profile_features("zzplain") == {"f64", "matrix"}
        assert fuzzcase.numerics_backend("zzplain") == "llvm"
        assert capabilities.of("zzmatrix").numerics == "zzmatrix"  # its own name unless it says otherwise


def test_the_pipeline_refuses_by_the_declaration():
    """pk.debug_print and matrix fragments are refused on a kind whose declaration leaves them out, with
    the message naming the kinds that print (read from the declarations)."""
    import polykern as pk
    from polykern import Buffer, f32
    from polykern.errors import KernelTypeError

    @pk.kernel
    def prints(x: Buffer[f32]):
        pk.debug_print("x=%f", x[0])

    with pytest.raises(KernelTypeError, match=r"not available on target 'webgpu' \(it prints on [a-z, ]*opencl"):
        pk.build([prints], targets=["webgpu"])
    printing = [k for k in all_target_kinds() if capabilities.of(k).debug_print]
    assert {"llvm", "cuda", "nvptx", "opencl"} <= set(printing) and "webgpu" not in printing


@pytest.mark.parametrize("bad,match", [
    (dict(refuses={"F64": "why"}), "feature name and the reason"),
    (dict(refuses={"f64": ""}), "feature name and the reason"),
    (dict(matrix="yes"), "Capabilities.matrix is a function or None"),
    (dict(matrix=lambda t, f, s: None, no_matrix="none"), "says why a kind has no matrix"),
    (dict(debug_print="yes"), "debug_print is a bool"),
    (dict(atomics={"i128": "no"}), "Capabilities.atomics: each entry is an element type"),
    (dict(atomics={"i8": "maybe"}), "Capabilities.atomics: each entry is an element type"),
])
def test_a_bad_declaration_is_refused_when_it_is_made(bad, match):
    with pytest.raises(ValueError, match=match):
        Capabilities(**bad)


def test_capabilities_of_names_unknown_kinds_and_bad_records():
    with pytest.raises(TargetError, match="unknown target kind 'nosuchkind'.*registered: "):
        capabilities.of("nosuchkind")
    with pytest.raises(ValueError, match="capabilities must be a polykern.capabilities.Capabilities"):
        TargetKind("zzbad", "zzbad", capabilities={"f64": "no"})
