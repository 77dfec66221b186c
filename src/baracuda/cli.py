"""`baracuda ops | check | bench | demo`: the plans, their correctness, their speed."""

from __future__ import annotations

import argparse
import sys

from . import __version__
from .core import registry

#: `bench --family` also takes this name: eager host cost per call on a tiny problem.
OVERHEAD = "overhead"


def _family_option(parser: argparse.ArgumentParser, known: list[str], what: str) -> None:
    parser.add_argument("--family", choices=known, metavar="FAMILY",
                        help=f"only this family's {what} (one of: {', '.join(known)})")


def _step_shape(text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"expected BATCHxSEQLEN such as 4x2048, got {text!r}")
    return int(parts[0]), int(parts[1])


def build_parser() -> argparse.ArgumentParser:
    families = registry.families()
    parser = argparse.ArgumentParser(prog="baracuda", description=__doc__)
    parser.add_argument("--version", action="version", version=f"baracuda {__version__}")
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    p_ops = sub.add_parser("ops", help="list every registered plan",
                           description="Every registered plan: family, direction, kinds, "
                           "dtypes, partner, candidates with their backend, guarantee.")
    _family_option(p_ops, families, "plans")
    p_ops.add_argument("--format", choices=("table", "json", "markdown"), default="table",
                       help="table: one block per plan (default); json: machine-readable; "
                       "markdown: the text of docs/OPS.md")

    p_check = sub.add_parser("check", help="run every plan against its float64 reference",
                             description="Run every registered plan's cases against its "
                             "float64 reference on this machine's device, with determinism "
                             "reruns where a plan claims them. Exit code 1 on any failure.")
    _family_option(p_check, families, "plans")
    p_check.add_argument("--scale", choices=("small", "real"),
                         help="case sizes: small (interpreter-sized) or real (GPU-sized); "
                         "default real on a GPU, small on the CPU")
    p_check.add_argument("--limit", type=int, metavar="N",
                         help="at most N cases per plan")

    p_bench = sub.add_parser("bench", help="benchmarks vs torch eager and torch.compile (GPU)",
                             description="Time ours against torch eager, torch.compile and any "
                             "other installed peer in the same run; print one Markdown table "
                             "per family (the tables of docs/PERFORMANCE.md).")
    _family_option(p_bench, families + [OVERHEAD], "benchmarks")
    p_bench.add_argument("--quick", action="store_true",
                         help="the headline rows only (the set docs/PERFORMANCE.md reports)")
    p_bench.add_argument("--match", metavar="TEXT",
                         help="only rows whose 'name shape' contains TEXT (several "
                              "texts separated by '|': any of them)")
    p_bench.add_argument("--json", dest="json_path", metavar="FILE",
                         help="write every row and the run's device, date and commit as JSON "
                         "(default bench/results/bench-<time>.json)")
    p_bench.add_argument("--png", dest="png_path", metavar="FILE",
                         help="write a bar chart of the ratios "
                         "(default bench/results/bench-<time>.png)")
    p_bench.add_argument("--markdown", dest="markdown_path", metavar="FILE",
                         help="also write the Markdown tables to FILE")
    p_bench.add_argument("--host", action="store_true",
                         help="instead of the rows: host time per call of seven eager calls "
                         "(add, silu, softmax, rms_norm, linear, causal SDPA, cross_entropy), "
                         "forward and forward+backward, against torch")
    p_bench.add_argument("--train", nargs="*", metavar="BxS", type=_step_shape,
                         help="instead of the rows: a 4-layer Llama-style training step through "
                         "baracuda.torch, torch eager and torch.compile (ms/step, tokens/s, peak "
                         "memory, loss); batch x seqlen pairs, default 1x512 4x2048")
    p_bench.add_argument("--from-json", dest="from_json", metavar="FILE",
                         help="time nothing: render an earlier run's JSON as the Markdown "
                         "tables (no GPU needed)")

    sub.add_parser("demo", help="a transformer-style block, forward and backward, on baracuda",
                   description="A small pre-norm transformer block, forward and backward, once "
                   "with baracuda.torch and once with torch, comparing loss and gradients.")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The tools import after parsing: `--help` and `--version` stay fast.
    if args.cmd == "ops":
        from .tools.ops import render

        print(render(args.format, args.family), end="")
        return 0
    if args.cmd == "check":
        from .tools.check import main as check

        return check(args.family, args.scale, args.limit)
    if args.cmd == "bench":
        from .tools.bench import main as bench
        from .tools.bench import render_json

        if args.host or args.train is not None:
            return _host_and_train(args.host, args.train, args.markdown_path)
        if args.from_json:
            return render_json(args.from_json, args.family, args.markdown_path)
        return bench(args.family, args.quick, args.json_path, args.png_path, match=args.match,
                     markdown_path=args.markdown_path)
    from .tools.demo import main as demo

    return demo()


def _host_and_train(host: bool, train: list[str] | None, markdown_path: str | None) -> int:
    parts = []
    if host:
        from .tools import host_cost

        parts.append("### Host time per call\n\n" + host_cost.markdown(host_cost.measure()))
    if train is not None:
        from .tools import train_step

        rows = [r for b, s in (train or train_step.STEP_SHAPES) for r in train_step.run(b, s)]
        parts.append("### Training step\n\n" + train_step.markdown(rows))
    text = "\n\n".join(parts) + "\n"
    print(text, end="")
    if markdown_path:
        with open(markdown_path, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
