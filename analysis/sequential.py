"""A group-sequential permutation test for "X against Y": seeds added in rounds until it decides,
with the family-wise error fixed in advance (``compare ... seeds=auto``).

The procedure is AdaStop's (Mathieu et al. 2023, "AdaStop: adaptive statistical testing for sound
comparisons of Deep RL agents", Algorithm 1) for two agents, two-sided, on stratified data:

- round k (k = 0 .. K-1) adds n runs per side in every stratum (an environment), seeds
  ``k n .. (k+1) n - 1``;
- the statistic after round k is the sum over rounds and strata of the round's difference of means,
  ``S_k = sum_{j <= k} sum_e (mean X_{j,e} - mean Y_{j,e})``, each stratum's scores first divided
  by a scale fixed by round 0 (the pooled standard deviation of both sides' round-0 runs there:
  a symmetric function of the data the permutations exchange, so the test stays exact);
- its null distribution: the runs of X and Y exchanged within each round and stratum (random
  permutations, ``B`` paths, or every permutation when they are few enough), the paths that
  crossed an earlier boundary removed (they were rejected there);
- boundary b_k: the smallest value whose tail, added to the level spent so far, stays within
  ``alpha (k + 1) / K`` (the linear spending of AdaStop); reject when ``|S_k| > b_k``: ``better``
  or ``worse`` by the sign. Not rejected after the last round: ``inconclusive`` (a permutation test
  does not show equality).

AdaStop's package (``adastop`` on PyPI, 0.1.3) compares ``|S_k|`` with the quantiles of the *signed*
permutation distribution, so its two-sided test rejects at twice ``alpha`` under the null (measured:
0.10 at alpha = 0.05 on normal data, 300 A/A tests). Here the boundary comes from ``|S|``'s own
distribution, and the test equals the package's at ``alpha / 2`` (tests/test_sequential.py
checks decisions and boundaries against the package on one stratum).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

DECISIONS = ("continue", "better", "worse", "inconclusive")


@dataclass
class SequentialTest:
    """State of one test across rounds; ``update(x, y)`` after each round.

    ``x``, ``y``: ``[strata, runs so far]`` arrays of the candidate's and the baseline's scores,
    ``n`` more runs per stratum and side each round. ``rounds``: K; ``alpha``: the family-wise
    error; ``permutations``: B; ``seed``: the permutations' random generator."""
    n: int
    rounds: int
    alpha: float = 0.05
    permutations: int = 10_000
    seed: int = 0
    k: int = 0
    level_spent: float = 0.0
    boundaries: list[float] = field(default_factory=list)
    statistics: list[float] = field(default_factory=list)
    decision: str = "continue"

    def __post_init__(self):
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha={self.alpha} is not in (0, 0.5)")
        if self.n < 1 or self.rounds < 1:
            raise ValueError("a sequential test needs at least one run per round and one round")
        self.rng = np.random.default_rng(self.seed)
        self._paths: np.ndarray | None = None   # surviving permutation paths' statistics
        self._normalization = 1.0
        self._scale: np.ndarray | None = None
        self._exact = True

    def update(self, x: np.ndarray, y: np.ndarray) -> str:
        """Take round k's runs (the first ``(k+1) n`` of each row of ``x`` and ``y``) and decide."""
        if self.decision != "continue":
            raise ValueError("the test has decided already")
        x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
        lo, hi = self.k * self.n, (self.k + 1) * self.n
        if x.shape[1] < hi or y.shape[1] < hi or x.shape[0] != y.shape[0]:
            raise ValueError(f"round {self.k + 1} needs {hi} runs per stratum and side; got {x.shape}, {y.shape}")
        if self._scale is None:     # round 0 fixes each stratum's scale (pooled sd of both sides)
            pooled = np.concatenate([x[:, :self.n], y[:, :self.n]], axis=1)
            sd = pooled.std(axis=1, ddof=1) if pooled.shape[1] > 1 else np.ones(len(pooled))
            self._scale = np.where(sd > 0, sd, 1.0)
        block = np.concatenate([x[:, lo:hi], y[:, lo:hi]], axis=1) / self._scale[:, None]   # [strata, 2n]
        observed = float(np.sum(x[:, :hi].mean(1) / self._scale - y[:, :hi].mean(1) / self._scale) * (self.k + 1))
        self._extend_paths(block)
        clevel = self.alpha * (self.k + 1) / self.rounds
        values = np.sort(np.abs(self._paths))
        tail = np.arange(len(values))[::-1] / self._normalization     # P(|S| > value), past rejections excluded
        admissible = self.level_spent + tail <= clevel
        if admissible.any():
            first = int(np.argmax(admissible))
            bound, spend = float(values[first]), float(tail[first])
        else:       # too few permutations for this level yet: no decision possible this round
            bound, spend = math.inf, 0.0
        self.boundaries.append(bound)
        self.statistics.append(observed)
        self.level_spent += spend
        # strictly beyond (the observed split is itself one of the permutations: computed in another
        # order, its statistic may exceed its own path's value by a rounding error, never by 1e-9)
        if abs(observed) > bound * (1 + 1e-9):
            self.decision = "better" if observed > 0 else "worse"
        elif self.k == self.rounds - 1:
            self.decision = "inconclusive"
        else:   # the paths that crossed this boundary were rejected here: not part of later rounds
            self._paths = self._paths[np.abs(self._paths) <= bound]
        self.k += 1
        return self.decision

    def _extend_paths(self, block: np.ndarray) -> None:
        """Each surviving path plus round k's permuted difference (all splits when few enough)."""
        strata, two_n = block.shape
        n = two_n // 2
        splits = math.comb(two_n, n)
        # every permutation while the paths of all rounds so far number fewer than B (as the package)
        exact = splits ** (strata * (self.k + 1)) < self.permutations and (self._paths is None or self._exact)
        if exact:
            masks = np.array([[i in c for i in range(two_n)] for c in itertools.combinations(range(two_n), n)])
            per_split = (block[:, None, :] * np.where(masks, 1.0 / n, -1.0 / n)[None]).sum(-1)   # [strata, splits]
            diffs = per_split[0]
            for s in range(1, strata):     # every combination of the strata's splits
                diffs = (diffs[:, None] + per_split[s][None, :]).reshape(-1)
            base = np.zeros(1) if self._paths is None else self._paths
            self._paths = (base[:, None] + diffs[None, :]).reshape(-1)
            self._normalization = float(splits ** (strata * (self.k + 1)))
            self._exact = True
            return
        if self._exact and self._paths is not None:
            # the exact rounds so far left fewer than B paths: each is copied until there are about B
            # (weights unchanged in total), so that the random rounds from here on estimate their
            # boundaries from B draws, not from the few hundred splits of one small round
            copies = math.ceil(self.permutations / max(len(self._paths), 1))
            self._paths = np.repeat(self._paths, copies)
            self._normalization *= copies
        self._exact = False
        count = self.permutations if self._paths is None else len(self._paths)
        order = np.argsort(self.rng.random((count, strata, two_n)), axis=-1)[..., :n]   # X's places per stratum
        signs = np.full((count, strata, two_n), -1.0 / n)
        np.put_along_axis(signs, order, 1.0 / n, axis=-1)
        diffs = (signs * block[None]).sum((-2, -1))
        if self._paths is None:         # B random paths; each keeps its weight 1 / B through the rounds
            self._paths, self._normalization = diffs, float(self.permutations)
        else:   # each surviving path (exact or random so far) extended by one random split: same weight
            self._paths = self._paths + diffs


def first_deciding_round(strata: int, max_seeds: int, alpha: float, fewest: int = 2) -> int:
    """``round_seeds=auto``: the fewest runs per side and stratum in a round (at least ``fewest``)
    with which the test can already decide after the first round.

    Round 1 of n runs per side splits each stratum's 2n runs in C(2n, n) ways, C(2n, n)^strata in
    all; the most extreme split and its mirror image are two of them, so the smallest two-sided tail
    a boundary can cut off is 2 / C(2n, n)^strata, and round 1 may spend alpha / K, K = max_seeds // n
    rounds (linear spending). Rounds of 2 on the paper's 7 environments (6^7 splits) can decide at
    once; on 2 environments (36 splits) a round of 2 cannot, and rounds of 3 (400 splits) can. The
    smallest such round is the cheapest first look at a clear difference: the error rate stays at
    alpha whatever the round (docs/BENCHMARKS.md, "How often is the verdict wrong", measures 2 and 3).
    ``max_seeds`` when no round up to it can decide at once."""
    if strata < 1 or max_seeds < 1:
        raise ValueError("a round needs at least one stratum and one seed")
    for n in range(max(1, fewest), max_seeds + 1):
        if 2 / math.comb(2 * n, n) ** strata <= alpha / (max_seeds // n):
            return n
    return max_seeds
