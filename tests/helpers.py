"""Helpers shared by the harness and end-to-end tests (not a test module)."""
from harness.config import parse_sweep, plan_runs, split_args

# A tiny ppo_clip run on InvertedPendulum: updates of 256 steps, 2 epochs of 4 minibatches.
TINY = ["algo.num_steps=256", "algo.minibatch_size=64", "algo.num_epochs=2"]


def plan(results_dir, *args, algo="ppo_clip", env="InvertedPendulum-v5", steps=1024, **top):
    """RunConfigs through the same parsing path as the command line."""
    words = {"suite": "mujoco", "algo": algo, "env": env, "seeds": "1", "steps": str(steps),
             "eval_episodes": "1", "eval_every": str(steps), "results_dir": str(results_dir)}
    words.update({k: str(v) for k, v in top.items()})
    t, a, s = split_args([f"{k}={v}" for k, v in words.items()] + list(args))
    return plan_runs(parse_sweep(t), a, s)
