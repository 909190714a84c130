"""The shared harness: rollouts (truncation bootstrapping, group starts), reproducibility,
atomic results, failure handling, configuration errors, variants, reruns."""
import csv
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import algos
from harness import cli
from harness.config import ConfigError, parse_sweep, plan_runs
from core.envs import ListVecEnv
from harness.executor import run_local
from core.sweeplog import SweepLog, plan_id, sweep_segments
from core.results import EPISODE_COLUMNS, EVAL_COLUMNS, METRIC_LEADING, is_done, read_run_json
from core.rollout import GroupCollector, HorizonCollector
from harness.train import train
from helpers import TINY, plan
from suites.mujoco import MLPAgent, MujocoConfig

ROOT = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------------------
# rollouts


class CountingEnv(gym.Env):
    """Observation [k, 1, 0, 0] at the k-th step of an episode, reward 1 every step;
    terminates by itself after ``terminate_after`` steps (None: never)."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float64)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, terminate_after=None):
        self.terminate_after = terminate_after
        self.k = 0

    def _obs(self):
        return np.array([self.k, 1.0, 0.0, 0.0])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k = 0
        return self._obs(), {}

    def step(self, action):
        self.k += 1
        terminated = self.terminate_after is not None and self.k >= self.terminate_after
        return self._obs(), 1.0, terminated, False, {}


def test_horizon_collector_bootstraps_truncation_not_termination():
    gamma, limit, T = 0.9, 5, 12
    envs = [gym.wrappers.TimeLimit(CountingEnv(), max_episode_steps=limit),   # truncated at 5 steps
            gym.wrappers.TimeLimit(CountingEnv(terminate_after=3), max_episode_steps=limit)]  # ends at 3
    torch.manual_seed(0)
    agent = MLPAgent(CountingEnv.observation_space, CountingEnv.action_space, MujocoConfig(obs_norm=False))
    collector = HorizonCollector(ListVecEnv(envs), num_steps=T, gamma=gamma, seed=0, with_values=True)
    batch, episodes = collector.collect(agent)

    with torch.no_grad():
        v_final = agent.value(torch.tensor([[float(limit), 1.0, 0.0, 0.0]])).item()
    assert abs(v_final) > 1e-3  # so that a missing bootstrap is visible
    truncated_steps = [t for t in range(T) if (t + 1) % limit == 0]            # t = 4, 9
    terminated_steps = [t for t in range(T) if (t + 1) % 3 == 0]               # t = 2, 5, 8, 11
    for t in range(T):
        # column 0: bootstrapped at the truncation, plain reward elsewhere
        expected = 1.0 + gamma * v_final if t in truncated_steps else 1.0
        assert batch.rewards[t, 0].item() == pytest.approx(expected, rel=1e-5), t
        assert batch.dones[t, 0].item() == (1.0 if t in truncated_steps else 0.0), t
        # column 1: a real termination gets no bootstrap, but is done
        assert batch.rewards[t, 1].item() == 1.0, t
        assert batch.dones[t, 1].item() == (1.0 if t in terminated_steps else 0.0), t
    # the step after an ending starts the next episode (reset observation), and the
    # observations are those of the steps, not the final ones
    assert batch.obs[:, 0, 0].tolist() == [t % limit for t in range(T)]
    assert batch.obs[:, 1, 0].tolist() == [t % 3 for t in range(T)]
    # last_value is V of the observation after the last step (column 0 at k = 2)
    with torch.no_grad():
        expected_last = agent.value(torch.tensor([[2.0, 1.0, 0.0, 0.0]])).item()
    assert batch.last_value[0].item() == pytest.approx(expected_last, rel=1e-5)
    # episodes report the raw, undiscounted returns
    assert sorted((e.length, e.ret) for e in episodes) == sorted([(5, 5.0)] * 2 + [(3, 3.0)] * 4)
    assert [e.global_step for e in episodes] == sorted(e.global_step for e in episodes)


def test_horizon_collector_logp_and_values_match_the_agent():
    envs = [gym.make("InvertedPendulum-v5") for _ in range(2)]
    torch.manual_seed(1)
    agent = MLPAgent(envs[0].observation_space, envs[0].action_space, MujocoConfig())
    batch, _ = HorizonCollector(ListVecEnv(envs), num_steps=32, gamma=0.99, seed=1, with_values=True).collect(agent)
    assert batch.obs.shape == (32, 2, 4) and batch.actions.shape == (32, 2, 1)
    with torch.no_grad():
        torch.testing.assert_close(batch.logp_old, agent.dist(batch.obs).log_prob(batch.actions))
        torch.testing.assert_close(batch.values, agent.value(batch.obs))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_take_rows_equals_indexing_and_keeps_the_memory_layout(layout):
    """The minibatch gather (index_select over the dimensions in memory order) against plain
    indexing, on random frames in either layout and on 1-D and 2-D fields; repeats allowed."""
    from core.batch import take_rows
    g = torch.Generator().manual_seed(0)
    frames = torch.randint(0, 256, (40, 4, 6, 5), dtype=torch.uint8, generator=g)
    if layout == "channels_last":
        frames = frames.contiguous(memory_format=torch.channels_last)
    index = torch.randint(0, 40, (25,), generator=g)
    taken = take_rows(frames, index)
    assert torch.equal(taken, frames[index])
    assert taken.is_contiguous(memory_format=getattr(torch, "channels_last" if layout == "channels_last"
                                                      else "contiguous_format"))
    for field in (torch.randn(40, generator=g), torch.randn(40, 3, generator=g)):
        assert torch.equal(take_rows(field, index), field[index])


def test_rollout_buffer_keeps_the_observations_memory_layout():
    """Frames that arrive channels-last are stored so (and read back equal); others stay C-ordered."""
    from core.rollout import _buffer_for
    rng = np.random.default_rng(0)
    nhwc = rng.integers(0, 256, (3, 6, 5, 4), dtype=np.uint8)
    frames = nhwc.transpose(0, 3, 1, 2)                        # [3, 4, 6, 5], channels innermost
    buffer = _buffer_for(frames, 7)
    assert buffer.shape == (7, 3, 4, 6, 5) and buffer.dtype == np.uint8
    buffer[2] = frames
    assert np.array_equal(buffer[2], frames)
    assert torch.from_numpy(buffer).flatten(0, 1).is_contiguous(memory_format=torch.channels_last)
    plain = _buffer_for(rng.standard_normal((3, 11)), 5)       # float64 observations stored as float32
    assert plain.shape == (5, 3, 11) and plain.dtype == np.float32 and plain.flags.c_contiguous


def test_threads_per_run_shares_the_cores_among_the_runs_at_once(monkeypatch):
    from harness.config import threads_per_run
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    atari = {"suite": "atari"}   # no max_threads: the CNN gains from every core it gets
    assert threads_per_run(parse_sweep({**atari, "jobs": "8"}), 20) == 1
    assert threads_per_run(parse_sweep({**atari, "jobs": "2"}), 20) == 4
    assert threads_per_run(parse_sweep({**atari, "jobs": "8"}), 1) == 8      # a lone run gets every core
    assert threads_per_run(parse_sweep({**atari, "jobs": "3"}), 5) == 2
    assert threads_per_run(parse_sweep({**atari, "jobs": "8", "threads": "3"}), 20) == 3
    assert threads_per_run(parse_sweep({"executor": "ray"}), 1) == 1  # workers' cores are unknown
    # MuJoCo's MLPs: one thread at most, whatever the share (a second one gains nothing)
    assert threads_per_run(parse_sweep({"jobs": "8"}), 1) == 1
    assert threads_per_run(parse_sweep({"jobs": "8", "threads": "2"}), 1) == 2   # unless asked
    with pytest.raises(ConfigError, match="threads=0"):
        parse_sweep({"threads": "0"})


def test_thread_count_is_not_part_of_a_runs_identity(tmp_path):
    """A run checkpointed under one jobs= (so one thread count) resumes under another."""
    from core.results import comparable_config
    (run,) = plan(tmp_path)
    one, two = (dataclasses.asdict(dataclasses.replace(run, threads=n)) for n in (1, 2))
    assert one != two and comparable_config(one) == comparable_config(two)


def test_group_rollouts_start_from_identical_states():
    G = 4
    envs = [gym.make("Hopper-v5") for _ in range(G)]
    torch.manual_seed(0)
    agent = MLPAgent(envs[0].observation_space, envs[0].action_space, MujocoConfig())
    collector = GroupCollector(envs, num_groups=2, seed=3, length_limit=1000)

    # the simulator state itself is identical after a group reset
    collector.reset_group(12345)
    qpos = [env.unwrapped.data.qpos.copy() for env in envs]
    qvel = [env.unwrapped.data.qvel.copy() for env in envs]
    for q, v in zip(qpos[1:], qvel[1:]):
        np.testing.assert_array_equal(q, qpos[0])
        np.testing.assert_array_equal(v, qvel[0])
    collector.reset_group(54321)
    assert not np.array_equal(envs[0].unwrapped.data.qpos, qpos[0])  # a new seed, a new state

    batch, episodes = collector.collect(agent)
    assert batch.obs.shape[1] == 2 * G and len(episodes) == 2 * G
    groups = batch.groups.tolist()
    assert groups[:G] == [groups[0]] * G and groups[G:] == [groups[G]] * G and groups[0] != groups[G]
    first = batch.obs[0]
    for j in range(1, G):
        assert torch.equal(first[j], first[0])
        assert torch.equal(first[G + j], first[G])
    assert not torch.allclose(first[0], first[G])
    # the episodes then diverge (the policy is stochastic)
    assert not torch.equal(batch.obs[1, 0], batch.obs[1, 1])
    # columns are whole episodes: mask = length, done at the last step, score = sum of rewards
    torch.testing.assert_close(batch.mask.sum(0), batch.lengths.float())
    for j in range(2 * G):
        L = int(batch.lengths[j])
        assert batch.dones[L - 1, j] == 1.0 and batch.dones[:, j].sum() == 1.0
        assert batch.scores[j].item() == pytest.approx(batch.rewards[:L, j].sum().item(), rel=1e-5)
        assert (batch.logp_old[L:, j] == 0).all()
    assert sorted(e.ret for e in episodes) == pytest.approx(sorted(batch.scores.tolist()), rel=1e-5)


# --------------------------------------------------------------------------------------
# reproducibility


def read_csv(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def test_same_seed_gives_identical_results(tmp_path):
    (run_a,) = plan(tmp_path / "a", *TINY)
    (run_b,) = plan(tmp_path / "b", *TINY)
    rec_a, rec_b = train(run_a), train(run_b)
    assert rec_a["status"] == rec_b["status"] == "done", (rec_a.get("error"), rec_b.get("error"))
    ep_a = (run_a.run_dir / "episodes.csv").read_bytes()
    assert ep_a == (run_b.run_dir / "episodes.csv").read_bytes()
    assert len(ep_a.splitlines()) > 10  # many episodes: a random InvertedPendulum policy falls fast
    assert (run_a.run_dir / "evals.csv").read_bytes() == (run_b.run_dir / "evals.csv").read_bytes()
    cols, rows_a = read_csv(run_a.run_dir / "metrics.csv")
    _, rows_b = read_csv(run_b.run_dir / "metrics.csv")
    from core.results import is_timing_column
    assert [{k: v for k, v in r.items() if not is_timing_column(k)} for r in rows_a] == \
           [{k: v for k, v in r.items() if not is_timing_column(k)} for r in rows_b]
    assert len(rows_a) == 4 and cols[:4] == METRIC_LEADING
    # a different seed gives different episodes
    (run_c,) = plan(tmp_path / "c", *TINY)
    run_c.seed = 1
    train(run_c)
    assert (run_c.run_dir / "episodes.csv").read_bytes() != ep_a


# --------------------------------------------------------------------------------------
# a killed run leaves nothing that reads as complete; it resumes from its checkpoint

KILL_SCRIPT = """
import json, sys
import torch
torch.set_num_threads(1)
from harness.config import RunConfig
from harness.train import train
cfg = json.loads(sys.argv[1])
train(RunConfig(**cfg))
"""


def check_csvs_complete(run_dir):
    expected = {"episodes.csv": EPISODE_COLUMNS, "evals.csv": EVAL_COLUMNS}
    for path in run_dir.glob("*.csv"):
        header, rows = read_csv(path)
        assert header, path
        if path.name in expected:  # the known columns first; a suite may add more
            assert header[:len(expected[path.name])] == expected[path.name]
        else:
            assert header[:4] == METRIC_LEADING
        for row in rows:
            assert None not in row and all(v is not None for v in row.values()), (path, row)
        text = path.read_text()
        assert text.endswith("\n")


def test_killed_run_is_not_done_and_resumes(tmp_path):
    import dataclasses
    (run,) = plan(tmp_path, "algo.num_steps=128", "algo.minibatch_size=64", "algo.num_epochs=1",
                  steps=128 * 60, checkpoint_every=1)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, json.dumps(dataclasses.asdict(run))],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (run.run_dir / "metrics.csv").exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the run wrote no results within 60 s"
            time.sleep(0.02)
        time.sleep(0.3)  # let it get into the middle of later updates / writes
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it was killed"

    assert not is_done(run.run_dir)
    record = read_run_json(run.run_dir)
    assert record is not None and record["status"] == "running"
    check_csvs_complete(run.run_dir)
    assert (run.run_dir / "checkpoint.pt").exists()
    _, before = read_csv(run.run_dir / "metrics.csv")
    assert 1 <= len(before) < 60

    # resume in-process: it continues from the checkpoint, not from scratch
    record = train(run)
    assert record["status"] == "done", record.get("error")
    assert record["resumed_from"] is not None and record["resumed_from"]["update"] >= 1, record.get("resumed_from")
    assert is_done(run.run_dir)
    check_csvs_complete(run.run_dir)
    _, rows = read_csv(run.run_dir / "metrics.csv")
    assert [int(r["update"]) for r in rows] == list(range(1, 61))
    assert [int(r["global_step"]) for r in rows] == [128 * k for k in range(1, 61)]
    assert not (run.run_dir / "checkpoint.pt").exists()


def test_is_done_rejects_truncated_files(tmp_path):
    (run,) = plan(tmp_path, *TINY, steps=512)
    assert train(run)["status"] == "done"
    assert is_done(run.run_dir)
    path = run.run_dir / "episodes.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))
    assert not is_done(run.run_dir)
    path.unlink()
    assert not is_done(run.run_dir)
    (run.run_dir / "run.json").write_text('{"status": "do')
    assert not is_done(run.run_dir)


# --------------------------------------------------------------------------------------
# a non-finite loss fails the run (with the update number), and the sweep carries on


def test_nan_loss_fails_the_run_at_its_update(tmp_path, monkeypatch):
    cls = algos.get("ppo_clip")
    original = cls.update_runs   # every run trains through it (a run alone: a stack of one)
    calls = []

    def update_runs(cls, stack):
        metrics = original(stack)
        calls.append(1)
        if len(calls) == 3:
            metrics[0]["policy_loss"] = float("nan")
        return metrics

    monkeypatch.setattr(cls, "update_runs", classmethod(update_runs))
    (run,) = plan(tmp_path, *TINY, steps=256 * 6)
    record = train(run)
    assert record["status"] == "failed"
    assert "policy_loss" in record["error"] and "update 3" in record["error"]
    assert read_run_json(run.run_dir)["status"] == "failed"
    assert not is_done(run.run_dir)
    check_csvs_complete(run.run_dir)
    # the record names the update at which the NaN appeared (1-based, as metrics.csv)
    assert record["failed_update"] == 3


def test_sweep_with_a_failing_run_completes_the_others(tmp_path, capsys):
    good = plan(tmp_path, *TINY, steps=512)
    bad = plan(tmp_path, *TINY, "algo.lr=inf", steps=512)
    assert good[0].run_dir != bad[0].run_dir
    results = run_local(bad + good, jobs=2, show_progress=False)
    status = {r["run_id"]: r for r in results}
    assert status[good[0].run_id]["status"] == "done"
    assert status[bad[0].run_id]["status"] == "failed"
    assert "update 1" in status[bad[0].run_id]["error"]
    assert is_done(good[0].run_dir) and not is_done(bad[0].run_dir)
    assert read_run_json(bad[0].run_dir)["status"] == "failed"
    # the command line reports the failure with exit code 1
    code = cli.main(["suite=mujoco", "algo=ppo_clip", "env=InvertedPendulum-v5", "seeds=1", "steps=512",
                     "eval_episodes=1", "jobs=1", *TINY, "algo.lr=inf", f"results_dir={tmp_path / 'cli'}"])
    assert code == 1
    assert "failed" in capsys.readouterr().err


# --------------------------------------------------------------------------------------
# configuration errors: exit code 2, one line naming the choices, nothing written

BAD_INPUT = [
    (["suite=nope"], ["mujoco"]),
    (["algo=nope"], ["reinforce", "trpo", "ppo_clip", "ppo_kl", "grpo", "rloo", "dapo"]),
    (["algo=ppo_clip", "env=Nope-v0"], ["Hopper-v5", "InvertedPendulum-v5"]),
    (["algo=ppo_clip", "nope=1"], ["suite", "algo", "env", "seeds", "steps", "scale"]),
    (["algo=ppo_clip", "steps=abc"], ["steps", "integer"]),
    (["algo=ppo_clip", "seeds=0"], ["seeds"]),
    (["algo=ppo_clip", "steps=-5"], ["steps"]),
    (["algo=ppo_clip", "algo.nope=1"], ["algo.clip_eps", "algo.lr", "algo.num_epochs"]),
    (["algo=ppo_clip", "algo.clip_eps=abc"], ["clip_eps", "number"]),
    (["algo=ppo_clip", "algo.adv_norm=sideways"], ["batch", "minibatch", "none"]),
    (["algo=ppo_clip", "scale=huge"], ["smoke", "quick", "paper"]),
    (["algo=ppo_clip", "suite.nope=1"], ["suite.obs_norm"]),
    (["algo=ppo_clip", "jobs=0"], ["jobs"]),
    (["algo=ppo_clip", "positional"], ["key=value"]),
    # a close match is suggested (issue 30: seed=3 got no "did you mean seeds")
    (["algo=ppo_clip", "seed=3"], ["unknown key 'seed' (did you mean seeds?); valid:"]),
    (["algo=ppo_clip", "algo.clip_ep=0.3"], ["algo.clip_ep is not an option of ppo_clip (did you mean algo.clip_eps"]),
    (["algo=ppo_clip", "suite.obsnorm=false"], ["suite.obsnorm is not an option of suite mujoco (did you mean "
                                                "suite.obs_norm?); valid:"]),
]


@pytest.mark.parametrize("args,names", BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, args, names):
    results = tmp_path / "results"
    code = cli.main([*args, "suite=mujoco", f"results_dir={results}"] if "suite=nope" not in args
                    else [*args, f"results_dir={results}"])
    out, err = capsys.readouterr()
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert out == ""
    assert not results.exists()
    assert list(tmp_path.iterdir()) == []


def test_unknown_keys_suggest_close_matches_in_sweeps_and_compare(tmp_path, capsys):
    def error(argv) -> str:
        assert cli.main([*argv, f"results_dir={tmp_path / 'results'}"]) == 2
        out, err = capsys.readouterr()
        (line,) = [line for line in err.splitlines() if line.strip()]
        return line
    assert "did you mean" not in error(["suite=mujoco", "algo=ppo_clip", "nope=1"])       # nothing close: no guess
    assert "did you mean" not in error(["suite=mujoco", "algo=ppo_clip", "algo.zzz=1"])
    compare = ["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip"]
    assert "compare: unknown key 'seed' (did you mean seeds?); valid:" in error([*compare, "seed=3"])
    assert "unknown key 'step' (did you mean steps?); valid:" in error([*compare, "step=512"])
    assert ("algo.clip_ep is not an option of ppo_clip (did you mean algo.clip_eps"
            in error(["compare", "candidate=ppo_clip+clip_ep=0.3", "baseline=ppo_clip", "scale=smoke"]))
    assert ("suite.obsnorm is not an option of suite mujoco (did you mean suite.obs_norm?)"
            in error(["compare", "candidate=ppo_clip+suite.obsnorm=false", "baseline=ppo_clip", "scale=smoke"]))
    assert list(tmp_path.iterdir()) == []


def test_bad_input_leaves_stored_results_untouched(tmp_path, capsys):
    results = tmp_path / "results"
    stored = results / "mujoco" / "Hopper-v5" / "ppo_clip" / "seed0"
    stored.mkdir(parents=True)
    (stored / "run.json").write_text('{"status": "done"}')
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in results.rglob("*") if p.is_file()}
    assert cli.main(["suite=mujoco", "algo=ppo_clip", "steps=abc", f"results_dir={results}"]) == 2
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in results.rglob("*") if p.is_file()}
    assert before == after


def test_config_errors_are_config_errors():
    with pytest.raises(ConfigError):
        parse_sweep({"steps": "abc"})
    with pytest.raises(ConfigError):
        plan_runs(parse_sweep({"algo": "ppo_clip"}), {"nope": "1"}, {})


def test_variant_naming(tmp_path):
    (run,) = plan(tmp_path, "algo.clip_eps=0.1")
    assert run.label == "ppo_clip+clip_eps=0.1"
    assert run.run_dir == tmp_path / "mujoco" / "InvertedPendulum-v5" / "ppo_clip+clip_eps=0.1" / "seed0"
    assert run.algo_cfg["clip_eps"] == 0.1
    # defaults give the bare name; several options are sorted into one canonical label
    (plain,) = plan(tmp_path)
    assert plain.label == "ppo_clip" and plain.algo_cfg["clip_eps"] == 0.2
    (multi,) = plan(tmp_path, "algo.num_epochs=3", "algo.clip_eps=0.1")
    assert multi.label == "ppo_clip+clip_eps=0.1+num_epochs=3"
    (same,) = plan(tmp_path, "algo.clip_eps=0.10")
    assert same.label == run.label


def test_rerun_skips_done_runs(tmp_path, capsys):
    args = ["suite=mujoco", "algo=ppo_clip", "env=InvertedPendulum-v5", "seeds=1", "steps=512",
            "eval_episodes=1", "jobs=1", "algo.clip_eps=0.1", *TINY, f"results_dir={tmp_path}"]
    assert cli.main(args) == 0
    run_dir = tmp_path / "mujoco" / "InvertedPendulum-v5" / "ppo_clip+clip_eps=0.1+num_epochs=2+num_steps=256" / "seed0"
    assert is_done(run_dir)
    first = capsys.readouterr().out
    assert "0 already done, 1 to run" in first
    stamps = {p.name: p.stat().st_mtime_ns for p in run_dir.iterdir()}
    contents = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    assert cli.main(args) == 0
    second = capsys.readouterr().out
    assert "1 already done, 0 to run" in second
    assert {p.name: p.stat().st_mtime_ns for p in run_dir.iterdir()} == stamps
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == contents
    # the first invocation recorded its wall time; the second had nothing to run and recorded none
    (segment,) = sweep_segments(tmp_path, "mujoco")
    assert segment["plan_id"] == plan_id(["mujoco/InvertedPendulum-v5/ppo_clip+clip_eps=0.1+num_epochs=2+num_steps=256/seed0"])
    assert segment["exit_code"] == 0 and not segment["killed"] and segment["runs_todo"] == 1
    assert 0 <= segment["seconds"] < 600


def test_sweep_log_heartbeats_and_sums_the_pieces_of_a_killed_sweep(tmp_path):
    log = SweepLog(tmp_path, "mujoco", ["suite=mujoco"], ["b", "a"], 2, heartbeat=0.05)
    with log:
        first = json.loads(log.path.read_text())
        assert first["end"] is None and first["plan_id"] == plan_id(["a", "b"])
        time.sleep(1.2)     # whole seconds are recorded: the heartbeat must have moved last_seen
        beat = json.loads(log.path.read_text())
        assert beat["last_seen"] > first["start"] and beat["end"] is None
        log.exit_code = 0
    done = json.loads(log.path.read_text())
    assert done["end"] is not None and done["exit_code"] == 0
    # a piece killed mid-run (no end) counts up to its last heartbeat; other plans are not mixed in
    killed = {**done, "start": "2026-01-01T00:00:00+00:00", "last_seen": "2026-01-01T00:10:00+00:00", "end": None}
    (log.path.parent / "0-killed.json").write_text(json.dumps(killed))
    other = {**killed, "plan_id": "another"}
    (log.path.parent / "1-other.json").write_text(json.dumps(other))
    pieces = sweep_segments(tmp_path, "mujoco", plan_id(["a", "b"]))
    assert [p["killed"] for p in pieces] == [True, False]
    assert pieces[0]["seconds"] == 600.0


def test_collection_policy_follows_the_weights_without_obs_norm():
    """The NumPy fast path must never act with stale weights: fused Adam does not bump
    version counters and TRPO replaces parameter storage (found in review)."""
    import gymnasium as gym
    import numpy as np
    import torch
    from torch.nn.utils import parameters_to_vector, vector_to_parameters

    from suites.mujoco import MLPAgent, MujocoConfig

    env = gym.make("Hopper-v5")
    agent = MLPAgent(env.observation_space, env.action_space, MujocoConfig(obs_norm=False))
    obs = np.random.default_rng(0).standard_normal((4, 11))

    def check():
        fast = agent.act(obs, np.random.default_rng(0), deterministic=True)
        with torch.no_grad():
            reference = agent.dist(torch.as_tensor(obs, dtype=torch.float32)).mean.numpy()
        np.testing.assert_allclose(fast, reference, rtol=1e-4, atol=1e-5)
        return fast

    before = check()
    optimizer = torch.optim.Adam(agent.parameters(), lr=1e-2, fused=True)
    agent.dist(torch.as_tensor(obs, dtype=torch.float32)).mean.sum().backward()
    optimizer.step()
    after_adam = check()
    assert not np.allclose(before, after_adam)
    params = agent.policy_parameters()
    vector_to_parameters(parameters_to_vector(params).detach() + 0.05, params)
    assert not np.allclose(after_adam, check())


def test_a_setting_equal_to_its_default_is_the_default_run():
    """A run's identity is its resolved config: grid=table1's clip_eps=0.2 and kl_target=0.01
    (and fixed beta's kl_coef=1.0) are the defaults, so those rows share the main job's runs."""
    table1 = {r.label for r in plan_runs(parse_sweep({"suite": "mujoco", "grid": "table1", "env": "Hopper-v5",
                                                       "seeds": "1"}), {}, {})}
    main_job = {r.label for r in plan_runs(parse_sweep({"suite": "mujoco", "env": "Hopper-v5", "seeds": "1"}), {}, {})}
    assert len(table1) == 11
    assert table1 & main_job == {"ppo_clip", "ppo_kl"}
    assert "ppo_kl+adaptive=false" in table1 and "ppo_clip+clip_eps=0.2" not in table1
    same = plan_runs(parse_sweep({"suite": "mujoco", "algo": "ppo_clip,ppo_clip", "env": "Hopper-v5", "seeds": "2"}),
                     {"clip_eps": "0.2"}, {"obs_clip": "5"})
    assert [(r.label, r.seed) for r in same] == [("ppo_clip", 0), ("ppo_clip", 1)]
    changed = plan_runs(parse_sweep({"suite": "mujoco", "algo": "ppo_clip", "env": "Hopper-v5", "seeds": "1"}),
                        {"clip_eps": "0.30"}, {"obs_clip": "10"})
    assert changed[0].label == "ppo_clip+suite.obs_clip=10.0+clip_eps=0.3"   # labels as before: parsed values
