"""Located refusals of the uniformity rules (docs/language.md 7.5), shared by the tests that check them: a
test file marks the refused statement (``# B:tag`` for a barrier, ``# C:tag`` for a collective) and the
line the message must name as the reason (``# W:tag``)."""
import re

import pytest

import polykern as pk
from polykern.errors import KernelTypeError


def line_of(path, tag):
    """The line of ``path`` marked ``# tag`` (or ``# X:tag``); exactly one must be."""
    with open(path) as f:
        lines = f.read().splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if re.search(rf"# ([A-Z]+:)?{tag}(\s|$)", ln)]
    assert len(hits) == 1, tag
    return hits[0]


def check_refusal(kern, path, mark, tag, headline, why):
    """Building ``kern`` is a KernelTypeError at the line marked ``mark:tag`` whose text has ``headline``, the
    line marked ``W:tag`` and ``why``; the text."""
    with pytest.raises(KernelTypeError) as info:
        pk.build([kern], targets=["llvm"])
    err = info.value
    text = str(err)
    assert headline in text, text
    assert err.loc is not None and err.loc.file == path and err.loc.line == line_of(path, f"{mark}:{tag}"), text
    assert f"line {line_of(path, f'W:{tag}')}" in text, text  # names the condition's line
    assert why in text, text
    return text
