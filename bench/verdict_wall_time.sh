#!/usr/bin/env bash
# Wall time to compare's verdict at the paper's protocol (issue 30): two candidates, each one small
# file in algos/ as a user would write it, against ppo_clip from the committed archive, seeds=auto,
# one after the other. Run it alone on the machine: it is a timing.
#
#   bash bench/verdict_wall_time.sh [archive] [results_dir]
#
# - ppo_clip_lr_div10: PPO-clip with a tenth of Table 3's stepsize (3e-5), clearly worse;
# - ppo_clip_copy: PPO-clip's code under another name (an A/A comparison). With the archive's seeds
#   its runs must be the archive's to the last bit, so the verdict is `identical` (exit 4) after one
#   round, if a run's numbers depend on neither its stack nor the machine's packing (issue 29).
#
# The two files are written into algos/ for the run and removed after it (each run.json keeps the
# source of an untracked algorithm file, so the results still name the code). Prints, per candidate,
# the verdict line, the exit code and the wall time of the whole command (plan, canaries, runs,
# verdict); the JSON verdicts go to <results_dir>/<candidate>.json.
set -euo pipefail
cd "$(dirname "$0")/.."
archive="${1:-docs/paper_mujoco/archive}"
out="${2:-results/bench_verdict}"
mkdir -p "$out"
files=(algos/ppo_clip_lr_div10.py algos/ppo_clip_copy.py)
for f in "${files[@]}"; do
    if [ -e "$f" ]; then echo "error: $f exists; move it away first" >&2; exit 2; fi
done
trap 'rm -f "${files[@]}"' EXIT

cat > algos/ppo_clip_lr_div10.py <<'PY'
"""PPO-clip with a tenth of the PPO paper's Table 3 stepsize (3e-4 / 10): a clearly worse variant
for bench/verdict_wall_time.sh."""
from dataclasses import dataclass

from algos import register
from algos.ppo_clip import PPOClip, PPOClipConfig


@dataclass
class Config(PPOClipConfig):
    lr: float = 3e-5          # the one change: a tenth of Table 3's 3e-4


@register
class PPOClipLrDiv10(PPOClip):
    name = "ppo_clip_lr_div10"
    Config = Config
PY

cat > algos/ppo_clip_copy.py <<'PY'
"""PPO-clip's code under another name: the A/A candidate of bench/verdict_wall_time.sh."""
from algos import register
from algos.ppo_clip import PPOClip


@register
class PPOClipCopy(PPOClip):
    name = "ppo_clip_copy"
PY

for candidate in ppo_clip_lr_div10 ppo_clip_copy; do
    start=$(date +%s)
    set +e
    ./run_all.sh compare candidate="$candidate" baseline=ppo_clip suite=mujoco archive="$archive" seeds=auto \
        results_dir="$out" json="$out/$candidate.json" jobs=2 > "$out/$candidate.log" 2>&1
    code=$?
    set -e
    wall=$(( $(date +%s) - start ))
    verdict=$(grep -E "^(sequential verdict|verdict):" "$out/$candidate.log" | tail -1)
    echo "$candidate: exit $code, $(awk "BEGIN { printf \"%.1f\", $wall / 60 }") min wall; $verdict"
done
