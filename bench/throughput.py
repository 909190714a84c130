"""Training throughput on one core, side by side with the peers, in one run.

    .venv/bin/pip install -e ".[bench]"      # stable-baselines3, sb3-contrib
    .venv/bin/python bench/throughput.py [--steps 100000] [--env Hopper-v5]

Measures, each in a fresh process with one torch thread, nothing else running:
  (a) raw environment steps/s with random actions: the limit;
  (b) pg-arena ppo_clip and trpo training steps/s (environment steps / wall seconds of
      the whole run, set-up included);
  (c) Stable-Baselines3 PPO at the paper's hyper-parameters and sb3-contrib TRPO at its
      defaults, with pg-arena configured to the same values.
and prints a Markdown table with the ratios. Run it alone: two busy processes on two
cores distort every number.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# this tree's code, also where the environment's editable install points at another checkout
sys.path.insert(0, str(ROOT))

# Stable-Baselines3 PPO at the PPO paper's MuJoCo settings (Table 3), SB3's own defaults
# otherwise; pg-arena set to the same (SB3: orthogonal init, no observation normalisation,
# advantages normalised per minibatch, vf_coef 0.5 on the MSE, gradient clipping 0.5).
PPO_SETTINGS = dict(n_steps=2048, batch_size=64, n_epochs=10, learning_rate=3e-4, gamma=0.99,
                    gae_lambda=0.95, clip_range=0.2, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5)
PG_ARENA_PPO = ["algo=ppo_clip", "algo.num_steps=2048", "algo.minibatch_size=64", "algo.num_epochs=10",
                "algo.lr=0.0003", "algo.gamma=0.99", "algo.lam=0.95", "algo.clip_eps=0.2", "algo.vf_coef=0.5",
                "algo.max_grad_norm=0.5", "algo.adv_norm=minibatch",
                "algo.lr_anneal=false", "algo.clip_anneal=false"]  # SB3: constant schedules
# sb3-contrib TRPO defaults (n_steps 2048, batch 128, cg 15 steps, damping 0.1, line search
# x0.8 up to 10 times, 10 critic epochs at 1e-3, target KL 0.01, GAE lambda 0.95).
PG_ARENA_TRPO = ["algo=trpo", "algo.num_steps=2048", "algo.lam=0.95", "algo.cg_iters=15", "algo.cg_damping=0.1",
                 "algo.line_search_shrink=0.8", "algo.line_search_steps=10", "algo.vf_epochs=10",
                 "algo.vf_minibatch_size=128", "algo.vf_lr=0.001", "algo.max_kl=0.01",
                 "algo.fvp_fraction=1.0"]  # sb3-contrib: sub_sampling_factor=1
SAME_NETWORK = ["suite.obs_norm=false", "suite.init=orthogonal"]


def raw_env(env_id: str, steps: int) -> dict:
    import gymnasium as gym
    import numpy as np
    env = gym.make(env_id, disable_env_checker=True)
    rng = np.random.default_rng(0)
    low, high = env.action_space.low, env.action_space.high
    actions = rng.uniform(low, high, size=(steps, *low.shape)).astype(np.float32)
    env.reset(seed=0)
    start = time.perf_counter()
    for t in range(steps):
        _, _, terminated, truncated, _ = env.step(actions[t])
        if terminated or truncated:
            env.reset()
    return {"sps": steps / (time.perf_counter() - start)}


def pg_arena(env_id: str, steps: int, args: list[str]) -> dict:
    import torch
    torch.set_num_threads(1)
    from harness.config import parse_sweep, plan_runs, split_args
    from harness.summary import final_return
    from harness.train import train
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        # One evaluation episode at the start and end only: SB3's learn() evaluates nothing.
        top, algo, suite = split_args([f"env={env_id}", f"steps={steps}", "seeds=1", f"results_dir={tmp}",
                                       f"eval_every={steps * 10}", "eval_episodes=1", *args])
        (run,) = plan_runs(parse_sweep(top), algo, suite)
        start = time.perf_counter()
        record = train(run)
        wall = time.perf_counter() - start
        assert record["status"] == "done", record.get("error")
        return {"sps": steps / wall, "final_return": final_return(run.run_dir)}


def sb3(env_id: str, steps: int, algo: str) -> dict:
    import gymnasium as gym
    import torch
    torch.set_num_threads(1)
    from stable_baselines3.common.monitor import Monitor
    env = Monitor(gym.make(env_id))
    if algo == "ppo":
        from stable_baselines3 import PPO
        model = PPO("MlpPolicy", env, seed=0, device="cpu", verbose=0, **PPO_SETTINGS)
    else:
        from sb3_contrib import TRPO
        model = TRPO("MlpPolicy", env, seed=0, device="cpu", verbose=0)
    start = time.perf_counter()
    model.learn(steps)
    wall = time.perf_counter() - start
    returns = env.get_episode_rewards()[-100:]
    return {"sps": steps / wall, "final_return": sum(returns) / max(1, len(returns))}


CASES = {
    "raw env (random actions)": ("raw", []),
    "pg-arena ppo_clip": ("pg_arena", PG_ARENA_PPO + SAME_NETWORK),
    "Stable-Baselines3 PPO": ("sb3", "ppo"),
    "pg-arena trpo": ("pg_arena", PG_ARENA_TRPO + SAME_NETWORK),
    "sb3-contrib TRPO": ("sb3", "trpo"),
}


def _child(case: str, env_id: str, steps: int) -> None:
    kind, arg = CASES[case]
    result = raw_env(env_id, steps) if kind == "raw" else pg_arena(env_id, steps, arg) if kind == "pg_arena" \
        else sb3(env_id, steps, arg)
    print("RESULT " + json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Hopper-v5")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.env, args.steps)
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    results = {}
    for case in CASES:
        out = subprocess.run([sys.executable, __file__, "--child", case, "--env", args.env, "--steps", str(args.steps)],
                             env=env, capture_output=True, text=True, cwd=ROOT)
        line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
        if out.returncode != 0 or not line:
            sys.exit(f"{case} failed:\n{out.stderr[-2000:]}")
        results[case] = json.loads(line[-1][7:])
        print(f"  {case}: {results[case]['sps']:.0f} steps/s", file=sys.stderr)
    raw = results["raw env (random actions)"]["sps"]
    peers = {"pg-arena ppo_clip": "Stable-Baselines3 PPO", "pg-arena trpo": "sb3-contrib TRPO"}
    print(f"\n{args.env}, {args.steps:,} steps per run, one torch thread, one process at a time\n")
    print("| run | steps/s | vs peer | share of raw env steps/s | final return (last 100 ep.) |")
    print("|---|---:|---:|---:|---:|")
    for case, r in results.items():
        peer = f"{r['sps'] / results[peers[case]]['sps']:.2f}x" if case in peers else ""
        ret = f"{r['final_return']:.0f}" if r.get("final_return") is not None else ""
        print(f"| {case} | {r['sps']:.0f} | {peer} | {r['sps'] / raw:.0%} | {ret} |")


if __name__ == "__main__":
    main()
