"""Where an order search starts when a faithful fGES's order would cost more than the search itself
(a BOSS or GRaSP member's `start="auto"`; PEF gives it to them above CHEAP_STARTS_ABOVE variables).

A faithful fGES gives the best start on the clusters PEF makes of up to a few hundred variables, in seconds; on
clusters of about 500 dense variables Tetrad's took one to six minutes, against 2-20 s for the order search from it
(tuning seed 100 of sf, layer and modular-5000, BENCHMARKS.md "Where an order search starts"); the compiled one
(hpc.learners.ges_kernel) that gives the start now takes 1-4 s there, and "auto" was not re-tuned since. On such
clusters "auto" runs the search from two cheap orders and keeps the DAG of higher BIC: the data-derived column order
(in effect a random one) and the variables sorted by R², the share of a variable's variance the others explain. In
linear models simulated as benchmarks are, R² tends to grow along the causal order (Reisach, Tami, Seiler, Weichwald
& Zhu, NeurIPS 2023), so that order is often near a good one; on data where it is not, the column order's search
wins by BIC. BIC decides, never the sort alone.

Only where that DAG is dense (over DENSE_EDGES edges per variable) is it kept: on sparse clusters the fGES
start is cheap and much better (an Alarm cluster of 213 variables: SHD 43 against 121; Alarm-10000 seed 100
with every cluster over 300 variables on the cheap starts: SHD 3,403 against 2,826). On the dense clusters of
sf, layer and modular it reached a higher BIC than the fGES start in a tenth of the time or less, and on
modular-5000 seed 100 a better final graph (8,623 SHD against 8,888) in a third of the time. Yet at 1,000
variables, where the whole-problem rival runs, `psle learn`'s final graph was 8-46 SHD worse on all three
tuning runs it was tried on (sf 100, sf 101, layer 100), so PEF gives "auto" only to larger problems.

The fGES start itself is bounded where every pair correlates (start_pairs): on layer-1000's clusters of 500
variables (61,000-67,000 pairs whose correlation alone pays an edge; 1,000-16,000 on the other tuning clusters of
over 200) it took 147 s, and restricted to the conditional independence graph 28 s, to a start from which the
search reached a higher BIC (tuning seed 100). With it `psle learn` went from 245 s and 519 SHD to 135 s and 500 on
layer seed 100, from 338 s and 717 SHD to 249 s and 504 on seed 102 (BENCHMARKS.md, "Where an order search
starts"). On sparser clusters the bounded start was worse by BIC on most (Alarm, er, ws, sf), so it stays off there.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from hpc.learners.bic import local_scores, paying_pairs
from hpc.learners.order_search import order_search
from hpc.learners.pc import correlation

#: Above this many variables a BOSS member starts from the cheap orders, not from a faithful fGES's order
#: (tuning seed 100: clusters of 162-298 variables took 2-6 s for the fGES start; 500 took 56-217 s).
FGES_START_UPTO = 300
#: ... where their DAG has over this many edges per variable. The cheap starts' DAGs on the clusters over 300
#: variables of Alarm-10000 seed 100 have 0.84-1.33 (fGES starts of 2-11 s), of modular-5000 seed 100 2.02-2.41
#: (46-290 s), of sf-1000 2.7 and layer-1000 5.8 (tuning seeds; the members' penalties).
DENSE_EDGES = 1.5
#: PEF gives BOSS and GRaSP members "auto" on problems over this many variables: above the whole-problem
#: rival's (hpc.pef.rival) default size, where the clusters' own searches are what the graph keeps.
CHEAP_STARTS_ABOVE = 2000


#: A faithful fGES start scores every pair whose correlation alone pays an edge, again after each change near
#: it; over this many such pairs it is restricted to the pairs of the estimated conditional independence graph
#: (start_pairs), as ARGES restricts GES (Nandy, Hauser & Maathuis, Annals of Statistics 2018).
DENSE_PAIRS = 20_000
#: The two-sided level at which a partial correlation (given every other variable) keeps its pair.
CIG_ALPHA = 0.1


def start_pairs(cov: np.ndarray, n: int, penalty: float) -> np.ndarray | None:
    """The pairs a faithful fGES start may join: None (any pair), or on a cluster with over DENSE_PAIRS pairs
    whose correlation alone gains at `penalty` and at most half as many variables as rows, the pairs whose
    partial correlation given all other variables differs from 0 at level CIG_ALPHA (Fisher's z). Where the
    variables are near-deterministic cascades every pair correlates, and such a start took minutes."""
    p = cov.shape[0]
    if 2 * p > n:
        return None
    if paying_pairs(correlation(cov), n, penalty) <= DENSE_PAIRS:
        return None
    try:
        precision = np.linalg.inv(cov)
    except np.linalg.LinAlgError:
        return None
    partial = np.clip(np.abs(correlation(precision)), 0.0, 1.0 - 1e-12)  # the precision's correlations, up to sign
    z = np.arctanh(partial) * np.sqrt(n - p - 3)
    return np.argwhere(np.triu(z > norm.ppf(1.0 - CIG_ALPHA / 2.0), 1)).astype(np.int64)


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


def dense_start(cov: np.ndarray, n: int, penalty: float) -> np.ndarray | None:
    """The cheap starts' DAG (cheap_start_search) where "auto" keeps it: over FGES_START_UPTO variables and
    over DENSE_EDGES edges per variable; None where the fGES start is the one to take."""
    p = cov.shape[0]
    if p <= FGES_START_UPTO:
        return None
    dag = cheap_start_search(cov, n, penalty)
    return dag if len(dag) > DENSE_EDGES * p else None


def with_cheap_starts(members: list[dict], p: int) -> list[dict]:
    """`members` (specs) for a problem of `p` variables: over CHEAP_STARTS_ABOVE, each BOSS and GRaSP member that
    names no start of its own gets "auto"."""
    if p <= CHEAP_STARTS_ABOVE:
        return members
    return [{**m, "start": "auto"} if m.get("method") in ("boss", "grasp") and "start" not in m else m
            for m in members]
