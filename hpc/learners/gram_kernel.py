"""Covariances, cross products and regression residuals with the same bits on every machine, compiled with numba.

numpy's `cov` is a BLAS product, and OpenBLAS picks its kernel by CPU, so the covariance every member and every
order search starts from differed in its last bits between machines; on near-deterministic data a search carries
such a difference into another graph: `psle learn` on layer-1000 seed 100 (tuning) ended 244 SHD under the
SkylakeX kernel and 246 under Haswell's, on one machine (BENCHMARKS.md, "Same graph on any machine"). Here each
entry is summed over the rows in row order, one product and one addition at a time (no fused multiply-add, no
reassociation: numba leaves both off without fastmath), so the bits are IEEE arithmetic's alone. Tiles of
columns keep the sums in cache and let the compiler work on several entries at once, each in its own order.
Fusion's tests read their correlations from the same products: with BLAS's, layer-1000 seed 100's fused graph
differed by an edge between the two kernels. At 1,000 columns and rows a product takes 0.09 s (BLAS: 0.02 s).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hpc.learners.numba_cache import ensure_cache_folder

ensure_cache_folder()

#: Columns per tile: a tile's sums (TILE x TILE doubles, 32 KB) stay in the core's first caches.
TILE = 64


@njit(cache=True)
def gram(a: np.ndarray) -> np.ndarray:
    """a.T @ a for a C-ordered float64 array `a` (rows = samples), each entry summed over the rows in order. Four
    rows of a tile share each load of a data row's segment (2.3x faster than one tile row at a time, the same
    bits)."""
    n, p = a.shape
    out = np.empty((p, p))
    for i0 in range(0, p, TILE):
        i1 = min(i0 + TILE, p)
        for j0 in range(i0, p, TILE):
            j1 = min(j0 + TILE, p)
            tile = np.zeros((i1 - i0, j1 - j0))
            for r in range(n):
                _add_products(a[r], i0, i1, a[r, j0:j1], tile)
            for i in range(i0, i1):
                for j in range(j0, j1):
                    out[i, j] = tile[i - i0, j - j0]
                    out[j, i] = tile[i - i0, j - j0]
    return out


@njit(cache=True, inline="always")
def _add_products(row: np.ndarray, i0: int, i1: int, seg: np.ndarray, tile: np.ndarray) -> None:
    """tile[i - i0] += row[i] * seg for each i in [i0, i1), four rows of the tile at a time."""
    i = i0
    while i + 4 <= i1:
        a0, a1, a2, a3 = row[i], row[i + 1], row[i + 2], row[i + 3]
        s0, s1, s2, s3 = tile[i - i0], tile[i - i0 + 1], tile[i - i0 + 2], tile[i - i0 + 3]
        for j in range(len(seg)):
            x = seg[j]
            s0[j] += a0 * x
            s1[j] += a1 * x
            s2[j] += a2 * x
            s3[j] += a3 * x
        i += 4
    while i < i1:
        ai, sums = row[i], tile[i - i0]
        for j in range(len(seg)):
            sums[j] += ai * seg[j]
        i += 1


@njit(cache=True)
def stacked_gram(cols: np.ndarray) -> np.ndarray:
    """cols[s] @ cols[s].T for each s of a C-ordered (m, k, n) float64 array, each entry summed over n in order."""
    m, k, n = cols.shape
    out = np.empty((m, k, k))
    for s in range(m):
        for a in range(k):
            for b in range(a, k):
                t = 0.0
                for r in range(n):
                    t += cols[s, a, r] * cols[s, b, r]
                out[s, a, b] = t
                out[s, b, a] = t
    return out


@njit(cache=True)
def centred(x: np.ndarray) -> np.ndarray:
    """`x` less each column's mean (the column summed over the rows in order, over the rows' count)."""
    n, p = x.shape
    mean = np.zeros(p)
    for r in range(n):
        for j in range(p):
            mean[j] += x[r, j]
    out = np.empty((n, p))
    for j in range(p):
        mean[j] /= n
    for r in range(n):
        for j in range(p):
            out[r, j] = x[r, j] - mean[j]
    return out


@njit(cache=True)
def residual(cov: np.ndarray, v: int, idx: np.ndarray, floor: float) -> float:
    """v's residual variance on the columns `idx` of the covariance `cov`, floored at `floor` * cov[v, v]: the last
    pivot of a Cholesky factor of the block of idx and v, in loops rather than LAPACK's (whose kernels differ by
    CPU). A column whose residual on the ones before it is under `floor` of its variance is (nearly) a combination
    of them and is passed over, so on a singular block this is the least-squares projection's residual, whichever
    of the redundant columns carry the fit."""
    k = len(idx)
    cols = np.empty(k + 1, dtype=np.int64)
    cols[:k] = idx
    cols[k] = v
    low = np.zeros((k + 1, k + 1))
    kept = np.zeros(k + 1, dtype=np.bool_)
    for j in range(k + 1):
        d = cov[cols[j], cols[j]]
        for t in range(j):
            if kept[t]:
                d -= low[j, t] * low[j, t]
        if j == k:
            return max(d, floor * cov[v, v])
        if not d > floor * cov[cols[j], cols[j]]:
            continue
        d = np.sqrt(d)
        low[j, j] = d
        kept[j] = True
        for i in range(j + 1, k + 1):
            e = cov[cols[i], cols[j]]
            for t in range(j):
                if kept[t]:
                    e -= low[i, t] * low[j, t]
            low[i, j] = e / d
    return cov[v, v]  # not reached: the loop returns at j == k


def cross_products(a: np.ndarray) -> np.ndarray:
    """a.T @ a for any 2-D array (`gram` on a float64 C-ordered copy where it is not one already)."""
    return gram(np.ascontiguousarray(a, dtype=np.float64))


def covariance(x: np.ndarray) -> np.ndarray:
    """The sample covariance of the columns of `x` (divisor n - 1), the same bits on every machine."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"a covariance needs a 2-D array of at least 2 rows, got shape {x.shape}")
    return gram(centred(x)) / (x.shape[0] - 1)
