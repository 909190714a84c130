"""Fair by construction: a variant runs its parent's protocol on every suite (changed only where
its Config says so), the default sweep is the seven built-ins, every suite option and the device
are checked before anything is written, the LLM suite's PPO and DAPO follow their sources, batches
live on the agent's device, and ``help`` shows the source of the value it shows."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import pytest
import torch

import algos
import suites
from algos.grpo import GRPO, GRPOConfig
from algos.ppo_clip import PPOClip, PPOClipConfig
from core.envs import ListVecEnv
from core import rollout
from core.rollout import GroupCollector, HorizonCollector
from harness import cli
from harness.config import ConfigError, parse_sweep, plan_runs, split_args
from suites.mujoco import MLPAgent, MujocoConfig

BUILTIN = ("reinforce", "trpo", "ppo_clip", "ppo_kl", "grpo", "rloo", "dapo")
SUITES = ("mujoco", "atari", "llm_toy")


@dataclass
class EntropyConfig(PPOClipConfig):
    ent_coef: float = 0.02            # the one change (the README's ppo_clip_entropy, with another value)


class PPOClipEntropy(PPOClip):
    name = "test_ppo_clip_entropy"
    Config = EntropyConfig


@dataclass
class DrGRPOConfig(GRPOConfig):
    scale_rewards: bool = False       # the one change (Dr. GRPO)


class DrGRPO(GRPO):
    name = "test_dr_grpo"
    Config = DrGRPOConfig


@pytest.fixture
def variants(monkeypatch):
    """The two variants above, registered for one test (as a file in algos/ would register them)."""
    algos.names()   # load the built-ins first
    for cls in (PPOClipEntropy, DrGRPO):
        monkeypatch.setitem(algos._REGISTRY, cls.name, cls)
    return PPOClipEntropy, DrGRPO


def _plan(suite: str, *words: str):
    if suite == "llm_toy":
        pytest.importorskip("transformers")
    top, algo, suite_overrides = split_args([f"suite={suite}", "scale=smoke", "seeds=1", "results_dir=/nonexistent",
                                             *words])
    return plan_runs(parse_sweep(top), algo, suite_overrides)


def _algo_cfg(suite: str, name: str) -> dict:
    runs = _plan(suite, f"algo={name}")
    return runs[0].algo_cfg


# ---------------------------------------------------------------------------------------
# 1. a variant runs its parent's protocol, along the class hierarchy

@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("parent,changed", [("ppo_clip", {"ent_coef": 0.02}), ("grpo", {"scale_rewards": False})])
def test_a_variant_runs_its_parents_protocol_changed_only_where_its_config_says(variants, suite, parent, changed):
    variant = {"ppo_clip": PPOClipEntropy, "grpo": DrGRPO}[parent].name
    base, mine = _algo_cfg(suite, parent), _algo_cfg(suite, variant)
    assert mine.keys() == base.keys()
    assert {k: v for k, v in mine.items() if k not in changed} == {k: v for k, v in base.items() if k not in changed}
    assert {k: mine[k] for k in changed} == changed


def test_atari_and_llm_toy_give_a_ppo_variant_their_own_protocol_not_mujocos(variants):
    # the symptom: MuJoCo's Table 3 (1 x 2048, 3e-4, clip 0.2) on Atari, 1 prompt per batch on llm_toy
    atari = _algo_cfg("atari", PPOClipEntropy.name)
    assert (atari["num_envs"], atari["num_steps"], atari["lr"], atari["clip_eps"]) == (8, 128, 2.5e-4, 0.1)
    llm = _algo_cfg("llm_toy", PPOClipEntropy.name)
    assert llm["num_envs"] == 128


def test_a_suite_entry_of_the_variant_itself_wins_and_the_resolution_is_one_function(variants, monkeypatch):
    suite = suites.get("atari")
    monkeypatch.setattr(type(suite), "algo_defaults",
                        {**suite.algo_defaults, PPOClipEntropy.name: {"num_epochs": 7, "ent_coef": 0.5}})
    resolved = suite.defaults_for(PPOClipEntropy)
    assert resolved["num_epochs"] == 7 and resolved["ent_coef"] == 0.5      # the variant's own entry
    assert resolved["num_envs"] == 8                                         # ppo_clip's entry (Table 5)
    (run,) = _plan("atari", f"algo={PPOClipEntropy.name}", "env=Pong")
    assert {k: run.algo_cfg[k] for k in resolved} == resolved               # planning uses it


def test_builtin_subclasses_resolve_along_the_hierarchy():
    # ppo_kl is a PPOClip, dapo a GRPO: each runs its parent's entry where it has none of its own
    for name in BUILTIN:
        cls = algos.get(name)
        for suite_name in SUITES:
            suite = suites.get(suite_name)
            resolved = suite.defaults_for(cls)
            assert set(resolved) <= {f.name for f in dataclasses.fields(cls.Config)}
            cls.Config(**resolved)   # a valid config
    llm = suites.get("llm_toy")
    assert llm.defaults_for(algos.get("ppo_kl"))["num_envs"] == llm.defaults_for(algos.get("ppo_clip"))["num_envs"]
    assert llm.defaults_for(algos.get("dapo"))["num_groups"] == llm.defaults_for(algos.get("grpo"))["num_groups"]
    # DAPO's Config changes kl_coef (no KL term): no suite entry of grpo's may bring it back
    assert llm.defaults_for(algos.get("dapo")).get("kl_coef", 0.0) == 0.0


# ---------------------------------------------------------------------------------------
# 2. the default sweep is the seven built-ins; a variant runs when named

def test_the_default_algorithms_are_the_seven_builtins(variants):
    assert algos.builtin_names() == list(BUILTIN)
    assert {PPOClipEntropy.name, DrGRPO.name} <= set(algos.names())
    runs = _plan("mujoco")
    assert list(dict.fromkeys(r.algo for r in runs)) == list(BUILTIN)
    named = _plan("mujoco", f"algo={PPOClipEntropy.name}")
    assert {r.algo for r in named} == {PPOClipEntropy.name}


# ---------------------------------------------------------------------------------------
# 3. every suite option is checked when the sweep is planned

BAD_MUJOCO = [
    ("suite.activation=gelu", ["activation", "tanh", "relu"]),
    ("suite.init=xavier", ["init", "normc", "orthogonal", "default"]),
    ("suite.hidden_sizes=64,0", ["hidden_sizes", "positive"]),
    ("suite.hidden_sizes=", ["hidden_sizes", "positive"]),
    ("suite.obs_clip=0", ["obs_clip", "positive"]),
    ("suite.obs_clip=nan", ["obs_clip", "positive"]),
    ("suite.reward_clip=-1", ["reward_clip", "positive"]),
    ("suite.log_std_init=nan", ["log_std_init", "finite"]),
]


@pytest.mark.parametrize("word,names", BAD_MUJOCO, ids=[w for w, _ in BAD_MUJOCO])
def test_a_bad_mujoco_option_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, word, names):
    results = tmp_path / "results"
    code = cli.main(["suite=mujoco", "algo=ppo_clip", "env=InvertedPendulum-v5", "steps=64", "seeds=1",
                     "eval_every=64", "eval_episodes=1", "algo.num_steps=64", "jobs=1", "threads=1", "report=false",
                     f"results_dir={results}", word])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert out == "" and not results.exists()


BAD_LLM = [
    "suite.sft_noise=1.5", "suite.warmstart_device=gpu", "suite.sft_steps=-1", "suite.rm_steps=-1",
    "suite.sft_seed=-1", "suite.missing_eos_score=nan", "suite.kl_coef=nan", "suite.kl_target=nan",
    "suite.attn_implementation=flash", "suite.forward_batch_size=0",
]


@pytest.mark.parametrize("word", BAD_LLM)
def test_a_bad_llm_toy_option_is_refused_at_planning(word):
    with pytest.raises(ConfigError, match=word.split("=")[0].split(".")[1]):
        _plan("llm_toy", "algo=grpo", word)


def test_every_suite_config_default_is_valid():
    for name in SUITES:
        suite = suites.get(name)
        suite.Config()


# ---------------------------------------------------------------------------------------
# 4-5. the LLM suite's PPO keeps its clip ranges; DAPO takes several updates per batch

@pytest.mark.parametrize("name", ["ppo_clip", "ppo_kl"])
def test_llm_toy_ppo_keeps_its_clip_ranges_and_anneals_the_lr(name):
    cfg = _algo_cfg("llm_toy", name)
    # N+ details (Huang et al. 2024) ppo.py: cliprange = cliprange_value = 0.2 throughout; lr linear to 0
    assert cfg["clip_anneal"] is False and cfg["clip_eps"] == 0.2 and cfg["value_clip"] is True
    assert cfg["lr_anneal"] is True


def test_llm_toy_dapo_takes_several_updates_per_batch_and_grpo_one():
    dapo = _algo_cfg("llm_toy", "dapo")
    assert dapo["num_epochs"] * dapo["num_minibatches"] > 1
    assert dapo["num_groups"] * dapo["group_size"] % dapo["num_minibatches"] == 0   # equal minibatches of completions
    grpo = _algo_cfg("llm_toy", "grpo")
    assert grpo["num_epochs"] * grpo["num_minibatches"] == 1          # DeepSeekMath: one update per batch
    assert dapo["num_groups"] * dapo["group_size"] == grpo["num_groups"] * grpo["group_size"] == 128


# ---------------------------------------------------------------------------------------
# 6. device

@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_device_cuda_without_cuda_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, device):
    results = tmp_path / "results"
    code = cli.main(["suite=mujoco", "algo=ppo_clip", "scale=smoke", f"device={device}", "report=false",
                     f"results_dir={results}"])
    out, err = capsys.readouterr()
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "CUDA" in lines[0], err
    assert out == "" and not results.exists()


@pytest.mark.parametrize("device", ["gpu", "mps", "cpu:1", "meta"])
def test_an_unknown_device_is_refused(device):
    with pytest.raises(ConfigError, match="cpu, cuda"):
        parse_sweep({"device": device})


def test_a_ray_sweep_may_name_cuda_the_driver_lacks():
    assert parse_sweep({"device": "cuda", "executor": "ray"}).device == "cuda"


def _agent(env, **cfg):
    torch.manual_seed(0)
    return MLPAgent(env.observation_space, env.action_space, MujocoConfig(**cfg))


def test_batches_are_built_on_the_agents_device():
    # (a GPU is not needed to check the plumbing: every tensor of a batch is where the agent is)
    agent = _agent(gym.make("Hopper-v5"))
    assert rollout.agent_device(agent) == next(agent.parameters()).device
    horizon = HorizonCollector(ListVecEnv([gym.make("Hopper-v5", max_episode_steps=20) for _ in range(2)]),
                               num_steps=64, gamma=0.99, seed=0, with_values=True)   # truncations at 20
    batch, _ = horizon.collect(agent)
    groups = GroupCollector([gym.make("InvertedPendulum-v5", max_episode_steps=10) for _ in range(2)], 2, 0, 10)
    group_batch, _ = groups.collect(_agent(groups.group_env.envs[0]))
    for b in (batch, group_batch):
        tensors = {k: v for k, v in vars(b).items() if isinstance(v, torch.Tensor)}
        assert {v.device for v in tensors.values()} == {rollout.agent_device(agent)}, tensors.keys()


class MetaAgent:
    """An agent whose networks live on torch's "meta" device (shapes, no data): a stand-in for a
    GPU. Its torch methods refuse inputs that are not on its device, so a collector that forgets
    to move what it builds fails here as it would on CUDA."""
    device = torch.device("meta")

    def __init__(self, obs_dim: int, act_dim: int):
        self.act_dim = act_dim

    def _check(self, obs):
        assert obs.device == self.device, f"input on {obs.device}, agent on {self.device}"

    def act(self, obs, rng, deterministic=False):
        return rng.standard_normal((obs.shape[0], self.act_dim)).astype(np.float32)

    def env_action(self, actions):
        return np.clip(actions, -1.0, 1.0)

    def dist(self, obs):
        self._check(obs)
        mean = torch.zeros(*obs.shape[:-1], self.act_dim, device=self.device)
        return torch.distributions.Independent(torch.distributions.Normal(mean, 1.0, validate_args=False), 1,
                                               validate_args=False)

    def value(self, obs):
        self._check(obs)
        return obs.float().sum(-1)


def test_batches_follow_an_agent_on_another_device():
    env = gym.make("Hopper-v5")
    agent = MetaAgent(11, 3)
    horizon = HorizonCollector(ListVecEnv([gym.make("Hopper-v5", max_episode_steps=20) for _ in range(2)]),
                               num_steps=64, gamma=0.99, seed=0, with_values=True)   # truncations at 20
    batch, _ = horizon.collect(agent)
    groups = GroupCollector([gym.make("Hopper-v5", max_episode_steps=10) for _ in range(2)], 2, 0, 10)
    group_batch, _ = groups.collect(agent)
    for b in (batch, group_batch):
        tensors = {k: v for k, v in vars(b).items() if isinstance(v, torch.Tensor)}
        assert {k: v.device.type for k, v in tensors.items()} == {k: "meta" for k in tensors}
    env.close()


def test_agent_device_prefers_a_device_attribute():
    class OnDevice(torch.nn.Module):
        device = torch.device("cpu", 0)

    class NoParameters:
        pass

    assert rollout.agent_device(OnDevice()) == torch.device("cpu", 0)
    assert rollout.agent_device(NoParameters()) == torch.device("cpu")


def test_the_numpy_fast_path_reads_weights_through_cpu(monkeypatch):
    # the snapshot must not call .numpy() on a tensor that may live on a GPU: every policy weight
    # goes through .cpu() (a no-op here), and the actions are unchanged
    env = gym.make("Hopper-v5")
    agent = _agent(env)
    obs = np.random.default_rng(0).standard_normal((3, 11)).astype(np.float32)
    before = agent.act(obs, np.random.default_rng(1))
    calls = []
    original = torch.Tensor.cpu

    def counting_cpu(self, *args, **kwargs):
        calls.append(tuple(self.shape))
        return original(self, *args, **kwargs)

    fresh = _agent(env)
    monkeypatch.setattr(torch.Tensor, "cpu", counting_cpu)
    after = fresh.act(obs, np.random.default_rng(1))
    np.testing.assert_array_equal(before, after)
    weights = {tuple(p.shape) for p in fresh.policy_net.parameters()}
    assert weights <= set(calls), (weights, calls)


# ---------------------------------------------------------------------------------------
# 7. help shows the source of the value it shows

def _help_lines(capsys, algo: str, suite: str) -> dict[str, str]:
    assert cli.main(["help", f"algo={algo}", f"suite={suite}"]) == 0
    out = capsys.readouterr().out
    section = out.split(f"\n{algo}, ", 1)[1]
    lines = {}
    for line in section.splitlines()[1:]:
        if not line.strip().startswith("algo."):
            break
        left, _, right = line.strip().partition("  ")
        lines[left.split("=", 1)[0][len("algo."):]] = (left.split("=", 1)[1], right.strip())
    return lines


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("algo", ["ppo_clip", "ppo_kl", "grpo", "dapo", "test_ppo_clip_entropy"])
def test_help_shows_the_suites_source_where_the_suites_default_applies(variants, capsys, suite, algo):
    s = suites.get(suite)
    cls = algos.get(algo)
    defaults, sources = s.defaults_for(cls), s.default_sources(cls)
    assert defaults.keys() == sources.keys()
    shown = _help_lines(capsys, algo, suite)
    from harness.config import format_value
    from harness.options import field_comments
    own = field_comments(cls.Config)
    for key, (value, source) in shown.items():
        if key in defaults:
            assert value == format_value(defaults[key])
            assert source == sources[key] and f"[suite {suite}" in source, (key, source)
        else:
            assert source == own.get(key, ""), (key, source)
            assert "[suite" not in source


def test_help_quotes_table5_for_atari_and_the_n_plus_details_for_llm_toy(capsys):
    atari = _help_lines(capsys, "ppo_clip", "atari")
    assert atari["num_envs"][0] == "8" and atari["num_envs"][1].startswith("Table 5: 8 actors")
    assert atari["clip_eps"][0] == "0.1" and "Table 5" in atari["clip_eps"][1]
    kl = _help_lines(capsys, "ppo_kl", "atari")
    assert kl["clip_eps"][1].endswith("[suite atari, as ppo_clip]")
    llm = _help_lines(capsys, "ppo_clip", "llm_toy")
    assert llm["clip_anneal"][0] == "false" and "N+" in llm["clip_anneal"][1]
    mujoco = _help_lines(capsys, "ppo_clip", "mujoco")
    assert mujoco["num_envs"] == ("1", "PPO paper Table 3 (MuJoCo): one environment")
    # a variant's own change shows its own comment
    entropy = _help_lines_variant(capsys)
    assert entropy["ent_coef"] == ("0.02", "the one change (the README's ppo_clip_entropy, with another value)")


def _help_lines_variant(capsys):
    algos.names()
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(algos._REGISTRY, PPOClipEntropy.name, PPOClipEntropy)
        return _help_lines(capsys, PPOClipEntropy.name, "atari")
