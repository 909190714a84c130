"""Runtimes: run.json records the hardware; the report's wall-clock curves (against a naive
per-episode reference) and its runtime table (steps/s, machines told apart)."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from analysis.figures import setting_wall_curves, wall_clock_curves
from analysis.load import RUN_KEYS
from analysis.tables import runtime_presentable, runtime_table
from helpers import TINY, plan


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        return None


@pytest.mark.slow
def test_run_json_records_the_hardware_and_the_report_shows_runtime_and_wall_clock_curves(tmp_path):
    from analysis.report import render_report
    from harness.train import train_batch
    runs = plan(tmp_path, *TINY, seeds=2)
    train_batch(runs)
    for run in runs:
        hw = json.loads((run.run_dir / "run.json").read_text())["hardware"]
        assert hw["cores"] == os.cpu_count()
        if _cpu_model():
            assert hw["cpu"] == _cpu_model()
        assert "gpu" not in hw   # a CPU run names no GPU
    path = render_report(tmp_path, "mujoco")
    html = path.read_text()
    assert "Runtime per setting and environment" in html and "Learning curves against wall-clock time" in html
    assert (path.parent / "learning_curves_wall.png").exists()
    md = (path.parent / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| ppo_clip") and "InvertedPendulum" in line)
    assert f"{hw['cpu']}, {hw['cores']} cores" in row


def _tidy(run: dict, steps, values) -> pd.DataFrame:
    part = pd.DataFrame({"step": steps, "value": values})
    for k in RUN_KEYS:
        part[k] = run[k]
    return part


def test_wall_clock_curves_equal_a_naive_per_episode_reference():
    rng = np.random.default_rng(0)
    episodes, walls, truth = [], [], {}
    for seed in range(3):
        run = {"suite": "mujoco", "env": "Hopper-v5", "algo": "ppo_clip", "variant": "", "label": "ppo_clip",
               "seed": seed}
        ep_steps = np.sort(rng.choice(np.arange(1, 4096), size=40, replace=False))
        ep_returns = rng.normal(size=40)
        up_steps = np.arange(512, 4097, 512)
        up_walls = np.cumsum(rng.uniform(0.5, 2.0, size=len(up_steps)))
        episodes.append(_tidy(run, ep_steps, ep_returns))
        walls.append(_tidy(run, up_steps, up_walls))
        truth[seed] = (ep_steps, ep_returns, up_steps, up_walls)
    curves = wall_clock_curves(pd.concat(episodes, ignore_index=True), pd.concat(walls, ignore_index=True),
                               points=20, window=5)
    for seed, (ep_steps, ep_returns, up_steps, up_walls) in truth.items():
        mine = curves[curves["seed"] == seed]
        assert np.allclose(mine["step"], np.linspace(0, up_walls[-1], 21)[1:])   # the run's own end
        for t, value in zip(mine["step"], mine["value"]):
            # naive: the time of each episode by linear interpolation between (0, 0) and the updates
            seen = []
            for s, r in zip(ep_steps, ep_returns):
                prev_s, prev_w = 0.0, 0.0
                for us, uw in zip(up_steps, up_walls):
                    if s <= us:
                        at = prev_w + (uw - prev_w) * (s - prev_s) / (us - prev_s)
                        break
                    prev_s, prev_w = us, uw
                if at <= t:
                    seen.append(r)
            if not seen:
                assert np.isnan(value)
            else:
                assert value == pytest.approx(np.mean(seen[-5:]))
    # a setting's seeds on one grid, up to its shortest seed's end: each run's last point at or before
    lined = setting_wall_curves(curves, points=7)
    shortest = min(t[3][-1] for t in truth.values())
    for seed in truth:
        mine, own = lined[lined["seed"] == seed], curves[curves["seed"] == seed]
        assert np.allclose(mine["step"], np.linspace(0, shortest, 8)[1:])
        for t, value in zip(mine["step"], mine["value"]):
            before = [v for s, v in zip(own["step"], own["value"]) if s <= t]
            assert (np.isnan(value) and (not before or np.isnan(before[-1]))) or value == before[-1]


def test_runtime_table_gives_steps_per_second_and_tells_machines_apart():
    a = {"cpu": "CPU A", "cores": 2}
    b = {"cpu": "CPU B", "cores": 64, "gpu": "GPU X"}
    runs = pd.DataFrame([
        {"label": "ppo_clip", "env": "Hopper-v5", "steps": 1000, "wall_seconds": 10.0, "hardware": a},
        {"label": "ppo_clip", "env": "Hopper-v5", "steps": 1000, "wall_seconds": 30.0, "hardware": a},
        {"label": "trpo", "env": "Hopper-v5", "steps": 1000, "wall_seconds": 5.0, "hardware": b},
    ])
    rt = runtime_table(runs)
    ppo = rt[rt["label"] == "ppo_clip"].iloc[0]
    assert ppo["runs"] == 2 and ppo["wall_minutes"] == pytest.approx(20 / 60)
    assert ppo["steps_per_s"] == pytest.approx((100 + 1000 / 30) / 2)
    assert ppo["hardware"] == "CPU A, 2 cores"
    assert rt[rt["label"] == "trpo"].iloc[0]["hardware"] == "CPU B, 64 cores, GPU X"
    table = runtime_presentable(rt, ["ppo_clip", "trpo"])
    assert any("2 different machines" in n for n in table.notes)
    same = runtime_presentable(runtime_table(runs.iloc[:2]), ["ppo_clip"])
    assert not any("different machines" in n for n in same.notes)
