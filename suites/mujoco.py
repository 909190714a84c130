"""MuJoCo suite: the seven environments of the PPO paper's Table 1, in gymnasium -v5 form.

Networks and defaults follow the paper (Schulman et al. 2017, §6.1 and Table 3) and the
code released with it (OpenAI baselines ``ppo1``): separate 64-64 tanh MLPs for the
Gaussian mean and the value, a state-independent log-std initialised to 0, running
observation normalisation clipped to [-5, 5].
"""
from __future__ import annotations

import functools
import math
import operator
from copy import deepcopy
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical
from torch.optim.optimizer import register_optimizer_step_post_hook

from core.agent import RunningMeanStd
from core.distributions import DiagGaussian
from core.errors import ConfigError
from suites.base import Scale, Suite
from suites.stacked_mlp import ACTIVATIONS, stacked_mlp

_VERSION = operator.attrgetter("_version")
# Fused Adam updates parameters without bumping their version counters, so the snapshot's
# staleness key also counts optimiser steps, through a global post-step hook.
_OPTIMIZER_STEPS = [0]


def _count_optimizer_step(optimizer, args, kwargs) -> None:
    _OPTIMIZER_STEPS[0] += 1


register_optimizer_step_post_hook(_count_optimizer_step)

# The PPO paper's Table 1 environments ("-v1" in 2017; -v5 is the maintained form).
PAPER_ENVS = ("HalfCheetah-v5", "Hopper-v5", "InvertedDoublePendulum-v5", "InvertedPendulum-v5",
              "Reacher-v5", "Swimmer-v5", "Walker2d-v5")


INITS = ("normc", "orthogonal", "default")


@dataclass
class MujocoConfig:
    """Environment-side and network options shared by every algorithm on this suite."""
    hidden_sizes: tuple[int, ...] = (64, 64)  # paper §6.1: two hidden layers of 64 units
    activation: str = "tanh"                  # paper §6.1: tanh nonlinearities
    init: str = "normc"                       # normc (baselines ppo1) | orthogonal (ppo2, CleanRL) | default (torch)
    log_std_init: float = 0.0                 # baselines ppo1: state-independent log-std, initialised to 0
    obs_norm: bool = True                     # baselines ppo1: running mean/std of observations (updated after each update; core/agent.py)
    obs_clip: float = 5.0                     # baselines ppo1 clips normalised observations to [-5, 5]; CleanRL 10
    reward_scale: bool = False                # divide rewards by the running std of the discounted return (ppo2, CleanRL)
    reward_clip: float = 10.0                 # CleanRL clips scaled rewards to [-10, 10]

    def __post_init__(self):
        # Checked when the sweep is planned (before anything is written), not inside every run.
        for name, choices in (("activation", ACTIVATIONS), ("init", INITS)):
            if getattr(self, name) not in choices:
                raise ConfigError(f"suite.{name}={getattr(self, name)!r} is not valid; valid: {', '.join(choices)}")
        if not self.hidden_sizes or not all(isinstance(h, int) and h > 0 for h in self.hidden_sizes):
            raise ConfigError(f"suite.hidden_sizes={','.join(map(str, self.hidden_sizes))!s} must be one or more "
                              f"positive integers (e.g. 64,64)")
        if not math.isfinite(self.log_std_init):
            raise ConfigError(f"suite.log_std_init={self.log_std_init} must be a finite number")
        for name in ("obs_clip", "reward_clip"):
            if not getattr(self, name) > 0:   # also rejects NaN
                raise ConfigError(f"suite.{name}={getattr(self, name)} must be positive")


def _init_linear(layer: nn.Linear, scheme: str, gain: float) -> None:
    if scheme == "orthogonal":
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
    elif scheme == "normc":
        # baselines' normc_initializer: Gaussian columns rescaled to norm ``gain`` per output unit.
        with torch.no_grad():
            w = torch.randn_like(layer.weight)
            layer.weight.copy_(w * gain / w.norm(dim=1, keepdim=True))
            layer.bias.zero_()
    elif scheme != "default":
        raise ConfigError(f"unknown init {scheme!r}; valid: {', '.join(INITS)}")


def mlp(sizes: list[int], activation: str, init: str, out_gain: float) -> nn.Sequential:
    acts = {"tanh": nn.Tanh, "relu": nn.ReLU}
    if activation not in acts:
        raise ConfigError(f"unknown activation {activation!r}; valid: {', '.join(acts)}")
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        linear = nn.Linear(sizes[i], sizes[i + 1])
        last = i == len(sizes) - 2
        hidden_gain = np.sqrt(2) if init == "orthogonal" else 1.0
        _init_linear(linear, init, out_gain if last else hidden_gain)
        layers.append(linear)
        if not last:
            layers.append(acts[activation]())
    return nn.Sequential(*layers)


def run_mlp(net: nn.Sequential, x: torch.Tensor, activation: str) -> torch.Tensor:
    """``net(x)`` as ``stacked_mlp`` computes it for a stack of one: a lone agent's numbers are a
    stacked agent's (the update's first ratio is exactly 1 on the collected log-probabilities)."""
    params = [p.unsqueeze(0) for m in net if isinstance(m, nn.Linear) for p in (m.weight, m.bias)]
    out = stacked_mlp(x.reshape(1, -1, x.shape[-1]), params, activation)
    return out.reshape(*x.shape[:-1], out.shape[-1])


class MLPAgent(nn.Module):
    """Separate policy and value MLPs; Gaussian (Box) or categorical (Discrete) policy."""

    has_critic = True

    def __init__(self, observation_space: gym.spaces.Box, action_space: gym.spaces.Space, cfg: MujocoConfig):
        super().__init__()
        obs_dim = int(np.prod(observation_space.shape))
        self.continuous = isinstance(action_space, gym.spaces.Box)
        act_dim = int(np.prod(action_space.shape)) if self.continuous else int(action_space.n)
        hidden = list(cfg.hidden_sizes)
        self.obs_norm = RunningMeanStd((obs_dim,), clip=cfg.obs_clip) if cfg.obs_norm else None
        self.activation = cfg.activation
        self.policy_net = mlp([obs_dim, *hidden, act_dim], cfg.activation, cfg.init, out_gain=0.01)
        self.value_net = mlp([obs_dim, *hidden, 1], cfg.activation, cfg.init, out_gain=1.0)
        if self.continuous:
            self.log_std = nn.Parameter(torch.full((act_dim,), float(cfg.log_std_init)))
            self._np_low = np.asarray(action_space.low, dtype=np.float32)
            self._np_high = np.asarray(action_space.high, dtype=np.float32)
        self._snapshot_version = None

    def _features(self, obs: torch.Tensor) -> torch.Tensor:
        obs = obs.float()
        return self.obs_norm(obs) if self.obs_norm is not None else obs

    def dist(self, obs: torch.Tensor):
        out = run_mlp(self.policy_net, self._features(obs), self.activation)
        if self.continuous:
            # Without autograd this is a snapshot (pi_old in TRPO's line search): it must not
            # follow later in-place changes of the log-std parameter.
            log_std = self.log_std if torch.is_grad_enabled() else self.log_std.detach().clone()
            return DiagGaussian(out, log_std)
        return Categorical(logits=out)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return run_mlp(self.value_net, self._features(obs), self.activation).squeeze(-1)

    def policy_parameters(self) -> list[nn.Parameter]:
        params = list(self.policy_net.parameters())
        return params + [self.log_std] if self.continuous else params

    def value_parameters(self) -> list[nn.Parameter]:
        return list(self.value_net.parameters())

    def frozen_copy(self) -> "MLPAgent":
        """A frozen copy of the current policy (pi_old, pi_ref) that keeps reading the live
        observation statistics, so it differs from the agent only in its weights."""
        obs_norm, self.obs_norm = self.obs_norm, None
        copy = deepcopy(self)
        self.obs_norm = copy.obs_norm = obs_norm
        copy.requires_grad_(False)
        return copy

    def observe(self, obs: torch.Tensor) -> None:
        if self.obs_norm is not None:
            self.obs_norm.update(obs)

    def env_action(self, actions: np.ndarray) -> np.ndarray:
        if self.continuous:  # np.minimum/np.maximum: np.clip costs ~4 us on tiny arrays
            return np.minimum(np.maximum(actions, self._np_low), self._np_high)
        return actions

    # -- collection fast path -------------------------------------------------------
    # A torch forward pass on one observation costs ~30 us of dispatch; the same MLP in
    # NumPy costs ~5 us. The weights are frozen during a rollout, so a NumPy snapshot is
    # exact; log-probabilities for the update are recomputed in torch afterwards (on the
    # agent's device: the snapshot is read through ``.cpu()``, a no-op for CPU tensors).

    def _version(self) -> tuple[int, int, tuple[int, ...]]:
        # The snapshot is stale after any optimiser step (counted globally: fused Adam leaves
        # version counters alone), any in-place change (statistics updates bump version
        # counters) or any replaced storage (TRPO's vector_to_parameters assigns .data).
        if not hasattr(self, "_tracked"):
            self._tracked = [*self.policy_net.parameters(), *self.buffers()] + (
                [self.log_std] if self.continuous else [])
        return (_OPTIMIZER_STEPS[0], sum(map(_VERSION, self._tracked)), tuple(t.data_ptr() for t in self._tracked))

    def _snapshot(self):
        version = self._version()
        if self._snapshot_version != version:
            linears = [m for m in self.policy_net if isinstance(m, nn.Linear)]
            self._np_layers = [(m.weight.detach().cpu().numpy().T.copy(), m.bias.detach().cpu().numpy().copy())
                               for m in linears]
            self._np_act = np.tanh if isinstance(self.policy_net[1], nn.Tanh) else (lambda h: np.maximum(h, 0))
            self._np_norm = self.obs_norm.numpy_params() if self.obs_norm is not None else None
            self._np_std = self.log_std.detach().exp().cpu().numpy().copy() if self.continuous else None
            self._snapshot_version = version
        return self._np_layers

    def _policy_out(self, obs: np.ndarray, rowwise: bool = False) -> np.ndarray:
        """The policy net's output (Gaussian mean or logits) on ``obs`` ``[N, ...]`` in NumPy;
        ``rowwise``: each row's numbers as for that row alone (a stack of N one-row products:
        NumPy's product of N rows at once is another BLAS kernel, with other last bits)."""
        layers = self._snapshot()
        h = obs.astype(np.float32).reshape(obs.shape[0], -1)
        if self._np_norm is not None:
            mean, inv_std = self._np_norm
            clip = self.obs_norm.clip
            h = np.minimum(np.maximum((h - mean) * inv_std, -clip), clip)
        if rowwise:
            h = h[:, None, :]
        for i, (w, b) in enumerate(layers):
            h = h @ w + b
            if i < len(layers) - 1:
                h = self._np_act(h)
        return h[:, 0] if rowwise else h

    def act_rowwise(self, obs: np.ndarray) -> np.ndarray:
        """The deterministic action of each row of ``obs``, bit for bit ``act(obs[j:j+1],
        deterministic=True)`` (``core.rollout.evaluate_rows``: evaluation episodes side by side)."""
        h = self._policy_out(obs, rowwise=True)
        return h if self.continuous else h.argmax(-1)

    def act(self, obs: np.ndarray, rng: np.random.Generator, deterministic: bool = False) -> np.ndarray:
        h = self._policy_out(obs)
        if self.continuous:
            if deterministic:
                return h
            return (h + self._np_std * rng.standard_normal(h.shape)).astype(np.float32)
        if deterministic:
            return h.argmax(-1)
        # Gumbel-max sampling: one vectorised draw per row.
        return (h - np.log(-np.log(rng.random(h.shape)))).argmax(-1)

    @staticmethod
    def stacked_actor(agents: list["MLPAgent"]):
        """``act`` of K agents of one shape in one pass, for one rollout (the weights are frozen
        during it): ``actor(obs [K, N, obs_dim], rngs) -> [K, N, act_dim]``, bit-identical to
        ``[agents[k].act(obs[k], rngs[k])]`` (NumPy's matmul of a stack is the 2-D product of each
        slice, tested; each run's noise comes from its own generator). None: not stackable."""
        if not all(a.continuous for a in agents):
            return None
        snapshots = [a._snapshot() for a in agents]
        layers = [(np.stack([s[i][0] for s in snapshots]), np.stack([s[i][1] for s in snapshots])[:, None])
                  for i in range(len(snapshots[0]))]
        first = agents[0]
        norm = None
        if first._np_norm is not None:
            norm = (np.stack([a._np_norm[0] for a in agents])[:, None], np.stack([a._np_norm[1] for a in agents])[:, None],
                    first.obs_norm.clip)
        std = np.stack([a._np_std for a in agents])[:, None]
        activation = first._np_act

        def actor(obs: np.ndarray, rngs: list[np.random.Generator]) -> np.ndarray:
            h = obs.astype(np.float32).reshape(*obs.shape[:2], -1)
            if norm is not None:
                mean, inv_std, clip = norm
                h = np.minimum(np.maximum((h - mean) * inv_std, -clip), clip)
            for i, (w, b) in enumerate(layers):
                h = h @ w + b
                if i < len(layers) - 1:
                    h = activation(h)
            noise = np.stack([rng.standard_normal(h.shape[1:]) for rng in rngs])
            return (h + std * noise).astype(np.float32)
        return actor


class StackedMLPAgent(nn.Module):
    """K ``MLPAgent`` of one shape as one model (the batched engine, ``algos/stack.py``).

    Parameter ``name`` of run k is row k of ``self.stacked[name]`` (``[K, *shape]``), in the
    order of ``MLPAgent.parameters()``; a Linear layer's weights keep torch's ``[out, in]``
    layout (``suites/stacked_mlp.py`` computes the K networks). Inputs carry the run first: ``dist(obs)`` with
    ``obs`` ``[K, ..., obs_dim]`` gives run k's policy on ``obs[k]``. The observation statistics
    are each run's, frozen for the update (they change only between updates, as alone).
    """

    # the policy is a DiagGaussian whose std is per run, not per state: pi_old is its means (PPO-KL)
    state_independent_gaussian = True

    def __init__(self, agents: list[MLPAgent]):
        super().__init__()
        first = agents[0]
        self.num_runs, self.agents, self.continuous = len(agents), agents, first.continuous
        if not self.continuous:
            raise ValueError("a stack of MLP agents needs a continuous (Box) action space")
        self.names = [name for name, _ in first.named_parameters()]
        shapes = {tuple((n, tuple(p.shape)) for n, p in a.named_parameters()) for a in agents}
        if len(shapes) != 1:
            raise ValueError("the agents of a stack have the same parameter shapes")
        self.stacked = {n: torch.stack([dict(a.named_parameters())[n].detach() for a in agents]).requires_grad_()
                        for n in self.names}
        self._layers = {net: [(f"{net}.{i}.weight", f"{net}.{i}.bias") for i, m in enumerate(getattr(first, net))
                              if isinstance(m, nn.Linear)] for net in ("policy_net", "value_net")}
        self.activation = first.activation
        if first.obs_norm is not None:
            scales = [a.obs_norm._scale(torch.float32) for a in agents]
            self._norm = (torch.stack([m for m, _ in scales]), torch.stack([s for _, s in scales]), first.obs_norm.clip)
        else:
            self._norm = None

    def parameters(self, recurse: bool = True):
        return iter([self.stacked[n] for n in self.names])

    def policy_parameters(self) -> list[torch.Tensor]:
        return [self.stacked[n] for n in self.names if n.startswith("policy_net.")] + [self.stacked["log_std"]]

    def value_parameters(self) -> list[torch.Tensor]:
        return [self.stacked[n] for n in self.names if n.startswith("value_net.")]

    def _per_run(self, x: torch.Tensor, dims: int) -> torch.Tensor:
        """``[K, *rest]`` viewed as ``[K, 1 x dims, *rest]`` (broadcasts over the step dimensions)."""
        return x.view(x.shape[0], *([1] * dims), *x.shape[1:])

    def _features(self, obs: torch.Tensor) -> torch.Tensor:
        obs = obs.float()
        if self._norm is None:
            return obs
        mean, inv_std, clip = self._norm
        dims = obs.dim() - 2
        return torch.clamp((obs - self._per_run(mean, dims)) * self._per_run(inv_std, dims), -clip, clip)

    def _mlp(self, net: str, x: torch.Tensor) -> torch.Tensor:
        h = stacked_mlp(x.reshape(self.num_runs, -1, x.shape[-1]),
                        [self.stacked[n] for layer in self._layers[net] for n in layer], self.activation)
        return h.reshape(*x.shape[:-1], h.shape[-1])

    def dist(self, obs: torch.Tensor) -> DiagGaussian:
        loc = self._mlp("policy_net", self._features(obs))
        log_std = self._per_run(self.stacked["log_std"], loc.dim() - 2)
        return DiagGaussian(loc, log_std if torch.is_grad_enabled() else log_std.detach().clone())

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self._mlp("value_net", self._features(obs)).squeeze(-1)

    def frozen_copy(self) -> "StackedMLPAgent":
        """pi_old of every run: the stacked weights as they are now, without gradients."""
        copy = StackedMLPAgent.__new__(StackedMLPAgent)
        nn.Module.__init__(copy)
        copy.__dict__.update({k: v for k, v in self.__dict__.items() if k not in ("stacked", "_modules")})
        copy.stacked = {n: t.detach().clone() for n, t in self.stacked.items()}
        return copy

    @torch.no_grad()
    def write_back(self) -> None:
        for k, agent in enumerate(self.agents):
            for name, p in agent.named_parameters():
                p.copy_(self.stacked[name][k])


@functools.lru_cache(maxsize=None)
def _evaluation_env(env_id: str, episodes: int):
    """One ``MujocoVecEnv`` of ``episodes`` rows per environment and process, reused: an evaluation
    resets every row."""
    from suites.mujoco_vec import MujocoVecEnv
    return MujocoVecEnv(env_id, episodes)


class MujocoSuite(Suite):
    name = "mujoco"
    Config = MujocoConfig
    default_envs = PAPER_ENVS
    # One torch thread per process: on 2 idle cores a second thread gives a lone Hopper run +12% and
    # a stack of 16 runs -8%, and with another process busy a lone run with two threads fell from
    # 1.84k to 0.6k steps/s (docs/BENCHMARKS.md, "Many runs, one process": threads).
    max_threads = 1
    scales = {
        # every algorithm on 2 envs for seconds: a first look, and CI
        "smoke": Scale(envs=("InvertedPendulum-v5", "Hopper-v5"), steps=4096, seeds=1,
                       eval_every=2048, eval_episodes=2),
        "quick": Scale(envs=PAPER_ENVS, steps=50_000, seeds=3, eval_every=25_000, eval_episodes=5),
        # the paper's protocol: 1M timesteps, 3 seeds (Table 1)
        "paper": Scale(envs=PAPER_ENVS, steps=1_000_000, seeds=3, eval_every=100_000, eval_episodes=10),
    }

    # The code-level options of CleanRL's ppo_continuous_action.py (the repository's defaults),
    # the implementation behind CleanRL's published MuJoCo numbers (CleanRL's docs,
    # https://docs.cleanrl.dev/rl-algorithms/ppo/, `ppo_continuous_action.py`, "Experiment results":
    # Open RL Benchmark, openrlbenchmark/cleanrl/ppo_continuous_action, tag pr-424; kept in
    # analysis/reference.py, CLEANRL_PPO). CleanRL's value loss is 0.5 * MSE with vf_coef 0.5,
    # i.e. 0.25 on our plain MSE.
    presets = {
        "cleanrl": {
            "suite.init": "orthogonal", "suite.obs_clip": 10.0, "suite.reward_scale": True, "suite.reward_clip": 10.0,
            "algo.adv_norm": "minibatch", "algo.value_clip": True, "algo.lr_anneal": True, "algo.clip_anneal": False,
            "algo.max_grad_norm": 0.5, "algo.vf_coef": 0.25,
        },
    }
    # The algorithms' own defaults (algos/*.py) apply, except:
    algo_defaults = {
        # No KL penalty toward a reference policy. On language the reference is the SFT model
        # (DeepSeekMath §4.1; TRL's RLOO beta 0.05); a control suite has none, and a frozen copy of
        # the untrained network is not one: no source pulls a policy back toward its random
        # initialisation. TRL 1.16's GRPOConfig defaults to beta 0.0 as well. Measured at the paper's
        # protocol (docs/BENCHMARKS.md, "Fair on every suite"): grpo with beta 0 scores +0.70 [+0.59,
        # +0.81] normalised above beta 0.04 (ahead on 6 of 7 environments); rloo with beta 0 ties beta 0.05
        # on all 7 (P(X > Y) 0.44 [0.25, 0.65]), and keeps no reference network.
        "grpo": {"kl_coef": 0.0},
        "rloo": {"kl_coef": 0.0},
        # DAPO's overlong shaping (eq. 13) penalises a *response* near its length limit; a control
        # episode near its time limit (a Hopper that keeps hopping) is not a defect. Off, as on Atari.
        "dapo": {"overlong_coef": 0.0},
    }
    # PPO paper Table 1: the eleven settings compared on the seven environments.
    grids = {
        "table1": [
            ("ppo_kl", {"kl_coef": 0.0, "adaptive": False}),          # no clipping or penalty
            ("ppo_clip", {"clip_eps": 0.1}), ("ppo_clip", {"clip_eps": 0.2}), ("ppo_clip", {"clip_eps": 0.3}),
            ("ppo_kl", {"kl_target": 0.003}), ("ppo_kl", {"kl_target": 0.01}), ("ppo_kl", {"kl_target": 0.03}),
            ("ppo_kl", {"adaptive": False, "kl_coef": 0.3}), ("ppo_kl", {"adaptive": False, "kl_coef": 1.0}),
            ("ppo_kl", {"adaptive": False, "kl_coef": 3.0}), ("ppo_kl", {"adaptive": False, "kl_coef": 10.0}),
        ],
    }

    def validate_env(self, env_id: str) -> None:
        if env_id not in gym.registry:
            raise ConfigError(f"unknown environment {env_id!r}; the suite's environments: "
                              f"{', '.join(PAPER_ENVS)} (or any registered gymnasium id with a Box "
                              f"observation space and a Box or Discrete action space)")
        spec = gym.spec(env_id)
        env = gym.make(spec)
        try:
            if not isinstance(env.observation_space, gym.spaces.Box) or not isinstance(
                    env.action_space, (gym.spaces.Box, gym.spaces.Discrete)):
                raise ConfigError(f"environment {env_id!r} has observation space {env.observation_space} and "
                                  f"action space {env.action_space}; the mujoco suite needs a Box observation "
                                  f"space and a Box or Discrete action space")
        finally:
            env.close()

    def make_env(self, env_id: str, cfg: MujocoConfig, train: bool = True) -> gym.Env:
        # The passive env checker re-validates every step (~5 us); the spaces were checked in validate_env.
        return gym.make(env_id, disable_env_checker=True)

    def evaluation_returns(self, agent, env, episodes: int, seed: int) -> list[float]:
        """The paper's seven: the episodes stepped side by side as the rows of one ``MujocoVecEnv``
        (``core.rollout.evaluate_rows``: the returns of ``evaluate``, one episode after another on
        ``env``, bit for bit; tests/test_mujoco_vec.py), 2.2x faster on HalfCheetah
        (``bench/eval_side_by_side.py``). Any other
        environment or agent: one episode after another."""
        from core.rollout import evaluate_rows
        from suites.mujoco_vec import SUPPORTED_ENVS
        env_id = env.spec.id if env.spec is not None else None
        if env_id not in SUPPORTED_ENVS or not isinstance(agent, MLPAgent):
            return super().evaluation_returns(agent, env, episodes, seed)
        return evaluate_rows(agent, _evaluation_env(env_id, episodes), episodes, seed)

    def make_vec_env(self, env_id: str, cfg: MujocoConfig, num_envs: int):
        """The paper's seven environments step natively (``suites/mujoco_vec.py``: bit-identical
        to gymnasium's -v5 on the same seeds and actions, without gymnasium's per-step Python
        work); any other gymnasium id as a list of gymnasium environments. Not an option: the
        two give the same numbers, so a run's results do not depend on which stepped it."""
        from suites.mujoco_vec import make_mujoco_vec_env
        return make_mujoco_vec_env(env_id, num_envs) or super().make_vec_env(env_id, cfg, num_envs)

    def make_group_env(self, env_id: str, cfg: MujocoConfig, group_size: int):
        """The group's G environments of the paper's seven as one ``MujocoVecEnv`` (one call per step,
        only the episodes still running stepped; the same numbers as gymnasium's, as above)."""
        from suites.mujoco_vec import make_mujoco_vec_env
        return make_mujoco_vec_env(env_id, group_size) or super().make_group_env(env_id, cfg, group_size)

    def make_agent(self, env: gym.Env, cfg: MujocoConfig) -> MLPAgent:
        return MLPAgent(env.observation_space, env.action_space, cfg)

    def stackable(self, env_id: str, cfg: MujocoConfig) -> bool:
        # the paper's seven: continuous actions, and stepped together by suites/mujoco_vec.py
        from suites.mujoco_vec import SUPPORTED_ENVS
        return env_id in SUPPORTED_ENVS

    def stack_agents(self, agents: list[MLPAgent]) -> StackedMLPAgent:
        return StackedMLPAgent(agents)

    def make_collectors(self, env_id: str, cfg: MujocoConfig, needs, algo_cfgs: list, seeds: list[int]) -> list:
        """The runs of a stack step their environments as rows of one ``MujocoVecEnv`` (one
        ``mujoco.batch`` call per step for all of them); each run's rows reset and checkpoint as
        the run's own vectorised environment would (``core.envs.EnvRows``)."""
        from core.envs import split_rows
        from core.rollout import HorizonCollector, RewardScaler
        from suites.mujoco_vec import make_mujoco_vec_env
        counts = [a.num_envs for a in algo_cfgs] if needs.rollout == "horizon" else None
        shared = make_mujoco_vec_env(env_id, sum(counts)) if counts is not None else None
        if shared is None:   # group rollouts: each run's own group environment
            return super().make_collectors(env_id, cfg, needs, algo_cfgs, seeds)
        out = []
        for rows, a, seed in zip(split_rows(shared, counts), algo_cfgs, seeds):
            scaler = RewardScaler(rows.num_envs, a.gamma, cfg.reward_clip) if cfg.reward_scale else None
            out.append((HorizonCollector(rows, a.num_steps, a.gamma, seed, needs.critic, scaler),
                        a.num_envs * a.num_steps))
        return out
