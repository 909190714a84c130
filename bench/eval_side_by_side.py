"""A MuJoCo evaluation one episode after another against the episodes side by side.

    OMP_NUM_THREADS=1 .venv/bin/python bench/eval_side_by_side.py [--env HalfCheetah-v5 Hopper-v5] [--episodes 10] [--repeats 3]

``core.rollout.evaluate`` (one gymnasium environment, the episodes one after another, what every
suite does) against ``core.rollout.evaluate_rows`` (the episodes as the rows of one
``MujocoVecEnv``, what the MuJoCo suite does since 96262d0), on the same agent (the suite's
initial network, its output layer scaled so that Hopper's episodes end at different steps) and
seeds, interleaved, best of ``--repeats``. Checks that both give the same returns, then prints
seconds per evaluation (best of the repeats) and the ratio. Run it alone.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from core.rollout import evaluate, evaluate_rows  # noqa: E402
from suites.mujoco import MujocoConfig, MujocoSuite  # noqa: E402
from suites.mujoco_vec import MujocoVecEnv  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", nargs="+", default=["HalfCheetah-v5", "Hopper-v5"])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    suite, cfg = MujocoSuite(), MujocoConfig()
    print("| environment | episodes | one after another: s | side by side: s | ratio |")
    print("|---|---|---:|---:|---:|")
    for env_id in args.env:
        env = suite.make_env(env_id, cfg, train=False)
        torch.manual_seed(0)
        agent = suite.make_agent(env, cfg)
        with torch.no_grad():
            agent.policy_net[-1].weight.mul_(30.0)
        rows = MujocoVecEnv(env_id, args.episodes)
        best = {"seq": float("inf"), "rows": float("inf")}
        for r in range(args.repeats):
            start = time.perf_counter()
            ref = evaluate(agent, env, args.episodes, seed=r)
            best["seq"] = min(best["seq"], time.perf_counter() - start)
            start = time.perf_counter()
            got = evaluate_rows(agent, rows, args.episodes, seed=r)
            best["rows"] = min(best["rows"], time.perf_counter() - start)
            if got != ref:
                raise SystemExit(f"{env_id}: the returns differ: {ref} vs {got}")
        print(f"| {env_id} | {args.episodes} | {best['seq']:.3f} | {best['rows']:.3f} | "
              f"**{best['seq'] / best['rows']:.2f}×** |")


if __name__ == "__main__":
    main()
