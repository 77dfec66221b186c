#!/usr/bin/env bash
# Create .venv (once) and install baracuda with the pinned development dependencies.
# Idempotent: re-running only installs what changed. CPU machines get torch's CPU build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e . 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
.venv/bin/python -c "import torch, triton, baracuda; print('baracuda', baracuda.__version__, \
'torch', torch.__version__, 'triton', triton.__version__)"
