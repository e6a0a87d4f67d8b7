"""PEF's partition step: average-linkage clustering on d_ij = 1 - |r_ij|, then merge small clusters.

Up to `sparse_above` variables the linkage is a nearest-neighbour-chain algorithm on one square
float32 distance matrix, updated in place (Lance-Williams, size-weighted): p^2 * 4 bytes (1.6 GB
at p = 20,000) where scipy's linkage needs the float64 condensed vector plus a working copy.
Numpy does each row operation, so the Python loop runs O(p) times, not O(p^2).

Above it, the same average linkage runs on a sparse matrix: each variable keeps its `neighbours`
strongest |r| (hpc.pef.neighbours) and every other |r| counts as 0, so memory grows with p * k.
A cluster pair's linkage is then the sum of the kept |r| between them over |a| |b|, which merging
keeps exactly by adding sums.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from hpc.checks import check_number
from hpc.errors import PsleError
from hpc.graphs.pdag import PDAG
from hpc.pef.communities import community_partition
from hpc.pef.neighbours import Near, nearest, similarity_graph


#: Default of PartitionConfig.whole_below.
WHOLE_BELOW = 200
#: Default of PartitionConfig.sparse_above: the dense matrix's 1.6 GB at 20,000 variables is the most
#: we spend; at 30,000 it took 3.6 GB, at 100,000 it would take 40 GB.
SPARSE_ABOVE = 20_000
#: Default of PartitionConfig.neighbours. On seed 100 (no test seed) of Alarm, er and sf at 10,000 variables, the
#: share of true edges inside a cluster was largest with 20 (Alarm 0.80, er 0.48, sf 0.45), then 50, 100 and
#: the dense matrix (0.75, 0.46, 0.43); Alarm's whole run gave SHD 3,594 (20), 3,701 (50), 3,847 (dense).
NEIGHBOURS = 20


#: Partition rules (PartitionConfig.rule).
RULES = ("linkage", "communities")


@dataclass(frozen=True)
class PartitionConfig:
    large_fraction: float = 0.05  # a cluster is large when its size >= ceil(fraction * p) ...
    min_large: int = 2  # ... and at least this, so tiny problems do not split into singletons
    block: int = 2048  # rows of the correlation matrix computed at a time
    # Context: each cluster's search also sees this many outside variables per cluster variable (the
    # ones most correlated with it), so parents in other clusters do not show up as extra edges
    # inside; only edges among the cluster's own variables are kept. 0 = the paper's PEF.
    context: float = 0.0
    # Size cap: a cluster above this many variables is split along its own average-linkage tree, since a
    # member's time grows about as size^2 (bench/HISTORY.md) and one 3,000-variable cluster can outlast all
    # the others. It only bites above ~5,000 variables; at Alarm-10000 it made P/SLE 19x faster at the
    # same accuracy. With few rows the cap is lower: half the rows (largest_cluster). 0 = no cap, the paper's
    # rule (the paper_* experiments keep it).
    max_size: int = 500
    # Problems with fewer variables are learned whole, as one cluster: below this size cutting saves no
    # time (BENCHMARKS.md, "Where cutting starts to pay") and costs accuracy at the seams. 0 = always
    # partition, the paper's rule (the paper_* experiments keep it).
    whole_below: int = WHOLE_BELOW
    # Above this many variables the linkage runs on each variable's `neighbours` strongest |r| (the others
    # count as 0), so memory grows with p, not p^2 (0: at every size).
    sparse_above: int = SPARSE_ABOVE
    neighbours: int = NEIGHBOURS
    # "linkage": the paper's average linkage on 1 - |r| (then the size cap); "communities": communities of
    # the ridge partial-correlation graph packed up to the size cap (hpc.pef.communities), which finds
    # modules the linkage cuts through; it needs a cap (max_size > 0).
    rule: str = "linkage"

    def settings(self) -> dict[str, Any]:
        """What a run's checkpoint is keyed by (the default rule is left out: checkpoints from before there was a
        choice still resume)."""
        return {k: v for k, v in asdict(self).items() if not (k == "rule" and v == "linkage")}

    def validate(self) -> None:
        check_number("large_fraction", self.large_fraction, 0.0, 1.0, open_lo=True)
        check_number("context", self.context, 0.0, 4.0)
        check_number("min_large", self.min_large, 1, integer=True)
        check_number("block", self.block, 1, integer=True)
        check_number("max_size", self.max_size, 0, integer=True)
        check_number("whole_below", self.whole_below, 0, integer=True)
        check_number("sparse_above", self.sparse_above, 0, integer=True)
        check_number("neighbours", self.neighbours, 1, integer=True)
        if self.rule not in RULES:
            raise PsleError(f"rule={self.rule!r}: must be one of {', '.join(RULES)}")
        if self.rule == "communities" and not self.max_size:
            raise PsleError("rule=communities packs clusters up to max_size: give max_size > 0")
        if 0 < self.max_size < 2 * self.min_large:
            raise PsleError(f"max_size={self.max_size}: must be 0 (no cap) or at least 2 * min_large = "
                            f"{2 * self.min_large}")


#: Rows per variable a cluster's search keeps at least (partition's cap on few rows; see largest_cluster).
ROWS_PER_VARIABLE = 2


def standardize(x: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """Columns scaled so that z.T @ z is the correlation matrix."""
    z = np.asarray(x, dtype=np.float64)
    z = z - z.mean(axis=0)
    norms = np.sqrt((z * z).sum(axis=0))
    norms[norms == 0] = 1.0
    return (z / norms).astype(dtype)


def cluster_labels(clusters: list[np.ndarray], p: int) -> np.ndarray:
    """Each of the p variables' cluster (its index in `clusters`)."""
    labels = np.empty(p, dtype=np.int64)
    for c, idx in enumerate(clusters):
        labels[idx] = c
    return labels


def crossing_share(graph: PDAG, clusters: list[np.ndarray]) -> float:
    """The share of `graph`'s edges whose ends lie in two of `clusters`: low where the grouping found blocks,
    high where the graph has none and the cuts went through it."""
    where = cluster_labels(clusters, graph.p)
    ends = np.concatenate([graph.directed, graph.undirected])
    return float(np.mean(where[ends[:, 0]] != where[ends[:, 1]])) if len(ends) else 0.0


def context_variables(z: np.ndarray, cluster: np.ndarray, count: int) -> np.ndarray:
    """The `count` variables outside `cluster` most correlated (|r|, max over the cluster) with it;
    `z` is the standardized data (`standardize`)."""
    strength = np.abs(z[:, cluster].T @ z).max(axis=0)
    strength[cluster] = -1.0
    count = min(count, z.shape[1] - len(cluster))
    if count <= 0:
        return np.empty(0, dtype=np.int64)
    top = np.argpartition(-strength, count - 1)[:count]
    return np.sort(top[np.argsort(-strength[top], kind="stable")][:count]).astype(np.int64)


def distance_matrix(x: np.ndarray, block: int = 2048) -> np.ndarray:
    """Square float32 matrix 1 - |corr(x)| with an infinite diagonal, built in row blocks."""
    z = standardize(x)
    p = z.shape[1]
    d = np.empty((p, p), dtype=np.float32)
    for lo in range(0, p, block):
        hi = min(lo + block, p)
        np.matmul(z[:, lo:hi].T, z, out=d[lo:hi])
        np.abs(d[lo:hi], out=d[lo:hi])
        np.subtract(1.0, d[lo:hi], out=d[lo:hi])
    np.fill_diagonal(d, np.inf)
    return d


def average_linkage(d: np.ndarray) -> np.ndarray:
    """Average-linkage merge list in scipy's format (p-1, 4): [id_a, id_b, distance, size].

    Destroys `d` (used as working memory). Merges come out of the NN-chain in arbitrary order;
    average linkage is reducible, so sorting them by height gives the usual dendrogram.
    """
    p = d.shape[0]
    if p < 2:
        return np.empty((0, 4))
    size = np.ones(p, dtype=np.float64)
    raw = np.empty((p - 1, 4))
    chain: list[int] = []
    alive = np.ones(p, dtype=bool)
    first_alive = 0
    for t in range(p - 1):
        if not chain:
            while not alive[first_alive]:
                first_alive += 1
            chain.append(first_alive)
        while True:
            a = chain[-1]
            row = d[a]
            b = int(np.argmin(row))
            if len(chain) > 1 and row[chain[-2]] <= row[b]:
                b = chain[-2]
            if len(chain) > 1 and b == chain[-2]:
                break
            chain.append(b)
        chain.pop()
        chain.pop()
        a, b = (a, b) if a < b else (b, a)
        height = float(d[a, b])
        na, nb = size[a], size[b]
        merged = (na * d[a] + nb * d[b]) / (na + nb)
        d[a] = merged
        d[:, a] = merged
        d[a, a] = np.inf
        d[b] = np.inf
        d[:, b] = np.inf
        alive[b] = False
        size[a] = na + nb
        raw[t] = (a, b, height, na + nb)
    return _relabel(raw, p)


def _relabel(raw: np.ndarray, p: int) -> np.ndarray:
    """Sort merges by height and name clusters as scipy does (p + merge index)."""
    order = np.argsort(raw[:, 2], kind="stable")
    parent = np.arange(2 * p - 1)

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    z = np.empty_like(raw)
    for t, k in enumerate(order):
        ra, rb = find(int(raw[k, 0])), find(int(raw[k, 1]))
        parent[ra] = parent[rb] = p + t
        z[t] = (min(ra, rb), max(ra, rb), raw[k, 2], raw[k, 3])
    return z


def sparse_average_linkage(s: sp.spmatrix) -> np.ndarray:
    """Average-linkage merge list (scipy's format) for the similarity |r| held in the symmetric sparse `s`;
    absent entries are 0, i.e. distance 1.

    The nearest-neighbour chain again, on one dict of summed |r| per cluster: a merge adds the smaller
    dict into the larger and tells the merged one's neighbours, so a step costs its clusters' degrees.
    Clusters with nothing left in common (separate components) are joined last, at height 1.
    """
    s = sp.csr_matrix(s)
    p = s.shape[0]
    links: list[dict[int, float]] = [
        {j: v for j, v in zip(s.indices[s.indptr[i]:s.indptr[i + 1]].tolist(), s.data[s.indptr[i]:s.indptr[i + 1]].tolist())
         if j != i} for i in range(p)]
    size = [1] * p
    alive = [True] * p
    raw: list[tuple[int, int, float, int]] = []
    chain: list[int] = []
    start = 0
    while True:
        if not chain:
            while start < p and not (alive[start] and links[start]):
                start += 1
            if start == p:
                break
            chain.append(start)
        a = chain[-1]
        best, value = -1, -1.0
        for c, total in links[a].items():  # the largest mean |r| (times size[a]), ties to the smaller index
            v = total / size[c]
            if v > value or (v == value and c < best):
                best, value = c, v
        if len(chain) > 1 and links[a][chain[-2]] / size[chain[-2]] >= value:
            best = chain[-2]
        if len(chain) == 1 or best != chain[-2]:
            chain.append(best)
            continue
        chain.pop()
        chain.pop()
        keep, gone = (a, best) if len(links[a]) >= len(links[best]) else (best, a)
        height = 1.0 - links[keep][gone] / (size[keep] * size[gone])
        merged, other = links[keep], links[gone]
        del merged[gone], other[keep]
        for c, total in other.items():
            merged[c] = merged.get(c, 0.0) + total
            near = links[c]
            near[keep] = near.get(keep, 0.0) + near.pop(gone)
        links[gone] = {}
        alive[gone] = False
        size[keep] += size[gone]
        raw.append((keep, gone, height, size[keep]))
    rest = [i for i in range(p) if alive[i]]
    for c in rest[1:]:
        size[rest[0]] += size[c]
        raw.append((rest[0], c, 1.0, size[rest[0]]))
    return _relabel(np.array(raw, dtype=np.float64).reshape(-1, 4), p) if raw else np.empty((0, 4))


def large_cluster_counts(z: np.ndarray, p: int, m: int) -> np.ndarray:
    """L(K) for K = p, p-1, ..., 1 (index p - K): clusters of size >= m after p - K merges."""
    size = np.ones(2 * p - 1, dtype=np.int64)
    counts = np.empty(p, dtype=np.int64)
    large = int(m <= 1) * p
    counts[0] = large
    for t in range(p - 1):
        a, b = int(z[t, 0]), int(z[t, 1])
        s = size[a] + size[b]
        size[p + t] = s
        large += int(s >= m) - int(size[a] >= m) - int(size[b] >= m)
        counts[t + 1] = large
    return counts


def cut(z: np.ndarray, p: int, k: int) -> np.ndarray:
    """Cluster label (0..k-1, in order of first variable) of every variable after p - k merges."""
    parent = np.arange(p)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    rep = np.arange(2 * p - 1)  # a representative variable of every dendrogram node
    for t in range(p - k):
        a, b = rep[int(z[t, 0])], rep[int(z[t, 1])]
        ra, rb = find(a), find(b)
        parent[max(ra, rb)] = min(ra, rb)
        rep[p + t] = min(ra, rb)
    roots = np.array([find(i) for i in range(p)])
    _, labels = np.unique(roots, return_inverse=True)
    return labels


def cluster_distances(x: np.ndarray, labels: np.ndarray, block: int = 2048) -> np.ndarray:
    """Average 1 - |r| between every two clusters (k x k), without a p x p matrix.

    Variables are put in cluster order first, so each block of |r| is summed per cluster by
    `np.add.reduceat` over contiguous runs (in float64), along its columns and then its rows.
    """
    k = int(labels.max()) + 1
    order = np.argsort(labels, kind="stable")
    z = standardize(x)[:, order]
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
    present = sorted_labels[starts]
    total = np.zeros((k, k))
    for lo in range(0, z.shape[1], block):
        hi = min(lo + block, z.shape[1])
        r = np.abs(z[:, lo:hi].T @ z)  # (block, p)
        by_column = np.add.reduceat(r, starts, axis=1, dtype=np.float64)  # (block, clusters present)
        runs = np.flatnonzero(np.r_[True, sorted_labels[lo + 1:hi] != sorted_labels[lo:hi - 1]])
        total[np.ix_(sorted_labels[lo + runs], present)] += np.add.reduceat(by_column, runs, axis=0)
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    return 1.0 - total / np.outer(sizes, sizes)


def sparse_cluster_distances(s: sp.spmatrix, labels: np.ndarray) -> np.ndarray:
    """Average 1 - |r| between every two clusters (k x k) when only the entries of sparse `s` count."""
    k = int(labels.max()) + 1
    onehot = sp.csr_matrix((np.ones(len(labels)), (np.arange(len(labels)), labels)), shape=(len(labels), k))
    total = (onehot.T @ sp.csr_matrix(s) @ onehot).toarray()
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    return 1.0 - total / np.outer(sizes, sizes)


def merge_small(dist: np.ndarray, sizes: np.ndarray, m: int, cap: int = 0) -> np.ndarray:
    """Merge the closest pair with at least one small (< m) cluster until none is small; with `cap`, only
    pairs whose union stays within it, so a small cluster with no such partner stays as it is: one piece
    over the cap would cost a search more than the stragglers cost the seams.

    Returns, for each input cluster, the index of the cluster it ends in (0..k'-1).
    """
    k = len(sizes)
    dist = dist.astype(np.float64).copy()
    np.fill_diagonal(dist, np.inf)
    sizes = sizes.astype(np.float64).copy()
    owner = np.arange(k)
    alive = np.ones(k, dtype=bool)
    while True:
        small = alive & (sizes < m)
        if not small.any() or alive.sum() == 1:
            break
        masked = np.where(small[:, None] & alive[None, :], dist, np.inf)
        if cap:
            masked = np.where(sizes[:, None] + sizes[None, :] <= cap, masked, np.inf)
            if not np.isfinite(masked).any():
                break
        a, b = np.unravel_index(int(np.argmin(masked)), masked.shape)
        a, b = min(a, b), max(a, b)
        na, nb = sizes[a], sizes[b]
        merged = (na * dist[a] + nb * dist[b]) / (na + nb)
        dist[a], dist[:, a] = merged, merged
        dist[a, a] = np.inf
        dist[b], dist[:, b] = np.inf, np.inf
        sizes[a], sizes[b] = na + nb, 0
        alive[b] = False
        owner[owner == b] = a
    _, final = np.unique(owner, return_inverse=True)
    return final


class Linkage:
    """The two things partition needs of a set of variables: its average-linkage tree, and the average
    distance between clusters of it; from the dense matrix, or from the sparse neighbour graph."""

    def __init__(self, x: np.ndarray, config: PartitionConfig, near: Near | None = None):
        self.x, self.block = x, config.block
        self.s: sp.csr_matrix | None = None
        if x.shape[1] > config.sparse_above:
            index, strength = near or nearest(standardize(x), x.shape[1], config.neighbours)
            self.s = similarity_graph(index[:, :config.neighbours], strength[:, :config.neighbours])

    def tree(self, idx: np.ndarray) -> np.ndarray:
        if self.s is None:
            return average_linkage(distance_matrix(self.x[:, idx], self.block))
        return sparse_average_linkage(self.s[idx][:, idx])

    def distances(self, idx: np.ndarray, labels: np.ndarray) -> np.ndarray:
        if self.s is None:
            return cluster_distances(self.x[:, idx], labels, self.block)
        return sparse_cluster_distances(self.s[idx][:, idx], labels)


def partition(x: np.ndarray, config: PartitionConfig = PartitionConfig(), near: Near | None = None) -> list[np.ndarray]:
    """PEF partition of the columns of `x`: a list of index arrays, each >= 5% of p (by default).

    Above `config.sparse_above` variables it needs every variable's `config.neighbours` strongest
    neighbours: `near` (at least that many, strongest first) when the caller found them
    (hpc.pef.neighbours.nearest, on its workers), else found here."""
    p = x.shape[1]
    if p == 0:
        raise PsleError("cannot partition data with no variables")
    m = max(int(np.ceil(config.large_fraction * p)), config.min_large)
    if p < 2 * m or p < config.whole_below:
        return [np.arange(p)]
    if config.rule == "communities":
        return community_partition(standardize(x, np.float64),
                                   largest_cluster(config.max_size, x.shape[0], config.min_large))
    linkage = Linkage(x, config, near)
    everything = np.arange(p)
    z = linkage.tree(everything)
    counts = large_cluster_counts(z, p, m)  # counts[p - K] = L(K)
    ks = p - np.arange(p)
    best = counts.max()
    k_star = int(ks[counts == best].min())
    labels = cut(z, p, k_star)
    sizes = np.bincount(labels)
    if (sizes < m).any():
        final = merge_small(linkage.distances(everything, labels), sizes, m)
        labels = final[labels]
    clusters = [np.flatnonzero(labels == c) for c in range(int(labels.max()) + 1)]
    if config.max_size:
        cap = largest_cluster(config.max_size, x.shape[0], config.min_large)
        clusters = [piece for idx in clusters for piece in split_large(linkage, idx, cap, config)]
    return clusters


def largest_cluster(max_size: int, n: int, min_large: int = 2) -> int:
    """The size cap on n rows: `max_size`, and at most n / ROWS_PER_VARIABLE (never under 2 min_large, the
    least cap PartitionConfig allows): a search over about as many variables as rows has a near-singular
    covariance, where BIC's scores and PC's tests are unreliable and FLOP refuses to run."""
    return max(min(max_size, n // ROWS_PER_VARIABLE), 2 * min_large)


def split_large(linkage: Linkage, idx: np.ndarray, cap: int, config: PartitionConfig) -> list[np.ndarray]:
    """`idx` as pieces of at most about `cap` variables: cut the cluster's own average-linkage tree at the
    fewest clusters whose largest fits the cap, then merge pieces under a quarter of the cap into their
    nearest neighbour while the union fits (so no piece is a handful of stragglers)."""
    n = len(idx)
    if n <= cap:
        return [idx]
    z = linkage.tree(idx)
    largest = np.concatenate([[1], np.maximum.accumulate(z[:, 3])])  # biggest cluster after t merges
    k = n - int(np.flatnonzero(largest <= cap).max())
    labels = cut(z, n, k)
    sizes = np.bincount(labels)
    m = max(cap // 4, config.min_large)
    if (sizes < m).any():
        labels = merge_small(linkage.distances(idx, labels), sizes, m, cap)[labels]
    return [idx[labels == c] for c in range(int(labels.max()) + 1)]
