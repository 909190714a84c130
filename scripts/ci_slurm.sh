#!/usr/bin/env bash
# The Slurm part of CI (.ci/run calls it: bash scripts/ci_slurm.sh).
#
# Installs Debian's slurm-wlm and munge when missing, starts a real one-node Slurm private to a
# temporary folder (scripts/slurm_cluster.sh: its own munge key and socket, free loopback ports),
# runs a smoke sweep through it (executor=slurm) and the Slurm tests (tests/test_slurm.py: a
# sweep, a task requeued mid-run, detach and re-attach, bad input), and stops that cluster at
# the end, also on failure or Ctrl-C. Needs root (apt-get, slurmd).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >&2   # .venv with the project (a no-op when it is up to date)
PY=.venv/bin/python
export PATH="$PATH:/usr/sbin:/sbin"

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 \
        || ! command -v sbatch >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
    echo "ci_slurm: installing slurm-wlm and munge (Debian)" >&2
    apt-get update -qq
    # RUNLEVEL=1: the packages' own services are not started (this script starts its own)
    DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq slurm-wlm munge >/dev/null
fi

export OMP_NUM_THREADS=1
WORK=$(mktemp -d /tmp/pg-arena-ci-slurm.XXXXXX)
cleanup() {
    local rc=$?
    echo "ci_slurm: stopping the Slurm cluster" >&2
    bash scripts/slurm_cluster.sh stop "$WORK/cluster" || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "ci_slurm: starting a one-node Slurm in $WORK/cluster" >&2
eval "$(bash scripts/slurm_cluster.sh start "$WORK/cluster")"   # exports SLURM_CONF
sinfo >&2

echo "ci_slurm: smoke sweep through Slurm" >&2
start=$SECONDS
"$PY" -m harness.cli suite=mujoco scale=smoke algo=ppo_clip executor=slurm results_dir="$WORK/results" report=false
echo "ci_slurm: the smoke sweep took $((SECONDS - start)) s" >&2

echo "ci_slurm: the Slurm tests" >&2
PG_ARENA_SLURM=1 "$PY" -m pytest tests/test_slurm.py -p no:cacheprovider
