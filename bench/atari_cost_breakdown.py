"""Where an Atari ppo_clip environment step spends its time on one CPU thread: the update's
forward + backward (3 epochs of minibatch 256, paper Table 5) and the acting forward pass at
batch 8, per environment step, in fp32 and in bf16 (suite.precision=bf16).

    OMP_NUM_THREADS=1 .venv/bin/python bench/atari_cost_breakdown.py [--threads 1]

Run it alone on the machine. Environment stepping is measured by bench/atari_throughput.py.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from suites.atari import AtariAgent, AtariConfig  # noqa: E402

NUM_ENVS, MINIBATCH, EPOCHS, ACTIONS = 8, 256, 3, 4      # paper Table 5; Breakout's 4 actions


def seconds_per_call(fn, repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    torch.set_num_threads(parser.parse_args().threads)
    torch.manual_seed(0)
    # channels-last frames, as EnvpoolVecEnv hands them out and the rollout stores them
    obs = torch.randint(0, 256, (MINIBATCH, 4, 84, 84), dtype=torch.uint8).contiguous(memory_format=torch.channels_last)
    actions = torch.randint(0, ACTIONS, (MINIBATCH,))
    print("| precision | update fwd+bwd, minibatch 256 (ms) | per env step, 3 epochs (ms) "
          "| acting pass, batch 8 (ms) | per env step (ms) |")
    print("|---|---:|---:|---:|---:|")
    for precision in ("fp32", "bf16"):
        agent = AtariAgent(ACTIONS, AtariConfig(precision=precision))
        opt = torch.optim.Adam(agent.parameters(), 2.5e-4, eps=1e-5)
        rng = np.random.default_rng(0)

        def update_step():
            dist = agent.dist(obs)
            value = agent.value(obs)   # reuses the trunk's output of dist(obs), as PPO's update does
            loss = -dist.log_prob(actions).mean() + value.pow(2).mean() - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

        def acting_pass():
            agent.act_and_score(obs[:NUM_ENVS].numpy(), rng, True)

        update = seconds_per_call(update_step, 10)
        act = seconds_per_call(acting_pass, 50)
        print(f"| {precision} | {update * 1e3:.1f} | {update * EPOCHS / MINIBATCH * 1e3:.3f} "
              f"| {act * 1e3:.2f} | {act / NUM_ENVS * 1e3:.3f} |")


if __name__ == "__main__":
    main()
