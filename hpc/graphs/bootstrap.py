"""Edge confidence from resamples: how often each pair came out as -->, <-- or --- (or not at all) over the
graphs learned on bootstrap resamples, and a consensus graph from those frequencies.

Consensus rules (Tetrad's names, and bnlearn's threshold):
- `threshold`: pairs adjacent in at least `threshold` of the resamples, with their most frequent mark
  (bnlearn's averaged.network, whose arcs need a strength above a threshold);
- `majority`: a pair's mark found in more than half of the resamples (no edge otherwise);
- `highest`: the most frequent of the four types, "no edge" included;
- `preserved`: every pair found at least once, with its most frequent mark.
Ties between marks go to --- (no orientation claimed), then to -->.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpc.errors import PsleError
from hpc.graphs.metrics import marks
from hpc.graphs.pdag import PDAG

RULES = ("threshold", "majority", "highest", "preserved")
#: Columns of the frequency table, after the pair: each edge type's share of the resamples.
TYPES = ("-->", "<--", "---", "none")


@dataclass(frozen=True)
class EdgeFrequencies:
    """Per pair (i < j, by index) seen in at least one resample: the share of resamples with i --> j,
    i <-- j, i --- j and no edge (rows sum to 1), over `resamples` graphs."""

    variables: tuple[str, ...]
    pairs: np.ndarray  # (k, 2), i < j
    shares: np.ndarray  # (k, 4), columns TYPES
    resamples: int

    @property
    def adjacency(self) -> np.ndarray:
        """How often each pair was adjacent, whatever its mark."""
        return 1.0 - self.shares[:, 3]

    def rows(self) -> list[tuple[str, str, float, float, float, float]]:
        """(a, b, share -->, share <--, share ---, share none), most often adjacent first."""
        order = np.lexsort((self.pairs[:, 1], self.pairs[:, 0], -self.adjacency))
        return [(self.variables[i], self.variables[j], *(round(float(v), 6) for v in self.shares[k]))
                for k, (i, j) in zip(order, self.pairs[order].tolist())]


def edge_frequencies(graphs: list[PDAG]) -> EdgeFrequencies:
    """The frequency table of `graphs` (same variables, in the same order)."""
    if not graphs:
        raise PsleError("edge frequencies need at least one resample's graph")
    variables, p = graphs[0].variables, graphs[0].p
    if any(g.variables != variables for g in graphs):
        raise PsleError("the resamples' graphs do not have the same variables")
    keys, codes = zip(*(marks(g) for g in graphs))
    all_keys = np.concatenate(keys)
    all_codes = np.concatenate(codes)
    unique, where = np.unique(all_keys, return_inverse=True)
    counts = np.zeros((len(unique), 4))
    np.add.at(counts, (where, all_codes - 1), 1.0)
    counts[:, 3] = len(graphs) - counts[:, :3].sum(axis=1)
    return EdgeFrequencies(variables, np.stack([unique // p, unique % p], axis=1).reshape(-1, 2),
                           counts / len(graphs), len(graphs))


def consensus(freq: EdgeFrequencies, rule: str = "threshold", threshold: float = 0.5) -> PDAG:
    """The consensus graph of `freq` under `rule` (see the module's docstring)."""
    if rule not in RULES:
        raise PsleError(f"consensus rule must be one of {', '.join(RULES)}, got {rule!r}")
    if not 0.0 < threshold <= 1.0:
        raise PsleError(f"the consensus threshold must be in (0, 1], got {threshold!r}")
    shares = freq.shares
    # the most frequent mark, ties to --- then -->: scan ---, -->, <-- in that order
    preference = np.array([2, 0, 1])
    mark = preference[np.argmax(shares[:, preference], axis=1)]
    if rule == "threshold":
        keep = freq.adjacency >= threshold
    elif rule == "majority":
        keep = shares[np.arange(len(mark)), mark] > 0.5
    elif rule == "highest":
        keep = shares[np.arange(len(mark)), mark] > shares[:, 3]
    else:
        keep = freq.adjacency > 0
    pairs, mark = freq.pairs[keep], mark[keep]
    directed = np.concatenate([pairs[mark == 0], pairs[mark == 1][:, ::-1]])
    return PDAG(freq.variables, directed, pairs[mark == 2])


def resample_rows(n: int, seed: int, index: int, subsample: float | None = None) -> np.ndarray:
    """Row indices of resample `index`: n drawn with replacement, or (`subsample` f) round(f n) without;
    seeded by (seed, index), so a resample is the same rows wherever and whenever it runs."""
    rng = np.random.default_rng([seed, index])
    if subsample is None:
        return np.sort(rng.integers(0, n, size=n))
    if not 0.0 < subsample < 1.0:
        raise PsleError(f"--subsample must be in (0, 1), got {subsample!r}")
    return np.sort(rng.choice(n, size=max(3, int(round(subsample * n))), replace=False))
