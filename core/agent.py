"""What the harness and the algorithms need from a suite's network.

An agent is a ``torch.nn.Module`` with

- ``dist(obs) -> torch.distributions.Distribution`` whose ``log_prob(actions)`` and
  ``entropy()`` have the leading shape of ``obs`` (``[T, N]``: one number per step);
- ``value(obs) -> [T, N]`` when ``has_critic``;
- ``policy_parameters()`` / ``value_parameters()`` (TRPO steps only the former);
- ``act(obs, rng, deterministic) -> np.ndarray``: the collection fast path, no autograd;
- optionally ``act_and_score(obs, rng, with_value) -> (actions, log_prob, value | None)``:
  ``act`` that also returns log pi(a|s) and V(s) (numpy, one per environment) from the same
  forward pass, for agents whose forward pass is costly (the Atari CNN): the fixed-horizon
  collector then skips its batched recomputation of both;
- optionally ``type(agent).stacked_actor(agents)``: for one rollout of K agents of one shape, a
  function ``(obs [K, N, ...], rngs) -> actions [K, N, ...]`` equal to each agent's ``act`` (the
  batched engine's collection, ``core.rollout.collect_together``), or None;
- ``env_action(actions)``: what the environment receives (e.g. clipped to its bounds);
- ``observe(obs)``: update input-normalisation statistics (a no-op if it has none).

Device: an agent lives on one torch device (``.to(device)``); the collectors (``core/rollout.py``)
build every batch on it, found as ``agent.device`` when the agent has that attribute (a
``torch.device``), else the device of its first parameter. The NumPy fast path (``act``) reads the
weights through ``.cpu()``, so it works wherever the agent lives.

Algorithms never look inside; suites never look at which algorithm consumes them.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn


class RunningMeanStd(nn.Module):
    """Running mean and variance over a stream of batches (Chan et al. parallel update).

    Stored as buffers so that it is checkpointed with the agent and used unchanged by
    evaluation (CleanRL's evaluation starts fresh statistics, and scores collapse).

    Two conventions that differ from baselines ppo1's ``RunningMeanStd`` (measured effect not
    known; both are the gymnasium / CleanRL / SB3 ones or follow from the harness): the agent
    updates it with a batch *after* training on that batch (``observe`` after the update), so
    the policy that collected a batch is exactly the pi_old it is trained against, and the first
    update sees the observations only clipped (ppo1 updates before its epochs); and 1/std uses
    ``var + eps`` with eps 1e-8 (ppo1 floors the std at 0.1).
    """

    def __init__(self, shape: tuple[int, ...], clip: float = 5.0, eps: float = 1e-8):
        super().__init__()
        self.clip, self.eps = clip, eps
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        x = x.reshape(-1, *self.mean.shape).to(torch.float64)
        batch_mean, batch_var, n = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        m2 = self.var * self.count + batch_var * n + delta ** 2 * self.count * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, x: Tensor) -> Tensor:
        mean, inv_std = self._scale(x.dtype)
        return torch.clamp((x - mean) * inv_std, -self.clip, self.clip)

    def _scale(self, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        # The statistics change once per batch but are read once per minibatch: cache the
        # converted (mean, 1/std), keyed on the buffers' in-place version counters.
        key = (self.mean._version, self.var._version, dtype, self.mean.device)
        if getattr(self, "_cache_key", None) != key:
            self._cache = (self.mean.to(dtype), torch.rsqrt(self.var + self.eps).to(dtype))
            self._cache_key = key
        return self._cache

    def numpy_params(self) -> tuple[np.ndarray, np.ndarray]:
        """(mean, 1/std) as float32 NumPy arrays, wherever the statistics live (``.cpu()`` is a
        no-op on the CPU)."""
        return (self.mean.float().cpu().numpy().copy(),
                (1.0 / np.sqrt(self.var.cpu().numpy() + self.eps)).astype(np.float32))
