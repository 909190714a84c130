"""What the Ray executor and checkpointing cost, measured side by side in one run.

    .venv/bin/pip install -e ".[ray]"
    .venv/bin/python bench/ray_overhead.py [--repeats 3] [--steps N] [--json out.json]
    .venv/bin/python bench/ray_overhead.py --tiny          # a seconds-long check that it works

(a) Executor overhead: the same sweep (``scale=smoke algo=ppo_clip``: InvertedPendulum-v5 and
    Hopper-v5, one seed each, ``jobs=2``) through the command line, each in a fresh process,
    wall-clock from start to exit:
      - ``executor=local``;
      - ``executor=ray ray_address=<head>``: a Ray head already running (started here on
        loopback, as CI does) -- the cost of Ray tasks, shipping the code, streaming results;
      - ``executor=ray`` alone: the sweep also starts and stops its own Ray instance.
    Reported as ratios to the local executor. ``--steps`` lengthens each run (the overhead is
    mostly fixed, so its share shrinks with the run).
(b) Checkpoint cost: one ppo_clip run on Hopper-v5 (paper settings: 2048 steps per update)
    with ``checkpoint_every=1`` (a checkpoint after every update, the most frequent setting)
    against ``checkpoint_every`` larger than the run (none), each in a fresh process, as
    training SPS (environment steps / wall seconds of the training loop), with the mean time
    and size of one checkpoint.

Run it alone on the machine: two busy processes on two cores distort every number.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
           RAY_USAGE_STATS_ENABLED="0")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_head(tmp: Path) -> tuple[str, subprocess.Popen]:
    """A Ray head on loopback, as scripts/ci_ray.sh starts it (--block: stopping this one
    process stops that head alone)."""
    port, client_port = free_port(), free_port()
    ray = Path(PY).with_name("ray")
    log = tmp / "head.log"
    head = subprocess.Popen([str(ray), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
                             f"--ray-client-server-port={client_port}", "--num-cpus=2", "--disable-usage-stats",
                             "--include-dashboard=false", "--object-store-memory=200000000",
                             f"--temp-dir={tmp / 'ray'}"], env=ENV, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while "block forever" not in log.read_text():
        if head.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the Ray head did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    return f"127.0.0.1:{port}", head


def stop_head(head: subprocess.Popen) -> None:
    head.terminate()
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        head.kill()
        head.wait()


def timed_sweep(args: list[str], results_dir: Path) -> float:
    shutil.rmtree(results_dir, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.run([PY, "-m", "harness.cli", *args, f"results_dir={results_dir}"], cwd=ROOT, env=ENV,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"sweep failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr[-3000:]}")
    return wall


CHECKPOINT_RUN = """
import json, sys, time
import torch
torch.set_num_threads(1)
import harness.train as T
from harness.config import parse_sweep, plan_runs, split_args
words = json.loads(sys.argv[1])
top, algo, suite = split_args(words)
(run,) = plan_runs(parse_sweep(top), algo, suite)
saves = []
real_save = T._save
def timed_save(*a, **k):
    t = time.perf_counter(); real_save(*a, **k); saves.append(time.perf_counter() - t)
T._save = timed_save
rec = T.train(run)
assert rec["status"] == "done", rec.get("error")
print(json.dumps({"sps": rec["global_step"] / rec["wall_seconds"], "wall": rec["wall_seconds"],
                  "saves": len(saves), "save_s": sum(saves) / max(1, len(saves))}))
"""

SIZE_RUN = """
import json, sys
import torch
torch.set_num_threads(1)
import harness.train as T
from harness.config import parse_sweep, plan_runs, split_args
top, algo, suite = split_args(json.loads(sys.argv[1]))
(run,) = plan_runs(parse_sweep(top), algo, suite)
real_save = T._save
sizes = []
def save(path, *a, **k):
    real_save(path, *a, **k); sizes.append(path.stat().st_size)
T._save = save
T.train(run)
print(json.dumps({"bytes": sizes[-1] if sizes else 0}))
"""


def checkpoint_run(words: list[str], script: str = CHECKPOINT_RUN) -> dict:
    proc = subprocess.run([PY, "-c", script, json.dumps(words)], cwd=ROOT, env=ENV, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"checkpoint run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="steps per run of the sweep (default: scale=smoke's)")
    parser.add_argument("--checkpoint-steps", type=int, default=40_960, help="steps of the checkpoint-cost run")
    parser.add_argument("--tiny", action="store_true", help="a seconds-long check that the script works")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    opts = parser.parse_args()

    sweep = ["suite=mujoco", "scale=smoke", "algo=ppo_clip", "jobs=2"]
    ckpt = ["suite=mujoco", "algo=ppo_clip", "env=Hopper-v5", "seeds=1", "eval_episodes=1"]
    if opts.tiny:
        opts.repeats = 1
        sweep += ["steps=1024", "algo.num_steps=256", "algo.minibatch_size=64", "algo.num_epochs=2"]
        ckpt += ["steps=2048", "algo.num_steps=256", "algo.minibatch_size=64", "algo.num_epochs=2"]
    else:
        if opts.steps:
            sweep.append(f"steps={opts.steps}")
        ckpt.append(f"steps={opts.checkpoint_steps}")
    ckpt.append(f"eval_every={10 ** 9}")  # one evaluation at the start and one at the end only

    out: dict = {"sweep": " ".join(sweep), "checkpoint_run": " ".join(ckpt), "repeats": opts.repeats}
    with tempfile.TemporaryDirectory(prefix="pg-arena-bench-") as tmp_name:
        tmp = Path(tmp_name)
        # Ray's token authentication with a token of this run (not ~/.ray/auth_token)
        (tmp / "auth_token").write_text(secrets.token_hex(32))
        ENV.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(tmp / "auth_token"))
        # (a) executor overhead
        walls: dict[str, list[float]] = {"local": [], "ray (running head)": [], "ray (own instance)": []}
        address, head = start_head(tmp)
        try:
            for _ in range(opts.repeats):
                walls["local"].append(timed_sweep([*sweep, "executor=local"], tmp / "local"))
                walls["ray (running head)"].append(
                    timed_sweep([*sweep, "executor=ray", f"ray_address={address}"], tmp / "ray_head"))
        finally:
            stop_head(head)
        for _ in range(opts.repeats):  # its own instance: with no other head running
            walls["ray (own instance)"].append(timed_sweep([*sweep, "executor=ray"], tmp / "ray_own"))
        local = statistics.median(walls["local"])
        out["executor"] = {k: {"wall_s": statistics.median(v), "ratio_to_local": statistics.median(v) / local}
                           for k, v in walls.items()}

        # (b) checkpoint cost, alternating the order
        runs: dict[str, list[dict]] = {"every update": [], "none": []}
        for i in range(opts.repeats):
            order = [("every update", 1), ("none", 10 ** 9)]
            for name, every in (order if i % 2 == 0 else order[::-1]):
                runs[name].append(checkpoint_run([*ckpt, f"checkpoint_every={every}",
                                                  f"results_dir={tmp / 'ckpt' / name.replace(' ', '_') / str(i)}"]))
        size = checkpoint_run([*ckpt, "checkpoint_every=1", f"results_dir={tmp / 'ckpt_size'}"], SIZE_RUN)["bytes"]
        sps = {k: statistics.median(r["sps"] for r in v) for k, v in runs.items()}
        out["checkpoint"] = {
            "sps_every_update": sps["every update"], "sps_none": sps["none"],
            "ratio": sps["every update"] / sps["none"],
            "seconds_per_checkpoint": statistics.median(r["save_s"] for r in runs["every update"]),
            "checkpoint_bytes": size,
        }

    print(f"\nsweep: {out['sweep']}  (median of {opts.repeats}, wall-clock of the whole command)\n")
    print("| executor | wall s | ratio to local |")
    print("|---|---:|---:|")
    for name, v in out["executor"].items():
        print(f"| {name} | {v['wall_s']:.1f} | {v['ratio_to_local']:.2f} |")
    c = out["checkpoint"]
    print(f"\ncheckpoint cost: {out['checkpoint_run']}\n")
    print("| checkpoint_every | training SPS | ratio |")
    print("|---|---:|---:|")
    print(f"| none | {c['sps_none']:.0f} | 1.00 |")
    print(f"| 1 (every update) | {c['sps_every_update']:.0f} | {c['ratio']:.3f} |")
    print(f"\none checkpoint: {c['seconds_per_checkpoint'] * 1e3:.1f} ms, {c['checkpoint_bytes'] / 1024:.0f} KiB")
    if opts.json:
        opts.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
