#!/usr/bin/env bash
# pg-arena's test command: sets up .venv on first use (as run_all.sh does), then runs pytest.
#   ./run_tests.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
bash scripts/bootstrap.sh >&2
exec .venv/bin/python -m pytest "$@"
