"""LLM toy suite: all seven algorithms on a tiny causal LM, with verifiable rewards
(``task=sort``, ``task=add``) and RLHF against a learned reward model (``task=keywords``).

The pieces (see each module):

- ``tasks``: the tokenizer, seeded prompt generators with a held-out split, rewards;
- ``models``: Hugging Face causal LMs from a small config or a local checkpoint, the agent
  (``dist``/``value`` over token rows), KV-cache generation, reward model;
- ``warmstart``: SFT on demonstrations (the reference policy) and Bradley-Terry reward
  modelling, cached on disk by config hash;
- ``collect``: group rollouts (G completions per prompt) and PPO's per-token rewards.

Heavy imports (``transformers``) happen when a task is built, not when the suite registry
is read.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from core.errors import ConfigError
from suites.base import Scale, Suite
from suites.llm_toy.tasks import MAX_DIGITS, PREFERENCE, TASKS, VERIFIABLE, ExactDigitsTask

ATTN_IMPLEMENTATIONS = ("eager", "sdpa")
WARMSTART_DEVICES = ("auto", "cpu", "cuda")
MAX_POSITIONS = 256


@dataclass
class LLMToyConfig:
    """Model, reward and warm-start options shared by every algorithm on this suite (``suite.<key>=``;
    ``model=`` is short for ``suite.model=``)."""
    model: str = "tiny"                  # tiny (CPU) | small (GPU) | /path/to/a/local/HF/causal-LM/checkpoint
    max_new_tokens: int | None = None    # response length limit in tokens, EOS included; default the task's
    kl_coef: float = 0.05                # beta of the per-token KL penalty in PPO's reward (N+ details: 0.05)
    kl_adaptive: bool = False            # Ziegler et al. 2019's adaptive KL controller for kl_coef
    kl_target: float = 6.0               # its target KL per completion (lm-human-preferences: 6 nats)
    kl_horizon: int = 10_000             # its horizon (lm-human-preferences: 10000)
    missing_eos_score: float | None = -1.0  # score of a response without EOS by the limit (N+: -1); none: task score
    sft_steps: int | None = None         # warm-start SFT steps; default the task's (short: the start is below the ceiling)
    sft_batch_size: int = 64
    sft_lr: float = 1e-3
    sft_noise: float | None = None       # fraction of noisy demonstrations (sort, add: one digit wrong); default the task's (0.5, 0.1)
    digits: tuple[int, ...] | None = None  # MIN,MAX digits of each number in a prompt (sort 3,6; add 1,3); default the task's
    sft_seed: int = 0                    # seed of the model initialisation and the warm start (shared by all runs)
    rm_pairs: int = 4096                 # preference pairs of SFT samples for the reward model
    rm_steps: int = 400
    rm_batch_size: int = 64
    rm_lr: float = 1e-3
    pref_temperature: float = 0.1        # label noise: P(a preferred to b) = sigmoid((gold_a - gold_b) / T)
    attn_implementation: str = "eager"   # eager: twice differentiable (TRPO's Fisher-vector products); or sdpa
    bf16: bool = True                    # bf16 autocast on CUDA (never on the CPU)
    forward_batch_size: int = 512        # completions per no-grad forward pass (collection, evaluation)
    logp_from_generation: bool = True    # logp_old as sampled (fp32: equal to the training pass to ~1e-6, one
                                         # forward pass saved); under bf16 autocast it is always recomputed
    warmstart_device: str = "auto"       # where SFT and the reward model train (once, cached): auto | cpu | cuda

    def __post_init__(self):
        if self.model not in ("tiny", "small") and not Path(self.model).is_dir():
            raise ConfigError(f"model={self.model!r} is not valid; valid: tiny, small, or a local checkpoint folder")
        if self.attn_implementation not in ATTN_IMPLEMENTATIONS:
            raise ConfigError(f"attn_implementation={self.attn_implementation!r} is not valid; "
                              f"valid: {', '.join(ATTN_IMPLEMENTATIONS)}")
        if self.warmstart_device not in WARMSTART_DEVICES and not _is_cuda_device(self.warmstart_device):
            # the form only: whether CUDA is present is known where the run runs (a Ray worker may have it)
            raise ConfigError(f"suite.warmstart_device={self.warmstart_device!r} is not valid; valid: "
                              f"{', '.join(WARMSTART_DEVICES)}, cuda:<k>")
        for key in ("kl_target", "kl_horizon", "sft_batch_size", "sft_lr", "rm_pairs", "rm_batch_size", "rm_lr",
                    "pref_temperature", "forward_batch_size", "max_new_tokens"):
            value = getattr(self, key)
            if value is not None and not value > 0:   # also rejects NaN
                raise ConfigError(f"suite.{key}={value} must be positive")
        for key in ("kl_coef", "sft_steps", "rm_steps", "sft_seed"):
            value = getattr(self, key)
            if value is not None and not value >= 0:
                raise ConfigError(f"suite.{key}={value} must be >= 0")
        if self.sft_noise is not None and not 0.0 <= self.sft_noise <= 1.0:
            raise ConfigError(f"suite.sft_noise={self.sft_noise} must lie in [0, 1] (a fraction of demonstrations)")
        if self.digits is not None and not (len(self.digits) == 2 and 1 <= self.digits[0] <= self.digits[1] <= MAX_DIGITS):
            raise ConfigError(f"suite.digits={','.join(map(str, self.digits))} is not valid; valid: MIN,MAX with "
                              f"1 <= MIN <= MAX <= {MAX_DIGITS} (digits of each number of task=sort or task=add)")
        if self.missing_eos_score is not None and not math.isfinite(self.missing_eos_score):
            raise ConfigError(f"suite.missing_eos_score={self.missing_eos_score} must be a finite number (or none)")


def _is_cuda_device(name: str) -> bool:
    prefix, _, index = name.partition(":")
    return prefix == "cuda" and index.isdigit()


class Rollout(NamedTuple):
    obs: Tensor          # [R, N, L] token rows (expanded view)
    actions: Tensor      # [R, N]
    mask: Tensor         # [R, N]
    lengths: Tensor      # [N] response tokens, EOS included
    has_eos: Tensor      # [N] bool
    scores: Tensor       # [N] training score: task reward or reward model, missing-EOS rule applied
    gold: Tensor         # [N] hidden gold score (verifiable: the reward)
    logp_old: Tensor     # [R, N] from the batched forward pass (the training code path)
    logp_gen: Tensor     # [R, N] as generation saw them (KV cache)


class TaskEnv:
    """Everything about one task that runs share: tokenizer, prompts, the warm-started
    SFT policy (reference), the reward model; the ``env`` of the harness's contract."""

    def __init__(self, task_name: str, cfg: LLMToyConfig):
        from suites.llm_toy.tasks import load_tokenizer
        from suites.llm_toy.warmstart import cached, resolve_device, train_reward_model, train_sft
        self.cfg = cfg
        self.task = make_task(task_name, cfg)
        self.tokenizer = load_tokenizer(cfg.model, self.task.alphabet)
        self.max_new_tokens = cfg.max_new_tokens or self.task.max_new_tokens
        self.prompt_len = 1 + self.tokenizer.max_tokens(self.task.max_prompt_chars)
        # Room for any response length limit, so one warm start serves them all (RoPE has no
        # parameters that depend on it).
        self.max_positions = max(MAX_POSITIONS, self.prompt_len + self.max_new_tokens)
        self.sft_steps = cfg.sft_steps if cfg.sft_steps is not None else self.task.sft_steps
        device = resolve_device(cfg.warmstart_device)
        spec = {"task": self.task.describe(), "tokenizer": self.tokenizer.describe(), "model": _model_id(cfg.model),
                "max_positions": self.max_positions, "attn": cfg.attn_implementation,
                "sft_steps": self.sft_steps, "device": str(device),
                **{k: getattr(cfg, k) for k in ("sft_batch_size", "sft_lr", "sft_seed")}}
        self.sft = cached("sft", spec, lambda: train_sft(self, device))
        self.rm_payload = None
        if not self.task.verifiable:
            rm_spec = {**spec, "max_new_tokens": self.max_new_tokens, "bf16": cfg.bf16,
                       **{k: getattr(cfg, k) for k in ("rm_pairs", "rm_steps", "rm_batch_size", "rm_lr",
                                                       "pref_temperature")}}
            self.rm_payload = cached("rm", rm_spec, lambda: train_reward_model(self, self.sft["policy"], device))
        self._reference = None
        self._reward_model = None

    # -- models ----------------------------------------------------------------------

    def _policy(self):
        from suites.llm_toy.models import build_policy
        policy = build_policy(self.cfg.model, self.tokenizer, self.max_positions, self.cfg.attn_implementation,
                              self.cfg.sft_seed)
        policy.load_state_dict(self.sft["policy"])
        return policy

    def _scalar(self):
        from suites.llm_toy.models import build_scalar_model
        return build_scalar_model(self.cfg.model, self.tokenizer, self.max_positions, self.cfg.attn_implementation,
                                  self.cfg.sft_seed + 1)

    def new_agent(self):
        """The SFT policy and a value model: from the reward model (InstructGPT) on a preference
        task, from the SFT transformer with a zero head on a verifiable one."""
        from suites.llm_toy.models import LMAgent, copy_backbone
        policy = self._policy()
        value = self._scalar()
        if self.rm_payload is not None:
            value.load_state_dict({k[len("model."):]: v for k, v in self.rm_payload["reward_model"].items()
                                   if k.startswith("model.")})
        else:
            copy_backbone(policy, value)
        tok = self.tokenizer
        return LMAgent(policy, value, self.prompt_len, tok.pad_id, tok.eos_id, self.cfg.bf16)

    def reference(self, device: torch.device):
        """The frozen SFT policy (pi_ref), on ``device``."""
        if self._reference is None:
            from suites.llm_toy.models import LMAgent
            tok = self.tokenizer
            self._reference = LMAgent(self._policy(), None, self.prompt_len, tok.pad_id, tok.eos_id,
                                      self.cfg.bf16).requires_grad_(False)
        if self._reference.device != device:
            self._reference.to(device)
        return self._reference

    def reward_model(self, device: torch.device):
        if self._reward_model is None:
            from suites.llm_toy.models import RewardModel
            tok = self.tokenizer
            rm = RewardModel(self._scalar(), self.prompt_len, tok.pad_id, tok.eos_id, self.cfg.bf16)
            rm.load_state_dict(self.rm_payload["reward_model"])
            self._reward_model = rm.requires_grad_(False).eval()
        if self._reward_model.shift.device != device:
            self._reward_model.to(device)
        return self._reward_model

    # -- rollouts ----------------------------------------------------------------------

    def chunked(self, fn, obs: Tensor, actions: Tensor) -> Tensor:
        """``fn(obs, actions) -> [R, n]`` over column chunks of ``forward_batch_size`` (memory)."""
        size = self.cfg.forward_batch_size
        N = obs.shape[1]
        if N <= size:
            return fn(obs, actions)
        return torch.cat([fn(obs[:, i:i + size], actions[:, i:i + size]) for i in range(0, N, size)], dim=1)

    @torch.no_grad()
    def rollout(self, agent, prompts: list[str], generator: torch.Generator | None, greedy: bool = False) -> Rollout:
        """Generate one completion per prompt and score it."""
        from suites.llm_toy.warmstart import decode_responses, encode_prompts
        device = agent.device
        tok = self.tokenizer
        ids = encode_prompts(tok, prompts, self.prompt_len).to(device)
        parts = [agent.generate(ids[i:i + self.cfg.forward_batch_size], self.max_new_tokens, generator, greedy)
                 for i in range(0, len(prompts), self.cfg.forward_batch_size)]
        responses, lengths, logp_gen = (torch.cat(x) for x in zip(*parts))
        R = int(lengths.max())
        seq = torch.cat([ids, responses], dim=1)                       # [N, P + limit]
        obs = seq.unsqueeze(0).expand(R, *seq.shape)                    # [R, N, P + limit], no copy
        actions = responses[:, :R].T.contiguous()
        mask = (torch.arange(R, device=device).unsqueeze(1) < lengths.unsqueeze(0)).float()
        logp_gen = logp_gen[:, :R].T.contiguous()
        if self.cfg.logp_from_generation and not _autocasting(agent):
            logp_old = logp_gen
        else:   # the training code path, batched: the first minibatch's ratio is then 1 under autocast too
            logp_old = self.chunked(lambda o, a: agent.dist(o).log_prob(a), obs, actions)
        texts, has_eos = decode_responses(tok, responses.cpu(), lengths.cpu())
        gold = torch.tensor([self.task.gold(p, t, e) for p, t, e in zip(prompts, texts, has_eos)], device=device)
        has_eos_t = torch.tensor(has_eos, device=device)
        if self.task.verifiable:
            raw = gold
        else:
            rm = self.reward_model(device)
            raw = torch.cat([rm(seq[i:i + self.cfg.forward_batch_size, : self.prompt_len + R])
                             for i in range(0, len(prompts), self.cfg.forward_batch_size)])
        from suites.llm_toy.collect import apply_missing_eos
        scores = apply_missing_eos(raw.float(), has_eos_t, self.cfg.missing_eos_score)
        return Rollout(obs, actions, mask, lengths, has_eos_t, scores, gold.float(), logp_old, logp_gen)


def make_task(task_name: str, cfg: LLMToyConfig):
    """The task with the suite's task options laid over its own defaults (``digits`` only where
    the task has numbers of a chosen length)."""
    options = {}
    if cfg.sft_noise is not None:
        options["sft_noise"] = cfg.sft_noise
    if cfg.digits is not None and issubclass(TASKS[task_name], ExactDigitsTask):
        options["min_digits"], options["max_digits"] = cfg.digits
    return TASKS[task_name](**options)


def _autocasting(agent) -> bool:
    return agent.bf16 and agent.device.type == "cuda"


def _model_id(model: str):
    """What identifies a model for the cache: a preset's name, or a checkpoint's path and files' times."""
    if model in ("tiny", "small"):
        from suites.llm_toy.models import MODEL_PRESETS
        return {"preset": model, **MODEL_PRESETS[model]}
    folder = Path(model).resolve()
    return {"path": str(folder), "mtimes": sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir())}


class LLMToySuite(Suite):
    name = "llm_toy"
    Config = LLMToyConfig
    default_envs = VERIFIABLE + PREFERENCE
    scales = {
        # every algorithm on task=sort, one update each: CI (task=add names itself: it trains a second warm start)
        "smoke": Scale(envs=("sort",), steps=128, seeds=1, eval_every=128, eval_episodes=32),
        # each run a few minutes on one CPU core
        "quick": Scale(envs=VERIFIABLE + PREFERENCE, steps=40_960, seeds=3, eval_every=4096, eval_episodes=256),
        # the suite's full protocol
        "full": Scale(envs=VERIFIABLE + PREFERENCE, steps=163_840, seeds=3, eval_every=8192, eval_episodes=512),
    }
    scales["paper"] = scales["full"]   # the harness's default scale name
    sequence_columns = True            # a group batch's column is one completion (GSPO's sequence ratio runs here)

    # One batch is 128 completions for every algorithm (the TRL reference: 16 prompts x 8).
    # Learning rates from short checks on task=sort: 1e-3 collapsed every algorithm within two
    # updates; the PPO family (4 epochs) learns at 1e-4, the one-step-per-batch algorithms at 3e-4.
    # Minibatch sizes count response tokens (a minibatch keeps whole completions). Each entry's
    # comment is its source (``./run_all.sh help algo=X suite=llm_toy``); an entry applies to the
    # algorithm's subclasses too (ppo_kl runs ppo_clip's, see ``Suite.defaults_for``).
    _horizon = {
        "num_envs": 128,           # prompts per batch, one completion each: 128 completions, as the groups below
        "num_steps": 16,           # unused: a completion's length limit is suite.max_new_tokens
        "gamma": 1.0,              # N+ details (Huang et al. 2024): gamma 1
    }
    algo_defaults = {
        # PPO as "The N+ Implementation Details of RLHF with PPO" (Huang et al. 2024; its ppo.py)
        "ppo_clip": {**_horizon,
                     "lam": 0.95,                # N+: lambda 0.95
                     "clip_eps": 0.2,            # N+: cliprange 0.2 (value clipping uses it too: cliprange_value 0.2)
                     "clip_anneal": False,       # N+ ppo.py: both clip ranges stay 0.2 for the whole run
                     "lr_anneal": True,          # N+ ppo.py: the learning rate decays linearly to 0 (lrnow = frac * lr)
                     "num_epochs": 4,            # N+: noptepochs 4
                     "minibatch_size": 256,      # response tokens per minibatch (whole completions)
                     "adv_norm": "batch",        # N+: advantages whitened over the batch
                     "value_clip": True,         # N+: value clipping (cliprange_value 0.2)
                     # N+: vf_loss = 0.5 * mean(max(clipped, unclipped)^2) with vf_coef 0.1; our value_loss is
                     # the plain mean squared error, so 0.5 x 0.1 (as MuJoCo's preset=cleanrl: 0.5 x 0.5 = 0.25)
                     "vf_coef": 0.05,
                     "lr": 1e-4,                 # short checks on task=sort: 1e-4 learns in 4 epochs, 1e-3 collapsed (N+'s 3e-6: 1B+ models)
                     "max_grad_norm": 1.0},      # TRL (transformers TrainingArguments): max_grad_norm 1.0
        # TRPO: Fisher-vector products (double backward through the transformer) on a quarter of the batch
        "trpo": {**_horizon,
                 "lam": 0.95,                    # as PPO (N+)
                 "max_kl": 0.01,                 # trpo_mpi: max_kl 0.01
                 "vf_lr": 3e-4,                  # short checks on task=sort: the one-step-per-batch step size
                 "vf_epochs": 4,                 # the critic fitted as PPO's: 4 epochs
                 "vf_minibatch_size": 256,       # the critic fitted as PPO's: minibatches of 256 tokens
                 "fvp_fraction": 0.25},          # a quarter of the batch (double backward through the transformer)
        "reinforce": {**_horizon,
                      "baseline": "value",       # the value baseline, fitted as PPO's critic
                      "lr": 3e-4,                # short checks on task=sort: 3e-4 learns in one step per batch, 1e-3 collapsed
                      "vf_lr": 3e-4,             # as lr
                      "vf_epochs": 4,            # the critic fitted as PPO's: 4 epochs
                      "vf_minibatch_size": 256,  # the critic fitted as PPO's: minibatches of 256 tokens
                      "max_grad_norm": 1.0},     # TRL (transformers TrainingArguments): max_grad_norm 1.0
        # Value-free: G completions per prompt.
        "grpo": {"group_size": 8,                # G = 8: 16 prompts x 8 (the TRL reference)
                 "num_groups": 16,               # 16 prompts per batch
                 "gamma": 1.0,                   # a completion's score is undiscounted
                 "num_epochs": 1,                # one update per batch: DeepSeekMath (mu = 1), TRL GRPOTrainer (num_iterations=1)
                 "num_minibatches": 1,           # one update per batch: DeepSeekMath (mu = 1), TRL GRPOTrainer (num_iterations=1)
                 "lr": 3e-4,                     # short checks on task=sort: 3e-4 learns in one step per batch, 1e-3 collapsed
                 "max_grad_norm": 1.0},          # TRL (transformers TrainingArguments): max_grad_norm 1.0
        "rloo": {"group_size": 4,                # k = 4 (Ahmadian et al. 2024; TRL rloo_k 4)
                 "num_groups": 32,               # 32 prompts x 4: 128 completions per batch
                 "gamma": 1.0,                   # a completion's score is undiscounted
                 "lr": 3e-4,                     # short checks on task=sort: 3e-4 learns in one step per batch, 1e-3 collapsed
                 "max_grad_norm": 1.0},          # TRL (transformers TrainingArguments): max_grad_norm 1.0
        # DAPO is a GRPO subclass: it runs grpo's entry, changed here. DAPO (Yu et al. 2025) takes
        # 16 minibatch updates per rollout step (prompt batch 512 x 16 responses, mini-batch 512), so
        # the ratio leaves 1 and clip-higher acts; 4 minibatches of 32 shuffled completions keep
        # the run cheap on 16 prompts per batch.
        "dapo": {"num_epochs": 1,                # DAPO: every completion used once per rollout step
                 "num_minibatches": 4,           # DAPO: several updates per rollout step (16 there; 4 here, 32 completions each)
                 "lr": 3e-4},                    # grpo's one-step-per-batch step size, not re-tuned for 4 updates per batch
        # GRPO variants (algos/): each runs grpo's entry, changed here. A variant whose change acts only
        # off-policy (a ratio or IS weight other than 1) takes several updates per batch, as dapo.
        "gspo": {"num_minibatches": 4},          # GSPO §5.1: each rollout batch partitioned into four minibatches
        "cispo": {"num_minibatches": 4},         # as dapo: 4 updates per batch, so the IS weight leaves 1 and its clip acts
        # REINFORCE++ (and its baseline form) takes several PPO-clip updates per rollout batch
        "reinforce_pp": {"num_minibatches": 4},  # OpenRLHF's reinforce script: rollout batch 1024 / train batch 128 = 8 updates; 4 here, as dapo
    }

    def __init__(self):
        self._envs: dict = {}

    def validate_env(self, env_id: str) -> None:
        if env_id not in TASKS:
            raise ConfigError(f"unknown task {env_id!r}; the llm_toy tasks: {', '.join(TASKS)} "
                              f"(verifiable: {', '.join(VERIFIABLE)}; preference: {', '.join(PREFERENCE)})")
        try:
            import transformers  # noqa: F401
        except ImportError:
            raise ConfigError("suite llm_toy needs Hugging Face transformers: pip install -e '.[llm]'") from None

    def _task_env(self, env_id: str, cfg: LLMToyConfig) -> TaskEnv:
        key = (env_id, tuple(sorted(dataclasses.asdict(cfg).items())))
        if key not in self._envs:
            self.validate_env(env_id)
            self._envs[key] = TaskEnv(env_id, cfg)
        return self._envs[key]

    def make_env(self, env_id: str, cfg: LLMToyConfig, train: bool = True) -> TaskEnv:
        return self._task_env(env_id, cfg)

    def make_agent(self, env: TaskEnv, cfg: LLMToyConfig):
        return env.new_agent()

    def make_collector(self, env_id, cfg, needs, algo_cfg, seed):
        from suites.llm_toy.collect import LLMCollector
        env = self._task_env(env_id, cfg)
        if needs.rollout == "groups":
            collector = LLMCollector(env, "groups", algo_cfg.num_groups, algo_cfg.group_size, seed,
                                     critic=needs.critic)
            return collector, algo_cfg.num_groups * algo_cfg.group_size
        collector = LLMCollector(env, "horizon", algo_cfg.num_envs, 1, seed, critic=needs.critic)
        return collector, algo_cfg.num_envs

    def evaluate(self, agent, env: TaskEnv, episodes: int, seed: int) -> dict[str, float]:
        return evaluate(agent, env, episodes, seed)

    def env_summaries(self) -> dict[str, str]:
        return {name: cls.summary for name, cls in TASKS.items()}


@torch.no_grad()
def evaluate(agent, env: TaskEnv, episodes: int, seed: int) -> dict[str, float]:
    """Held-out prompts (the same for every run): sampled (temperature 1) and greedy
    completions. ``eval_return_mean`` is the headline: the gold score of sampled completions
    (on a verifiable task, the success rate). A task with a generalisation set (``add``: longer
    numbers than any training prompt) also reports its sampled gold score, ``eval_long_return``,
    beside the headline, never in it."""
    from torch.distributions import kl_divergence
    device = agent.device
    prompts = env.task.eval_prompts(episodes)
    generator = torch.Generator(device).manual_seed(seed)
    start = time.perf_counter()
    sampled = env.rollout(agent, prompts, generator)
    gen_seconds = time.perf_counter() - start
    greedy = env.rollout(agent, prompts, None, greedy=True)
    reference = env.reference(device)

    def kl_and_entropy(o, a):
        dist = agent.dist(o)
        return torch.stack([kl_divergence(dist, reference.dist(o)), dist.entropy()], -1)

    both = env.chunked(lambda o, a: kl_and_entropy(o, a), sampled.obs, sampled.actions)   # [R, N, 2]
    kl_seq = both[..., 0].sum(0)                          # sum_t KL(pi(.|s_t) || pi_ref(.|s_t)), exact per state
    tokens = sampled.mask.sum()
    gold = sampled.gold.cpu().numpy()
    long_prompts = env.task.long_prompts(episodes)
    extra = {} if long_prompts is None else {
        "eval_long_return": float(env.rollout(agent, long_prompts, generator).gold.mean())}
    return {
        "eval_return_mean": float(gold.mean()), "eval_return_std": float(gold.std()), "eval_episodes": len(prompts),
        "eval_greedy_return": float(greedy.gold.mean()),
        "eval_proxy_reward": float(sampled.scores.mean()),          # what training optimises
        "eval_kl_ref": float(kl_seq.mean()),
        "eval_response_length": float(sampled.lengths.float().mean()),
        "eval_eos_rate": float(sampled.has_eos.float().mean()),
        "eval_entropy": float(both[..., 1].sum() / tokens),
        "eval_gen_tokens_per_s": float(tokens) / max(gen_seconds, 1e-9),
        **extra,
    }
