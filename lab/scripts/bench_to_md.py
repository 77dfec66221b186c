"""Render `baracuda bench --json` files as the Markdown tables of docs/PERFORMANCE.md.

Usage: python lab/scripts/bench_to_md.py results1.json[:family,family] [results2.json ...]
(":family,..." keeps only those families' rows; a liger column appears when a row has that
peer.)
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


def render(arg: str) -> str:
    path, _, fams = arg.partition(":")
    data = json.load(open(path))
    meta = data["meta"]
    rows = [r for r in data["rows"] if not fams or r["family"] in fams.split(",")]
    liger = any("liger" in r["peers"] for r in rows)
    head = ("| bench | shape | unit | ours | torch eager | torch.compile | "
            + ("liger | " if liger else "") + "vs eager | vs compile | "
            + ("vs liger | " if liger else "") + "output matches torch |")
    out = [f"Run {meta['date']} on {meta['device']} (torch {meta['torch']}, "
           f"triton {meta['triton']}), commit {meta['commit']}.", "", head,
           "|---|---|---|" + "---:|" * (7 if liger else 5) + "---|"]
    for r in rows:
        p = r["peers"]
        ok = {True: "yes", False: "NO", None: "-"}[r["matches_torch"]]
        cells = [r["name"], r["shape"], r["unit"], _cell(r["ours"]), _cell(p.get("torch")),
                 _cell(p.get("torch.compile"))]
        if liger:
            cells.append(_cell(p["liger"]) if "liger" in p else "-")
        cells += [_ratio(r["ours"], p.get("torch")), _ratio(r["ours"], p.get("torch.compile"))]
        if liger:
            cells.append(_ratio(r["ours"], p.get("liger")))
        out.append("| " + " | ".join(cells + [ok]) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    print("\n\n".join(render(p) for p in sys.argv[1:]))
