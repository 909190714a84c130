#!/usr/bin/env bash
# The Atari learning benchmark of docs/BENCHMARKS.md: ppo_clip at the paper's Table 5 settings (the
# suite's defaults) on Pong and Breakout, 3 seeds, against CleanRL's ppo_atari_envpool at 10M steps
# (Pong 20.45 +- 0.09, Breakout 211.24 +- 151.84: CleanRL's docs, https://docs.cleanrl.dev/rl-algorithms/ppo/,
# ppo_atari_envpool.py, "Experiment results", Open RL Benchmark openrlbenchmark/cleanrl/ppo_atari_envpool,
# tag pr-424; the paper's Table 6 (Schulman et al. 2017, arXiv:1707.06347, Appendix B; in
# analysis/reference/atari49.csv): Pong 20.7, Breakout 274.8).
#   bash bench/atari_learning.sh [results_dir] [steps] [seeds] [key=value ...]
# Measured here (docs/BENCHMARKS.md, 2026-12-03): two runs sharing the 2 cores,
# suite.precision=bf16, ~540 steps/s each before frames were stored channels-last (2M steps took ~1
# h), ~700 each after; 10M steps ~4 h per run, the 6 runs ~12 h with jobs=2 (fp32, the default, is
# ~1.4x slower). Runs checkpoint: rerun the same command to resume a stopped sweep. A lone run (e.g.
# env=Breakout alone) gets both cores as 2 torch threads: ~990 steps/s in bf16, 10M steps in ~2.8 h.
# Runs still going or stopped: .venv/bin/python bench/atari_learning_progress.py [results_dir]
# --figure PNG (scores so far, per-window means, evaluations, curves). The recorded first look (one
# seed; extra key=value arguments go to run_all.sh):
#   bash bench/atari_learning.sh results/bench_atari 2000000 1 suite.precision=bf16
# The sweep ends with the summary table (last-100-episode raw scores, 95% CI over seeds) and the
# report (results_dir/reports/atari/); each run's episodes.csv / evals.csv / metrics.csv are under
# results_dir.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/bench_atari}"
steps="${2:-10000000}"
seeds="${3:-3}"
shift $(( $# < 3 ? $# : 3 ))
./run_all.sh suite=atari algo=ppo_clip env=Pong,Breakout seeds="$seeds" steps="$steps" jobs=2 results_dir="$out" "$@"
