#!/usr/bin/env bash
# device=cuda on every suite: the smoke sweep of each (every algorithm, the scale's environments)
# with networks and batches on the GPU, then steps/s per run (the last row of its metrics.csv).
#   bash bench/device_smoke.sh [results_dir] [key=value ...]    (default results/device_smoke)
# e.g. bash bench/device_smoke.sh results/device_smoke device=cuda:1 jobs=4
# Needs CUDA: on a machine without it, says so and exits 2 (nothing is run or written).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/device_smoke}"
shift || true
py=.venv/bin/python
[ -x "$py" ] || py=python3
if ! "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "bench/device_smoke.sh: this machine has no CUDA device (torch.cuda.is_available() is false);" \
         "run it on a machine with a GPU and a CUDA build of torch" >&2
    exit 2
fi
status=0
for suite in mujoco atari llm_toy; do
    echo "== suite=$suite scale=smoke device=cuda"
    ./run_all.sh suite="$suite" scale=smoke device=cuda results_dir="$out" report=false "$@" || status=$?
done
"$py" - "$out" <<'EOF'
import csv, json, sys
from pathlib import Path
root = Path(sys.argv[1])
rows = []
for run_json in sorted(root.glob("*/*/*/seed*/run.json")):
    record = json.loads(run_json.read_text())
    metrics = run_json.parent / "metrics.csv"
    last = None
    if metrics.exists():
        with open(metrics, newline="") as f:
            for last in csv.DictReader(f):
                pass
    rows.append((record.get("suite", "?"), record.get("env", "?"), record.get("algo", "?") + record.get("variant", ""),
                 record.get("device", "?"), record.get("status", "?"),
                 last["global_step"] if last else "-", last["sps"] if last else "-"))
header = ("suite", "env", "algo", "device", "status", "steps", "steps/s")
widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
for r in [header] + rows:
    print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
EOF
exit "$status"
