"""The Atari network: the Nature-DQN CNN (Mnih et al. 2015; the default of the PPO paper's released
code, OpenAI baselines' ``cnn``) with a categorical policy head and a value head, orthogonal
initialisation as baselines / CleanRL (``ppo_atari``); ``AtariAgent`` implements the agent
interface of ``core/agent.py`` (parameters by role, the collection fast path ``act_and_score``)
on the device its parameters are on.
"""
from __future__ import annotations

import itertools
from copy import deepcopy
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.checkpoint import checkpoint

if TYPE_CHECKING:
    from suites.atari import AtariConfig


# Optimiser steps so far, in this process. A fused Adam step changes parameters in place without
# bumping their version counters, so the agent's feature cache counts steps here as well.
_optimizer_steps = [0]


def _count_optimizer_step(optimizer, args, kwargs) -> None:
    _optimizer_steps[0] += 1


register_optimizer_step_post_hook(_count_optimizer_step)


def _orthogonal(layer: nn.Module, gain: float) -> nn.Module:
    # baselines ortho_init / CleanRL layer_init: orthogonal weights with the given gain, zero biases
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def nature_cnn(in_channels: int, screen_size: int) -> nn.Sequential:
    """Mnih et al. 2015: conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1, fc 512, ReLU after each."""
    g = float(np.sqrt(2))
    convs = nn.Sequential(_orthogonal(nn.Conv2d(in_channels, 32, 8, 4), g), nn.ReLU(),
                          _orthogonal(nn.Conv2d(32, 64, 4, 2), g), nn.ReLU(),
                          _orthogonal(nn.Conv2d(64, 64, 3, 1), g), nn.ReLU(), nn.Flatten())
    with torch.no_grad():
        flat = convs(torch.zeros(1, in_channels, screen_size, screen_size)).shape[1]   # 3136 at 84x84
    return nn.Sequential(*convs, _orthogonal(nn.Linear(flat, 512), g), nn.ReLU())


def _trunk_on_raw_frames(trunk: nn.Sequential, frames: torch.Tensor) -> torch.Tensor:
    """``trunk(frames / 255)``, the 1/255 applied to the first convolution's weights (8k numbers)
    instead of to the frames (7M numbers per minibatch of 256): the same function, and one
    full pass over the input less, forward and backward."""
    first = trunk[0]
    h = nn.functional.conv2d(frames, first.weight * (1.0 / 255.0), first.bias, first.stride, first.padding)
    for layer in itertools.islice(trunk, 1, None):
        h = layer(h)
    return h


def _frames_tensor(obs: np.ndarray, device: torch.device) -> torch.Tensor:
    """The frames as a tensor on ``device``, in their memory layout: on the CPU sharing their
    memory (a copy, in the same layout, only where numpy marks them read-only or they are not a
    plain array); elsewhere one transfer of the uint8 frames (a quarter of float32's bytes),
    queued without waiting where the device allows it."""
    obs = np.asarray(obs)
    frames = torch.from_numpy(obs if obs.flags.writeable else obs.copy(order="K"))
    return frames.to(device, non_blocking=True)   # the same tensor, no copy, on the CPU


def _sample(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Gumbel-max: an exact sample of the categorical from the collector's generator."""
    return (logits - np.log(-np.log(rng.random(logits.shape)))).argmax(-1)


class AtariAgent(nn.Module):
    """Categorical policy and value on the Nature-DQN CNN; observations ``uint8 [..., 4, 84, 84]``
    are scaled by 1/255 inside the network.

    Parameters by role (``suite.value_network``):

    - ``shared``: one trunk for both heads. ``policy_parameters()`` = trunk + policy head,
      ``value_parameters()`` = trunk + value head: an algorithm that fits the value on its own
      (TRPO, REINFORCE) then also moves the policy's features outside the policy step.
    - ``separate``: the value has its own copy of the CNN (a fresh initialisation).
    - ``auto`` (default): shared, as the paper's PPO (one loss over all parameters, ``parameters()``),
      until an algorithm asks for ``value_parameters()`` to fit the value separately; then the value
      gets its own CNN, as baselines' TRPO (``value_network='copy'``), so TRPO's step stays the only
      change of the policy and its KL bound holds. ``policy_parameters()`` is always trunk + policy head.
    """

    has_critic = True
    # Forward passes over more frames than this go in chunks: without autograd (rollout log-probs,
    # metrics) to bound memory, with autograd (whole-episode columns of group rollouts) recomputed
    # in the backward pass (activation checkpointing): ~250 KB per frame otherwise.
    CHUNK = 1024

    def __init__(self, num_actions: int, cfg: AtariConfig):
        super().__init__()
        self.value_network = cfg.value_network
        self.bf16 = cfg.precision == "bf16"
        self._in_channels, self._screen = cfg.frame_stack, cfg.screen_size
        self.trunk = nature_cnn(cfg.frame_stack, cfg.screen_size)
        self.policy_head = _orthogonal(nn.Linear(512, num_actions), 0.01)   # baselines / CleanRL: gain 0.01
        self.value_head = _orthogonal(nn.Linear(512, 1), 1.0)               # baselines / CleanRL: gain 1
        self.value_trunk: nn.Sequential | None = None
        if cfg.value_network == "separate":
            self.value_trunk = nature_cnn(cfg.frame_stack, cfg.screen_size)
        self._cache = None   # (obs, grad mode, weights' fingerprint, features) of the last dist()

    @property
    def device(self) -> torch.device:
        """Where the network is (``agent.to(device)``): frames go there once per step, in uint8."""
        return self.policy_head.weight.device

    # -- forward ------------------------------------------------------------------------

    def _encode(self, trunk: nn.Sequential, frames: torch.Tensor) -> torch.Tensor:
        # channels-last input: oneDNN's convolutions run ~1.4x faster on one core (forward and
        # backward); the weights keep the default layout (TRPO flattens them with view(-1)).
        # 0..255 is exact in bf16 too, so bf16 frames go straight in. Layout first, in uint8 (a no-op
        # for frames stored channels-last, EnvpoolVecEnv's), then the type: ~2.5x faster than one
        # .to(dtype, memory_format) that transposes and converts at once.
        x = frames.contiguous(memory_format=torch.channels_last).to(torch.bfloat16 if self.bf16 else torch.float32)
        if self.bf16:
            with torch.autocast(x.device.type, dtype=torch.bfloat16):
                return _trunk_on_raw_frames(trunk, x).float()
        return _trunk_on_raw_frames(trunk, x)

    def _features(self, trunk: nn.Sequential, obs: torch.Tensor) -> torch.Tensor:
        lead = obs.shape[:-3]
        # the collector hands over batches on the agent's device already; a no-op then (and on the CPU)
        frames = obs.reshape(-1, *obs.shape[-3:]).to(self.device, non_blocking=True)
        n = frames.shape[0]
        if n <= self.CHUNK:
            h = self._encode(trunk, frames)
        elif not torch.is_grad_enabled():
            h = torch.cat([self._encode(trunk, frames[i:i + self.CHUNK]) for i in range(0, n, self.CHUNK)])
        else:
            h = torch.cat([checkpoint(self._encode, trunk, frames[i:i + self.CHUNK], use_reentrant=False)
                           for i in range(0, n, self.CHUNK)])
        return h.reshape(*lead, h.shape[-1])

    def _fingerprint(self) -> tuple:
        """Changes whenever the trunk's weights may have: an optimiser step, an in-place change
        (version counter), new storage (``.data =``, as TRPO's line search does)."""
        return (_optimizer_steps[0], *((p.data_ptr(), p._version) for p in self.trunk.parameters()))

    def dist(self, obs: torch.Tensor) -> Categorical:
        h = self._features(self.trunk, obs)
        # PPO asks for dist(obs) and then value(obs) of the same minibatch: keep the trunk's output
        # for that one value() call (a shared trunk then costs one forward pass, not two).
        self._cache = (obs, torch.is_grad_enabled(), self._fingerprint(), h) if self.value_trunk is None else None
        return Categorical(logits=self.policy_head(h))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        cache, self._cache = self._cache, None
        if self.value_trunk is not None:
            h = self._features(self.value_trunk, obs)
        elif (cache is not None and cache[0] is obs and cache[1] == torch.is_grad_enabled()
              and cache[2] == self._fingerprint()):
            h = cache[3]
        else:
            h = self._features(self.trunk, obs)
        return self.value_head(h).squeeze(-1)

    # -- parameters by role -------------------------------------------------------------

    def policy_parameters(self) -> list[nn.Parameter]:
        return [*self.trunk.parameters(), *self.policy_head.parameters()]

    def value_parameters(self) -> list[nn.Parameter]:
        if self.value_network == "auto" and self.value_trunk is None:
            self.value_trunk = nature_cnn(self._in_channels, self._screen).to(self.device)
            self._cache = None
        trunk = self.value_trunk if self.value_trunk is not None else self.trunk
        return [*trunk.parameters(), *self.value_head.parameters()]

    def frozen_copy(self) -> "AtariAgent":
        self._cache = None
        copy = deepcopy(self)
        copy.requires_grad_(False)
        return copy

    # -- collection ---------------------------------------------------------------------

    def observe(self, obs: torch.Tensor) -> None:
        """No input statistics: frames are scaled by the fixed 1/255."""

    def env_action(self, actions: np.ndarray) -> np.ndarray:
        return actions

    def act(self, obs: np.ndarray, rng: np.random.Generator, deterministic: bool = False) -> np.ndarray:
        with torch.inference_mode():
            h = self._encode(self.trunk, _frames_tensor(obs, self.device))
            logits = self.policy_head(h).cpu().numpy()
        return logits.argmax(-1) if deterministic else _sample(logits, rng)

    def act_and_score(self, obs: np.ndarray, rng: np.random.Generator, with_value: bool):
        """``act`` plus log pi(a|s) and V(s) from the same trunk pass (core/agent.py): the
        collector then needs no second pass over the batch, a quarter of an update's CNN work.
        The uint8 frames (numpy, ``[N, 4, 84, 84]``) go to the agent's device once; the CNN runs
        there; actions, log-probabilities and values come back as numpy arrays (CPU), the actions
        drawn on the CPU from the collector's generator (the same draw on every device)."""
        with torch.inference_mode():
            frames = _frames_tensor(obs, self.device)
            h = self._encode(self.trunk, frames)
            log_probs = torch.log_softmax(self.policy_head(h), -1)
            value = None
            if with_value:
                value_h = h if self.value_trunk is None else self._encode(self.value_trunk, frames)
                value = self.value_head(value_h).squeeze(-1)
            # both queued before the first copy back waits for them (.cpu(): no copy on the CPU)
            log_probs = log_probs.cpu().numpy()
            value = None if value is None else value.cpu().numpy()
        actions = _sample(log_probs, rng)
        return actions, log_probs[np.arange(len(actions)), actions], value

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        # a checkpoint taken after the value was split off (value_network=auto) has value_trunk.*
        if self.value_trunk is None and any(k.startswith("value_trunk.") for k in state_dict):
            self.value_trunk = nature_cnn(self._in_channels, self._screen).to(self.device)
        self._cache = None
        return super().load_state_dict(state_dict, strict=strict, assign=assign)
