#!/usr/bin/env bash
# pg-arena's one entry point: ./run_all.sh key=value ...   (./run_all.sh --help)
# On first use it creates .venv and installs the project into it (CPU torch first).
set -euo pipefail
cd "$(dirname "$0")"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
bash scripts/bootstrap.sh >&2
exec .venv/bin/python -m harness.cli "$@"
