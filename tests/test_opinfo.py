"""Torch's own OpInfo samples for every baracuda.torch function that has an OpInfo: forward and
gradients against torch, contiguous and non-contiguous (harness: tests/opinfo_support.py;
known failures, strict xfails: tests/opinfo_known.py)."""

from __future__ import annotations

import pytest

# torch's OpInfo database imports expecttest (requirements-dev.txt; a GPU machine needs its wheel)
pytest.importorskip("expecttest", reason="torch's OpInfo database needs expecttest")

from opinfo_support import (  # noqa: E402
    FULL,
    FULL_KNOWN_FAILURES,
    INTERPRETER_FULL_KNOWN_FAILURES,
    INTERPRETER_KNOWN_FAILURES,
    KNOWN_FAILURES,
    ON_GPU,
    cases,
    check_case,
)


def _params():
    known = dict(KNOWN_FAILURES)
    if not ON_GPU:
        known.update(INTERPRETER_KNOWN_FAILURES)
    if ON_GPU or FULL:
        known.update(FULL_KNOWN_FAILURES)
    if FULL and not ON_GPU:
        known.update(INTERPRETER_FULL_KNOWN_FAILURES)
    out = []
    for case in cases():
        marks = ()
        if case.key in known:
            marks = (pytest.mark.xfail(strict=True, reason=known[case.key]),)
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
def test_opinfo(case):
    _, fails, _ = check_case(case)
    if fails:
        shown = "\n".join(fails[:12])
        more = f"\n... and {len(fails) - 12} more" if len(fails) > 12 else ""
        pytest.fail(f"{case.id}: {len(fails)} failing samples\n{shown}{more}", pytrace=False)
