#!/usr/bin/env bash
# The GRPO variants against their parent on the LLM toy suite (issue 31): every variant at scale=quick
# on sort, keywords and add, 5 seeds, then compare's verdict for each against the parent's runs in the
# committed archive (bench/llm_archive.sh made it), the table of docs/BENCHMARKS.md, and the report
# with the training dynamics of the variants beside the seven built-ins.
#
#   bash bench/llm_variants.sh [results_dir] [archive]     (~1.5 h on 2 cores; the same command resumes)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/llm_variants}"
archive="${2:-docs/llm_toy/archive}"
sweep() { ./run_all.sh suite=llm_toy scale=quick task=sort,keywords,add seeds=5 jobs=2 results_dir="$out" report=false "$@"; }
sweep algo=dr_grpo,gspo,cispo,reinforce_pp,reinforce_pp_baseline
sweep algo=gspo algo.importance_sampling_level=sequence_token
sweep algo=grpo algo.loss_agg=token-mean
.venv/bin/python bench/llm_variants_table.py "$out" "$archive" --out docs/llm_variants/table.md
./run_all.sh report suite=llm_toy archive="$archive" results_dir="$out" out_dir=docs/llm_variants
