"""The pairs a step after fusion may join, and the bound on how many a step starts from.

A hidden parent's effect lands on pairs adjacent in the fused graph or two steps apart in it (spouses and
grandparents), so those are the candidates the repair joins and the polish takes parents from. Their number
also measures what a search over the whole graph costs: Tetrad's fGES re-derives the CPDAG after each change,
and on a graph with many of them (dense data whose clusters miss their parents outside) one such search ran
for minutes. Counting them bounds a step before any work, the same way on every machine.
"""

from __future__ import annotations

import numpy as np

from hpc.graphs.pdag import PDAG, pair_keys
from hpc.learners.bic import paying_pairs


def _pairs(rows: np.ndarray, p: int) -> np.ndarray:
    """Unique unordered pairs (i < j) of `rows`."""
    keys = np.unique(pair_keys(rows, p))
    return np.stack([keys // p, keys % p], axis=1) if len(keys) else np.empty((0, 2), dtype=np.int64)


def candidate_pairs(graph: PDAG) -> np.ndarray:
    """Pairs adjacent in `graph`, or two steps apart in it."""
    p = graph.p
    edges = np.concatenate([graph.directed, graph.undirected])
    both = np.concatenate([edges, edges[:, ::-1]])  # (v, neighbour) both ways
    by_node = both[np.argsort(both[:, 0], kind="stable")]
    ends = np.searchsorted(by_node[:, 0], np.arange(p + 1))[by_node[:, 0] + 1]  # where each row's node's rows end
    later = ends - np.arange(len(by_node)) - 1  # each row pairs its neighbour with those of the node's later rows
    left = np.repeat(np.arange(len(by_node)), later)
    right = left + 1 + np.arange(len(left)) - np.repeat(np.cumsum(later) - later, later)
    two_steps = np.stack([by_node[left, 1], by_node[right, 1]], axis=1)
    return _pairs(np.concatenate([edges, two_steps]), p)


class PairIndex:
    """The rows of `pairs` that touch each of `p` variables, so a search over a few variables finds its pairs
    without scanning them all (a recut pass at 100,000 variables makes 5,400 searches over a million pairs)."""

    def __init__(self, p: int, pairs: np.ndarray):
        ends = pairs.ravel()
        self.pairs = pairs
        self.rows = np.argsort(ends, kind="stable") // 2
        self.offsets = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=p))])
        self.local = np.full(p, -1, dtype=np.int64)

    def within(self, columns: np.ndarray) -> np.ndarray:
        """The pairs with both ends in `columns`, in the order of `pairs`, as indices into `columns`."""
        starts = self.offsets[columns]
        lengths = self.offsets[columns + 1] - starts
        at = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        self.local[columns] = np.arange(len(columns))
        mine = self.local[self.pairs[np.unique(self.rows[at])]]
        self.local[columns] = -1
        return mine[(mine >= 0).all(axis=1)]


def too_many(pairs: int, bound: int, setting: str) -> str | None:
    """Why a step does not start from a graph with `pairs` candidate pairs: more than `bound` (0: no bound);
    None when it may."""
    if bound and pairs > bound:
        return f"{pairs:,} candidate pairs, above {setting} {bound:,}"
    return None


def gaining_pairs(z: np.ndarray, penalty: float) -> int:
    """Pairs of the standardised data `z` (z.T @ z the correlation matrix: hpc.pef.partition.standardize) whose
    correlation alone pays a BIC edge at penalty discount `penalty` (r^2 > 1 - n^(-penalty / n)): each is an
    insertion a search over every pair must score, and on data whose strong effects correlate variables far apart
    (modular networks) they number about half of all pairs."""
    return paying_pairs(z.T @ z, z.shape[0], penalty)
