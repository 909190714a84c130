#!/usr/bin/env bash
# The tracking part of CI (.ci/run calls it: bash scripts/ci_tracking.sh): installs the optional
# tracking extra (tensorboard, wandb; PyPI) when missing and runs tests/test_tracking.py, which
# reads the TensorBoard and offline W&B logs back and compares them with the runs' CSV files.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >&2   # .venv with the project (a no-op when it is up to date)
PY=.venv/bin/python
if ! "$PY" -c "import tensorboard, wandb" 2>/dev/null; then
    echo "ci_tracking: installing the tracking extra" >&2
    "$PY" -m pip install -q -e ".[tracking]"
fi
export OMP_NUM_THREADS=1
export WANDB_MODE=offline WANDB_SILENT=true
"$PY" -m pytest tests/test_tracking.py -p no:cacheprovider
