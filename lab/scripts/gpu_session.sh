#!/usr/bin/env bash
# One device call in phases, each bounded so the others still run: `baracuda bench --host` at a
# baseline tree (.base/src) and at this tree, targeted tests with tracebacks, then the test
# files in order until the time is spent (SIGINT, so pytest still prints its failures).
# Phases: host, profile, step (lab/scripts/step_profile.py), train, tests, ab
# (lab/scripts/ab_bench.sh), bench (`bench --quick` of BENCH_FAMILIES at this tree), suite.
# Usage: PHASES="host tests suite" bash lab/scripts/gpu_session.sh  (carry .whl .base .commit)
# Knobs: TARGETED (pytest args for "tests"), SUITE (pytest args), SUITE_END (seconds), WORKERS, HOST_S,
# AB_FAMILIES (families for "ab", default all), BENCH_ARGS (default --quick; "" for every row).
set -u
OUTDIR="${OUT:-/tmp/baracuda_out}"; mkdir -p "$OUTDIR"
export PYTHONUNBUFFERED=1 BARACUDA_RECORD_FIRST=${BARACUDA_RECORD_FIRST:-1}
[ -n "${SKIP_PIP:-}" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl >/dev/null 2>&1
[ -f .commit ] && export BARACUDA_COMMIT=$(cat .commit)
T0=$(date +%s)
for phase in ${PHASES:-host tests suite}; do
  case $phase in
    host)
      for side in ${HOST_SIDES:-base head}; do
        src=$PWD/src; [ $side = base ] && src=$PWD/.base/src
        BARACUDA_RECORD_FIRST=0 PYTHONPATH=$src:/tmp/site timeout ${HOST_S:-300} python3 -m baracuda.cli \
          bench --host > "$OUTDIR/host_$side.txt" 2>&1
        echo "host $side rc=$?"
        grep -v -E "^$|leaked|nanobind|refleaks|skipped remainder" "$OUTDIR/host_$side.txt" | tail -14
      done ;;
    profile)
      PYTHONPATH=$PWD/src:/tmp/site timeout 90 python3 lab/scripts/host_profile7.py 1000 16 \
        ${PROFILE_OPS:-add,silu,rms_norm} > "$OUTDIR/profile.txt" 2>&1
      echo "profile rc=$?"; grep "=====" "$OUTDIR/profile.txt" ;;
    step)
      PYTHONPATH=$PWD/src:/tmp/site timeout 60 python3 lab/scripts/host_parts.py \
        > "$OUTDIR/parts.txt" 2>&1
      echo "parts rc=$?"; cat "$OUTDIR/parts.txt" | grep -v -E "leaked|nanobind" | head -20
      PYTHONPATH=$PWD/src:/tmp/site timeout ${STEP_S:-150} python3 lab/scripts/step_profile.py \
        ${STEP_SHAPE:-1x512} > "$OUTDIR/step.txt" 2>&1
      echo "step rc=$?"; grep -E "^(==|--|   [a-z_]+ +[0-9])" "$OUTDIR/step.txt" ;;
    train)
      PYTHONPATH=$PWD/src:/tmp/site timeout ${TRAIN_S:-200} python3 -m baracuda.cli bench \
        --train ${TRAIN_SHAPES:-1x512 4x2048} --markdown "$OUTDIR/train.md" > "$OUTDIR/train.txt" 2>&1
      echo "train rc=$?"
      grep -v -E "^$|leaked|nanobind|refleaks|skipped remainder" "$OUTDIR/train.txt" | tail -15 ;;
    tests)
      PYTHONPATH=$PWD/src:/tmp/site timeout -s INT ${TESTS_S:-120} python3 -m pytest -q \
        -p no:cacheprovider -n ${WORKERS:-15} -o addopts="" --tb=short -rfE ${TARGETED:-} ${TARGETED_K:+-k "$TARGETED_K"} \
        > "$OUTDIR/targeted.log" 2>&1
      echo "targeted rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUTDIR/targeted.log" | tail -40 ;;
    bench)
      for fam in ${BENCH_FAMILIES:-}; do
        PYTHONPATH=$PWD/src:/tmp/site timeout ${BENCH_S:-120} python3 -m baracuda.cli bench ${BENCH_ARGS---quick} \
          --family $fam --json "$OUTDIR/bench_$fam.json" --markdown "$OUTDIR/bench_$fam.md" \
          > "$OUTDIR/bench_$fam.log" 2>&1
        echo "bench $fam rc=$?"; cat "$OUTDIR/bench_$fam.md" 2>/dev/null | grep "^|"
      done ;;
    ab)
      for fam in ${AB_FAMILIES:-all}; do
        [ "$fam" = all ] && fam=""
        OUT=$OUTDIR/ab_${fam:-all} bash lab/scripts/ab_bench.sh $fam
      done ;;
    suite)
      left=$(( ${SUITE_END:-560} - ($(date +%s) - T0) ))
      PYTHONPATH=$PWD/src:/tmp/site timeout -s INT $left python3 -m pytest -v -p no:cacheprovider \
        -n ${WORKERS:-15} -o addopts="" --tb=short -rfE ${SUITE:-tests} > "$OUTDIR/suite.log" 2>&1
      echo "suite rc=$? ($left s)"; grep -E "^(FAILED|ERROR)" "$OUTDIR/suite.log" | head -60
      tail -2 "$OUTDIR/suite.log"; grep -c " PASSED" "$OUTDIR/suite.log" ;;
  esac
  echo "== $phase done at +$(( $(date +%s) - T0 )) s"
done
# The device tool brings back only a handful of files: everything goes home in one archive.
if [ "${PACK:-1}" = 1 ]; then
  (cd "$OUTDIR" && tar czf /tmp/session_out.tgz --exclude='*.png' . && rm -rf ./* \
    && mv /tmp/session_out.tgz ./session_out.tgz)
fi
