"""End to end: the smoke sweep of every algorithm, and one learning check that cannot pass
by chance."""
import csv
import json

import pytest

import algos
from harness import cli
from core.results import is_done
from harness.train import train
from helpers import plan

pytestmark = pytest.mark.slow


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_smoke_sweep_of_every_algorithm(tmp_path, capsys):
    code = cli.main(["suite=mujoco", "scale=smoke", "jobs=2", f"results_dir={tmp_path}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    names = algos.builtin_names()    # the default list: a variant in algos/ runs only when named
    assert len(names) == 7
    envs = ("InvertedPendulum-v5", "Hopper-v5")
    run_dirs = sorted(p.parent for p in tmp_path.rglob("run.json"))
    assert len(run_dirs) == len(names) * len(envs)
    for env in envs:
        for name in names:
            run_dir = tmp_path / "mujoco" / env / name / "seed0"
            record = json.loads((run_dir / "run.json").read_text())
            assert record["status"] == "done", (run_dir, record.get("error"))
            assert is_done(run_dir)
            assert record["config"]["algo"] == name and record["config"]["env"] == env
            episodes = read_rows(run_dir / "episodes.csv")
            evals = read_rows(run_dir / "evals.csv")
            metrics = read_rows(run_dir / "metrics.csv")
            assert episodes and evals and metrics, run_dir
            assert int(metrics[-1]["global_step"]) >= 4096
            steps = [int(r["global_step"]) for r in episodes]
            assert steps == sorted(steps)
            assert all(int(r["episode_length"]) > 0 for r in episodes)
            assert not (run_dir / "checkpoint.pt").exists()
    # the summary names every algorithm
    for name in names:
        assert name in out


def test_ppo_clip_learns_inverted_pendulum(tmp_path):
    """A random policy keeps the pendulum up for ~5-10 steps (return ~5-10); PPO with the
    paper's MuJoCo settings balances it for the full 1000 steps within ~40k steps
    (checked with seeds 0, 1 and 2). The bar of 500 leaves a wide margin."""
    (run,) = plan(tmp_path, steps=40960, eval_every=40960, eval_episodes=3)
    record = train(run)
    assert record["status"] == "done", record.get("error")
    returns = [float(r["episode_return"]) for r in read_rows(run.run_dir / "episodes.csv")]
    evals = read_rows(run.run_dir / "evals.csv")
    # the starting policy is as bad as a random one: learning, not an easy environment
    assert int(evals[0]["global_step"]) == 0 and float(evals[0]["eval_return_mean"]) < 50
    assert sum(returns[:20]) / 20 < 50
    last20 = sum(returns[-20:]) / 20
    assert last20 >= 500, last20
    assert float(evals[-1]["eval_return_mean"]) >= 500, evals[-1]
