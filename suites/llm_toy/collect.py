"""Rollouts of the LLM toy suite: completions generated with the KV cache, packed into the
harness's ``Batch`` (a column per completion, a step per response token).

- ``groups`` (grpo, rloo, dapo): G completions of each prompt (a prompt is the group's
  shared initial state); ``scores`` = the task reward or the reward-model score.
- ``horizon`` (ppo_clip, ppo_kl, trpo, reinforce): one completion per prompt, with
  per-token rewards as in "The N+ Implementation Details of RLHF with PPO" (Huang et al.
  2024): the score on the last token minus ``kl_coef * (log pi - log pi_ref)`` on every
  token, ``done`` on the last token, ``last_value = 0``.

``critic`` (the algorithm's ``Needs.critic``): the value model's ``V(s_t)`` of every response
token is recorded as ``values``; without a critic (REINFORCE with baseline none / mean, the
group algorithms) no value pass runs and ``values`` is None. The reference log-probabilities
of a horizon batch are the suite's reward shaping (``suite.kl_coef``), computed for every
horizon algorithm.

``global_step`` counts completions generated (what ``steps=`` budgets).
"""
from __future__ import annotations

import time

import numpy as np
import torch
from torch import Tensor

from core.batch import Batch
from core.rollout import Episode


def per_token_rewards(scores: Tensor, logp: Tensor, logp_ref: Tensor, mask: Tensor, kl_coef: float) -> Tensor:
    """``r_t = -kl_coef * (logp_t - logp_ref_t)`` on every response token, plus the score on
    the last one (N+ details, Ziegler et al. 2019). ``scores [N]``; the rest ``[R, N]``."""
    rewards = -kl_coef * (logp - logp_ref) * mask
    last = mask.sum(0).long() - 1
    columns = torch.arange(mask.shape[1], device=mask.device)
    rewards[last, columns] += scores.to(rewards.dtype)
    return rewards


def apply_missing_eos(scores: Tensor, has_eos: Tensor, missing_eos_score: float | None) -> Tensor:
    """A response cut at the length limit without EOS scores ``missing_eos_score`` (N+: -1), for
    every algorithm (the group algorithms' scores too)."""
    if missing_eos_score is None:
        return scores
    return torch.where(has_eos, scores, torch.full_like(scores, missing_eos_score))


class AdaptiveKLController:
    """Ziegler et al. 2019, §2.2 (lm-human-preferences; TRL's AdaptiveKLController):

        e = clip(KL / KL_target - 1, -0.2, 0.2);   beta <- beta * (1 + e * n / horizon)

    with KL the batch's mean summed KL to the reference and ``n`` the batch's completions."""

    def __init__(self, init: float, target: float, horizon: int):
        self.value, self.target, self.horizon = init, target, horizon

    def update(self, kl: float, n: int) -> None:
        error = float(np.clip(kl / self.target - 1, -0.2, 0.2))
        self.value *= 1 + error * n / self.horizon


class LLMCollector:
    def __init__(self, env, mode: str, num_prompts: int, group_size: int, seed: int, *, critic: bool):
        self.env, self.mode, self.num_prompts, self.group_size = env, mode, num_prompts, group_size
        self.critic = critic   # record V(s_t): only for an algorithm that trains a critic
        cfg = env.cfg
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.generator: torch.Generator | None = None
        self._generator_state = None
        self.global_step = 0
        self.next_group = 0
        self.length_limit = env.max_new_tokens
        self.kl = AdaptiveKLController(cfg.kl_coef, cfg.kl_target, cfg.kl_horizon) if cfg.kl_adaptive else None
        self.kl_coef = cfg.kl_coef
        self.last_metrics: dict[str, float] = {}

    def _generator_for(self, device: torch.device) -> torch.Generator:
        if self.generator is None or self.generator.device != device:
            self.generator = torch.Generator(device).manual_seed(self.seed)
            if self._generator_state is not None:
                self.generator.set_state(self._generator_state)
                self._generator_state = None
        return self.generator

    def metrics(self) -> dict[str, float]:
        """Per-batch numbers for ``metrics.csv`` (generation tokens/s, KL to the reference, beta)."""
        return dict(self.last_metrics)

    @torch.no_grad()
    def collect(self, agent) -> tuple[Batch, list[Episode]]:
        env, cfg = self.env, self.env.cfg
        device = agent.device
        if self.mode == "groups":
            distinct = env.task.prompts(self.rng, self.num_prompts, "train")
            prompts = [p for p in distinct for _ in range(self.group_size)]
            groups = torch.arange(self.next_group, self.next_group + len(distinct)).repeat_interleave(self.group_size)
            self.next_group += len(distinct)
        else:
            prompts = env.task.prompts(self.rng, self.num_prompts, "train")
            groups = None
        start = time.perf_counter()
        rollout = env.rollout(agent, prompts, self._generator_for(device))
        gen_seconds = time.perf_counter() - start
        R, N = rollout.mask.shape
        mask, lengths = rollout.mask, rollout.lengths
        columns = torch.arange(N, device=device)
        dones = torch.zeros(R, N, device=device)
        dones[lengths - 1, columns] = 1.0
        scores = rollout.scores
        self.global_step += N
        metrics = {"gen_tokens_per_s": float(mask.sum()) / max(gen_seconds, 1e-9),
                   "score_mean": float(scores.mean()), "response_length": float(lengths.float().mean()),
                   }
        if rollout.logp_old is not rollout.logp_gen:   # KV-cache generation against the batched training pass
            metrics["gen_logp_error"] = float(((rollout.logp_gen - rollout.logp_old) * mask).abs().max())
        if self.mode == "horizon":
            logp_ref = env.chunked(lambda o, a: env.reference(device).dist(o).log_prob(a), rollout.obs, rollout.actions)
            kl_seq = ((rollout.logp_old - logp_ref) * mask).sum(0)
            rewards = per_token_rewards(scores, rollout.logp_old, logp_ref, mask, self.kl_coef)
            metrics.update(kl_ref=float(kl_seq.mean()), kl_coef=self.kl_coef,
                           reward_with_kl=float(rewards.sum(0).mean()))
            if self.kl is not None:
                self.kl.update(float(kl_seq.mean()), N)
                self.kl_coef = self.kl.value
        else:
            rewards = torch.zeros(R, N, device=device)
            rewards[lengths - 1, columns] = scores
        values = (env.chunked(lambda o, a: agent.value(o), rollout.obs, rollout.actions) * mask
                  if self.critic else None)
        batch = Batch(obs=rollout.obs, actions=rollout.actions, rewards=rewards, dones=dones, mask=mask,
                      logp_old=rollout.logp_old, values=values, last_value=torch.zeros(N, device=device),
                      groups=groups.to(device) if groups is not None else None, scores=scores, lengths=lengths,
                      truncated=(~rollout.has_eos).float(), length_limit=self.length_limit,
                      splittable_steps=False)
        first = self.global_step - N
        episodes = [Episode(first + i + 1, s, n) for i, (s, n) in enumerate(zip(scores.tolist(), lengths.tolist()))]
        self.last_metrics = metrics
        return batch, episodes

    def state_dict(self):
        generator = self.generator.get_state() if self.generator is not None else self._generator_state
        return {"rng": self.rng.bit_generator.state, "generator": generator, "global_step": self.global_step,
                "next_group": self.next_group, "kl_coef": self.kl_coef}

    def load_state_dict(self, state):
        self.rng.bit_generator.state = state["rng"]
        self.global_step, self.next_group, self.kl_coef = state["global_step"], state["next_group"], state["kl_coef"]
        if self.kl is not None:
            self.kl.value = self.kl_coef
        self.generator, self._generator_state = None, state["generator"]
