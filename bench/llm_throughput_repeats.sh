#!/usr/bin/env bash
# pg-arena's GRPO against TRL's GRPOTrainer per sample (bench/llm_throughput.py), repeated: each
# task with several seeds, so that the ratio is quoted with its spread and not from one run
# (single runs of the same command gave 1.41x, 1.56x and 1.43x on sort). Run it alone on the
# machine: it is a timing (one torch thread; both sides in one process, pg-arena first).
#
#   bash bench/llm_throughput_repeats.sh [out_dir] [seeds] [tasks]    # defaults: results/bench/llm_repeats "0 1 2" "sort add"
#
# Writes one JSON per task and seed (llm_throughput.py's) and prints each run's ratio, then per
# task the median and the range.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/bench/llm_repeats}"
seeds="${2:-0 1 2}"
tasks="${3:-sort add}"
mkdir -p "$out"
export OMP_NUM_THREADS=1
for task in $tasks; do
    for seed in $seeds; do
        .venv/bin/python bench/llm_throughput.py --task "$task" --seed "$seed" --steps 1000 \
            --out "$out/${task}_seed${seed}.json" > "$out/${task}_seed${seed}.log" 2>&1
        grep "speed per sample" "$out/${task}_seed${seed}.log" | sed "s/^/$task seed $seed: /"
    done
done
.venv/bin/python - "$out" <<'PY'
import json, statistics, sys
from pathlib import Path
rows = {}
for path in sorted(Path(sys.argv[1]).glob("*_seed*.json")):
    doc = json.loads(path.read_text())
    a, t = doc["pg-arena"], doc["trl"]
    rows.setdefault(doc["args"]["task"], []).append((doc["args"]["seed"], a["s_per_step"], t["s_per_step"],
                                                      a["completions_per_s"] / t["completions_per_s"]))
print("\n| task | seed | pg-arena s/step | TRL s/step | pg-arena / TRL per sample |\n|---|---:|---:|---:|---:|")
for task, runs in rows.items():
    for seed, a, t, r in runs:
        print(f"| {task} | {seed} | {a:.3f} | {t:.3f} | {r:.2f}x |")
for task, runs in rows.items():
    ratios = [r for *_, r in runs]
    print(f"{task}: median {statistics.median(ratios):.2f}x over {len(ratios)} seeds "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}x)")
PY
