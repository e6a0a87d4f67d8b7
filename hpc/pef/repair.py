"""PEF's repair step: one score-based search over all variables, started from the fused graph.

A cluster's search never sees a variable's parents in other clusters, so their effect shows up as
extra edges inside the cluster, and fusion's strict cross-edge tests miss true cross edges. The repair
runs fGES (faithfulness assumed) over every variable, started from the fused CPDAG and allowed to add
an edge only between candidate pairs: pairs adjacent in the fused graph or two steps apart in it
(spouses and grandparents, where a hidden parent's effect lands). Its backward phase may remove any
edge. Each round takes its candidates from the previous round's graph, so an edge can be found two
steps at a time. Adding the cross-cluster pairs fusion's first screen kept, or each variable's most
correlated ones, made it worse on the tuning problems (more false edges). Its cost grows with the
candidate pairs, not with p^2 (Fges only checks the bound graph's adjacency for the other pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpc.checks import check_number
from hpc.graphs.metrics import marks
from hpc.graphs.pdag import PDAG, pair_keys

#: The repair's runner in the JVM worker (hpc.learners.tetrad).
RUNNER = "hpc.learners.tetrad:run_fges_bounded"
#: A repair round may take GUARD_FACTOR times the estimation's seconds, and at least GUARD_FLOOR seconds;
#: past that it is cut and the last finished round's graph is kept (the meta says so). On layered
#: cascades (near-deterministic data, layer-1000) the first round ran over 10 minutes where the whole
#: estimation took under one; on Alarm, er and sf a round took at most half the estimation's time.
GUARD_FACTOR = 2.0
GUARD_FLOOR = 300.0


@dataclass(frozen=True)
class RepairConfig:
    # At most this many rounds; the repair stops earlier once a round changes nothing. 0 = no repair (the
    # paper's PEF, kept by the paper_* experiments). Tuned on Alarm-1000 and er-1000 seed 100 (no test
    # seed): Alarm stopped changing after 2 rounds (SHD 438 -> 295), er after 4 (735 -> 443 -> 416 -> 393
    # -> 391).
    repair_rounds: int = 4
    # The repair's BIC penalty discount (Tetrad's documented default); 2.0, 2.54 and 4.0 were within 20
    # SHD of each other on the same problems.
    repair_penalty: float = 2.0

    def validate(self) -> None:
        check_number("repair_rounds", self.repair_rounds, 0, 20, integer=True)
        check_number("repair_penalty", self.repair_penalty, 1.0, 1000.0)


def _pairs(rows: np.ndarray, p: int) -> np.ndarray:
    """Unique unordered pairs (i < j) of `rows`."""
    keys = np.unique(pair_keys(rows, p))
    return np.stack([keys // p, keys % p], axis=1) if len(keys) else np.empty((0, 2), dtype=np.int64)


def candidate_pairs(graph: PDAG) -> np.ndarray:
    """Pairs the repair may join: adjacent in `graph`, or two steps apart in it."""
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


def changes(before: PDAG, after: PDAG) -> dict[str, int]:
    """Edges the repair added, removed and reoriented (same adjacency, other marks), as CPDAGs: the three
    parts of the SHD between `before` and `after`."""
    bk, bc = marks(before)
    ak, ac = marks(after)
    _, ib, ia = np.intersect1d(bk, ak, assume_unique=True, return_indices=True)
    return {"edges_added": len(ak) - len(ia), "edges_removed": len(bk) - len(ib),
            "edges_reoriented": int(np.count_nonzero(bc[ib] != ac[ia]))}


def repair_round(x: np.ndarray, penalty: float, directed: np.ndarray, undirected: np.ndarray, pairs: np.ndarray,
                 threads: int, limit: float | None) -> tuple[np.ndarray, np.ndarray] | None:
    """One round in this process's JVM worker (a dask task); None when `limit` seconds passed first."""
    from hpc.learners.worker import WorkerTimeout, default_worker

    if limit is not None and limit <= 0:
        return None
    try:
        return default_worker().call(RUNNER, {"x": x, "penalty": penalty, "directed": directed,
                                              "undirected": undirected, "pairs": pairs, "threads": threads},
                                     timeout=limit)
    except WorkerTimeout:
        return None
