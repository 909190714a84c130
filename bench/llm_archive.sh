#!/usr/bin/env bash
# The LLM toy suite's committed baselines (issue 30): the seven algorithms at scale=quick on the three
# tasks (sort, keywords, add), 5 seeds each, folded into docs/llm_toy/archive with a canary per
# algorithm and task, so that `./run_all.sh compare candidate=<an LLM variant> baseline=grpo
# suite=llm_toy archive=docs/llm_toy/archive seeds=auto` runs only the candidate.
#
#   bash bench/llm_archive.sh [results_dir] [archive]     (hours on 2 cores; the same command resumes)
#
# Longer than a session here, so it runs in pieces: the sweep skips what the archive holds done and
# resumes what it holds unfinished from the checkpoints it carries. Before a machine goes, fold:
#   ./run_all.sh report suite=llm_toy archive=docs/llm_toy/archive results_dir=<results_dir> \
#       save_archive=docs/llm_toy/archive out_dir=docs/llm_toy
# then `.venv/bin/python scripts/write_canaries.py docs/llm_toy/archive <algorithms folded>`.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/llm_archive}"
archive="${2:-docs/llm_toy/archive}"
with_archive=()
[ -f "$archive/archive.json" ] && with_archive=("archive=$archive")
./run_all.sh suite=llm_toy scale=quick task=sort,keywords,add seeds=5 jobs=2 results_dir="$out" "${with_archive[@]}" report=false
./run_all.sh report suite=llm_toy "${with_archive[@]}" results_dir="$out" save_archive="$archive" out_dir=docs/llm_toy
.venv/bin/python scripts/write_canaries.py "$archive"
# the seven against each other per task: scores, compare's verdict for every pair, dynamics (issue 31)
.venv/bin/python bench/llm_builtins_table.py "$archive" --out docs/llm_toy/table.md
