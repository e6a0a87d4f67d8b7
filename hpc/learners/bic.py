"""BIC of a DAG (or of a CPDAG, through a member DAG) on Gaussian data, as Tetrad's SemBicScore.

local(i, P) = 2 * loglik - penalty * |P| * ln n, loglik = -n/2 * (ln(2 pi s2) + 1), where s2 is
the residual variance of i on P from the covariance with divisor n - 1 (Tetrad's convention).
Larger is better. The SLE uses it to pick among its members' outputs, with no ground truth.
"""

from __future__ import annotations

import numpy as np

from hpc.graphs.equivalence import pdag_to_dag
from hpc.graphs.pdag import PDAG


def covariance(x: np.ndarray) -> np.ndarray:
    """Sample covariance with divisor n - 1, columns = variables."""
    return np.cov(np.asarray(x, dtype=np.float64), rowvar=False, ddof=1).reshape(x.shape[1], x.shape[1])


def local_scores(cov: np.ndarray, n: int, parent_lists: list[list[int]], penalty: float = 1.0) -> np.ndarray:
    """Per-node local BIC scores for the given parent sets."""
    p = cov.shape[0]
    s2 = np.diag(cov).astype(np.float64).copy()
    k = np.zeros(p)
    for i, parents in enumerate(parent_lists):
        if parents:
            pa = np.asarray(parents)
            c_pi = cov[pa, i]
            s2[i] -= c_pi @ np.linalg.solve(cov[np.ix_(pa, pa)], c_pi)
            k[i] = len(pa)
    with np.errstate(divide="ignore", invalid="ignore"):
        loglik = -0.5 * n * (np.log(2 * np.pi * s2) + 1)
    return 2 * loglik - penalty * k * np.log(n)


def bic(graph: PDAG, cov: np.ndarray, n: int, penalty: float = 1.0) -> float:
    """BIC of a DAG, or of a member DAG of a PDAG's class (score-equivalent, so any member)."""
    dag = graph if graph.is_directed else pdag_to_dag(graph, strict=False)
    return float(local_scores(cov, n, dag.parent_lists(), penalty).sum())
