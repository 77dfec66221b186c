"""Render `baracuda bench --json` files as the Markdown tables of docs/PERFORMANCE.md.

Usage: python scripts/bench_to_md.py results1.json [results2.json ...]
"""

from __future__ import annotations

import json
import sys


def _cell(t):
    return "err" if (t is None or t.get("error")) else f"{t['rate']:.1f}"


def _ratio(ours, peer):
    if not peer or peer.get("error") or ours.get("error") or not ours["ms"]:
        return "-"
    return f"{peer['ms'] / ours['ms']:.2f}x"


def render(path: str) -> str:
    data = json.load(open(path))
    meta, rows = data["meta"], data["rows"]
    out = [f"Run {meta['date']} on {meta['device']} (torch {meta['torch']}, "
           f"triton {meta['triton']}).", "",
           "| bench | shape | unit | ours | torch eager | torch.compile | vs eager | vs compile "
           "| output matches torch |", "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        p = r["peers"]
        ok = {True: "yes", False: "NO", None: "-"}[r["matches_torch"]]
        out.append(f"| {r['name']} | {r['shape']} | {r['unit']} | {_cell(r['ours'])} | "
                   f"{_cell(p.get('torch'))} | {_cell(p.get('torch.compile'))} | "
                   f"{_ratio(r['ours'], p.get('torch'))} | "
                   f"{_ratio(r['ours'], p.get('torch.compile'))} | {ok} |")
    return "\n".join(out)


if __name__ == "__main__":
    print("\n\n".join(render(p) for p in sys.argv[1:]))
