#!/usr/bin/env bash
# One call on an H100/H200 (device tool): CUDA tests at real sizes + `baracuda bench --quick`,
# then a short table. Usage: bash scripts/gpu_run.sh [family ...]   (no family = all)
# Knobs: TEST_TIMEOUT, BENCH_TIMEOUT (seconds), WORKERS (pytest-xdist), BARACUDA_SCALE
# (small|real|small,real), SKIP_BENCH=1, SKIP_TESTS=1. Carry .whl and .commit (git rev-parse --short HEAD).
# Wheels that the GPU machine lacks (nvmath-python, nvidia-cudnn-frontend) travel in .whl/.
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
OUTDIR="${OUT:-/tmp/baracuda_out}"; mkdir -p "$OUTDIR"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__,
  torch.cuda.get_device_name(0))'
FAMS=("$@")
KEXPR=""
if [ ${#FAMS[@]} -gt 0 ]; then KEXPR=$(printf " or %s" "${FAMS[@]}" test_frontend test_core); KEXPR=${KEXPR:4}; fi
TESTS=(tests/test_contract.py tests/test_core.py tests/test_frontend.py)
for f in "${FAMS[@]:-}"; do [ -n "$f" ] && [ -f "tests/families/test_$f.py" ] && TESTS+=("tests/families/test_$f.py"); done
[ ${#FAMS[@]} -eq 0 ] && TESTS=(tests)
if [ "${SKIP_TESTS:-0}" != 1 ]; then
echo "== CUDA tests: ${TESTS[*]} ${KEXPR:+(-k $KEXPR)}"
# Parallel workers share the GPU: the time goes to Triton compiles and float64 references.
timeout "${TEST_TIMEOUT:-150}" python3 -m pytest -v -p no:cacheprovider -n "${WORKERS:-12}" \
  ${KEXPR:+-k "$KEXPR"} "${TESTS[@]}" -o addopts="" --maxfail=50 -rfE 2>&1 \
  | tee "$OUTDIR/tests.log" | grep -E "FAILED|ERROR|passed|failed" | tail -40
fi
echo "== bench"
BENCH_ARGS=(--quick --json "$OUTDIR/bench.json" --png "$OUTDIR/bench.png")
[ -f .commit ] && export BARACUDA_COMMIT="$(cat .commit)"
[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
if [ ${#FAMS[@]} -gt 0 ]; then
  for f in "${FAMS[@]}"; do
    timeout "${BENCH_TIMEOUT:-140}" python3 -m baracuda.cli bench --family "$f" \
      --quick --json "$OUTDIR/bench_$f.json" --png "$OUTDIR/bench_$f.png" 2>&1 | grep -v "it/s\]"
  done
else
  timeout "${BENCH_TIMEOUT:-240}" python3 -m baracuda.cli bench "${BENCH_ARGS[@]}" 2>&1 \
    | grep -v "it/s\]"
fi
