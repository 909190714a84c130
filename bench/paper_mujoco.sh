#!/usr/bin/env bash
# The PPO paper's MuJoCo sweeps at the paper's budget (issue 17), in this order:
#   bash bench/paper_mujoco.sh [results_dir] [archive]   (hours on 2 cores; the same command resumes)
# 1. Table 1's 11 settings (its epsilon = 0.2 row is also the main job's ppo_clip and the learning
# check of docs/BENCHMARKS.md), 2. the seven algorithms (the main job: its ppo_clip and ppo_kl are
# Table 1's), 3. ppo_clip and the no-clipping setting with the
# constant schedule of the code released with the paper (baselines da99706), to measure what
# the annealing changes (the paper's worst setting, -0.39, is where instability shows),
# 4. the archive (with its canaries, for compare archive=) and the report under docs/paper_mujoco/. Runs done by an earlier step are not
# run again (Table 1 first, so that its runs stack as the whole sweep plans them); each sweep records
# its wall time (bench/sweep_wall_time.py <its arguments>).
#
# The whole is longer than a machine lives here (hours; results/ does not survive a session), so it
# runs in pieces: every sweep skips what the committed archive holds done and resumes the runs it
# holds unfinished from the checkpoints it carries (archive=, core/archived.py). Before a machine
# goes, fold its runs into the archive and commit it:
#   ./run_all.sh report archive=docs/paper_mujoco/archive results_dir=<results_dir> \
#       save_archive=docs/paper_mujoco/archive out_dir=docs/paper_mujoco
# A remake by another engine names a new archive folder: until its first piece is folded there is
# none, and the sweeps run from the results folder alone (an older engine's runs are not its runs).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results}"
archive="${2:-docs/paper_mujoco/archive}"
held=()
[ -e "$archive/archive.json" ] && held=(archive="$archive")
sweep() { ./run_all.sh suite=mujoco "$@" jobs=2 results_dir="$out" "${held[@]}" report=false; }
sweep grid=table1
sweep
sweep algo=ppo_clip algo.lr_anneal=false algo.clip_anneal=false
sweep algo=ppo_kl algo.adaptive=false algo.kl_coef=0.0 algo.lr_anneal=false algo.clip_anneal=false
./run_all.sh report "${held[@]}" results_dir="$out" save_archive="$archive" out_dir=docs/paper_mujoco
.venv/bin/python scripts/write_canaries.py "$archive"
