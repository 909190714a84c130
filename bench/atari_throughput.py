"""Atari training throughput: pg-arena ppo_clip on envpool, side by side with Stable-Baselines3
PPO at the same settings and with raw envpool stepping (the limit), in one run.

    .venv/bin/pip install -e ".[bench,atari]"        # stable-baselines3; envpool, ale-py, opencv
    .venv/bin/python bench/atari_throughput.py [--steps 100000] [--env Breakout] [--threads N] [--rounds R]

Each case runs in a fresh process, one after the other; run it alone on the machine (two busy
processes on two cores distort every number). Both learners get the same torch threads
(``--threads``, default every core: what a lone pg-arena run gets from ``threads_per_run``
and what torch gives SB3 out of the box); ``--threads 1`` compares them on one core each.
``--rounds R`` repeats every case R times, the order rotated each round, and reports medians:
this cloud machine's speed drifts by up to 2x within a session, so ratios are taken within a
round (each learner against the SB3 run of the same round) and their median and range printed.

  (a) raw envpool: 8 Breakout games with the training preprocessing, random actions, the same
      thread pool as pg-arena's (suite.num_threads=0: min(8, cores)); and the same through
      pg-arena's EnvpoolVecEnv (same-step resets, raw-score bookkeeping);
  (b) pg-arena ppo_clip at the paper's Table 5 settings (the suite's defaults: 8 x 128 steps,
      3 epochs of minibatch 256, Adam 2.5e-4 and clip 0.1 annealed, c1 = 1, c2 = 0.01, advantages
      normalised per minibatch, gradient norm 0.5), Nature CNN with a shared trunk;
      once in fp32 (the default) and once with the trunk in bf16 autocast (suite.precision=bf16:
      fast where the CPU has AMX / AVX512-BF16, e.g. Sapphire Rapids; emulated and slow elsewhere);
  (c) Stable-Baselines3 PPO, CnnPolicy (Nature CNN, shared features, orthogonal init, Adam eps 1e-5),
      same hyper-parameters (vf_coef 1 on SB3's plain MSE, linear schedules for lr and clip range),
      on SB3's own Atari stack: make_atari_env (AtariWrapper: 30 no-ops, skip 4 + max-pool, episodic
      life, FIRE reset, 84x84, clipped rewards; DummyVecEnv) + VecFrameStack(4), ALE v5 without
      sticky actions;
  (d) the same SB3 PPO on envpool (pg-arena's EnvpoolVecEnv behind SB3's VecEnv API), so that
      the learner alone is compared.

A learner's steps/s is the training loop's: environment steps from the end of its first update
to the end of its last, over the wall time between (the same marks for both libraries; set-up,
the first update's one-time kernel selection and pg-arena's evaluation games fall outside, as SB3
runs none). The whole run's steps / wall seconds is printed beside it (pg-arena's then includes
two 1-game evaluations that SB3 does not play).

Prints a Markdown table: steps/s, ratio to each SB3 case, share of raw envpool steps/s, whole-run
steps/s, and the mean raw score of the last 100 games (informative only at this budget).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The paper's Table 5 = the atari suite's ppo_clip defaults; SB3 configured to the same.
NUM_ENVS, NUM_STEPS, MINIBATCH, EPOCHS = 8, 128, 256, 3
LR, CLIP, ENT, VF, GAMMA, LAM, MAX_GRAD_NORM = 2.5e-4, 0.1, 0.01, 1.0, 0.99, 0.95, 0.5


def raw_envpool(game: str, steps: int) -> dict:
    import envpool
    import numpy as np
    from suites.atari import GAMES, AtariConfig, envpool_options
    cfg = AtariConfig()
    threads = min(NUM_ENVS, os.cpu_count() or 1)
    pool = envpool.make(GAMES[game].envpool_id, env_type="gymnasium", num_envs=NUM_ENVS, batch_size=NUM_ENVS,
                        num_threads=threads, seed=0, **envpool_options(cfg, train=True))
    pool.reset()
    rng = np.random.default_rng(0)
    n = pool.action_space.n
    actions = rng.integers(n, size=(steps // NUM_ENVS, NUM_ENVS)).astype(np.int32)
    start = time.perf_counter()
    for a in actions:
        pool.step(a)       # envpool resets finished games by itself on the next step
    return {"sps": len(actions) * NUM_ENVS / (time.perf_counter() - start)}


def pg_arena_vec_env(game: str, steps: int) -> dict:
    import numpy as np
    from suites.atari import GAMES, AtariConfig, EnvpoolVecEnv
    vec = EnvpoolVecEnv(GAMES[game], AtariConfig(), NUM_ENVS)
    vec.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = rng.integers(vec.action_space.n, size=(steps // NUM_ENVS, NUM_ENVS))
    start = time.perf_counter()
    for a in actions:
        vec.step(a)
    return {"sps": len(actions) * NUM_ENVS / (time.perf_counter() - start)}


def pg_arena(game: str, steps: int, threads: int, extra: tuple[str, ...] = ()) -> dict:
    import dataclasses
    import tempfile

    import ale_py  # noqa: F401  (imported before the clock starts, as SB3's case imports its stack)
    import envpool  # noqa: F401
    from harness.config import parse_sweep, plan_runs, split_args
    from harness.summary import final_return
    from harness.train import train
    with tempfile.TemporaryDirectory() as tmp:
        top, algo, suite = split_args(["suite=atari", "algo=ppo_clip", f"env={game}", f"steps={steps}", "seeds=1",
                                       f"results_dir={tmp}", f"eval_every={steps * 10}", "eval_episodes=1",
                                       *extra])
        (run,) = plan_runs(parse_sweep(top), algo, suite)
        run = dataclasses.replace(run, threads=threads)    # train() sets torch's threads from it
        assert (run.algo_cfg["num_envs"], run.algo_cfg["num_steps"], run.algo_cfg["minibatch_size"],
                run.algo_cfg["num_epochs"]) == (NUM_ENVS, NUM_STEPS, MINIBATCH, EPOCHS)
        after_update: list[tuple[float, int]] = []       # (time, global step) after every update
        start = time.perf_counter()
        record = train(run, progress=lambda step: after_update.append((time.perf_counter(), step)))
        wall = time.perf_counter() - start
        assert record["status"] == "done", record.get("error")
        (t0, s0), (t1, s1) = after_update[0], after_update[-1]
        return {"sps": (s1 - s0) / (t1 - t0), "sps_whole_run": steps / wall, "final_return": final_return(run.run_dir)}


def sb3_envpool_env(game: str, seed: int):
    """pg-arena's EnvpoolVecEnv behind Stable-Baselines3's VecEnv API: same-step resets,
    ``terminal_observation`` for time-limit truncations, raw game scores as ``info["episode"]``."""
    import gymnasium as gym
    import numpy as np
    from stable_baselines3.common.vec_env import VecEnv

    from suites.atari import GAMES, AtariConfig, EnvpoolVecEnv

    class EnvpoolAdapter(VecEnv):
        def __init__(self):
            self.vec = EnvpoolVecEnv(GAMES[game], AtariConfig(), NUM_ENVS)
            obs = self.vec.reset(seed=seed)
            super().__init__(NUM_ENVS, gym.spaces.Box(0, 255, obs.shape[1:], np.uint8), self.vec.action_space)
            self._actions = None

        def reset(self):
            return self.vec.reset(seed=seed)

        def step_async(self, actions):
            self._actions = actions

        def step_wait(self):
            step = self.vec.step(self._actions)
            infos = [{} for _ in range(NUM_ENVS)]
            for i, o in step.final_obs.items():
                infos[i] = {"terminal_observation": o, "TimeLimit.truncated": True}
            for i, score, length in step.episodes:
                infos[i]["episode"] = {"r": score, "l": length, "t": 0.0}
            return step.obs, step.rewards, step.terminated | step.truncated, infos

        def close(self):
            self.vec.close()

        def get_attr(self, attr_name, indices=None):
            return [None] * NUM_ENVS

        def set_attr(self, attr_name, value, indices=None):
            pass

        def env_method(self, method_name, *args, indices=None, **kwargs):
            return [None] * NUM_ENVS

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * NUM_ENVS

    return EnvpoolAdapter()


def sb3(game: str, steps: int, threads: int, backend: str) -> dict:
    import torch
    torch.set_num_threads(threads)
    from stable_baselines3 import PPO
    if backend == "envpool":
        env = sb3_envpool_env(game, seed=0)
    else:
        import ale_py
        import gymnasium as gym
        from stable_baselines3.common.env_util import make_atari_env
        from stable_baselines3.common.vec_env import VecFrameStack
        gym.register_envs(ale_py)
        env = make_atari_env(f"ALE/{game}-v5", n_envs=NUM_ENVS, seed=0,
                             env_kwargs=dict(frameskip=1, repeat_action_probability=0.0, full_action_space=False))
        env = VecFrameStack(env, n_stack=4)
    model = PPO("CnnPolicy", env, n_steps=NUM_STEPS, batch_size=MINIBATCH, n_epochs=EPOCHS,
                learning_rate=lambda remaining: LR * remaining, clip_range=lambda remaining: CLIP * remaining,
                ent_coef=ENT, vf_coef=VF, max_grad_norm=MAX_GRAD_NORM, gamma=GAMMA, gae_lambda=LAM,
                normalize_advantage=True, seed=0, device="cpu", verbose=0)
    from stable_baselines3.common.callbacks import BaseCallback

    class AfterUpdate(BaseCallback):
        """(time, steps) after every update: at the start of each rollout but the first, and at the end."""
        def __init__(self):
            super().__init__()
            self.marks: list[tuple[float, int]] = []

        def _on_rollout_start(self) -> None:
            if self.num_timesteps > 0:
                self.marks.append((time.perf_counter(), self.num_timesteps))

        def _on_training_end(self) -> None:
            self.marks.append((time.perf_counter(), self.num_timesteps))

        def _on_step(self) -> bool:
            return True

    marks = AfterUpdate()
    start = time.perf_counter()
    model.learn(steps, callback=marks)
    wall = time.perf_counter() - start
    (t0, s0), (t1, s1) = marks.marks[0], marks.marks[-1]
    scores = [e["r"] for e in model.ep_info_buffer][-100:]
    return {"sps": (s1 - s0) / (t1 - t0), "sps_whole_run": steps / wall,
            "final_return": sum(scores) / max(1, len(scores)) if scores else None}


CASES = {
    "raw envpool (random actions)": "raw",
    "pg-arena EnvpoolVecEnv (random actions)": "vec",
    "pg-arena ppo_clip (envpool)": "pg_arena",
    "pg-arena ppo_clip (envpool, suite.precision=bf16)": "pg_arena_bf16",
    "Stable-Baselines3 PPO (make_atari_env)": "sb3_atari",
    "Stable-Baselines3 PPO (envpool adapter)": "sb3_envpool",
}


def _child(case: str, game: str, steps: int, threads: int) -> None:
    kind = CASES[case]
    if kind == "raw":
        result = raw_envpool(game, steps)
    elif kind == "vec":
        result = pg_arena_vec_env(game, steps)
    elif kind == "pg_arena":
        result = pg_arena(game, steps, threads)
    elif kind == "pg_arena_bf16":
        result = pg_arena(game, steps, threads, ("suite.precision=bf16",))
    else:
        result = sb3(game, steps, threads, "envpool" if kind == "sb3_envpool" else "atari")
    print("RESULT " + json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Breakout")
    parser.add_argument("--steps", type=int, default=100_000, help="training steps per learner case")
    parser.add_argument("--raw-steps", type=int, default=200_000, help="steps of the random-action cases")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads of both learners")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every case, order rotated; report medians")
    parser.add_argument("--only", nargs="*", choices=list(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.env, args.steps, args.threads)
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cases = list(args.only or CASES)
    rounds: list[dict[str, dict]] = []
    for r in range(args.rounds):
        results = {}
        for case in cases[r % len(cases):] + cases[:r % len(cases)]:
            steps = args.raw_steps if CASES[case] in ("raw", "vec") else args.steps
            out = subprocess.run([sys.executable, __file__, "--child", case, "--env", args.env, "--steps", str(steps),
                                  "--threads", str(args.threads)], env=env, capture_output=True, text=True, cwd=ROOT)
            line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
            if out.returncode != 0 or not line:
                sys.exit(f"{case} failed:\n{out.stderr[-3000:]}")
            results[case] = json.loads(line[-1][7:])
            print(f"  round {r + 1}, {case}: {results[case]['sps']:.0f} steps/s", file=sys.stderr)
        rounds.append(results)
    raw_case = "raw envpool (random actions)"
    peers = [c for c in ("Stable-Baselines3 PPO (make_atari_env)", "Stable-Baselines3 PPO (envpool adapter)")
             if c in cases]
    print(f"\n{args.env}, {args.steps:,} training steps per learner run ({args.raw_steps:,} random-action steps), "
          f"{NUM_ENVS} envs, {args.threads} torch thread{'s' if args.threads > 1 else ''} per learner, "
          f"one process at a time, {os.cpu_count()} cores, {args.rounds} round{'s' if args.rounds > 1 else ''}"
          + (" (medians; ratios within a round, median [min-max])" if args.rounds > 1 else "") + "\n")
    header = ["run", "steps/s", *(f"vs {p}" for p in peers), "share of raw envpool steps/s",
              "steps/s, whole run", "mean score, last 100 games"]
    print("| " + " | ".join(header) + " |")
    print("|---|" + "---:|" * (len(header) - 1))

    def ratio(case: str, peer: str) -> str:
        xs = [rs[case]["sps"] / rs[peer]["sps"] for rs in rounds]
        spread = f" [{min(xs):.2f}-{max(xs):.2f}]" if len(xs) > 1 else ""
        return f"{statistics.median(xs):.2f}x{spread}"

    for case in cases:
        sps = statistics.median([rs[case]["sps"] for rs in rounds])
        learner = CASES[case] not in ("raw", "vec")
        scores = [rs[case]["final_return"] for rs in rounds if rs[case].get("final_return") is not None]
        cells = [case, f"{sps:.0f}", *(ratio(case, p) if learner else "" for p in peers),
                 f"{statistics.median([rs[case]['sps'] / rs[raw_case]['sps'] for rs in rounds]):.0%}" if raw_case in cases else "",
                 f"{statistics.median([rs[case]['sps_whole_run'] for rs in rounds]):.0f}" if learner else "",
                 f"{statistics.median(scores):.1f}" if scores else ""]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
