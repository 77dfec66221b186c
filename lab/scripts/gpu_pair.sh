#!/usr/bin/env bash
# Two gpu_session.sh runs side by side on a two-GPU machine (kind nvidia-h200-x2), one per GPU,
# each with its own settings: bash lab/scripts/gpu_pair.sh 'PHASES="host suite" SUITE=...' '...'
# Output of GPU i goes to $OUT/g<i>/ and is printed after both finish.
set -u
OUTDIR="${OUT:-/tmp/baracuda_out}"; mkdir -p "$OUTDIR"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl >/dev/null 2>&1
i=0
for settings in "$@"; do
  ( export CUDA_VISIBLE_DEVICES=$i OUT=$OUTDIR/g$i SKIP_PIP=1; eval "export $settings"
    bash lab/scripts/gpu_session.sh > "$OUTDIR/g$i.txt" 2>&1 ) &
  i=$((i + 1))
done
wait
for f in "$OUTDIR"/g*.txt; do echo "######## $f"; cat "$f"; done
