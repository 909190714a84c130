#!/usr/bin/env bash
# The LLM toy suite's learning benchmark (issue 4's bars), at scale=quick:
#   1. task=sort (verifiable), all seven algorithms, 3 seeds: each raises held-out success
#      above the SFT policy's; the best reaches >= 90% of the maximum (1.0).
#   2. task=keywords (preference, RLHF): PPO raises the gold score over SFT at a moderate KL;
#      gold and proxy (reward-model) scores against KL show any over-optimisation.
#
#   bash bench/llm_learning.sh [results_dir]      (2 cores, nothing else running; see the
#                                                  runs' wall_seconds for the time it took)
# then the tables (markdown, for docs/BENCHMARKS.md) and the gold-versus-proxy figure:
#   .venv/bin/python bench/llm_learning_table.py [results_dir]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/bench_llm}"
./run_all.sh suite=llm_toy scale=quick task=sort seeds=3 jobs=2 results_dir="$out"
# DAPO without clip-higher on DAPO's own schedule (eps_high = eps_low): isolates the asymmetric clip
./run_all.sh suite=llm_toy scale=quick task=sort algo=dapo algo.clip_eps_high=0.2 seeds=3 jobs=2 results_dir="$out"
./run_all.sh suite=llm_toy scale=quick task=keywords algo=ppo_clip,grpo seeds=3 jobs=2 results_dir="$out"
.venv/bin/python bench/llm_learning_table.py "$out"
.venv/bin/python bench/llm_clip_higher.py "$out" --out docs/llm_clip_higher.png
