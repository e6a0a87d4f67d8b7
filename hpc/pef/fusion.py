"""PEF's fusion step (../shared/docs/pef.md §3): add cross-cluster edges to the union of cluster DAGs.

F1 screens every cross-cluster pair with Fisher's z test given pa(i) ∪ pa(j): pairs are
grouped by the sizes of their conditioning sets and their partial correlations computed as
batched (k+2)x(k+2) inverses, one cluster pair at a time (a pure function, so a dask client
can map it). F2 re-tests the survivors sequentially, F3 adds edges whose likelihood gain in
both directions beats the penalty, never closing a cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Set
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.special import ndtr

from hpc.checks import check_number
from hpc.graphs.equivalence import reaches
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import residual_variance
from hpc.learners.gram_kernel import cross_products, stacked_gram
from hpc.pef.neighbours import row_blocks, strongest
from hpc.pef.partition import cluster_labels


@dataclass(frozen=True)
class FusionConfig:
    alpha1: float = 1e-3  # F1 screening level
    alpha2: float | None = None  # F2 level; None = 1 / p^2
    prescreen_alpha: float | None = None  # marginal test before F1; None = F1 tests every cross pair
    penalty: float | None = None  # F3 threshold; None = 2 ln p (RIC), or ln n when p <= sqrt(n)
    chunk: int = 100_000  # pairs per batched inverse, at most ...
    chunk_entries: int = 4_000_000  # ... this many matrix entries per batch (32 MB): wide parent sets, fewer pairs
    # Above this many variables F1 screens only the cross pairs among each variable's `candidates` most
    # correlated others (0: at every size). With the true DAG inside clusters (scripts/bench_screening.py,
    # seed 100 at 10,000 variables), 100 found 0.377 of sf's true cross edges against 0.395 for every pair
    # (20: 0.338, 50: 0.364), and on er and Alarm 50 was within 0.001 of every pair.
    candidates_above: int = 20_000
    candidates: int = 100

    def validate(self) -> None:
        check_number("alpha1", self.alpha1, 0.0, 1.0, open_lo=True, open_hi=True)
        for name in ("alpha2", "prescreen_alpha"):
            check_number(name, getattr(self, name), 0.0, 1.0, open_lo=True, open_hi=True, optional=True)
        check_number("penalty", self.penalty, 0.0, open_lo=True, optional=True)
        check_number("chunk", self.chunk, 1, integer=True)
        check_number("chunk_entries", self.chunk_entries, 1, integer=True)
        check_number("candidates_above", self.candidates_above, 0, integer=True)
        check_number("candidates", self.candidates, 1, integer=True)


@dataclass
class FusionStats:
    pairs_screened: int = 0
    pairs_tested: int = 0
    f1_candidates: int = 0
    f2_candidates: int = 0
    edges_added: int = 0
    penalty: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def fisher_z_pvalues(r: np.ndarray, n: int, k: np.ndarray | int) -> np.ndarray:
    """Two-sided p-values of Fisher's z for partial correlations r given k variables (Tetrad's test)."""
    r = np.clip(np.abs(r), 0.0, 1.0 - 1e-15)
    df = n - 3 - np.asarray(k, dtype=np.float64)
    z = np.arctanh(r) * np.sqrt(np.maximum(df, 0.0))
    return np.where(df > 0, 2.0 * ndtr(-z), 1.0)


#: Conditioning sets up to this size are eliminated in numpy (see partial_correlations); larger ones inverted.
ELIMINATE_UP_TO = 6
#: F2 candidates whose p-values are computed ahead together (memory: n x batch x (k+2) floats).
F2_BATCH = 1024
#: Smallest conditional variance the elimination divides by; below it the batch is inverted instead.
PIVOT_FLOOR = 1e-10


def partial_correlations(corr: np.ndarray, index: np.ndarray) -> np.ndarray:
    """rho(T0, T1 | T2..) for every row T of `index` (m, k+2), from a correlation matrix."""
    if index.shape[1] == 2:
        return corr[index[:, 0], index[:, 1]]
    return stacked_partial_correlations(corr[index.T[:, None, :], index.T[None, :, :]])


def stacked_partial_correlations(work: np.ndarray) -> np.ndarray:
    """rho(T0, T1 | T2..) of each of m covariance (or correlation) matrices stacked as (k+2, k+2, m).

    Fusion tests millions of pairs with small conditioning sets, where one LAPACK inverse per matrix
    costs more than its arithmetic: those are eliminated all at once instead (Gaussian elimination
    vectorised over the batch, which sits on the last axis so every step is a contiguous vector
    operation, down to the 2 x 2 Schur complement; 2-3x faster, same values to rounding). Larger
    sets, and (near-)singular ones, take the (pseudo-)inverse.
    """
    if work.shape[0] - 2 <= ELIMINATE_UP_TO:
        left = work.copy()
        for t in range(left.shape[0] - 1, 1, -1):  # eliminate T_t; the block left is T_0 .. T_(t-1)
            pivot = left[t, t]
            if not (pivot > PIVOT_FLOOR).all():
                break
            factor = left[:t, t] / pivot
            left[:t, :t] -= factor[:, None, :] * left[t, :t][None, :, :]
        else:
            var = left[0, 0] * left[1, 1]
            if (var > PIVOT_FLOOR**2).all():
                return left[0, 1] / np.sqrt(var)
    sub = np.moveaxis(work, -1, 0)
    try:
        prec = np.linalg.inv(sub)
    except np.linalg.LinAlgError:
        prec = np.linalg.pinv(sub)
    return -prec[:, 0, 1] / np.sqrt(prec[:, 0, 0] * prec[:, 1, 1])


@dataclass(frozen=True)
class ParentSets:
    """Parents of every variable in the union of cluster DAGs, as one CSR pair of arrays.

    One object, so a dask client ships it to a worker as a single piece of data (a dict of
    per-variable arrays would be scattered as one future per variable, and every F1 task
    would then depend on p futures).
    """

    ptr: np.ndarray
    idx: np.ndarray

    @classmethod
    def of(cls, dag: PDAG) -> ParentSets:
        ptr, idx = dag.csr("parents")
        return cls(ptr, idx)

    def __getitem__(self, v: int) -> np.ndarray:
        return self.idx[self.ptr[v]:self.ptr[v + 1]]


def screen_block(z: np.ndarray, rows: np.ndarray, cols: np.ndarray, parents: ParentSets,
                 n: int, config: FusionConfig) -> tuple[np.ndarray, np.ndarray, int]:
    """F1 for all pairs (i in rows, j in cols): the pairs with p < alpha1, their p-values, pairs tested.

    `z` is standardised data (z.T @ z = correlation), `parents[v]` the parents of v in the
    union of cluster DAGs (inside v's own cluster, so pa(i) and pa(j) never overlap).
    """
    local = np.unique(np.concatenate([rows, cols, *(parents[int(v)] for v in (*rows, *cols))]).astype(np.int64))
    pos = np.full(len(parents.ptr) - 1, -1, dtype=np.int64)
    pos[local] = np.arange(len(local))
    corr = cross_products(z[:, local])
    ii, jj = np.meshgrid(pos[rows], pos[cols], indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    if config.prescreen_alpha is not None:
        keep = fisher_z_pvalues(corr[ii, jj], n, 0) < config.prescreen_alpha
        ii, jj = ii[keep], jj[keep]
    pa = [pos[parents[int(v)]] for v in local]
    count = np.array([len(x) for x in pa])
    width = int(count.max()) if len(count) else 0
    padded = np.full((len(local), max(width, 1)), -1, dtype=np.int64)
    for v, x in enumerate(pa):
        padded[v, :len(x)] = x
    found_pairs, found_p = [], []
    ki, kj = count[ii], count[jj]
    groups = ki * (width + 1) + kj  # pairs with the same conditioning-set sizes share one batched inverse
    order = np.argsort(groups, kind="stable")
    keys, starts = np.unique(groups[order], return_index=True)
    for key, sel in zip(keys.tolist(), np.split(order, starts[1:])):
        a, b = divmod(key, width + 1)
        step = max(1, min(config.chunk, config.chunk_entries // (a + b + 2) ** 2))
        for lo in range(0, len(sel), step):
            s = sel[lo:lo + step]
            index = np.column_stack([ii[s], jj[s], padded[ii[s], :a], padded[jj[s], :b]])
            pv = fisher_z_pvalues(partial_correlations(corr, index), n, a + b)
            hit = pv < config.alpha1
            found_pairs.append(np.column_stack([local[ii[s][hit]], local[jj[s][hit]]]))
            found_p.append(pv[hit])
    if not found_pairs:
        return np.empty((0, 2), dtype=np.int64), np.empty(0), len(ii)
    return np.concatenate(found_pairs).astype(np.int64), np.concatenate(found_p), len(ii)


def conditioning_set(parents: ParentSets, i: int, j: int, extra: Set[int] = frozenset()) -> list[int]:
    """What F2 tests the pair (i, j) given: pa(i) ∪ pa(j) ∪ `extra` (its accepted neighbours), minus i and j."""
    return sorted((set(parents[i].tolist()) | set(parents[j].tolist()) | extra) - {i, j})


def conditioned_pvalues(z: np.ndarray, pairs: np.ndarray, parents: ParentSets, n: int) -> np.ndarray:
    """Fisher's z p-value of every pair (i, j) given pa(i) ∪ pa(j) minus {i, j}, from the standardized
    data `z`: the small covariance matrices are built and solved in batches of equal conditioning size."""
    conds = [conditioning_set(parents, i, j) for i, j in pairs.tolist()]
    sizes = np.fromiter(map(len, conds), dtype=np.int64, count=len(conds))
    out = np.empty(len(pairs))
    for k in np.unique(sizes).tolist():
        sel = np.flatnonzero(sizes == k)
        index = np.column_stack([pairs[sel], np.array([conds[s] for s in sel], dtype=np.int64).reshape(len(sel), k)])
        cols = np.ascontiguousarray(np.moveaxis(z[:, index], 0, -1))  # (m, k+2, n)
        cov = stacked_gram(cols.astype(np.float64, copy=False))
        out[sel] = fisher_z_pvalues(stacked_partial_correlations(np.moveaxis(cov, 0, -1)), n, k)
    return out


def screen_pairs(z: np.ndarray, pairs: np.ndarray, parents: ParentSets, n: int,
                 config: FusionConfig) -> tuple[np.ndarray, np.ndarray]:
    """F1 for the given cross-cluster pairs: those with p < alpha1, and their p-values, in batches of at
    most `chunk_entries` data values."""
    found, pvals = [np.empty((0, 2), dtype=np.int64)], [np.empty(0)]
    width = max(1, len(parents.idx) // max(len(parents.ptr) - 1, 1))  # typical conditioning set size
    step = max(1, config.chunk_entries // ((2 * width + 2) * z.shape[0]))
    for lo in range(0, len(pairs), step):
        batch = pairs[lo:lo + step]
        pv = conditioned_pvalues(z, batch, parents, n)
        hit = pv < config.alpha1
        found.append(batch[hit])
        pvals.append(pv[hit])
    return np.concatenate(found), np.concatenate(pvals)


def screen_neighbours(z: np.ndarray, z32: np.ndarray, lo: int, hi: int, labels: np.ndarray, parents: ParentSets,
                      n: int, config: FusionConfig) -> tuple[np.ndarray, np.ndarray, int]:
    """F1 for rows lo..hi-1 and their `candidates` most correlated others (found here from `z32`, the data in
    float32), as screen_near."""
    return screen_near(z, lo, strongest(z32, lo, hi, config.candidates)[0], labels, parents, n, config)


def screen_near(z: np.ndarray, lo: int, near: np.ndarray, labels: np.ndarray, parents: ParentSets, n: int,
                config: FusionConfig) -> tuple[np.ndarray, np.ndarray, int]:
    """F1 for rows lo..lo+len(near)-1 and their neighbours `near` in other clusters (`labels`), as pairs
    (i < j) tested given pa(i) ∪ pa(j); like screen_block, (pairs found, p-values, pairs tested)."""
    rows = np.repeat(np.arange(lo, lo + len(near)), near.shape[1])
    cols = near.ravel()
    cross = labels[rows] != labels[cols]
    a, b = np.minimum(rows[cross], cols[cross]), np.maximum(rows[cross], cols[cross])
    p = len(labels)
    keys = np.unique(a * p + b)
    pairs = np.stack([keys // p, keys % p], axis=1)
    found, pv = screen_pairs(z, pairs, parents, n, config)
    return found, pv, len(pairs)


#: Up to this many variables F2 and F3 read their one-pair-at-a-time cross products from the data's whole Gram
#: matrix (p² floats: 200 MB at 5,000, 800 MB at 10,000, made once: about 9 s at 10,000 on 1,000 rows) instead
#: of n rows each.
GRAM_UPTO = 10_000


class CrossProducts:
    """z[:, t].T @ z[:, t] for the small index lists F2 and F3 test one pair at a time. On dense data most F2
    candidates have an accepted pair at an end when their turn comes (modular-5000, seed 100: 59,068 of the
    first 60,000), each a gather and product over all n rows: 250 s of one run. From the Gram matrix it is a
    k x k gather. Made on first use, so a fusion that never tests one at a time does not pay for it; by
    hpc.learners.gram_kernel, as F1's, so a test near its level decides the same on every machine."""

    def __init__(self, z: np.ndarray) -> None:
        self.z = z
        self.gram: np.ndarray | None = None

    def __call__(self, t: list[int]) -> np.ndarray:
        if self.z.shape[1] > GRAM_UPTO:
            return cross_products(self.z[:, t])
        if self.gram is None:
            self.gram = cross_products(self.z)
        return self.gram[np.ix_(t, t)]


def _pcor_pvalue(products: CrossProducts, i: int, j: int, cond: list[int], n: int) -> float:
    t = [i, j, *cond]
    return float(fisher_z_pvalues(partial_correlations(products(t), np.arange(len(t))[None, :]), n, len(cond))[0])


def _residual_variance(products: CrossProducts, j: int, cond: list[int]) -> float:
    t = [j, *cond]
    cov = products(t)
    return float(cov[0, 0]) if not cond else residual_variance(cov, 0, np.arange(1, len(t)))


def parent_gain(products: CrossProducts, n: int, child: int, parents: set[int], new: int) -> float:
    """The log-likelihood gain of `new` as one more parent of `child`."""
    return 0.5 * n * np.log(_residual_variance(products, child, sorted(parents))
                            / _residual_variance(products, child, sorted(parents | {new})))


Blocks = list[tuple]
#: Runs F1 as fn(*data, *block, parents, n, config) for each block: `data` is (z,) for screen_block,
#: (z, z in float32) for screen_neighbours.
Screener = Callable[[tuple[np.ndarray, ...], Callable, Blocks, ParentSets, int, FusionConfig],
                    Iterable[tuple[np.ndarray, np.ndarray, int]]]


def screen_serial(data: tuple[np.ndarray, ...], fn: Callable, blocks: Blocks, parents: ParentSets, n: int,
                  config: FusionConfig) -> Iterable[tuple[np.ndarray, np.ndarray, int]]:
    return (fn(*data, *block, parents, n, config) for block in blocks)


def fuse(z: np.ndarray, n: int, union: PDAG, clusters: list[np.ndarray], config: FusionConfig = FusionConfig(),
         screen: Screener = screen_serial, progress: Callable[[str, int, int], None] | None = None,
         near: np.ndarray | None = None, allows: Callable[[int, int], bool] | None = None,
         required: np.ndarray | None = None) -> tuple[PDAG, FusionStats]:
    """Fuse the union of cluster DAGs (`union`, directed) into one DAG over all variables: F1 screens every
    cross-cluster pair, F2 tests the survivors given both ends' parents, F3 adds those that pay their BIC.

    `screen` runs F1 over the blocks, in any order (serially, or on dask); `near` are the neighbours the
    partition found (see f1_candidates). With prior knowledge, F3 adds an edge only in a direction
    `allows(a, b)` permits, and the `required` edges (index pairs) between clusters come first.
    """
    stats = FusionStats()
    parents = ParentSets.of(union)
    start = time.perf_counter()
    cand = f1_candidates(z, n, clusters, parents, config, screen, stats, progress, near)
    stats.seconds["f1"] = time.perf_counter() - start
    start = time.perf_counter()
    products = CrossProducts(z)  # F2's and F3's
    accepted = f2_accepted(z, products, n, cand, parents,
                           config.alpha2 if config.alpha2 is not None else 1.0 / union.p**2)
    stats.f2_candidates = len(accepted)
    stats.seconds["f2"] = time.perf_counter() - start
    start = time.perf_counter()
    p = union.p
    stats.penalty = float(config.penalty if config.penalty is not None else (
        np.log(n) if p <= np.sqrt(n) else 2.0 * np.log(p)))
    added = f3_added(products, n, union, parents, accepted, stats.penalty, allows, required)
    stats.edges_added = len(added)
    stats.seconds["f3"] = time.perf_counter() - start
    return union.with_edges(np.concatenate([union.directed, added])), stats


def f1_candidates(z: np.ndarray, n: int, clusters: list[np.ndarray], parents: ParentSets, config: FusionConfig,
                  screen: Screener, stats: FusionStats, progress: Callable[[str, int, int], None] | None,
                  near: np.ndarray | None = None) -> np.ndarray:
    """F1: the cross-cluster pairs `screen` keeps, most significant first (ties by pair). Above
    `candidates_above` variables only pairs among each variable's strongest neighbours: `near` (p, k >=
    candidates, strongest first) when the partition found them, else found block by block here."""
    p = len(parents.ptr) - 1
    fn: Callable[..., tuple[np.ndarray, np.ndarray, int]]
    data: tuple[np.ndarray, ...]
    blocks: Blocks
    if p > config.candidates_above:
        labels = cluster_labels(clusters, p)
        what = "blocks of variables"
        if near is not None and near.shape[1] >= config.candidates:
            fn, data = screen_near, (z,)
            blocks = [(lo, near[lo:hi, :config.candidates], labels) for lo, hi in row_blocks(p)]
        else:
            fn, data = screen_neighbours, (z, z.astype(np.float32))
            blocks = [(lo, hi, labels) for lo, hi in row_blocks(p)]
    else:
        pairs = [(a, b) for a in range(len(clusters)) for b in range(a + 1, len(clusters))]
        stats.pairs_screened = sum(len(clusters[a]) * len(clusters[b]) for a, b in pairs)
        fn, blocks, what = screen_block, [(clusters[a], clusters[b]) for a, b in pairs], "cluster pairs"
        data = (z,)
    found, pvals = [np.empty((0, 2), dtype=np.int64)], [np.empty(0)]
    for done, (fp, pv, tested) in enumerate(screen(data, fn, blocks, parents, n, config), start=1):
        found.append(fp)
        pvals.append(pv)
        stats.pairs_tested += tested
        if progress:
            progress(f"fusion F1 ({what})", done, len(blocks))
    cand, cand_p = np.concatenate(found), np.concatenate(pvals)
    if fn is not screen_block:  # a pair near both its ends was tested from both rows' blocks
        stats.pairs_screened = stats.pairs_tested
        _, first = np.unique(cand[:, 0] * p + cand[:, 1], return_index=True)
        cand, cand_p = cand[first], cand_p[first]
    stats.f1_candidates = len(cand)
    return cand[np.lexsort((cand[:, 1], cand[:, 0], cand_p))]


def f2_accepted(z: np.ndarray, products: CrossProducts, n: int, cand: np.ndarray, parents: ParentSets,
                alpha2: float) -> list[tuple[int, int]]:
    """F2: the candidates still dependent given pa(i) and pa(j), and the pairs accepted before them at i or j.

    Sequential in p-value order (an accepted pair joins the conditioning sets of later pairs at its
    ends). On sparse data most pairs have no accepted neighbour yet when their turn comes: their p-value
    given pa(i) ∪ pa(j) is computed ahead in batches (for the pairs with none when the batch starts), and
    only the others one by one (CrossProducts)."""
    accepted: list[tuple[int, int]] = []
    linked: dict[int, set[int]] = {}
    for lo in range(0, len(cand), F2_BATCH):
        batch = cand[lo:lo + F2_BATCH]
        free = np.array([i not in linked and j not in linked for i, j in batch.tolist()], dtype=bool)
        ahead = np.full(len(batch), np.nan)
        ahead[free] = conditioned_pvalues(z, batch[free], parents, n)
        for (i, j), p_ahead in zip(batch.tolist(), ahead.tolist()):
            extra = linked.get(i, set()) | linked.get(j, set())
            p_value = _pcor_pvalue(products, i, j, conditioning_set(parents, i, j, extra), n) if extra else p_ahead
            if p_value < alpha2:
                accepted.append((i, j))
                linked.setdefault(i, set()).add(j)
                linked.setdefault(j, set()).add(i)
    return accepted


def f3_added(products: CrossProducts, n: int, union: PDAG, parents: ParentSets, accepted: list[tuple[int, int]],
             penalty: float, allows: Callable[[int, int], bool] | None = None,
             required: np.ndarray | None = None) -> np.ndarray:
    """F3: the accepted pairs whose BIC gain beats `penalty` in both directions, oriented the way that keeps
    the graph acyclic, else the way that gains more; only ways `allows` permits. `required` edges not yet
    in the graph come first (unless one would close a cycle with the clusters' edges)."""
    p = union.p
    pa = [set(parents[v].tolist()) for v in range(p)]
    children = [set(union.children(v).tolist()) for v in range(p)]
    added = []

    def add(a: int, b: int) -> None:
        pa[b].add(a)
        children[a].add(b)
        added.append((a, b))

    for a, b in ([] if required is None else required.tolist()):
        if a not in pa[b] and b not in pa[a] and not reaches(children, b, a):
            add(a, b)
    for i, j in accepted:
        if j in pa[i] or i in pa[j]:
            continue
        gain_ij, gain_ji = parent_gain(products, n, j, pa[j], i), parent_gain(products, n, i, pa[i], j)
        if 2 * min(gain_ij, gain_ji) <= penalty:
            continue
        if reaches(children, j, i):
            a, b = j, i
        elif reaches(children, i, j):
            a, b = i, j
        else:
            a, b = (i, j) if gain_ij >= gain_ji else (j, i)
            if allows is not None and not allows(a, b):
                a, b = b, a
        if allows is None or allows(a, b):
            add(a, b)
    return np.array(added, dtype=np.int64).reshape(-1, 2)
