"""What every suite provides to the harness (see docs/DESIGN.md, "The one idea")."""
from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import io
import sys
import tokenize
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from core.options import field_defaults


@dataclass(frozen=True)
class Scale:
    """A budget preset: ``scale=smoke|quick|paper``."""
    envs: tuple[str, ...]
    steps: int
    seeds: int
    eval_every: int
    eval_episodes: int


class Suite(ABC):
    name: ClassVar[str]
    Config: ClassVar[type]                    # dataclass of environment/network options (``suite.<key>=``)
    default_envs: ClassVar[tuple[str, ...]]
    scales: ClassVar[dict[str, Scale]]
    # Per-algorithm defaults that differ from the algorithm's own (the suite's paper table), by
    # algorithm name; they apply to the algorithm's subclasses too (see ``defaults_for``). Each
    # entry's trailing comment (or the comment block above it) is its source, shown by ``help``.
    algo_defaults: ClassVar[dict[str, dict[str, Any]]] = {}
    # Named bundles of overrides, e.g. the code-level options of another implementation.
    presets: ClassVar[dict[str, dict[str, Any]]] = {}
    # Named lists of (algorithm, {option: value}) settings, e.g. the rows of a paper's table.
    grids: ClassVar[dict[str, list[tuple[str, dict[str, Any]]]]] = {}
    # Whether a group batch's column is one sequence of one generation whose tokens share one reward
    # (an LM completion), not an episode of an environment: sequence-level options (GSPO's sequence
    # importance ratio, ``Needs.sequence_level``) are refused at planning on a suite without it.
    sequence_columns: ClassVar[bool] = False
    # The most torch threads a process of this suite uses (None: as many as its share of the cores);
    # set where a second thread measurably gains nothing (harness.config.threads_per_run).
    max_threads: ClassVar[int | None] = None

    def defaults_for(self, algo_cls: type) -> dict[str, Any]:
        """This suite's defaults for the algorithm class ``algo_cls``, resolved along its class
        hierarchy, so that a variant runs its parent's protocol on every suite.

        The rule, walking ``algo_cls.__mro__`` from the most basic algorithm to ``algo_cls``: each
        class's own entry in ``algo_defaults`` (under the ``name`` the class itself defines) is laid
        over what its ancestors' entries gave; a class whose ``Config`` changes an option's default
        (or adds the option) takes that option back from its ancestors' entries, as the variant says
        so. Only options of ``algo_cls.Config`` are kept. E.g. on Atari a PPOClip subclass whose
        Config sets ``ent_coef = 0.02`` gets Table 5 (ppo_clip's entry) in every option but
        ``ent_coef``, which is 0.02."""
        return {key: value for key, (value, _) in self._resolve(algo_cls).items()}

    def default_sources(self, algo_cls: type) -> dict[str, str]:
        """``{option: source}`` of every option ``defaults_for`` sets: the comment of the entry that
        gave the value, tagged with this suite (and the ancestor whose entry it is, if not ``algo_cls``)."""
        return {key: source for key, (_, source) in self._resolve(algo_cls).items()}

    def _resolve(self, algo_cls: type) -> dict[str, tuple[Any, str]]:
        comments = _default_comments(type(self))
        resolved: dict[str, tuple[Any, str]] = {}
        previous: dict[str, Any] | None = None
        for klass in _algorithm_chain(algo_cls):
            own = field_defaults(klass.Config)
            if previous is not None:
                for key, default in own.items():
                    if key not in previous or not _same(previous[key], default):
                        resolved.pop(key, None)   # the class's Config changes this default: it wins
            name = vars(klass).get("name")
            entry = self.algo_defaults.get(name, {}) if name is not None else {}
            for key, value in entry.items():
                where = f"suite {self.name}" + ("" if klass is algo_cls else f", as {name}")
                comment = comments.get(name, {}).get(key)
                resolved[key] = (value, f"{comment}  [{where}]" if comment else f"[{where}]")
            previous = own
        fields = field_defaults(algo_cls.Config)
        return {key: item for key, item in resolved.items() if key in fields}

    @abstractmethod
    def validate_env(self, env_id: str) -> None:
        """Raise ``ConfigError`` naming the valid choices if ``env_id`` cannot run here."""

    def env_summaries(self) -> dict[str, str]:
        """``{env: one line}`` for ``./run_all.sh help suite=X``: the default environments, undescribed;
        a suite whose environments need saying what they are (llm_toy's tasks) overrides this."""
        return dict.fromkeys(self.default_envs, "")

    def canonical_env(self, env_id: str) -> str:
        """The name results are stored under, for a valid ``env_id`` (e.g. Atari: ``Pong-v5`` -> ``Pong``)."""
        return env_id

    @abstractmethod
    def make_env(self, env_id: str, cfg: Any, train: bool = True):
        """One gymnasium-API environment (``reset(seed=)``, ``step(action)``); ``train=False``
        gives the evaluation form (e.g. Atari: whole games, raw scores)."""

    def make_vec_env(self, env_id: str, cfg: Any, num_envs: int):
        """The vectorised training environments of fixed-horizon collection (``core/envs.py``)."""
        from core.envs import ListVecEnv
        return ListVecEnv([self.make_env(env_id, cfg) for _ in range(num_envs)])

    def make_group_env(self, env_id: str, cfg: Any, group_size: int):
        """The G training environments of group collection (``core.envs.ListGroupEnv``'s interface:
        all reset to one state, then stepped until each episode ends)."""
        from core.envs import ListGroupEnv
        return ListGroupEnv([self.make_env(env_id, cfg) for _ in range(group_size)])

    @abstractmethod
    def make_agent(self, env, cfg: Any):
        """The agent (see ``core/agent.py``) for this environment."""

    def make_collector(self, env_id: str, cfg: Any, needs: Any, algo_cfg: Any, seed: int):
        """The rollout collector the algorithm asks for (``needs``: ``algos.base.Needs``, from the
        algorithm's resolved config), and the steps one batch takes (for schedules). Fixed horizon:
        N environments x T steps; groups: G environments reset to one shared state per group. A
        suite with its own notion of a rollout (LLM generation) overrides this."""
        from core.rollout import GroupCollector, HorizonCollector, RewardScaler
        if needs.rollout == "horizon":
            vec_env = self.make_vec_env(env_id, cfg, algo_cfg.num_envs)
            scaler = (RewardScaler(vec_env.num_envs, algo_cfg.gamma, getattr(cfg, "reward_clip", 10.0))
                      if getattr(cfg, "reward_scale", False) else None)
            collector = HorizonCollector(vec_env, algo_cfg.num_steps, algo_cfg.gamma, seed, needs.critic, scaler)
            return collector, algo_cfg.num_envs * algo_cfg.num_steps
        group_env = self.make_group_env(env_id, cfg, algo_cfg.group_size)
        limit = group_env.max_episode_steps
        # a suite that stacks runs pads every group batch to the length limit (one shape in any stack)
        pad_to = limit if self.stackable(env_id, cfg) else None
        collector = GroupCollector(group_env, algo_cfg.num_groups, seed, limit, pad_to)
        # Episodes vary in length; the length limit gives a lower bound on the number of updates.
        return collector, algo_cfg.group_size * algo_cfg.num_groups * (limit or 1000)

    # -- the batched engine: K runs of one environment and network shape in one process ----

    def stackable(self, env_id: str, cfg: Any) -> bool:
        """Whether runs on ``env_id`` can train as one stacked model (``stack_agents``)."""
        return False

    def stack_agents(self, agents: list):
        """The agents of K runs as one model whose ``parameters()`` are the runs' own, in their
        order, stacked along a new first dimension (``algos/stack.py``); ``write_back()`` copies
        the stacked values into the runs' agents."""
        raise NotImplementedError(f"suite {self.name} trains one run at a time")

    def make_collectors(self, env_id: str, cfg: Any, needs: Any, algo_cfgs: list, seeds: list[int]) -> list:
        """``make_collector`` for each run of a stack: ``[(collector, steps per batch)]``. A suite
        that can step the runs' environments as one vectorised environment (one call per step for
        all of them) overrides this; ``core.rollout.collect_together`` then steps them so."""
        return [self.make_collector(env_id, cfg, needs, a, s) for a, s in zip(algo_cfgs, seeds)]

    def evaluate(self, agent, env, episodes: int, seed: int) -> dict[str, float]:
        """One evaluation: ``eval_return_mean``, ``eval_return_std``, ``eval_episodes`` and any
        further columns of ``evals.csv`` the suite reports."""
        import numpy as np
        returns = self.evaluation_returns(agent, env, episodes, seed)
        return {"eval_return_mean": float(np.mean(returns)), "eval_return_std": float(np.std(returns)),
                "eval_episodes": len(returns)}

    def evaluation_returns(self, agent, env, episodes: int, seed: int) -> list[float]:
        """The returns of ``episodes`` deterministic episodes on ``env``, episode i seeded
        ``seed + i`` (``core.rollout.evaluate``); a suite may step them side by side, with the same
        numbers."""
        from core.rollout import evaluate
        return evaluate(agent, env, episodes, seed)


# ---------------------------------------------------------------------------------------
# resolving defaults along an algorithm's class hierarchy

def _algorithm_chain(algo_cls: type) -> list[type]:
    """``algo_cls`` and its ancestors that name an algorithm (define ``name`` themselves) and have
    a ``Config``, most basic first; ``algo_cls`` is always last."""
    chain = [k for k in reversed(algo_cls.__mro__)
             if k is not algo_cls and "name" in vars(k) and isinstance(getattr(k, "Config", None), type)]
    return chain + [algo_cls]





def _same(a: Any, b: Any) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool)


# ---------------------------------------------------------------------------------------
# the sources of a suite's defaults: the comments of its ``algo_defaults`` literal

@functools.lru_cache(maxsize=None)
def _default_comments(suite_cls: type) -> dict[str, dict[str, str]]:
    """``{algorithm: {option: comment}}`` read from the source of the class that defines
    ``algo_defaults`` (as ``harness/options.py`` reads dataclass fields' comments): an entry's
    comment is the trailing comment of the line its value ends on, else the comment lines right
    above the line it starts on, else those above the algorithm's entry (or above the named dict it
    spreads, ``**_TABLE5``), else those above ``algo_defaults``. Named dicts are looked up in the
    class body, then at module level. Empty where the source cannot be read or parsed."""
    owner = next((k for k in suite_cls.__mro__ if "algo_defaults" in vars(k)), None)
    module = sys.modules.get(getattr(owner, "__module__", ""), None)
    try:
        text = inspect.getsource(module)
        tree = ast.parse(text)
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError, IndentationError):
        return {}
    comment: dict[int, str] = {}
    comment_only: set[int] = set()
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            comment[tok.start[0]] = tok.string.lstrip("#").strip()
            if not tok.line[:tok.start[1]].strip():
                comment_only.add(tok.start[0])

    def above(line: int) -> str | None:
        lines, k = [], line - 1
        while k in comment_only:
            lines.insert(0, comment[k])
            k -= 1
        return " ".join(lines) or None

    cls_node = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == owner.__name__), None)
    if cls_node is None:
        return {}
    named: dict[str, ast.stmt] = {}
    defaults_stmt = None
    for body in (tree.body, cls_node.body):
        for stmt in body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
                stmt, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and isinstance(stmt.value, ast.Dict):
                    named[target.id] = stmt
                    if body is cls_node.body and target.id == "algo_defaults":
                        defaults_stmt = stmt
    if defaults_stmt is None:
        return {}

    def entries(node: ast.expr, fallback: str | None, seen: frozenset) -> dict[str, str]:
        if isinstance(node, ast.Name) and node.id in named and node.id not in seen:
            stmt = named[node.id]
            return entries(stmt.value, above(stmt.lineno) or fallback, seen | {node.id})
        if not isinstance(node, ast.Dict):
            return {}
        out: dict[str, str] = {}
        for key, value in zip(node.keys, node.values):
            if key is None:   # **spread
                out.update(entries(value, fallback, seen))
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                text = comment.get(value.end_lineno) if value.end_lineno not in comment_only else None
                text = text or above(key.lineno) or fallback
                if text:
                    out[key.value] = text
        return out

    outer = above(defaults_stmt.lineno)
    result = {}
    for key, value in zip(defaults_stmt.value.keys, defaults_stmt.value.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            result[key.value] = entries(value, above(key.lineno) or outer, frozenset())
    return result
