"""The pairs a step after fusion may join, and the bound on how dense a graph a step starts from.

A hidden parent's effect lands on pairs adjacent in the fused graph or two steps apart in it (spouses and
grandparents), so those are the candidates the repair joins and the polish takes parents from. Their number
per variable is also what those searches cost: each search covers its variables' candidates (a repair block's
halo, a polish search's blanket), so on a graph with many per variable every search is about the problem's
size, and only the data's correlations bound it. Counting them bounds the steps before any work, the same way
on every machine.
"""

from __future__ import annotations

import numpy as np

from hpc.graphs.pdag import PDAG, pair_keys

#: Candidate pairs per variable above which the repair, the polish, the sweep and the recut do not start.
#: The fused graphs of seed 100 (tuning) of Alarm and the er, sf, ws, hub, sbm, mosaic and layer families at
#: 1,000 variables have 4-15; the modular 2,000-variable ones 23 or more, where the repair's first round ran
#: over 6 minutes and the sweep over 9 (BENCHMARKS.md, "Large modules").
DENSITY = 20.0


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
    starts = np.searchsorted(by_node[:, 0], np.arange(p + 1))
    two_steps = []
    for v in range(p):
        nb = by_node[starts[v]:starts[v + 1], 1]
        if len(nb) > 1:
            a, b = np.triu_indices(len(nb), 1)
            two_steps.append(np.stack([nb[a], nb[b]], axis=1))
    return _pairs(np.concatenate([edges, *two_steps]), p)


def too_dense(pairs: int, p: int, bound: float, setting: str) -> str | None:
    """Why a step does not start from a graph with `pairs` candidate pairs over `p` variables: more per
    variable than `bound` (0: no bound); None when it may."""
    per = pairs / max(p, 1)
    if bound and per > bound:
        return f"{per:.1f} candidate pairs per variable, above {setting} {bound:g}"
    return None
