"""`baracuda ops | check | bench | demo`."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="baracuda", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_ops = sub.add_parser("ops", help="list every registered plan")
    p_ops.add_argument("--family")
    p_ops.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    p_check = sub.add_parser("check", help="run every plan against its float64 reference")
    p_check.add_argument("--family")
    p_check.add_argument("--scale", choices=("small", "real"))
    p_check.add_argument("--limit", type=int, help="at most this many cases per plan")
    p_bench = sub.add_parser("bench", help="benchmarks vs torch eager and torch.compile (GPU)")
    p_bench.add_argument("--family")
    p_bench.add_argument("--quick", action="store_true", help="headline shapes only")
    p_bench.add_argument("--json", dest="json_path")
    p_bench.add_argument("--png", dest="png_path")
    p_bench.add_argument("--match", help="only cases whose 'name shape' contains this text")
    sub.add_parser("demo", help="a transformer-style block, forward and backward, on baracuda")
    args = parser.parse_args(argv)

    # Import after parsing: `--help` stays fast, and the package picks the interpreter on CPU.
    if args.cmd == "ops":
        from .tools.ops import render

        print(render(args.format, args.family), end="")
        return 0
    if args.cmd == "check":
        from .tools.check import main as check

        return check(args.family, args.scale, args.limit)
    if args.cmd == "bench":
        from .tools.bench import main as bench

        return bench(args.family, args.quick, args.json_path, args.png_path, match=args.match)
    from .tools.demo import main as demo

    return demo()


if __name__ == "__main__":
    sys.exit(main())
