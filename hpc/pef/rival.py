"""PEF's last step on problems small enough and without block structure: one whole-problem search as a
rival to PEF's graph, polished over the same clusters, and the graph with the higher BIC stands.

Cutting costs most where the graph has no block structure: on er and hub at 1,000 variables one whole
fGES (faithfulness assumed) is more accurate than PEF, even after the repair and the polish. BOSS over
each cluster and its Markov blanket (hpc.pef.polish) improves either start: on seed 100 (tuning) the
polished whole fGES was 90-100 SHD better than PEF on er and hub. BIC needs no truth, but at penalty
discount JUDGE_PENALTY it preferred the polished rival also on ws and Hailfinder, where it was 19-43
SHD worse (at 1, 2.54, 4 and 6 too, on those two). What told the two kinds apart was the partition:
on the block-structured problems 14-18 % of PEF's edges joined two clusters, on er and hub 42-43 %.
So the rival runs only where that share reaches `rival_crossing`, and up to `rival_upto` variables,
where a whole fGES takes about as long as PEF. It runs on a worker under a time limit (LIMIT_FACTOR
times the seconds PEF's member runs and repair took, at least LIMIT_FLOOR; those seconds are in a
checkpoint too, so a resumed run gives the rival the same limit), so where one whole search is much
slower than PEF (scale-free hubs, layered cascades) it is cut and PEF's graph stands.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpc.graphs.knowledge import Knowledge
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import bic
from hpc.learners.ensemble import MemberRun, run_member
from hpc.learners.members import OK
from hpc.pef.partition import cluster_labels

#: The rival: fGES with faithfulness at the learned ensemble's winning penalty (λ 2.54, at most 91 parents),
#: the whole-problem baseline of BENCHMARKS.md.
RIVAL: dict[str, Any] = {"method": "fges", "penalty": 2.53767, "max_parents": 91, "faithfulness": True}
#: The BIC penalty discount the two graphs are judged by (Tetrad's documented default, the repair's).
JUDGE_PENALTY = 2.0
LIMIT_FACTOR = 2.0
LIMIT_FLOOR = 60.0
#: Where a checkpoint keeps the rival's run (member runs use cluster indices from 0), and its polish's
#: searches: (POLISH_CLUSTER, search); PEF's own polish uses hpc.pef.polish.CHECKPOINT_CLUSTER.
CHECKPOINT_KEY = (-1, 0)
POLISH_CLUSTER = -3


def crossing_share(graph: PDAG, clusters: list[np.ndarray]) -> float:
    """The share of `graph`'s edges whose ends lie in two clusters: low where the partition found blocks
    that PEF searched well, high where the graph has none and the cuts went through it."""
    where = cluster_labels(clusters, graph.p)
    ends = np.concatenate([graph.directed, graph.undirected])
    return float(np.mean(where[ends[:, 0]] != where[ends[:, 1]])) if len(ends) else 0.0


def rival_limit(spent: float) -> float:
    """Seconds the rival may take after PEF's runs took `spent` seconds."""
    return max(LIMIT_FLOOR, LIMIT_FACTOR * spent)


def rival_graph(run: MemberRun, variables: tuple[str, ...]) -> PDAG | None:
    """The rival's CPDAG, or None when its run gave no graph (cut by its limit, failed)."""
    if run.status != OK or run.directed is None or run.undirected is None:
        return None
    return PDAG(variables, run.directed, run.undirected)


def judged(graph: PDAG, other: PDAG | None, run: MemberRun, cov: np.ndarray, n: int) -> tuple[PDAG, dict[str, Any]]:
    """The graph that stands (PEF's `graph` or the rival's `other`, None when `run` gave none), and the
    account: both BICs (penalty discount JUDGE_PENALTY), which was kept, the rival's seconds and status."""
    account: dict[str, Any] = {"method": dict(run.spec), "status": run.status, "seconds": round(run.seconds, 3)}
    if other is None:
        return graph, {**account, "kept": "pef", **({"why": run.error} if run.error else {})}
    mine, theirs = bic(graph, cov, n, JUDGE_PENALTY), bic(other, cov, n, JUDGE_PENALTY)
    kept = "rival" if theirs > mine else "pef"
    return (other if kept == "rival" else graph), {**account, "bic_pef": round(mine, 3), "bic_rival": round(theirs, 3),
                                                   "kept": kept}


def run_rival(executor: Any, cov: np.ndarray, n: int, variables: tuple[str, ...], limit: float,
              deadline: float | None, knowledge: Knowledge | None) -> MemberRun:
    """The rival's run on one of `executor`'s workers, with every thread it has."""
    task = (RIVAL, executor.scatter(cov, broadcast=False), n, variables, limit, executor.task_threads(1),
            deadline, knowledge)
    return next(iter(executor.run(run_member, [task])))[1]


def outcome(account: dict[str, Any]) -> str:
    """What the rival step decided, in one line."""
    if "skipped" in account:
        return f"not run: {account['skipped']}"
    if account["kept"] == "rival":
        return f"its graph stands, BIC {account['bic_rival']:,.0f} against PEF's {account['bic_pef']:,.0f}"
    if "bic_rival" in account:
        return f"PEF's graph stands, BIC {account['bic_pef']:,.0f} against the rival's {account['bic_rival']:,.0f}"
    return f"PEF's graph stands (the rival {account['status']} after {account['seconds']:.0f} s)"
