#!/usr/bin/env bash
# The Slurm executor's overhead against the local executor on the same sweep (docs/BENCHMARKS.md,
# "Slurm"): starts a private one-node Slurm (scripts/slurm_cluster.sh; root, Debian's slurm-wlm
# and munge), then runs the sweep ROUNDS times with each executor, alternating, each time into a
# fresh results folder, and prints every wall time and the ratio of the medians.
#   bash bench/slurm_overhead.sh [ROUNDS] [sweep key=value ...]   (default: 3 suite=mujoco scale=smoke)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >&2
ROUNDS="${1:-3}"
shift || true
SWEEP=("$@")
[ ${#SWEEP[@]} -gt 0 ] || SWEEP=(suite=mujoco scale=smoke)
PY=.venv/bin/python
export OMP_NUM_THREADS=1 PATH="$PATH:/usr/sbin:/sbin"
WORK=$(mktemp -d /tmp/pg-arena-slurm-bench.XXXXXX)
trap 'bash scripts/slurm_cluster.sh stop "$WORK/cluster" || true; rm -rf "$WORK"' EXIT
eval "$(bash scripts/slurm_cluster.sh start "$WORK/cluster")"
declare -a LOCAL SLURM
for i in $(seq 1 "$ROUNDS"); do
    for executor in local slurm; do
        start=$(date +%s.%N)
        "$PY" -m harness.cli "${SWEEP[@]}" executor=$executor report=false results_dir="$WORK/$executor$i" \
            > "$WORK/$executor$i.log" 2>&1 || { tail -20 "$WORK/$executor$i.log"; exit 1; }
        seconds=$("$PY" -c "import time; print(f'{time.time() - $start:.1f}')")
        echo "round $i executor=$executor: $seconds s"
        if [ $executor = local ]; then LOCAL+=("$seconds"); else SLURM+=("$seconds"); fi
    done
done
"$PY" - "${LOCAL[*]}" "${SLURM[*]}" <<'PYEOF'
import statistics, sys
local, slurm = ([float(x) for x in a.split()] for a in sys.argv[1:3])
ml, ms = statistics.median(local), statistics.median(slurm)
print(f"median local {ml:.1f} s, slurm {ms:.1f} s: slurm / local = {ms / ml:.2f} (overhead {ms - ml:+.1f} s)")
PYEOF
