#!/usr/bin/env bash
# The Atari learning benchmark of docs/BENCHMARKS.md: ppo_clip at the paper's Table 5 settings (the
# suite's defaults) on Pong and Breakout, 3 seeds, against CleanRL's ppo_atari_envpool at 10M steps
# (shared/reference: Pong 20.45 +- 0.09, Breakout 211.24 +- 151.84; the paper's Table 6: Pong 20.7,
# Breakout 274.8).
#   bash bench/atari_learning.sh [results_dir] [steps]
# At ~250 steps/s per run on one core, 10M steps take ~11 h per run: the 6 runs ~33 h with jobs=2 on
# 2 cores. Runs checkpoint: rerun the same command to resume a stopped sweep. A shorter first look:
#   bash bench/atari_learning.sh results/bench_atari 2000000
# then the summary table (last-100-episode raw scores, 95% CI over seeds) is printed at the end, and
# each run's episodes.csv / evals.csv / metrics.csv (wall seconds, SPS) are under results_dir.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/bench_atari}"
steps="${2:-10000000}"
./run_all.sh suite=atari algo=ppo_clip env=Pong,Breakout seeds=3 steps="$steps" jobs=2 results_dir="$out"
