#!/usr/bin/env bash
# One device call for new families: their GPU tests (family files, plan contract cases, OpInfo
# samples), then their benches and the named rows of older families, each phase time-boxed.
# Knobs: TEST_FILES, CONTRACT_K, OPINFO_K, BENCH_FAMILIES, MATCH_BENCHES ("family:text ..."),
# TESTS_S, BENCH_S. Results under $OUT.
set -u
OUTDIR="${OUT:-/tmp/baracuda_out}"; mkdir -p "$OUTDIR"
export PYTHONUNBUFFERED=1
[ -d .whl ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
[ -f .commit ] && export BARACUDA_COMMIT=$(cat .commit)
export PYTHONPATH=$PWD/src:/tmp/site
run_pytest() {  # name, seconds, args...
  local name=$1 secs=$2; shift 2
  timeout -s INT "$secs" python3 -m pytest -q -p no:cacheprovider -n ${WORKERS:-15} -o addopts="" \
    --tb=short -rfE "$@" > "$OUTDIR/$name.log" 2>&1
  echo "$name rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed|KeyboardInterrupt" "$OUTDIR/$name.log" | tail -40
}
[ -n "${TEST_FILES:-}" ] && run_pytest files "${TESTS_S:-150}" $TEST_FILES
[ -n "${CONTRACT_K:-}" ] && run_pytest contract "${CONTRACT_S:-120}" tests/test_contract.py -k "$CONTRACT_K"
[ -n "${OPINFO_K:-}" ] && run_pytest opinfo "${OPINFO_S:-90}" tests/test_opinfo.py -k "$OPINFO_K"
for fam in ${BENCH_FAMILIES:-}; do
  timeout "${BENCH_S:-60}" python3 -m baracuda.cli bench --family "$fam" --json "$OUTDIR/bench_$fam.json" \
    --markdown "$OUTDIR/bench_$fam.md" > "$OUTDIR/bench_$fam.log" 2>&1
  echo "bench $fam rc=$?"; grep "^|" "$OUTDIR/bench_$fam.md" 2>/dev/null | tail -n +3
done
# MATCH_BENCHES: "family:text1|text2 ..." (no spaces inside an item)
for item in ${MATCH_BENCHES:-}; do
  fam=${item%%:*}; text=${item#*:}
  timeout "${BENCH_S:-60}" python3 -m baracuda.cli bench --family "$fam" --match "$text" \
    --json "$OUTDIR/bench_${fam}_match.json" --markdown "$OUTDIR/bench_${fam}_match.md" \
    > "$OUTDIR/bench_${fam}_match.log" 2>&1
  echo "bench $fam/$text rc=$?"; grep "^|" "$OUTDIR/bench_${fam}_match.md" 2>/dev/null | tail -n +3
done
