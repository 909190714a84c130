"""scripts/relabel_runs.py: after a default changes, the runs a variant made under the new default
move to the plain name, checked against what the planner resolves today; anything else is refused."""
import dataclasses
import importlib.util
import json
from pathlib import Path

from core.results import comparable_config, is_done
from harness import cli
from suites.mujoco import MujocoSuite
from tests.helpers import TINY, plan

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("relabel_runs", ROOT / "scripts" / "relabel_runs.py")
relabel_runs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(relabel_runs)


def test_a_variant_that_became_the_default_moves_to_the_plain_name(tmp_path, monkeypatch, capsys):
    args = ["suite=mujoco", "algo=ppo_clip", "env=InvertedPendulum-v5", "seeds=1", "steps=512", "eval_every=512",
            "eval_episodes=1", "report=false", f"results_dir={tmp_path}", *TINY, "algo.clip_eps=0.3"]
    assert cli.main(args) == 0
    variant = "ppo_clip+clip_eps=0.3+num_epochs=2+num_steps=256"     # TINY's minibatch size is the default
    target = "ppo_clip+num_epochs=2+num_steps=256"
    source = tmp_path / "mujoco" / "InvertedPendulum-v5" / variant / "seed0"
    assert is_done(source)
    # today clip_eps 0.3 is not the default: refused, nothing moved
    assert relabel_runs.main([str(tmp_path), "mujoco", variant, target]) == 2
    assert "algo_cfg.clip_eps: 0.3 != 0.2" in capsys.readouterr().err and source.exists()
    # the default changes to what the variant ran
    monkeypatch.setattr(MujocoSuite, "algo_defaults", {**MujocoSuite.algo_defaults, "ppo_clip": {"clip_eps": 0.3}})
    assert relabel_runs.main([str(tmp_path), "mujoco", variant, target, "--dry-run"]) == 0
    assert source.exists()
    assert relabel_runs.main([str(tmp_path), "mujoco", variant, target]) == 0
    dest = tmp_path / "mujoco" / "InvertedPendulum-v5" / target / "seed0"
    assert not source.exists() and is_done(dest)
    # the moved run is the one the planner asks for under the new default: a sweep skips it
    (run,) = plan(tmp_path, *TINY, steps=512, eval_every=512)
    assert run.run_dir == dest
    record = json.loads((dest / "run.json").read_text())
    assert comparable_config(record["config"]) == comparable_config(dataclasses.asdict(run))
    assert record["variant"] == record["config"]["variant"] == "+num_epochs=2+num_steps=256"
