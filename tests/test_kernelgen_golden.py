"""The fuzzer's generator (polykern.testing.kernelgen) makes the same programs for the same seeds: a golden
sha256 over the programs of fixed seeds under each option (default, checked, fast math, every section
forced on, the programs of before device functions, a refusal profile).

This is a change detector: a seed names a program in saved fuzz cases, replay lines and regression tests
(tests/fuzz_regressions/, ``kernelgen.generate(seed, ...)`` in tests), so a change to what a seed generates
must be deliberate. When you change the generator on purpose (a new section, a new statement kind, a
different draw), update :data:`GOLDEN` in the same commit (run this file: the failure prints the new
value) and say in the commit message which programs changed and why; a refactoring must leave it as is.
Only the generator's own output is hashed (source and every GenProgram field, the arguments' seed but
not NumPy's values), so the golden does not depend on the NumPy version nor on what backends declare.
"""
import hashlib

import pytest

from polykern.testing import kernelgen

SEEDS = range(300)
#: a webgpu-like refusal profile, spelled out (fuzzprofile reads the backends' declarations, which change
#: on their own)
PROFILE = frozenset(("f64", "i8", "u8", "i16", "u16", "i64", "u64", "bf16", "bool_buffer", "math_f64", "matrix",
                     "specials"))
OPTIONS = {
    "default": {},
    "checked": {"checked": True},
    "fast_math": {"fast_math": True},
    "before_functions": {"avoid": kernelgen.BEFORE_FUNCTIONS},
    "profile": {"avoid": PROFILE},
    **{f"{s}=1": {"probability": {s: 1.0}, "checked": True} for s in sorted(kernelgen.PROBABILITY)},
}
#: sha256 per option of the programs of SEEDS (the generator of commit 7df67d4, unchanged when it was split into modules)
GOLDEN = {
    "before_functions": "7e06bf59fee0c41df9fe7c031adf89bc23ca2359b41dc3731ba504c193836f1f",
    "checked": "69fa4b2a0028298b13906375efe499e31784af9d8b4190ae86b6ca9c42c4e66e",
    "default": "9ec7c26abd8df9e29ea0d6d7d52993f6dfd7dfbe49d24dfad38273462bcf68cf",
    "fast_math": "63d59e618c569e7038ab4746ec4761a4192901d70077851a93da1c33d882a92d",
    "matrix=1": "551a17b7f30905d68c2de412fa98b31b732917e285627878694c138f1f4c6dee",
    "memory_functions=1": "9f787a2e9bb66b878d53f4c4544e3ec31076e536d2310d657ece0261306a80b5",
    "profile": "090572a38f9c92ae99a5c27e1137a3fb6c9f145402d0ecb5ad9dacadc56a1aec",
    "rotates=1": "5849ff52f2ceee80f408248f0677dcb52c092a475878167129c20822d96ef696",
    "shared_dynamic=1": "b2471dd6a0fae56c559bbb4881633ad24a1de409c85769558bcbf04385b67017",
    "subgroup_uniform=1": "a429740f95619666cf4795ab6131ca4f2f003433d3ee478241fbe6de1daaf2ed",
    "vectors=1": "bf58f8008e71a65d49ad719573845b28152466657a7cf9ea53a234cf355da276",
}


def _digest(options) -> str:
    h = hashlib.sha256()
    for seed in SEEDS:
        p = kernelgen.generate(seed, **options)
        h.update(repr((p.seed, p.name, p.grid, p.block, p.params, sorted(p.features), p.args_seed, p.sizes,
                       p.finite, p.shared_size, p.violation, p.vector_align, p.fast_math)).encode())
        h.update(p.source.encode())
    return h.hexdigest()


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_the_same_seeds_give_the_same_programs(option):
    got = _digest(OPTIONS[option])
    assert got == GOLDEN[option], (
        f"kernelgen's programs for {option} changed (sha256 {got}); if that is intended, update GOLDEN "
        f"(see this file's docstring)")


def test_the_golden_covers_every_option_and_each_option_differs():
    assert sorted(GOLDEN) == sorted(OPTIONS)
    assert len(set(GOLDEN.values())) == len(GOLDEN)  # each option makes other programs: all are exercised
