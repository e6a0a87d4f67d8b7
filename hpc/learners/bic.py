"""BIC of a DAG (or of a CPDAG, through a member DAG) on Gaussian data, as Tetrad's SemBicScore.

local(i, P) = 2 * loglik - penalty * |P| * ln n, loglik = -n/2 * (ln(2 pi s2) + 1), where s2 is
the residual variance of i on P from the covariance with divisor n - 1 (Tetrad's convention).
Larger is better. The SLE uses it to pick among its members' outputs, with no ground truth.
"""

from __future__ import annotations

import numpy as np

from hpc.graphs.equivalence import pdag_to_dag
from hpc.graphs.pdag import PDAG
from hpc.learners.gram_kernel import covariance as gram_covariance
from hpc.learners.gram_kernel import residual as gram_residual


def covariance(x: np.ndarray) -> np.ndarray:
    """Sample covariance with divisor n - 1, columns = variables; the same bits on every machine
    (hpc.learners.gram_kernel), so every search that starts from it gives the same graph everywhere."""
    return gram_covariance(x)


#: Residual variances are floored at this fraction of the variable's variance: a variable its parents
#: determine exactly (collinear data) scores a large finite likelihood, not +inf or NaN.
MIN_RESIDUAL = 1e-12


def residual_variance(cov: np.ndarray, i: int, parents: np.ndarray) -> float:
    """Variance of i left after regressing it on `parents`, floored at MIN_RESIDUAL of its variance. A singular
    parent block (collinear or near-deterministic data, e.g. strong edge weights) gets the least-squares
    projection, which is the same residual whichever of the redundant parents carry the fit. Compiled
    (hpc.learners.gram_kernel.residual): the same bits on every machine, as LAPACK's solve is not."""
    return float(gram_residual(np.ascontiguousarray(cov, dtype=np.float64), int(i),
                               np.ascontiguousarray(parents, dtype=np.int64), MIN_RESIDUAL))


def paying_r2(n: int, penalty: float) -> float:
    """The squared correlation over which one variable alone, as the only parent, pays its BIC penalty on `n` rows:
    n log(1 / (1 - r^2)) > penalty log(n)."""
    return float(-np.expm1(-penalty * np.log(n) / n))


def paying_pairs(corr: np.ndarray, n: int, penalty: float) -> int:
    """How many pairs of the correlation matrix `corr` pay an edge alone (paying_r2): each an insertion a search
    over every pair must score."""
    return int(np.count_nonzero(np.triu(corr * corr, 1) > paying_r2(n, penalty)))


def local_scores(cov: np.ndarray, n: int, parent_lists: list[list[int]], penalty: float = 1.0) -> np.ndarray:
    """Per-node local BIC scores for the given parent sets."""
    p = cov.shape[0]
    s2 = np.diag(cov).astype(np.float64).copy()
    k = np.zeros(p)
    for i, parents in enumerate(parent_lists):
        if parents:
            s2[i] = residual_variance(cov, i, np.asarray(parents))
            k[i] = len(parents)
    with np.errstate(divide="ignore", invalid="ignore"):
        loglik = -0.5 * n * (np.log(2 * np.pi * s2) + 1)
    return 2 * loglik - penalty * k * np.log(n)


def bic(graph: PDAG, cov: np.ndarray, n: int, penalty: float = 1.0) -> float:
    """BIC of a DAG, or of a member DAG of a PDAG's class (score-equivalent, so any member)."""
    dag = graph if graph.is_directed else pdag_to_dag(graph, strict=False)
    return float(local_scores(cov, n, dag.parent_lists(), penalty).sum())
