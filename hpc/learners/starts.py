"""Where an order search starts when a faithful fGES's order would cost more than the search itself
(a BOSS member's `start="auto"`; not the default).

A faithful fGES gives the best start on the clusters PEF makes of up to a few hundred variables, in
seconds; on clusters of about 500 dense variables it took one to four minutes, against 2-20 s for the
order search from it (tuning seed 100 of sf and layer, BENCHMARKS.md "Where an order search starts").
There "auto" runs the search from two cheap orders and keeps the DAG of higher BIC: the data-derived
column order (in effect a random one) and the variables sorted by R², the share of a variable's variance
the others explain. In linear models simulated as benchmarks are, R² tends to grow along the causal order
(Reisach, Tami, Seiler, Weichwald & Zhu, NeurIPS 2023), so that order is often near a good one; on data
where it is not, the column order's search wins by BIC. BIC decides, never the sort alone. On the largest
clusters of sf and layer (seed 100) it reached a higher BIC and a lower SHD than the fGES start in a tenth
of the time, yet `psle learn`'s final graph was 8-46 SHD worse on all three tuning runs it was tried on,
so it is a user's choice for speed, not the default.
"""

from __future__ import annotations

import numpy as np

from hpc.learners.bic import local_scores
from hpc.learners.order_search import order_search

#: Above this many variables a BOSS member starts from the cheap orders, not from a faithful fGES's order
#: (tuning seed 100: clusters of 162-298 variables took 2-6 s for the fGES start; 500 took 56-217 s).
FGES_START_UPTO = 300


def r2_order(cov: np.ndarray, n: int) -> np.ndarray:
    """The variables by increasing R² on all the others (1 - 1 / the inverse covariance's diagonal, over the
    variances); ties by index. With no fewer variables than rows R² is 1 for every variable: the column order."""
    p = cov.shape[0]
    if p >= n:
        return np.arange(p, dtype=np.int64)
    try:
        precision = np.diag(np.linalg.inv(cov))
    except np.linalg.LinAlgError:
        return np.arange(p, dtype=np.int64)
    r2 = 1.0 - 1.0 / (precision * np.diag(cov))
    return np.argsort(r2, kind="stable").astype(np.int64)


def dag_bic(cov: np.ndarray, n: int, penalty: float, dag: np.ndarray) -> float:
    """BIC of a DAG given as parent -> child rows."""
    parents: list[list[int]] = [[] for _ in range(cov.shape[0])]
    for a, b in np.asarray(dag, dtype=np.int64).reshape(-1, 2).tolist():
        parents[b].append(a)
    return float(local_scores(cov, n, parents, penalty).sum())


def cheap_start_search(cov: np.ndarray, n: int, penalty: float) -> np.ndarray:
    """The order search from the column order and from the R²-sorted order: the DAG of higher BIC (the column
    order's on a tie)."""
    best: tuple[float, np.ndarray] | None = None
    for order in (np.arange(cov.shape[0], dtype=np.int64), r2_order(cov, n)):
        if best is not None and np.array_equal(order, np.arange(cov.shape[0])):
            continue  # the sort gave the column order back: the same search
        dag = order_search(cov, n, penalty, order, None)
        score = dag_bic(cov, n, penalty, dag)
        if best is None or score > best[0]:
            best = (score, dag)
    assert best is not None
    return best[1]
