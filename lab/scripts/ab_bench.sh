#!/usr/bin/env bash
# One device call: `baracuda bench --quick` at a baseline tree (.base/src, e.g. from
# `git archive <rev> src | tar -x -C .base`) and at this tree, back to back on one GPU, then the
# per-row ratio of our rates (HEAD / base). Carry .whl and .base. Usage: bash lab/scripts/ab_bench.sh [family]
set -u
OUTDIR="${OUT:-/tmp/baracuda_out}"; mkdir -p "$OUTDIR"
export PYTHONUNBUFFERED=1
[ -n "${SKIP_PIP:-}" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl >/dev/null 2>&1
FAM=${1:+--family $1}
for side in base head; do
  src=$PWD/src; [ $side = base ] && src=$PWD/.base/src
  [ $side = head ] && [ -f .commit ] && export BARACUDA_COMMIT=$(cat .commit)
  [ $side = base ] && [ -f .base/COMMIT ] && export BARACUDA_COMMIT=$(cat .base/COMMIT)
  PYTHONPATH=$src:/tmp/site timeout "${AB_TIMEOUT:-270}" python3 -m baracuda.cli bench --quick $FAM \
    --json "$OUTDIR/$side.json" > "$OUTDIR/$side.log" 2>&1
  echo "$side: rc=$? $(grep -c . "$OUTDIR/$side.log") lines"
done
python3 - "$OUTDIR/base.json" "$OUTDIR/head.json" <<'PY'
import json, sys
rows = [{(r["family"], r["name"], r["shape"]): r for r in json.load(open(p))["rows"]} for p in sys.argv[1:]]
worst = []
for key, h in rows[1].items():
    b = rows[0].get(key)
    if not b or b["ours"]["error"] or h["ours"]["error"] or not h["ours"]["ms"]:
        continue
    worst.append((b["ours"]["ms"] / h["ours"]["ms"], key, b["ours"]["ms"], h["ours"]["ms"]))
worst.sort()
print(f"{len(worst)} rows compared; base ms / HEAD ms of ours (>1: HEAD faster), worst 25:")
for ratio, key, b, h in worst[:25]:
    print(f"  {ratio:6.3f}  {key[0]:13s} {key[1]} {key[2]}  base {b:.4f} ms  head {h:.4f} ms")
PY
