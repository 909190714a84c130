"""Rollout collection, shared by every algorithm: fixed horizon and groups; evaluation.

Fixed-horizon collection steps a vectorised environment (``core/envs.py``); group
collection steps plain gymnasium-API environments (``reset(seed=)``, ``step``), so that
each group can be reset to one shared state.
Actions come from the agent's NumPy fast path; log-probabilities and values are then
computed in one batched torch pass over the whole rollout (exact for the update, and
far cheaper than one torch call per step).

Device: every tensor of a batch is built on the agent's device (``agent_device``):
``agent.device`` when the agent has that attribute (a ``torch.device``), else the device of
its first parameter, else the CPU. The rollout is stored in NumPy and moved once per batch
(``.to(device)``, which returns the very tensor on the CPU: no copy there); the batched
log-probability / value pass, the last values and the truncation bootstraps run on that
device. An agent needs nothing more than ``.to(device)`` and a ``.cpu()`` in its NumPy fast path.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.batch import Batch


@dataclass
class Episode:
    global_step: int    # environment steps taken by the run when the episode ended
    ret: float          # undiscounted sum of the raw environment rewards
    length: int


class RewardScaler:
    """Divide rewards by the running std of the discounted return (ppo2's VecNormalize,
    CleanRL's NormalizeReward), then clip. Only the training signal is scaled."""

    def __init__(self, num_envs: int, gamma: float, clip: float, eps: float = 1e-8):
        self.gamma, self.clip, self.eps = gamma, clip, eps
        self.discounted = np.zeros(num_envs)
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def __call__(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        self.discounted = self.discounted * self.gamma + rewards
        self._update(self.discounted)
        self.discounted[dones] = 0.0
        return np.clip(rewards / np.sqrt(self.var + self.eps), -self.clip, self.clip)

    def _update(self, x: np.ndarray) -> None:
        n, batch_mean, batch_var = x.size, x.mean(), x.var()
        delta, total = batch_mean - self.mean, self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + batch_var * n + delta ** 2 * self.count * n / total) / total
        self.count = total

    def state_dict(self):
        return {"discounted": self.discounted.copy(), "mean": self.mean, "var": self.var, "count": self.count}

    def load_state_dict(self, state):
        self.discounted = state["discounted"].copy()
        self.mean, self.var, self.count = state["mean"], state["var"], state["count"]


def _as_batch_obs(obs_list) -> np.ndarray:
    return np.asarray(obs_list)


def _storage_dtype(obs: np.ndarray) -> np.dtype:
    """float32 for float observations (MuJoCo returns float64); integer ones (Atari
    frames, tokens) keep their compact type."""
    return np.dtype(np.float32) if np.issubdtype(obs.dtype, np.floating) else obs.dtype


def _buffer_for(obs: np.ndarray, length: int) -> np.ndarray:
    """An empty ``[length, *obs.shape]`` buffer in ``obs``'s memory order: frames that arrive
    channels-last (``suites/atari/envpool_env.py``) are stored so, and the CNN reads them without a
    transposition (see ``core/batch.py``'s ``take_rows``)."""
    axes = sorted(range(obs.ndim), key=lambda d: obs.strides[d], reverse=True)   # outermost first
    physical = np.empty((length, *(obs.shape[d] for d in axes)), dtype=_storage_dtype(obs))
    return physical.transpose(0, *(1 + axes.index(d) for d in range(obs.ndim)))


def agent_device(agent) -> torch.device:
    """Where ``agent`` computes, hence where its batches are built (see the module docstring)."""
    device = getattr(agent, "device", None)
    if isinstance(device, torch.device):
        return device
    parameters = getattr(agent, "parameters", None)
    first = next(iter(parameters()), None) if callable(parameters) else None
    return first.device if first is not None else torch.device("cpu")


@torch.no_grad()
def _policy_outputs(agent, obs: torch.Tensor, actions: torch.Tensor, with_values: bool):
    logp = agent.dist(obs).log_prob(actions)
    values = agent.value(obs) if with_values else None
    return logp, values


class HorizonCollector:
    """N environments stepped for T steps each; episodes continue across batches.

    A time-limit truncation is not an ending of the MDP: the step's reward gets
    ``gamma * V(s_final)`` added (Pardo et al. 2018; as Stable-Baselines3), and the step is
    marked done so that nothing is bootstrapped from the next episode's first state.
    """

    def __init__(self, vec_env, num_steps: int, gamma: float, seed: int, with_values: bool,
                 reward_scaler: RewardScaler | None = None):
        self.vec_env, self.num_steps, self.gamma = vec_env, num_steps, gamma
        self.with_values, self.reward_scaler = with_values, reward_scaler
        self.rng = np.random.default_rng(seed)
        self.obs = vec_env.reset(seed=seed * 1000)
        self.global_step = 0

    def collect(self, agent) -> tuple[Batch, list[Episode]]:
        return collect_together([self], [agent])[0]

    # -- one batch in three parts (``collect_together`` interleaves them over the runs of a stack) --

    def _begin(self, agent) -> None:
        T, N = self.num_steps, self.vec_env.num_envs
        self._obs_buf = _buffer_for(self.obs, T)
        self._act_buf = None
        self._rew_buf = np.zeros((T, N), dtype=np.float32)
        self._done_buf = np.zeros((T, N), dtype=np.float32)
        self._truncations: list[tuple[int, int, np.ndarray]] = []   # (t, env, final observation)
        self._episodes: list[Episode] = []
        # An agent with act_and_score returns log pi(a|s) and V(s) from the forward pass that
        # chose the actions (as CleanRL and SB3 collect); for the others one batched pass in
        # ``_finish`` computes them (cheap for an MLP, and exact under input normalisation that
        # moves during collection).
        self._scores_while_acting = hasattr(agent, "act_and_score")
        self._logp_buf = np.empty((T, N), dtype=np.float32) if self._scores_while_acting else None
        self._value_buf = (np.empty((T, N), dtype=np.float32)
                           if self._scores_while_acting and self.with_values else None)

    def _act(self, agent, t: int, actions: np.ndarray | None = None) -> np.ndarray:
        """Step t's actions from the current observations (``actions``: already chosen, by a
        stacked actor); returns what the environments receive."""
        self._obs_buf[t] = self.obs
        if actions is not None:
            pass
        elif self._scores_while_acting:
            actions, self._logp_buf[t], value = agent.act_and_score(self.obs, self.rng, self.with_values)
            if self._value_buf is not None:
                self._value_buf[t] = value
        else:
            actions = agent.act(self.obs, self.rng)
        if self._act_buf is None:
            self._act_buf = np.empty((self.num_steps, *actions.shape), dtype=actions.dtype)
        self._act_buf[t] = actions
        return agent.env_action(actions)

    def _record(self, t: int, step) -> None:
        self.global_step += self.vec_env.num_envs
        dones = step.terminated | step.truncated
        self._truncations += [(t, i, o) for i, o in step.final_obs.items()]
        self._episodes += [Episode(self.global_step, ret, length) for _, ret, length in step.episodes]
        self._rew_buf[t] = self.reward_scaler(step.rewards, dones) if self.reward_scaler is not None else step.rewards
        self._done_buf[t] = dones
        self.obs = step.obs

    def _finish(self, agent) -> tuple[Batch, list[Episode]]:
        T, N = self.num_steps, self.vec_env.num_envs
        obs_buf, truncations = self._obs_buf, self._truncations
        device = agent_device(agent)
        obs_t, act_t = torch.from_numpy(obs_buf).to(device), torch.from_numpy(self._act_buf).to(device)
        if self._scores_while_acting:
            logp_old = torch.from_numpy(self._logp_buf).to(device)
            values = torch.from_numpy(self._value_buf).to(device) if self._value_buf is not None else None
        else:
            logp_old, values = _policy_outputs(agent, obs_t, act_t, self.with_values)
        rewards = torch.from_numpy(self._rew_buf).to(device)
        last_value = torch.zeros(N, device=device)
        if self.with_values:
            with torch.no_grad():
                last_value = agent.value(torch.from_numpy(self.obs.astype(obs_buf.dtype)).to(device))
                if truncations:
                    final_obs = np.stack([o for _, _, o in truncations]).astype(obs_buf.dtype)
                    final_values = agent.value(torch.from_numpy(final_obs).to(device))
                    # one (t, env) per truncation: no index repeats, so += adds each bootstrap once
                    steps = torch.tensor([t for t, _, _ in truncations], device=device)
                    envs = torch.tensor([i for _, i, _ in truncations], device=device)
                    rewards[steps, envs] += self.gamma * final_values
        batch = Batch(obs=obs_t, actions=act_t, rewards=rewards, dones=torch.from_numpy(self._done_buf).to(device),
                      mask=torch.ones(T, N, device=device), logp_old=logp_old, values=values, last_value=last_value)
        episodes = self._episodes
        del self._obs_buf, self._act_buf, self._rew_buf, self._done_buf, self._truncations, self._episodes
        return batch, episodes

    def state_dict(self):
        # The environments are mid-episode between batches: their state and the current
        # observations are part of the resume point (None where the vectorised environment
        # cannot save its state; see core/envs.py).
        saves_env = hasattr(self.vec_env, "state_dict")
        return {"rng": self.rng.bit_generator.state, "global_step": self.global_step,
                "reward_scaler": self.reward_scaler.state_dict() if self.reward_scaler else None,
                "obs": self.obs.copy() if saves_env else None,
                "vec_env": self.vec_env.state_dict() if saves_env else None}

    def load_state_dict(self, state):
        """Restore a ``state_dict``; ``self.env_state_exact`` says whether every environment
        continues exactly where it was (otherwise some restarted their episode)."""
        self.rng.bit_generator.state = state["rng"]
        self.global_step = state["global_step"]
        if self.reward_scaler is not None and state["reward_scaler"] is not None:
            self.reward_scaler.load_state_dict(state["reward_scaler"])
        self.env_state_exact = False  # a vectorised env without state_dict keeps its fresh reset
        if state.get("vec_env") is not None and hasattr(self.vec_env, "load_state_dict"):
            self.obs, self.env_state_exact = self.vec_env.load_state_dict(state["vec_env"], state["obs"])


def collect_together(collectors: list[HorizonCollector], agents: list) -> list[tuple[Batch, list[Episode]]]:
    """One batch of each run (``collectors[k]`` with ``agents[k]``), the runs' environments
    stepped together (``core.envs.step_together``: one call for the runs of a stack that share a
    vectorised environment). Each run's batch is the one its collector gathers alone: the same
    per-run actions, random draws and bookkeeping, in the same order."""
    horizons = {c.num_steps for c in collectors}
    if len(horizons) != 1:
        raise ValueError(f"the runs collected together take the same number of steps; got {sorted(horizons)}")
    from core.envs import step_together
    envs = [c.vec_env for c in collectors]
    for c, agent in zip(collectors, agents):
        c._begin(agent)
    # Several runs whose agents can act as one (``stacked_actor``: one NumPy pass for all, the
    # same actions as each alone) and score afterwards in the batched pass of ``_finish``.
    stacked = getattr(type(agents[0]), "stacked_actor", None)
    actor = (stacked(agents) if stacked is not None and len(agents) > 1 and len({c.obs.shape for c in collectors}) == 1
             and not any(c._scores_while_acting for c in collectors) else None)
    rngs = [c.rng for c in collectors]
    if actor is not None and _rows_of_one_env(envs):
        _collect_rows(collectors, agents, actor, envs[0].shared)
        return [c._finish(agent) for c, agent in zip(collectors, agents)]
    for t in range(collectors[0].num_steps):
        if actor is not None:
            chosen = actor(np.stack([c.obs for c in collectors]), rngs)
            actions = [c._act(agent, t, a) for c, agent, a in zip(collectors, agents, chosen)]
        else:
            actions = [c._act(agent, t) for c, agent in zip(collectors, agents)]
        for c, step in zip(collectors, step_together(envs, actions)):
            c._record(t, step)
    return [c._finish(agent) for c, agent in zip(collectors, agents)]


def _rows_of_one_env(envs: list) -> bool:
    """The envs are the rows of one shared vectorised environment, in order, covering all of it."""
    from core.envs import EnvRows
    first = envs[0]
    if not all(isinstance(e, EnvRows) and e.shared is first.shared for e in envs):
        return False
    return [(e.lo, e.hi) for e in envs] == [(k * first.num_envs, (k + 1) * first.num_envs) for k in range(len(envs))] \
        and len(envs) * first.num_envs == first.shared.num_envs


def _collect_rows(collectors: list[HorizonCollector], agents: list, actor, shared) -> None:
    """``collect_together``'s loop for K runs of N environments each that are the rows of one
    shared environment and act through one stacked actor: per step one actor call, one
    environment call and array writes for all runs (the per-run loop of ``_act`` / ``_record``
    costs ~50 us a run a step). Fills each collector's buffers exactly as ``_act`` and
    ``_record`` do (tested bit-identical to collecting alone)."""
    K, N, T = len(collectors), collectors[0].vec_env.num_envs, collectors[0].num_steps
    obs = np.stack([c.obs for c in collectors])
    obs_buf = np.empty((T, *obs.shape), dtype=_storage_dtype(obs))
    rew_buf, done_buf = np.zeros((T, K, N), dtype=np.float32), np.zeros((T, K, N), dtype=np.float32)
    act_buf = None
    rngs = [c.rng for c in collectors]
    scalers = [c.reward_scaler for c in collectors]
    for t in range(T):
        obs_buf[t] = obs
        actions = actor(obs, rngs)
        if act_buf is None:
            act_buf = np.empty((T, *actions.shape), dtype=actions.dtype)
        act_buf[t] = actions
        step = shared.step(agents[0].env_action(actions.reshape(K * N, *actions.shape[2:])))
        for c in collectors:
            c.global_step += N
        for i, o in step.final_obs.items():
            k, j = divmod(i, N)
            collectors[k]._truncations.append((t, j, o))
        for i, ret, length in step.episodes:
            c = collectors[i // N]
            c._episodes.append(Episode(c.global_step, ret, length))
        dones = (step.terminated | step.truncated).reshape(K, N)
        rewards = step.rewards.reshape(K, N)
        if scalers[0] is None:
            rew_buf[t] = rewards
        else:
            for k, scaler in enumerate(scalers):
                rew_buf[t, k] = scaler(rewards[k], dones[k])
        done_buf[t] = dones
        obs = step.obs.reshape(K, N, *step.obs.shape[1:])
    for k, c in enumerate(collectors):
        c._obs_buf, c._act_buf = np.ascontiguousarray(obs_buf[:, k]), np.ascontiguousarray(act_buf[:, k])
        c._rew_buf, c._done_buf = np.ascontiguousarray(rew_buf[:, k]), np.ascontiguousarray(done_buf[:, k])
        c.obs = obs[k].copy()


class GroupCollector:
    """Groups of G episodes, each group's episodes started from one shared initial state
    (G environments reset with the same seed) and run until every one has ended.

    A column of the batch is one whole episode, padded with ``mask = 0``; its score is the
    episode's return. Group ids increase over the run, so groups drawn for one update
    (DAPO's dynamic sampling) never collide.

    ``pad_to``: every batch is padded to this many steps (the length limit), whatever its longest
    episode. A suite whose runs train in stacks asks for it (``Suite.make_collector``): the runs of
    a stack need batches of one shape, and a run's numbers must not depend on its stack, so a run
    alone pads to the same fixed length (the padded steps are masked out of every loss).
    """

    def __init__(self, envs, num_groups: int, seed: int, length_limit: int | None, pad_to: int | None = None):
        # ``envs``: G gymnasium environments, or a group environment of G (``reset_same`` and
        # ``step_rows``, as ``core.envs.ListGroupEnv``; ``suites/mujoco_vec.py`` steps them in one call)
        from core.envs import ListGroupEnv
        self.group_env = ListGroupEnv(envs) if isinstance(envs, (list, tuple)) else envs
        self.num_groups, self.length_limit, self.pad_to = num_groups, length_limit, pad_to
        self.rng = np.random.default_rng(seed)
        self.global_step = 0
        self.next_group = 0

    def reset_group(self, seed: int) -> np.ndarray:
        return self.group_env.reset_same(seed)

    def collect(self, agent) -> tuple[Batch, list[Episode]]:
        columns, episodes = [], []
        for _ in range(self.num_groups):
            group_columns, group_episodes = self._collect_group(agent)
            columns += group_columns
            episodes += group_episodes
        horizon = max(len(c["obs"]) for c in columns)
        if self.pad_to is not None:
            if horizon > self.pad_to:
                raise ValueError(f"an episode of {horizon} steps is longer than the padded length {self.pad_to}")
            horizon = self.pad_to
        M = len(columns)
        first_obs = columns[0]["obs"][0]
        obs = np.zeros((horizon, M, *first_obs.shape), dtype=_storage_dtype(first_obs))
        actions = np.zeros((horizon, M, *np.shape(columns[0]["actions"][0])), dtype=columns[0]["actions"][0].dtype)
        rewards = np.zeros((horizon, M), dtype=np.float32)
        mask = np.zeros((horizon, M), dtype=np.float32)
        dones = np.zeros((horizon, M), dtype=np.float32)
        for j, c in enumerate(columns):
            L = len(c["obs"])
            obs[:L, j], actions[:L, j], rewards[:L, j], mask[:L, j] = c["obs"], c["actions"], c["rewards"], 1.0
            dones[L - 1, j] = 1.0
        device = agent_device(agent)
        obs_t, act_t = torch.from_numpy(obs).to(device), torch.from_numpy(actions).to(device)
        mask_t = torch.from_numpy(mask).to(device)
        logp_old, _ = _policy_outputs(agent, obs_t, act_t, with_values=False)
        batch = Batch(
            obs=obs_t, actions=act_t, rewards=torch.from_numpy(rewards).to(device),
            dones=torch.from_numpy(dones).to(device), mask=mask_t, logp_old=logp_old * mask_t,
            last_value=torch.zeros(M, device=device),
            groups=torch.tensor([c["group"] for c in columns], device=device),
            scores=torch.tensor([float(sum(c["rewards"])) for c in columns], device=device),
            lengths=torch.tensor([len(c["obs"]) for c in columns], device=device),
            truncated=torch.tensor([float(c["truncated"]) for c in columns], device=device),
            length_limit=self.length_limit)
        return batch, episodes

    def _collect_group(self, agent):
        G = self.group_env.num_envs
        group = self.next_group
        self.next_group += 1
        obs = self.reset_group(int(self.rng.integers(2 ** 31 - 1)))
        columns = [{"obs": [], "actions": [], "rewards": [], "group": group, "truncated": False} for _ in range(G)]
        active = np.arange(G)
        episodes = []
        while active.size:
            actions = agent.act(obs[active], self.rng)
            step = self.group_env.step_rows(active, agent.env_action(actions))
            # the recorded score is the raw one where the environment reports it (e.g. Atari's
            # unclipped game score); else the rewards' sum
            raw_scores = {k: score for k, score, _ in step.episodes}
            still = []
            for k, i in enumerate(active.tolist()):
                col = columns[i]
                col["obs"].append(obs[i].copy())
                col["actions"].append(actions[k])
                col["rewards"].append(float(step.rewards[k]))
                self.global_step += 1
                if step.terminated[k] or step.truncated[k]:
                    col["truncated"] = bool(step.truncated[k] and not step.terminated[k])
                    ret = raw_scores[k] if k in raw_scores else float(sum(col["rewards"]))
                    episodes.append(Episode(self.global_step, ret, len(col["rewards"])))
                else:
                    obs[i] = step.obs[k]
                    still.append(i)
            active = np.asarray(still, dtype=np.int64)
        return columns, episodes

    def state_dict(self):
        return {"rng": self.rng.bit_generator.state, "global_step": self.global_step, "next_group": self.next_group}

    def load_state_dict(self, state):
        self.rng.bit_generator.state = state["rng"]
        self.global_step, self.next_group = state["global_step"], state["next_group"]


def evaluate(agent, env, episodes: int, seed: int) -> list[float]:
    """Returns of ``episodes`` episodes with the deterministic policy (the mean action or
    the most likely one), on a separate environment, with the agent's statistics frozen."""
    rng = np.random.default_rng(seed)
    returns = []
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + k)
        total, done = 0.0, False
        while not done:
            action = agent.act(_as_batch_obs([obs]), rng, deterministic=True)
            obs, r, terminated, truncated, _ = env.step(agent.env_action(action)[0])
            total += float(r)
            done = terminated or truncated
        returns.append(total)
    return returns


def evaluate_rows(agent, env, episodes: int, seed: int) -> list[float]:
    """``evaluate``'s returns, bit for bit, with the ``episodes`` episodes stepped side by side as
    the rows of one vectorised environment: ``env.reset(seed)`` seeds row i ``seed + i`` (as
    ``evaluate`` seeds episode i), ``env.step_rows(ids, actions)`` steps the episodes still
    running (``suites.mujoco_vec.MujocoVecEnv``). Each row's action is the one ``evaluate`` computes
    for that observation alone (``agent.act_rowwise``: a batch of rows may take another BLAS kernel
    than one row, and differ in the last bits), and each return is summed step by step in the
    same order, in float64."""
    obs = np.asarray(env.reset(seed=seed))
    returns = np.zeros(episodes)
    running = np.arange(episodes)
    while running.size:
        step = env.step_rows(running, agent.env_action(agent.act_rowwise(obs[running])))
        returns[running] += step.rewards
        obs[running] = step.obs
        running = running[~(step.terminated | step.truncated)]
    return returns.tolist()
