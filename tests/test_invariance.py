"""A run is named by its config and seed: the same config and seed give the same numbers whatever
sweep it ran in (issue 29). On one machine a run's every CSV (episodes, evaluations, update
metrics; the timing columns aside) is bit-identical whether it trained alone (``batch_runs=1``)
or in a stack, and whichever runs share its stack.

Small runs to stay fast (~30 s on one core): 4 updates of 512 steps (Hopper-v5;
InvertedPendulum-v5 for a policy with one action, whose output layer has width 1), 2 epochs of 4
minibatches for the PPO family, the other options their defaults; seeds 0 and 1 alone against
the two as one stack, for reinforce, trpo, ppo_clip (also with the CleanRL preset) and ppo_kl.
Table 1: 6 of its 11 settings (4 ppo_kl, the no-penalty row among them, and 2 ppo_clip), each
alone against the settings of one algorithm as one stack (the planner stacks runs of one
algorithm class only). All 11 at the paper's sizes (2048 steps, 10 epochs of 64), 4 updates,
alone against stacks of 8 and 3, were checked once by hand (bit-identical; ~70 s).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from core.results import learning_rows
from harness.config import parse_sweep, plan_batches, plan_runs, split_args
from harness.train import train_batch

FILES = ("episodes.csv", "evals.csv", "metrics.csv")
STEPS, NUM_STEPS = 2048, 512          # 4 updates
PPO_SMALL = [f"algo.num_steps={NUM_STEPS}", "algo.minibatch_size=128", "algo.num_epochs=2"]
GROUP_SMALL = ["algo.group_size=4", "algo.num_groups=2", "algo.num_minibatches=2"]   # ~8 updates
SMALL = {"ppo_clip": PPO_SMALL, "ppo_kl": PPO_SMALL, "trpo": [f"algo.num_steps={NUM_STEPS}"],
         "reinforce": [f"algo.num_steps={NUM_STEPS}"],
         "grpo": GROUP_SMALL + ["algo.num_epochs=2"], "dapo": GROUP_SMALL + ["algo.num_epochs=2"],
         "rloo": GROUP_SMALL}

# Table 1's settings in the test (of the eleven of suites/mujoco.py's grids["table1"])
TABLE1 = [
    ("ppo_kl", {"kl_coef": "0.0", "adaptive": "false"}),    # no clipping or penalty
    ("ppo_kl", {"kl_target": "0.003"}),
    ("ppo_kl", {"kl_target": "0.03"}),
    ("ppo_kl", {"adaptive": "false", "kl_coef": "3.0"}),
    ("ppo_clip", {"clip_eps": "0.1"}),
    ("ppo_clip", {"clip_eps": "0.3"}),
]


def plan(results_dir: Path, algo: str, env: str, seeds: int = 2, options: dict | None = None, **top):
    words = {"suite": "mujoco", "algo": algo, "env": env, "seeds": str(seeds), "steps": str(STEPS),
             "eval_every": str(STEPS // 2), "eval_episodes": "1", "results_dir": str(results_dir),
             **{k: str(v) for k, v in top.items()}}
    extra = SMALL[algo] + [f"algo.{k}={v}" for k, v in (options or {}).items()]
    t, a, s = split_args([f"{k}={v}" for k, v in words.items()] + extra)
    return plan_runs(parse_sweep(t), a, s)


def differences(dir_a: Path, dir_b: Path) -> list[str]:
    """Where two runs' CSVs differ (timing columns aside): per file, the differing columns and the
    first row (update) at which each differs. Empty: bit-identical as written."""
    out = []
    for name in FILES:
        a, b = learning_rows(dir_a / name), learning_rows(dir_b / name)
        if a is None or b is None:
            out.append(f"{name}: missing in {'the first' if a is None else 'the second'}")
            continue
        if a[0] != b[0]:
            out.append(f"{name}: columns {a[0]} != {b[0]}")
            continue
        if len(a[1]) != len(b[1]):
            out.append(f"{name}: {len(a[1])} rows != {len(b[1])}")
        first: dict[str, int] = {}
        for i, (ra, rb) in enumerate(zip(a[1], b[1])):
            for column, x, y in zip(a[0], ra, rb):
                if x != y and column not in first:
                    first[column] = i + 1
        if first:
            by_row = sorted(first.items(), key=lambda x: x[1])
            out.append(f"{name}: " + ", ".join(f"{c} from row {r}" for c, r in by_row))
    return out


def assert_same(alone, stacked) -> None:
    problems = {}
    assert len(alone) == len(stacked)
    for a, b in zip(alone, stacked):
        assert (a.algo, a.variant, a.seed) == (b.algo, b.variant, b.seed)
        diff = differences(a.run_dir, b.run_dir)
        if diff:
            problems[f"{a.algo}{a.variant} seed {a.seed}"] = diff
        header, rows = learning_rows(a.run_dir / "metrics.csv")
        if "first_ratio_error" in header:   # the update's agent computes what the collection computed
            i = header.index("first_ratio_error")
            assert all(float(r[i]) == 0.0 for r in rows), f"{a.run_dir}: a first ratio is not exactly 1"
    assert not problems, "alone and stacked differ:\n" + "\n".join(
        f"  {run}: " + "; ".join(d) for run, d in problems.items())


def train_as_planned(runs, batch_runs: int) -> None:
    for unit in plan_batches(runs, batch_runs, jobs=1):
        records = train_batch(unit)
        assert all(r["status"] == "done" for r in records), [r.get("error") for r in records]


CASES = {   # (algorithm, environment, top-level words, algorithm options)
    "ppo_clip-Hopper": ("ppo_clip", "Hopper-v5", {}, {}),
    "ppo_kl-Hopper": ("ppo_kl", "Hopper-v5", {}, {}),
    "trpo-Hopper": ("trpo", "Hopper-v5", {}, {}),
    "reinforce-Hopper": ("reinforce", "Hopper-v5", {}, {}),
    # CleanRL's code-level options: minibatch advantage whitening, value clipping, gradient-norm
    # clipping, reward scaling, orthogonal initialisation
    "ppo_clip-Hopper-cleanrl": ("ppo_clip", "Hopper-v5", {"preset": "cleanrl"}, {}),
    # one action: the policy's output layer has width 1
    "ppo_clip-InvertedPendulum": ("ppo_clip", "InvertedPendulum-v5", {}, {}),
    "trpo-InvertedPendulum": ("trpo", "InvertedPendulum-v5", {}, {}),
    # the group algorithms: batches of whole episodes (padded to the length limit), minibatches of
    # whole columns; with a KL penalty toward pi_ref, and RLOO's clipped epochs
    "grpo-Hopper": ("grpo", "Hopper-v5", {}, {}),
    "grpo-Hopper-kl": ("grpo", "Hopper-v5", {}, {"kl_coef": "0.04"}),
    "grpo-InvertedPendulum": ("grpo", "InvertedPendulum-v5", {}, {}),
    "rloo-Hopper": ("rloo", "Hopper-v5", {}, {}),
    "rloo-Hopper-epochs": ("rloo", "Hopper-v5", {}, {"num_epochs": "2", "kl_coef": "0.05"}),
    "dapo-Hopper": ("dapo", "Hopper-v5", {}, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_seeds_alone_and_stacked_write_the_same_numbers(tmp_path, case):
    algo, env, top, options = CASES[case]
    alone = plan(tmp_path / "alone", algo, env, options=options, **top)
    stacked = plan(tmp_path / "stacked", algo, env, options=options, **top)
    assert [len(u) for u in plan_batches(stacked, 2, jobs=1)] == [2]
    train_as_planned(alone, 1)
    train_as_planned(stacked, 2)
    assert_same(alone, stacked)


def test_table1_settings_alone_and_stacked_write_the_same_numbers(tmp_path):
    alone, stacked = [], []
    for algo, options in TABLE1:
        alone += plan(tmp_path / "alone", algo, "Hopper-v5", seeds=1, options=options)
        stacked += plan(tmp_path / "stacked", algo, "Hopper-v5", seeds=1, options=options)
    assert sorted(len(u) for u in plan_batches(stacked, len(TABLE1), jobs=1)) == [2, 4]
    train_as_planned(alone, 1)
    train_as_planned(stacked, len(TABLE1))
    assert_same(alone, stacked)


def test_a_run_resumed_in_a_stack_of_another_size_ends_as_if_never_killed(tmp_path, monkeypatch):
    """Three seeds stacked, killed after their second update's checkpoint; seed 0 resumes alone,
    seeds 1 and 2 as a stack of two: each ends with the numbers of its uninterrupted lone run."""
    import harness.train as train_mod
    words = dict(checkpoint_every=1)
    uninterrupted = plan(tmp_path / "alone", "ppo_clip", "Hopper-v5", seeds=3, **words)
    train_as_planned(uninterrupted, 1)
    killed = plan(tmp_path / "killed", "ppo_clip", "Hopper-v5", seeds=3, **words)
    real_save, saves = train_mod._save, [0]

    def save_then_die(*args, **kwargs):
        real_save(*args, **kwargs)
        saves[0] += 1
        if saves[0] == 2 * len(killed):
            raise KeyboardInterrupt   # a BaseException: the folders are left as a kill leaves them
    monkeypatch.setattr(train_mod, "_save", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train_batch(killed)
    monkeypatch.setattr(train_mod, "_save", real_save)
    for unit in ([killed[0]], killed[1:]):
        records = train_batch(unit)
        assert all(r["status"] == "done" and r["resumed_from"]["update"] == 2 for r in records), records
    assert_same(uninterrupted, killed)


def test_a_per_run_number_is_the_same_operand_whichever_runs_share_the_stack():
    """An annealed clip epsilon whose ``1 + eps`` rounds differently in double (a Python number)
    than in float32 (a per-run tensor): a run's clip bounds, hence its loss, are the same alone,
    in a stack that agrees on epsilon and in one that does not."""
    import torch

    from algos.losses import clipped_surrogate
    from algos.stack import per_run
    eps = 0.3 * (1 - 437 / 488)
    assert torch.tensor(1.0 + eps, dtype=torch.float32) != 1.0 + torch.tensor(eps, dtype=torch.float32)
    g = torch.Generator().manual_seed(0)
    ratio = 1 + (torch.rand(3, 4096, 1, generator=g) - 0.5) * 0.07
    logp_old = torch.zeros(3, 4096, 1)
    adv = torch.randn(3, 4096, 1, generator=g)
    losses = [clipped_surrogate(ratio[:k].log(), logp_old[:k], adv[:k], per_run(e, like=adv, dims=2))[0]
              for k, e in ((1, [eps]), (2, [eps, eps]), (3, [eps, 0.2, 0.1]))]
    assert torch.equal(losses[0], losses[1]) and torch.equal(losses[0], losses[2])
