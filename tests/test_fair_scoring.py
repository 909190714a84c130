"""One score per suite, the same for every algorithm, and the same in the sweep's end table, the
report and ``compare``: on Atari the group algorithms' training games are cut short, so every
algorithm is scored on whole evaluation games; on the LLM suite the score is the held-out gold
score, not the training proxy."""
import csv

import pytest

from analysis.load import load_results
from analysis.scores import run_scores, scoring
from analysis.synthetic import write_run
from harness import cli
from harness.config import RunConfig
from harness.summary import summary_table


def read_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def run_config(results_dir, suite, env, label, seed=0):
    algo, _, rest = label.partition("+")
    return RunConfig(suite=suite, env=env, algo=algo, variant="+" + rest if rest else "", seed=seed, steps=10_000,
                     eval_every=10_000, eval_episodes=5, checkpoint_every=20, algo_cfg={}, suite_cfg={},
                     results_dir=str(results_dir))


def test_llm_sweep_table_shows_held_out_gold_not_the_training_proxy(tmp_path):
    """Seen: a smoke run printed 0.4 (the reward model's score on training prompts) where its
    held-out gold was 0.625."""
    write_run(tmp_path, "keywords", "ppo_clip", 0, returns=[0.4] * 120, suite="llm_toy", evals=[0.3, 0.625])
    write_run(tmp_path, "keywords", "ppo_clip", 1, returns=[0.4] * 120, suite="llm_toy", evals=[0.3, 0.875])
    runs = [run_config(tmp_path, "llm_toy", "keywords", "ppo_clip", s) for s in (0, 1)]
    table = summary_table(runs)
    assert "held-out gold" in table.splitlines()[0]
    row = next(line for line in table.splitlines() if line.startswith("ppo_clip"))
    assert "0.75 ± " in row and "0.40" not in row        # mean of 0.625 and 0.875, not the proxy
    # the report and compare read the same number
    scores = run_scores(load_results(tmp_path, "llm_toy"), scoring("llm_toy")["score"], "llm_toy")
    assert sorted(scores["score"]) == [0.625, 0.875]


def test_mujoco_sweep_table_is_the_last_100_training_episodes(tmp_path):
    write_run(tmp_path, "Hopper-v5", "ppo_clip", 0, returns=[0.0] * 50 + [100.0] * 100, evals=[1.0, 2.0])
    table = summary_table([run_config(tmp_path, "mujoco", "Hopper-v5", "ppo_clip")])
    assert "last 100 training episodes" in table.splitlines()[0]
    assert "100.0 (n=1)" in table


@pytest.mark.slow
def test_atari_group_and_horizon_algorithms_are_scored_on_games_of_one_length_limit(tmp_path, capsys):
    """A game whose episodes outlast the group rollouts' cut: Pong, where an untrained policy loses
    slowly, with the cut at 64 steps and the game limit at 400 (the suite's 4,500 and 27,000, scaled
    down). grpo trains on games cut at 64 steps, ppo_clip on games to 400; both must be scored on
    games to 400 steps."""
    common = ["suite=atari", "env=Pong", "steps=512", "seeds=1", "eval_every=512", "eval_episodes=1",
              "suite.group_max_steps=64", "suite.max_episode_steps=400", "report=false", f"results_dir={tmp_path}"]
    assert cli.main([*common, "algo=ppo_clip", "algo.num_envs=2", "algo.num_steps=128"]) == 0
    assert cli.main([*common, "algo=grpo", "algo.group_size=2", "algo.num_minibatches=1"]) == 0
    table = capsys.readouterr().out
    root = tmp_path / "atari" / "Pong"
    # the group algorithm's training games really are cut; the horizon algorithm's are not
    assert max(int(r["episode_length"]) for r in read_rows(next(root.glob("grpo*/seed0")) / "episodes.csv")) <= 64
    results = load_results(tmp_path, "atari", sources=("episodes.csv", "evals.csv", "metrics.csv"))
    scores = run_scores(results, scoring("atari")["score"], "atari").set_index("label")["score"]
    lengths = {}
    for label in ("ppo_clip", "grpo"):
        run_dir = next(root.glob(f"{label}*/seed0"))
        last_eval = read_rows(run_dir / "evals.csv")[-1]
        lengths[label] = float(last_eval["eval_length_mean"])
        assert scores[run_dir.parent.name] == float(last_eval["eval_return_mean"])
    # scored on games that ran to the 400-step limit (Pong outlasts it; FIRE at reset takes one), far
    # past the group cut, the same limit for both
    assert lengths["ppo_clip"] == lengths["grpo"] >= 399
    assert "last evaluation's whole games" in table
