#!/usr/bin/env bash
# The learning benchmark of docs/BENCHMARKS.md: the paper's budget (1M steps, 3 seeds).
#   bash bench/learning.sh [results_dir]        (about 40 min on 2 cores, nothing else running)
# then: .venv/bin/python bench/learning_table.py results/bench
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/bench}"
./run_all.sh suite=mujoco algo=ppo_clip env=HalfCheetah-v5,Hopper-v5,Walker2d-v5 seeds=3 steps=1000000 jobs=2 results_dir="$out"
./run_all.sh suite=mujoco algo=trpo env=Hopper-v5 seeds=3 steps=1000000 jobs=2 results_dir="$out"
