"""The CLI: `baracuda ops | check | bench` and their options, --version, --help, unknown families;
docs/OPS.md kept current."""

from __future__ import annotations

import json
import pathlib

import pytest
import torch

from baracuda.cli import build_parser, main
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
    either = select_cases("softmax", quick=False, match="float32|no such case")
    assert [c.name for _, c in either] == [c.name for _, c in f32]


def test_version(capsys):
    import baracuda

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"baracuda {baracuda.__version__}"


@pytest.mark.parametrize("cmd", ["check", "ops", "bench"])
def test_unknown_family_exits_2_naming_the_known_ones(cmd, capsys):
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--family", "no_such_family"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "no_such_family" in err and "invalid choice" in err
    for fam in registry.families():
        assert fam in err, fam


@pytest.mark.parametrize("cmd", ["ops", "check", "bench", "demo"])
def test_every_option_has_help(cmd, capsys):
    from baracuda.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd").choices[cmd]
    for action in sub._actions:
        assert action.help, (cmd, action.option_strings)
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: baracuda {cmd}")
    for action in sub._actions:
        for opt in action.option_strings:
            assert opt in out, (cmd, opt)


def test_top_level_help_lists_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(c in out for c in ("ops", "check", "bench", "demo", "--version"))


def test_ops_table_reads(capsys):
    """Directions in words, every dtype of a plan, each candidate with its backend."""
    assert main(["ops", "--family", "softmax"]) == 0
    out = capsys.readouterr().out
    data = json.loads(render("json", "softmax"))
    assert "forward" in out and "backward" in out
    for r in data["plans"]:
        block = out.split(f"/ {r['plan']}:", 1)[1].split("\nsoftmax / ", 1)[0]
        assert ", ".join(r["dtypes"]) in " ".join(block.split())
        for cand in r["candidates"]:
            assert cand in " ".join(block.split()), cand


def test_bench_train_shape_is_checked():
    with pytest.raises(SystemExit) as err:
        build_parser().parse_args(["bench", "--train", "4y2048"])
    assert err.value.code == 2
    args = build_parser().parse_args(["bench", "--train", "4x2048", "1x512"])
    assert args.train == [(4, 2048), (1, 512)]
