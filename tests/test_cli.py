"""`baracuda ops | check`, and docs/OPS.md kept current."""

from __future__ import annotations

import json
import pathlib

import pytest
import torch

from baracuda.cli import main
from baracuda.core import registry
from baracuda.tools.ops import render

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_ops_lists_every_plan_in_every_format(capsys):
    assert main(["ops"]) == 0
    table = capsys.readouterr().out
    data = json.loads(render("json"))
    names = {r["plan"] for r in data["plans"]}
    assert names == {p.__name__ for p in registry.plans()}
    for name in names:
        assert name in table
    for row in data["plans"]:
        assert row["candidates"] and row["dtypes"] and row["guarantee"] != "-", row
        assert row["partner"] == "-" or row["partner"] in names
    assert data["import_errors"] == {}


@pytest.mark.skipif(torch.cuda.is_available(), reason="docs/OPS.md is generated on the CPU CI; "
                    "with CUDA the defaults move to cuDNN / cuBLASLt and their guarantees")
def test_docs_ops_md_is_generated_and_current():
    path = ROOT / "docs" / "OPS.md"
    assert path.exists(), "docs/OPS.md missing: run `baracuda ops --format markdown > docs/OPS.md`"
    assert path.read_text() == render("markdown"), (
        "docs/OPS.md is stale: run `baracuda ops --format markdown > docs/OPS.md`")


def test_ops_family_filter(capsys):
    assert main(["ops", "--family", "softmax", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["family"] for r in data["plans"]} == {"softmax"}


def test_check_runs_plans_against_references(capsys):
    assert main(["check", "--family", "softmax", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "SoftmaxPlan" in out and "0 failed" in out


def test_bench_without_gpu_says_so(capsys):
    import torch

    if torch.cuda.is_available():
        return
    assert main(["bench", "--quick"]) == 2
    assert "no CUDA device" in capsys.readouterr().out


def test_bench_match_selects_cases():
    """`bench --match` keeps the cases whose "name shape" contains the text (CPU: the list
    only; running them needs a GPU)."""
    from baracuda.tools.bench import select_cases

    every = select_cases("softmax", quick=False)
    f32 = select_cases("softmax", quick=False, match="float32")
    quick = select_cases("softmax", quick=True)
    assert f32 and len(f32) < len(every)
    assert all("float32" in f"{c.name} {c.shape}" for _, c in f32)
    assert not any("float32" in c.shape for _, c in quick)  # the quick set is bf16
    assert select_cases("softmax", quick=False, match="no such case") == []
