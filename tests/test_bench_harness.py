"""The bench harness's host-side pieces (timing itself needs a GPU and runs in gpu_run.sh)."""

from __future__ import annotations

import json

import pytest
import torch

from baracuda.core import registry
from baracuda.core.spec import BenchCase
from baracuda.tools import bench


def _row(ours_ms, torch_ms, compile_ms):
    return bench.BenchRow("fam", "op fwd", "[4, 4] bf16", "GB/s", bench.Timing(ours_ms, 1.0),
                          {"torch": bench.Timing(torch_ms, 1.0),
                           "torch.compile": bench.Timing(compile_ms, 1.0)}, True)


def test_ratios_are_peer_time_over_ours():
    row = _row(1.0, 2.0, 0.5)
    assert row.ratio("torch") == 2.0 and row.ratio("torch.compile") == 0.5
    failed = bench.BenchRow("f", "n", "s", "GB/s", bench.Timing(1.0, 1.0),
                            {"torch": bench.Timing(float("nan"), float("nan"), "boom")})
    assert failed.ratio("torch") is None and failed.ratio("missing") is None


def test_table_and_json_round_trip(tmp_path):
    rows = [_row(1.0, 2.0, 0.5)]
    table = bench.format_table(rows)
    assert "2.00x" in table and "0.50x" in table and "op fwd" in table
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"rows": [bench.asdict(r) for r in rows]}))
    assert json.loads(path.read_text())["rows"][0]["ours"]["ms"] == 1.0


def test_output_check_catches_wrong_answers():
    a = torch.randn(100)
    assert bench._outputs_match(a, a.clone())
    assert not bench._outputs_match(a, a + 1.0)
    assert not bench._outputs_match((a,), (a[:50],))
    nan = a.clone()
    nan[3] = float("nan")
    assert not bench._outputs_match(nan, a)


def test_output_check_falls_back_to_float64_when_torch_is_the_one_off():
    from baracuda.core.spec import BenchCase

    x = torch.randn(4096, dtype=torch.float64).to(torch.bfloat16)

    def bf16_accumulating_cumsum(x):  # each step rounded to bf16, as a bf16 accumulator does
        out, acc = torch.empty_like(x), torch.zeros((), dtype=x.dtype)
        for i in range(x.numel()):
            acc = acc + x[i]
            out[i] = acc
        return out if x.dtype == torch.bfloat16 else torch.cumsum(x, 0)

    exact = BenchCase("cumsum", "[4096]", lambda d: {"x": x},
                      ours=lambda x: torch.cumsum(x.double(), 0).to(x.dtype),
                      torch_eager=bf16_accumulating_cumsum, bytes=1)
    assert not bench._outputs_match(exact.ours(x), bf16_accumulating_cumsum(x))
    assert bench.outputs_agree(exact, {"x": x})
    wrong = BenchCase("cumsum", "[4096]", lambda d: {"x": x}, ours=lambda x: x + 1.0,
                      torch_eager=bf16_accumulating_cumsum, bytes=1)
    assert not bench.outputs_agree(wrong, {"x": x})


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.png"
    bench.plot([_row(1.0, 2.0, 0.5), _row(2.0, 1.0, 1.0)], str(out))
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("family", sorted(registry.benches()))
def test_every_family_bench_declares_a_cost_model(family):
    cases = registry.benches(family)[family](True)
    assert cases, f"{family}: no benchmark cases"
    for c in cases:
        assert isinstance(c, BenchCase)
        assert c.bytes > 0 or c.flops > 0, f"{family} {c.name}: no bytes/flops cost model"
        assert c.torch_eager is not None, f"{family} {c.name}: no torch peer"


def test_single_threaded_autograd_rows_wrap_every_side():
    from baracuda.core.spec import single_threaded_autograd

    seen = []

    def probe(tag):
        return lambda: seen.append((tag, torch._C._is_multithreading_enabled()))

    case = BenchCase("op fwd+bwd", "[4]", lambda d: {}, ours=probe("ours"),
                     torch_eager=probe("torch"), bytes=16, extra_peers={"liger": probe("liger")})
    row = single_threaded_autograd(case)
    assert row.name == "op fwd+bwd 1-thread autograd" and not row.compile_peer
    row.ours(), row.torch_eager(), row.extra_peers["liger"]()
    assert seen == [("ours", False), ("torch", False), ("liger", False)]
    assert torch._C._is_multithreading_enabled()
    assert case.ours is not row.ours and case.bytes == row.bytes


def test_host_profile_lists_the_profiled_function():
    from baracuda.tools.bench import host_profile

    def busy_python():
        return sum(i * i for i in range(200))

    table = host_profile(busy_python, calls=50, top=5)
    assert "ncalls" in table and "busy_python" in table
    assert "" not in table.splitlines()  # blank lines dropped


def test_rounds_alternate_order_and_keep_each_median():
    """Every implementation is timed once per round, the order reversed every other round,
    and keeps its median round; a failure in any round is reported."""
    calls = []
    ms = {"ours": iter([3.0, 1.0, 2.0]), "peer": iter([5.0, 4.0, 6.0]),
          "flaky": iter([1.0, None, 1.0])}

    def measure(name):
        calls.append(name)
        v = next(ms[name])
        return bench.Timing(float("nan"), float("nan"), "boom") if v is None else \
            bench.Timing(v, 1.0 / v)

    out = bench.interleaved({n: n for n in ms}, measure, rounds=3)
    assert calls == ["ours", "peer", "flaky", "flaky", "peer", "ours", "ours", "peer", "flaky"]
    assert out["ours"].ms == 2.0 and out["peer"].ms == 5.0
    assert out["flaky"].error == "boom"


def test_dtype_leaves_the_shape_label():
    assert bench.split_dtype("[32768, 1024] bfloat16") == ("[32768, 1024]", "bf16")
    assert bench.split_dtype("[16384, 4096] bfloat16 (per half)") == ("[16384, 4096] (per half)",
                                                                      "bf16")
    assert bench.split_dtype("B=4 H=16 S=4096 D=128 causal bf16") == (
        "B=4 H=16 S=4096 D=128 causal", "bf16")
    assert bench.split_dtype("N=2^20 D=128 S=4096 f32") == ("N=2^20 D=128 S=4096", "f32")
    assert bench.split_dtype("V=131072 D=4096") == ("V=131072 D=4096", "-")


def test_markdown_tables_one_per_family_with_best_peer_and_ratio():
    liger = bench.BenchRow("norm", "rms_norm fwd", "[8, 8] float32", "GB/s",
                           bench.Timing(1.0, 100.0),
                           {"torch": bench.Timing(2.0, 50.0),
                            "torch.compile": bench.Timing(0.8, 125.0),
                            "liger": bench.Timing(1.25, 80.0),
                            "other": bench.Timing(float("nan"), float("nan"), "boom")}, True)
    wrong = bench.BenchRow("soft", "softmax fwd", "[4] bf16", "GB/s", bench.Timing(1.0, 10.0),
                           {"torch": bench.Timing(float("nan"), float("nan"), "boom")}, False)
    meta = {"device": "GPU X", "date": "2026-01-01 00:00 UTC", "commit": "abc1234",
            "torch": "2.11", "triton": "3.6"}
    text = bench.markdown_tables([_row(1.0, 2.0, 0.5), liger, wrong], meta)
    lines = text.splitlines()
    assert [ln for ln in lines if ln.startswith("## ")] == ["## fam", "## norm", "## soft"]
    assert lines.count(bench.MARKDOWN_HEAD.splitlines()[0]) == 3
    assert text.count("Device: GPU X. Date: 2026-01-01 00:00 UTC. Commit: abc1234.") == 3
    assert ("| op fwd | [4, 4] | bf16 | GB/s | 1.0 | 1.0 | 1.0 | - | 0.50x (torch.compile) |"
            in lines)
    assert ("| rms_norm fwd | [8, 8] | f32 | GB/s | 100.0 | 50.0 | 125.0 | 80.0 (liger) "
            "| 0.80x (torch.compile) |" in lines)
    assert ("| softmax fwd | [4] | bf16 | GB/s | 10.0 (output differs from torch) | err | - "
            "| - | - |" in lines)


def test_markdown_from_an_earlier_json(tmp_path, capsys):
    rows = [_row(1.0, 2.0, 0.5)]
    meta = {"device": "GPU X", "date": "d", "commit": "c"}
    src = tmp_path / "run.json"
    src.write_text(json.dumps({"meta": meta, "rows": [bench.asdict(r) for r in rows]}))
    out = tmp_path / "perf.md"
    from baracuda.cli import main

    assert main(["bench", "--from-json", str(src), "--markdown", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed == out.read_text() == bench.markdown_tables(rows, meta)
    assert main(["bench", "--from-json", str(src), "--family", "softmax"]) == 0
    assert "## fam" not in capsys.readouterr().out


def test_host_bench_times_eager_and_compiled_calls_of_both_libraries():
    """`bench --host` rows on the CPU (the numbers mean nothing here; the harness is what is
    tested): every column filled, the compiled forward included, the table renders it."""
    from baracuda.tools import host_cost

    (row,) = host_cost.measure(iters=2, device="cpu", dtype=torch.float32, ops={"add"},
                               compile_backend="aot_eager")
    assert row.op == "add"
    times = (row.fw_ours_us, row.fw_torch_us, row.fwbw_ours_us, row.fwbw_torch_us,
             row.fwc_ours_us, row.fwc_torch_us)
    assert all(t is not None and t > 0 for t in times), times
    text = host_cost.markdown([row])
    assert "compiled fw ours µs" in text and text.count("| add |") == 1
    row.fwc_ours_us = None  # a row that did not compile
    assert "| err |" in host_cost.markdown([row])
