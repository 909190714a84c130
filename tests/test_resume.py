"""Checkpoints and exact resume: a run killed and resumed ends with the same numbers as an
uninterrupted run with the same seed (on the CPU), for every algorithm."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import harness.train as train_mod
from fault_helpers import ROOT, checkpointed_pid, env_for_subprocess, plan_tiny, record, same_numbers, sigkill, wait_for
from core.envs import ListVecEnv, env_state, load_env_state
from core.results import is_done
from harness.train import CheckpointError, read_checkpoint, train


# --------------------------------------------------------------------------------------
# environment state


def _step_all(vec, actions):
    out = vec.step(actions)
    return out.obs.copy(), out.rewards.copy(), out.terminated.copy(), out.truncated.copy(), list(out.episodes)


@pytest.mark.parametrize("env_id", ["Hopper-v5", "Ant-v5"])
def test_mujoco_vec_env_state_round_trip_is_exact(env_id):
    # Ant reads body positions of the previous step before stepping: qpos/qvel (or MuJoCo's
    # integration state) alone would not continue it exactly.
    make = lambda: ListVecEnv([gym.make(env_id, disable_env_checker=True) for _ in range(2)])  # noqa: E731
    rng = np.random.default_rng(0)
    shape = gym.make(env_id).action_space.shape
    actions = rng.uniform(-1, 1, size=(140, 2, *shape))
    a = make()
    obs = a.reset(seed=3)
    for t in range(60):
        obs = _step_all(a, actions[t])[0]
    saved, saved_obs = a.state_dict(), obs
    expected = [_step_all(a, actions[t]) for t in range(60, 140)]
    assert any(e[2].any() or e[3].any() for e in expected), "no episode ended: the reset path is not covered"

    b = make()
    b.reset(seed=12345)
    restored_obs, exact = b.load_state_dict(saved, saved_obs)
    assert exact
    np.testing.assert_array_equal(restored_obs, saved_obs)
    for t, e in zip(range(60, 140), expected):
        got = _step_all(b, actions[t])
        for x, y in zip(got[:4], e[:4]):
            np.testing.assert_array_equal(x, y)
        assert got[4] == e[4]


def test_env_whose_state_cannot_be_saved_restarts_its_episode():
    # CartPole is not a MuJoCo environment: a documented limitation, not an error.
    env = gym.make("CartPole-v1")
    assert env_state(env) is None
    vec = ListVecEnv([gym.make("CartPole-v1") for _ in range(2)])
    vec.reset(seed=0)
    for _ in range(5):
        vec.step(np.zeros(2, dtype=np.int64))
    state = vec.state_dict()
    assert state["envs"] == [None, None]
    fresh = ListVecEnv([gym.make("CartPole-v1") for _ in range(2)])
    fresh.reset(seed=7)
    obs, exact = fresh.load_state_dict(state, np.full((2, 4), 99.0))
    assert not exact
    assert np.all(np.abs(obs) < 0.06)  # fresh reset observations, not the stale ones
    assert list(fresh.episode_length) == [0, 0] and list(fresh.episode_return) == [0.0, 0.0]
    # a state saved from another environment does not load (and changes nothing)
    hopper = gym.make("Hopper-v5", disable_env_checker=True)
    hopper.reset(seed=0)
    assert not load_env_state(gym.make("CartPole-v1"), env_state(hopper))


# --------------------------------------------------------------------------------------
# every algorithm resumes bit-for-bit (a simulated kill right after a checkpoint)


class SimulatedKill(BaseException):
    """Not an Exception: train() does not catch it, so the folder is left as a kill leaves it."""


def _train_killed_after(run, saves: int, monkeypatch) -> None:
    original = train_mod._save
    count = [0]

    def save(*args, **kwargs):
        original(*args, **kwargs)
        count[0] += 1
        if count[0] == saves:
            raise SimulatedKill

    monkeypatch.setattr(train_mod, "_save", save)
    with pytest.raises(SimulatedKill):
        train(run)
    monkeypatch.setattr(train_mod, "_save", original)


ALGO_ARGS = {
    "ppo_clip": ["algo.num_steps=128", "algo.minibatch_size=64", "algo.num_epochs=2", "steps=768"],
    "ppo_kl": ["algo.num_steps=128", "algo.minibatch_size=64", "algo.num_epochs=2", "steps=768"],
    "trpo": ["algo.num_steps=128", "steps=768"],
    "reinforce": ["algo.num_steps=128", "steps=768"],
    "grpo": ["algo.group_size=4", "algo.num_groups=1", "algo.num_epochs=2", "steps=500"],
    "rloo": ["algo.group_size=4", "algo.num_groups=1", "steps=500"],
    "dapo": ["algo.group_size=4", "algo.num_groups=1", "algo.num_epochs=2", "steps=500"],
}


@pytest.mark.parametrize("algo", list(ALGO_ARGS))
def test_resumed_run_equals_uninterrupted_run(tmp_path, monkeypatch, algo):
    # Hopper: contacts (solver warm start) and early terminations; evaluation every 256 steps,
    # so evaluations fall both before and after the resume point.
    args = [*ALGO_ARGS[algo], "env=Hopper-v5", "eval_every=256"]
    (ref,) = plan_tiny(tmp_path / "ref", *args, algo=algo, checkpoint_every=2)
    (run,) = plan_tiny(tmp_path / "killed", *args, algo=algo, checkpoint_every=2)
    assert train(ref)["status"] == "done"
    _train_killed_after(run, saves=2, monkeypatch=monkeypatch)
    assert not is_done(run.run_dir) and (run.run_dir / "checkpoint.pt").exists()
    rec = train(run)
    assert rec["status"] == "done", rec.get("error")
    assert rec["resumed_from"]["update"] == 4 and rec["resumed_from"]["env_state_exact"]
    same_numbers(ref.run_dir, run.run_dir)
    assert not (run.run_dir / "checkpoint.pt").exists()


def test_cleanrl_preset_resumes_exactly(tmp_path, monkeypatch):
    # the reward scaler's running statistics and per-env discounted returns, obs clipping 10
    args = ["preset=cleanrl", "env=Hopper-v5", "algo.num_steps=128", "steps=768", "eval_every=256",
            "suite.hidden_sizes=16"]
    (ref,) = plan_tiny(tmp_path / "ref", *args, checkpoint_every=1)
    (run,) = plan_tiny(tmp_path / "killed", *args, checkpoint_every=1)
    train(ref)
    _train_killed_after(run, saves=3, monkeypatch=monkeypatch)
    assert train(run)["resumed_from"]["update"] == 3
    same_numbers(ref.run_dir, run.run_dir)


# --------------------------------------------------------------------------------------
# a real SIGKILL of a training process, then resume


TRAIN_SCRIPT = """
import json, sys
import torch
torch.set_num_threads(1)
from harness.config import RunConfig
from harness.train import train
train(RunConfig(**json.loads(sys.argv[1])))
"""


def test_sigkilled_run_resumes_to_the_same_numbers(tmp_path):
    (ref,) = plan_tiny(tmp_path / "ref", checkpoint_every=1)
    (run,) = plan_tiny(tmp_path / "killed", checkpoint_every=1)
    proc = subprocess.Popen([sys.executable, "-c", TRAIN_SCRIPT, json.dumps(dataclasses.asdict(run))], cwd=ROOT,
                            env=env_for_subprocess(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        pid = wait_for(lambda: checkpointed_pid(run.run_dir), 60, "a checkpoint", proc)
        assert pid == proc.pid
        sigkill(proc.pid)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -9, "the run finished before it was killed"
    assert record(run.run_dir)["status"] == "running" and not is_done(run.run_dir)

    assert train(ref)["status"] == "done"
    rec = train(run)  # resume in this process
    assert rec["status"] == "done", rec.get("error")
    assert rec["resumed_from"]["global_step"] >= 256
    same_numbers(ref.run_dir, run.run_dir)


# --------------------------------------------------------------------------------------
# checkpoints that cannot be used are never resumed from


def test_corrupt_or_foreign_checkpoint_is_detected_and_the_run_starts_over(tmp_path, monkeypatch):
    (ref,) = plan_tiny(tmp_path / "ref", "steps=1024", checkpoint_every=1)
    train(ref)
    for damage in ("truncate", "flip", "garbage", "other-config"):
        (run,) = plan_tiny(tmp_path / damage, "steps=1024", checkpoint_every=1)
        _train_killed_after(run, saves=2, monkeypatch=monkeypatch)
        path = run.run_dir / "checkpoint.pt"
        data = bytearray(path.read_bytes())
        if damage == "truncate":
            path.write_bytes(bytes(data[: len(data) // 2]))
        elif damage == "flip":  # torch.load itself reads this without complaint
            data[len(data) * 2 // 3] ^= 0x5A
            path.write_bytes(bytes(data))
        elif damage == "garbage":
            path.write_bytes(b"\x00" * 100)
        else:
            payload = read_checkpoint(path)
            payload["config"] = {**payload["config"], "seed": 7}
            train_mod.write_checkpoint(path, payload)
        if damage != "other-config":
            with pytest.raises(CheckpointError):
                read_checkpoint(path)
        rec = train(run)
        assert rec["status"] == "done"
        assert rec["resumed_from"] is None, damage
        assert any("started from step 0" in w for w in rec["warnings"]), rec["warnings"]
        same_numbers(ref.run_dir, run.run_dir)
