"""The cost of one MuJoCo update on a stack of K runs, per minibatch step, in this process.

    OMP_NUM_THREADS=1 .venv/bin/python bench/update_step.py [--env Hopper-v5] [--algos ppo_clip ppo_kl]
        [--stacks 1 12] [--repeats 3]

For each algorithm and stack size K: K runs (seeds 0..K-1, the algorithm's MuJoCo defaults: 2,048
steps, 10 epochs of minibatches of 64) each collect a batch and update once (Adam moments and
observation statistics that are not fresh), collect a second batch, and then that second update
is timed on fresh copies (`update_runs` on a stack of K, as the harness calls it): the best of
``--repeats``. Printed per row: milliseconds per update, microseconds per minibatch step (320
per update) and per run and minibatch step. No environment stepping is timed.

To compare two engines, run it in a worktree of each, one after the other, alone on the machine.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def make_runs(name: str, env_id: str, k: int):
    """K (agent, algorithm, batch) as the harness builds them, after one update, with a batch."""
    import algos
    import suites
    from harness.train import seed_everything
    suite, cls = suites.get("mujoco"), algos.get(name)
    scfg = suite.Config()
    runs = []
    for seed in range(k):
        seed_everything(seed)
        cfg = cls.Config(**suite.defaults_for(cls))
        env = suite.make_env(env_id, scfg, train=False)
        agent = suite.make_agent(env, scfg)
        collector, _ = suite.make_collector(env_id, scfg, cls.needs(cfg), cfg, seed)
        algo = cls(agent, cfg, total_updates=100, seed=seed)
        batch, _, _ = algo.collect(collector, agent)
        algo.update(batch)
        agent.observe(batch.obs.flatten(0, 1))
        batch, _, _ = algo.collect(collector, agent)
        runs.append((agent, algo, batch))
    return cls, suite, runs


def timed_update(cls, suite, runs) -> float:
    """Seconds of one ``update_runs`` on copies of ``runs`` stacked."""
    from algos.stack import RunStack
    copies = copy.deepcopy(runs)   # agents, algorithms (with their optimizers) and batches, together
    stack = RunStack([a for _, a, _ in copies], suite.stack_agents([g for g, _, _ in copies]),
                     [b for _, _, b in copies])
    start = time.perf_counter()
    cls.update_runs(stack)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Hopper-v5")
    parser.add_argument("--algos", nargs="+", default=["ppo_clip", "ppo_kl"])
    parser.add_argument("--stacks", nargs="+", type=int, default=[1, 12])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.distributions.Distribution.set_default_validate_args(False)
    print(f"| algorithm | runs in the stack | update: ms | per minibatch step: us | per run and step: us |")
    print("|---|---:|---:|---:|---:|")
    for name in args.algos:
        for k in args.stacks:
            cls, suite, runs = make_runs(name, args.env, k)
            steps = runs[0][1].cfg.num_epochs * -(-runs[0][2].num_steps // runs[0][1].cfg.minibatch_size)
            timed_update(cls, suite, runs)   # warm-up
            best = min(timed_update(cls, suite, runs) for _ in range(args.repeats))
            print(f"| {name} | {k} | {best * 1e3:.0f} | {best / steps * 1e6:.0f} | {best / steps / k * 1e6:.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
