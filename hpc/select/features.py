"""Cheap features of one cluster's data, for predicting which ensemble member to run on it.

Everything comes from the cluster's covariance matrix and sample size (what PEF already holds),
in O(p^3) numpy work (one ridge inverse, one top eigenvalue): about a second at p = 1,500,
a small fraction of the cheapest member's run there. Each feature, and why it may matter:

- `log_p`, `log_n`, `p_over_n`: problem size; fGES's BIC penalty and PC's tests behave differently
  as p approaches n.
- `abs_corr_mean`, `abs_corr_q50`, `abs_corr_q90`, `abs_corr_q99`: the distribution of |r_ij| over
  pairs; how strong and how widespread the dependencies are.
- `marginal_density`: the fraction of pairs whose correlation is significant (Fisher z, α = 0.01);
  with the marginal degree statistics below, a proxy for the density of the skeleton's closure.
- `marginal_degree_cv`, `marginal_degree_skew`, `marginal_degree_max`: per-variable counts of
  significant correlations: spread, skew and the largest count as a fraction of p. Hubs (a few
  nodes with tens of neighbours) show up as a long right tail.
- `partial_density`, `partial_degree_mean`, `partial_degree_cv`, `partial_degree_skew`,
  `partial_degree_max`: the same for full-order partial correlations from a ridge-regularised
  inverse (R + 0.1 I)^-1, thresholded at 2 / sqrt(n): a proxy for the moral graph's degrees,
  where marginal counts blur neighbours with neighbours' neighbours. `partial_degree_mean` is
  absolute (edges per variable); `partial_degree_max` is a fraction of p.
- `partial_to_marginal`: partial density over marginal density (chains and trees have many marginal
  dependencies per direct one; dense graphs few).
- `r2_mean`, `r2_q90`: how much of each variable the others explain (1 - 1 / diag of the ridge
  inverse): the signal strength a score or a test has to work with.
- `top_eigen_fraction`: the largest eigenvalue of R over p: one common factor (a hub, or a
  dense block) against many weak local ones.

Pilot features, from a cheap first pass of the search itself (landmarking: Pfahringer et al.,
2000): PC-Stable's adjacency search up to depth 1 (Fisher z, α = 0.01, the numpy engine), a few
percent of a full PC-Stable run. Thresholded correlations could not tell apart the clusters where
a low-penalty search wins from those where a high penalty wins (they look alike in density); what
a depth-1 search leaves and how it separates pairs does:

- `pilot_degree_mean`, `pilot_degree_cv`, `pilot_degree_max`, `pilot_degree_skew`: the degrees of
  the depth-1 skeleton (mean absolute, max as a fraction of p).
- `pilot_transitivity`: triangles over connected triples of that skeleton (small-world graphs are
  rich in triangles, trees and sparse random graphs are not).
- `pilot_kept_after_depth1`: edges left after depth 1 over edges left after depth 0: how many
  marginal dependencies one other variable explains (chains, trees) or not (dense graphs).
- `pilot_unshielded_per_var`: unshielded triples a - c - b per variable.
- `pilot_collider_share`: the share of those whose centre c separates neither way, i.e. a and b
  are not independent given c alone (or were independent marginally): the colliders PC would
  orient, and many parents per child (dense random DAGs) give many. It asks every centre, not
  the one separating variable the search happened to keep, so that the value does not depend
  on the columns' order (the search keeps the first that separates).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.special import ndtri

from hpc.learners.pc import BATCH, independent, skeleton

FEATURES: tuple[str, ...] = (
    "log_p", "log_n", "p_over_n",
    "abs_corr_mean", "abs_corr_q50", "abs_corr_q90", "abs_corr_q99",
    "marginal_density", "marginal_degree_cv", "marginal_degree_skew", "marginal_degree_max",
    "partial_density", "partial_degree_mean", "partial_degree_cv", "partial_degree_skew", "partial_degree_max",
    "partial_to_marginal", "r2_mean", "r2_q90", "top_eigen_fraction",
    "pilot_degree_mean", "pilot_degree_cv", "pilot_degree_max", "pilot_degree_skew", "pilot_transitivity",
    "pilot_kept_after_depth1", "pilot_unshielded_per_var", "pilot_collider_share",
)
#: Bumped whenever a feature's definition changes; selectors record the version they were fit on.
FEATURE_VERSION = 3
RIDGE = 0.1
ALPHA = 0.01
PILOT_DEPTH = 1


def correlation(cov: np.ndarray) -> np.ndarray:
    """Correlation matrix from a covariance matrix (a zero variance counts as 1, so no NaN)."""
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    sd[sd == 0] = 1.0
    r = cov / np.outer(sd, sd)
    np.clip(r, -1.0, 1.0, out=r)
    np.fill_diagonal(r, 1.0)
    return r


def _spread(counts: np.ndarray) -> tuple[float, float]:
    """(coefficient of variation, skewness) of per-variable counts; 0 for constant counts."""
    mean, sd = counts.mean(), counts.std()
    if sd == 0:
        return 0.0, 0.0
    skew = float(np.mean(((counts - mean) / sd) ** 3))
    return float(sd / mean) if mean > 0 else 0.0, skew


def pilot_features(r: np.ndarray, n: int) -> list[float]:
    """The pilot features of a correlation matrix (see the module's docstring)."""
    p = r.shape[0]
    adj, sepsets = skeleton(r, n, ALPHA, PILOT_DEPTH)
    kept = int(np.triu(adj, 1).sum())
    kept0 = kept + sum(1 for s in sepsets.values() if s)  # the pairs depth 1 separated were kept at depth 0
    a = adj.astype(np.float64)
    deg = a.sum(axis=1)
    cv, skew = _spread(deg)
    common = a @ a  # common neighbours of each pair
    wedges = float((deg * (deg - 1) / 2).sum())
    triangles = float(np.einsum("ij,ji->", common, a)) / 6
    open_pairs = np.triu(~adj, 1)
    unshielded = float(common[open_pairs].sum())
    non_colliders = _separating_centres(r, n, adj, [(i, j) for (i, j), s in sepsets.items() if s])
    return [deg.mean(), cv, deg.max() / p, skew, 3 * triangles / wedges if wedges else 0.0,
            kept / kept0 if kept0 else 0.0, unshielded / p,
            (unshielded - non_colliders) / unshielded if unshielded else 0.0]


def _separating_centres(r: np.ndarray, n: int, adj: np.ndarray, pairs: list[tuple[int, int]]) -> int:
    """How many (pair, c) with c a common neighbour of the non-adjacent pair (a, b) have a and b
    independent given c (the depth-1 test, as the search makes it). Pairs separated marginally have
    none: no test given c ran for them."""
    if not pairs:
        return 0
    ab = np.asarray(pairs, dtype=np.int64)
    ab = ab[(adj[ab[:, 0]] & adj[ab[:, 1]]).any(axis=1)]
    count, chunk = 0, max(1, BATCH // r.shape[0])
    for start in range(0, len(ab), chunk):
        a, b = ab[start:start + chunk].T
        k, c = np.nonzero(adj[a] & adj[b])
        a, b = a[k], b[k]
        with np.errstate(divide="ignore", invalid="ignore"):
            rc = (r[a, b] - r[a, c] * r[b, c]) / np.sqrt((1.0 - r[a, c] ** 2) * (1.0 - r[b, c] ** 2))
        count += int(independent(np.nan_to_num(rc, nan=1.0), n, 1, ALPHA).sum())
    return count


def cluster_features(cov: np.ndarray, n: int) -> np.ndarray:
    """The FEATURES of a cluster, in that order, from its covariance (p x p) and sample size n."""
    cov = np.asarray(cov, dtype=np.float64)
    p = cov.shape[0]
    if p < 2:
        raise ValueError(f"features need at least 2 variables, got {p}")
    r = correlation(cov)
    iu = np.triu_indices(p, 1)
    pairs = np.abs(r[iu])
    q50, q90, q99 = np.quantile(pairs, [0.5, 0.9, 0.99])

    # Fisher z: |atanh r| sqrt(n - 3) > z_(1 - alpha/2).
    z_crit = ndtri(1 - ALPHA / 2) / np.sqrt(max(n - 3, 1))
    marginal = np.abs(np.arctanh(np.clip(r, -0.999999, 0.999999))) > z_crit
    np.fill_diagonal(marginal, False)
    m_deg = marginal.sum(axis=1).astype(np.float64)
    m_density = float(m_deg.sum() / (p * (p - 1)))
    m_cv, m_skew = _spread(m_deg)

    precision = np.linalg.inv(r + RIDGE * np.eye(p))
    d = np.sqrt(np.diag(precision))
    partial = -precision / np.outer(d, d)
    strong = np.abs(partial) > 2.0 / np.sqrt(n)
    np.fill_diagonal(strong, False)
    p_deg = strong.sum(axis=1).astype(np.float64)
    p_density = float(p_deg.sum() / (p * (p - 1)))
    p_cv, p_skew = _spread(p_deg)
    r2 = np.clip(1.0 - 1.0 / np.diag(precision), 0.0, 1.0)

    top = float(scipy.linalg.eigh(r, eigvals_only=True, subset_by_index=[p - 1, p - 1])[0])
    values = [
        np.log(p), np.log(n), p / n,
        pairs.mean(), q50, q90, q99,
        m_density, m_cv, m_skew, m_deg.max() / p,
        p_density, p_deg.mean(), p_cv, p_skew, p_deg.max() / p,
        p_density / m_density if m_density > 0 else 0.0, r2.mean(), np.quantile(r2, 0.9), top / p,
        *pilot_features(r, n),
    ]
    out = np.asarray(values, dtype=np.float64)
    return np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0)
