"""PEF's partition by graph communities (`PartitionConfig.rule = "communities"`).

Average linkage on 1 - |r| cannot find modules whose chains of strong effects correlate variables far
apart: every variable is marginally correlated with much of its module and beyond it. Partial
correlations are not: they are large for a variable's parents, children and spouses only. So:

1. each variable's `NEIGHBOURS` largest ridge partial correlations |P_ij| / sqrt(P_ii P_jj), with
   P = (R + λ I)^-1, form a weighted graph (computed by Woodbury from the n x p data when n < p, one
   row block at a time, so nothing p x p is held);
2. Louvain communities of that graph, each above the size cap split by Louvain on its own subgraph
   (or, if Louvain leaves it whole, in two along its Fiedler vector);
3. clusters under `MIN_SIZE` join the partner they are most linked to (mean weight between them) whose
   union fits the cap; then the most linked pairs merge while their union fits (fewer, fuller clusters:
   fewer edges between clusters for fusion to find);
4. a few sweeps move single variables to the cluster holding most of their graph weight;
5. steps 2-4 run for `SEEDS` Louvain seeds and the partition cutting the least graph weight is kept.

Every step is seeded or exact, so the partition depends only on the data (in PEF's column order). Fewer
true edges cross its clusters than the linkage's on every family measured (BENCHMARKS.md, "Large
modules"). Memory: a few n x p arrays, p x NEIGHBOURS edges and a p x clusters matrix; with n >= p the
p x p ridge inverse.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh

#: Ridge added to the correlation matrix before inverting it: the tuning problems (seed 100 of every
#: family) changed by under 0.01 crossing share between 0.3 and 3.
RIDGE = 1.0
#: Partial correlations kept per variable (10-40 were within 0.01 on the tuning problems).
NEIGHBOURS = 20
#: Louvain seeds tried; the best cut is kept (Louvain's result varies by seed, by up to 0.02 crossing share).
SEEDS = 3
#: No cluster stays smaller than this if a partner fits the cap.
MIN_SIZE = 20
#: Most sweeps of single-variable moves.
SWEEPS = 5
BLOCK = 1024


def partial_correlation_graph(z: np.ndarray, k: int = NEIGHBOURS, ridge: float = RIDGE,
                              block: int = BLOCK) -> sp.csr_matrix:
    """Symmetric graph of each variable's k largest ridge |partial correlations| (weight: the larger of
    the two directions' values, which are equal; the union keeps an edge either end chose). `z`: the data
    standardized so that z.T @ z is the correlation matrix (hpc.pef.partition.standardize, in float64)."""
    n, p = z.shape
    k = min(k, p - 1)
    if n < p:  # (Z'Z + λI)^-1 = (I - Z'(ZZ' + λI)^-1 Z) / λ
        mz = np.linalg.solve(z @ z.T + ridge * np.eye(n), z)
        diag = (1.0 - np.einsum("ij,ij->j", z, mz)) / ridge
        z32, mz32 = z.astype(np.float32), mz.astype(np.float32)

        def rows(lo: int, hi: int) -> np.ndarray:
            b = -(z32[:, lo:hi].T @ mz32).astype(np.float64) / ridge
            b[np.arange(hi - lo), np.arange(lo, hi)] += 1.0 / ridge
            return b
    else:
        precision = np.linalg.inv(z.T @ z + ridge * np.eye(p))
        diag = np.diag(precision).copy()

        def rows(lo: int, hi: int) -> np.ndarray:
            return precision[lo:hi]
    scale = np.sqrt(diag)
    heads, tails, weights = [], [], []
    for lo in range(0, p, block):
        hi = min(lo + block, p)
        s = np.abs(rows(lo, hi)) / scale[lo:hi, None] / scale[None, :]
        s[np.arange(hi - lo), np.arange(lo, hi)] = -1.0
        top = np.argpartition(-s, k - 1, axis=1)[:, :k]
        heads.append(np.repeat(np.arange(lo, hi), k))
        tails.append(top.ravel())
        weights.append(np.take_along_axis(s, top, axis=1).ravel())
    a = sp.csr_matrix((np.concatenate(weights), (np.concatenate(heads), np.concatenate(tails))), shape=(p, p))
    return a.maximum(a.T).tocsr()


def _compact(labels: np.ndarray) -> np.ndarray:
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def louvain(w: sp.csr_matrix, seed: int) -> np.ndarray:
    labels = np.zeros(w.shape[0], dtype=np.int64)
    for c, members in enumerate(nx.community.louvain_communities(nx.from_scipy_sparse_array(w), weight="weight",
                                                                 seed=seed)):
        labels[list(members)] = c
    return labels


def fiedler_halves(w: sp.csr_matrix) -> np.ndarray:
    """Two halves along the normalised Laplacian's second eigenvector (a fixed start vector: reproducible)."""
    degree = np.asarray(w.sum(axis=1)).ravel() + 1e-12
    inv = sp.diags(1.0 / np.sqrt(degree))
    laplacian = sp.eye(w.shape[0]) - inv @ w @ inv
    values, vectors = eigsh(laplacian, k=2, sigma=-1e-3, which="LM", v0=np.ones(w.shape[0]))
    order = np.argsort(vectors[:, np.argsort(values)[1]], kind="stable")
    labels = np.zeros(w.shape[0], dtype=np.int64)
    labels[order[w.shape[0] // 2:]] = 1
    return labels


def split_to_cap(w: sp.csr_matrix, labels: np.ndarray, cap: int, seed: int) -> np.ndarray:
    labels = _compact(labels)
    fresh = int(labels.max()) + 1
    todo = [c for c in range(fresh) if (labels == c).sum() > cap]
    while todo:
        c = todo.pop()
        idx = np.flatnonzero(labels == c)
        sub = w[idx][:, idx]
        parts = louvain(sub, seed)
        if parts.max() == 0:
            parts = fiedler_halves(sub)
        pieces = [c]
        for q in np.unique(parts)[1:]:
            labels[idx[parts == q]] = fresh
            pieces.append(fresh)
            fresh += 1
        todo += [q for q in pieces if (labels == q).sum() > cap]
    return _compact(labels)


def merge(w: sp.csr_matrix, labels: np.ndarray, cap: int, small: int | None) -> np.ndarray:
    """Merge the most linked pair (mean weight between them) whose union fits `cap`: with `small`, only pairs
    with a cluster under it, until none is left (one with no partner that fits joins its most linked one
    anyway); without, any linked pair, until no linked pair fits."""
    labels = _compact(labels)
    k = int(labels.max()) + 1
    member = sp.csr_matrix((np.ones(len(labels)), (np.arange(len(labels)), labels)), shape=(len(labels), k))
    between = (member.T @ w @ member).toarray()
    size = np.bincount(labels, minlength=k).astype(np.float64)
    owner, alive, other = np.arange(k), np.ones(k, dtype=bool), ~np.eye(k, dtype=bool)
    while alive.sum() > 1:
        chosen = alive & (size < small) if small is not None else alive.copy()
        if not chosen.any():
            break
        pairs = chosen[:, None] & alive[None, :] & other
        fits = pairs & (size[:, None] + size[None, :] <= cap)
        if small is None:
            fits &= between > 0
        if not fits.any():
            if small is None:
                break
            fits = pairs
        link = np.where(fits, between / np.outer(size, size).clip(1), -np.inf)
        a, b = sorted(np.unravel_index(int(np.argmax(link)), link.shape))
        between[a] += between[b]
        between[:, a] += between[:, b]
        between[b], between[:, b] = 0, 0
        size[a], size[b] = size[a] + size[b], 0
        alive[b] = False
        owner[owner == b] = a
    return _compact(owner[labels])


def refine(w: sp.csr_matrix, labels: np.ndarray, cap: int, seed: int) -> np.ndarray:
    """Move single variables to the cluster holding most of their graph weight, if it has room and their own
    cluster stays at least MIN_SIZE; sweeps in a seeded order until none moves."""
    labels = _compact(labels).copy()
    p, k = len(labels), int(labels.max()) + 1
    weight_into = (w @ sp.csr_matrix((np.ones(p), (np.arange(p), labels)), shape=(p, k))).toarray()
    size = np.bincount(labels, minlength=k)
    rng = np.random.default_rng(seed)
    for _ in range(SWEEPS):
        moved = 0
        for v in rng.permutation(p):
            a = labels[v]
            if size[a] <= MIN_SIZE:
                continue
            room = np.where(size < cap, weight_into[v], -np.inf)
            b = int(np.argmax(room))
            if b == a or room[b] <= weight_into[v, a] + 1e-12:
                continue
            span = slice(w.indptr[v], w.indptr[v + 1])
            weight_into[w.indices[span], a] -= w.data[span]
            weight_into[w.indices[span], b] += w.data[span]
            labels[v] = b
            size[a] -= 1
            size[b] += 1
            moved += 1
        if not moved:
            break
    return _compact(labels)


def cut_share(w: sp.csr_matrix, labels: np.ndarray) -> float:
    """The share of the graph's weight between clusters."""
    upper = sp.triu(w, 1).tocoo()
    return float(upper.data[labels[upper.row] != labels[upper.col]].sum() / max(upper.data.sum(), 1e-300))


def communities(w: sp.csr_matrix, cap: int, seed: int) -> np.ndarray:
    labels = split_to_cap(w, louvain(w, seed), cap, seed)
    labels = merge(w, labels, cap, small=MIN_SIZE)
    return refine(w, merge(w, labels, cap, small=None), cap, seed)


def community_partition(z: np.ndarray, cap: int) -> list[np.ndarray]:
    """The columns of the standardized data `z` as clusters of at most `cap` (more only where a small cluster
    had no partner that fit)."""
    p = z.shape[1]
    if p <= cap:
        return [np.arange(p)]
    w = partial_correlation_graph(z)
    found = [communities(w, cap, seed) for seed in range(SEEDS)]
    best = min(range(SEEDS), key=lambda s: (cut_share(w, found[s]), s))
    labels = found[best]
    return [np.flatnonzero(labels == c) for c in range(int(labels.max()) + 1)]
