"""Greedy equivalence search (Chickering 2002) on Gaussian BIC, compiled with numba: the pattern whose order an
order search starts from (hpc.learners.tetrad.start_order).

Tetrad's fGES gave those starts, and on a cluster of 500 variables it took 20-57 s where the order search from its
start took 0.4-1.5 s (sf-1000, tuning seed 100): it re-derives the pattern after each edge with Java objects for
every edge and node set, on one thread (its threads break exact ties by timing). Here the graph is two boolean
matrices and a neighbour list per variable, bounded by the degree limit the start has anyway: 0.5-1.5 s there.

Insert(x, y, T) adds x -> y and directs T -> y, for T among y's undirected neighbours not adjacent to x, where T
with NA(y, x) (y's undirected neighbours adjacent to x) is a clique and every semi-directed path from y to x meets
it; its gain is y's local score with x against without, given y's parents, NA(y, x) and T. Delete(x, y, H) removes
x - y (or x -> y) and directs y -> H, for H in NA(y, x) whose rest is a clique. The forward phase (FES) takes the
best insert while one gains, never past `max_degree` neighbours; the backward phase (BES) then the best deletion.
After each, the pattern is rebuilt from its unshielded colliders by Meek's rules 1-3 (complete without background
knowledge, Meek 1995). Assuming faithfulness, as fGES does, the first FES scores only the pairs whose correlation
alone gains, and a second FES the pairs two steps apart through a non-collider, each followed by BES. Each arrow's
best gain is kept and recomputed where the graph changed near its ends; the one taken is always recomputed first,
so a stale gain is never applied. Ties go to the lowest indices and every loop runs in a fixed order: the same
input gives the same pattern on any machine. On exact covariances it finds the true pattern (tests/test_ges.py);
on sample data it found Tetrad's pattern or one of higher BIC on most problems tried.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from hpc.learners.bic import MIN_RESIDUAL
from hpc.learners.gram_kernel import residual
from hpc.learners.numba_cache import ensure_cache_folder

ensure_cache_folder()  # before the first @njit(cache=True): numba refuses one it has nowhere to cache

#: An arrow that cannot be inserted.
NONE = -math.inf
#: An insert or a deletion must raise the score by more than this.
TOLERANCE = 1e-9


@njit(cache=True, error_model="numpy")
def _score(cov: np.ndarray, y: int, cond: np.ndarray, n: float, cost: float) -> float:
    """y's local BIC (constants dropped, as the order search's) on the variables `cond`."""
    return -n * math.log(residual(cov, y, cond, MIN_RESIDUAL)) - cost * len(cond)


@njit(cache=True, error_model="numpy")
def _undirected(adj: np.ndarray, dr: np.ndarray, a: int, b: int) -> bool:
    return adj[a, b] and not dr[a, b] and not dr[b, a]


@njit(cache=True, error_model="numpy")
def _all_adjacent(adj: np.ndarray, v: int, others: np.ndarray) -> bool:
    """Whether v is adjacent to every one of `others`."""
    for w in others:
        if not adj[v, w]:
            return False
    return True


@njit(cache=True, error_model="numpy")
def _blocked(adj: np.ndarray, dr: np.ndarray, nb: np.ndarray, nd: np.ndarray, y: int, x: int,
             cond: np.ndarray) -> bool:
    """Whether every semi-directed path from y to x passes through `cond` (a mask over the variables)."""
    p = adj.shape[0]
    seen = np.zeros(p, dtype=np.bool_)
    stack = np.empty(p, dtype=np.int64)
    seen[y] = True
    stack[0] = y
    top = 1
    while top > 0:
        top -= 1
        u = stack[top]
        for i in range(nd[u]):
            v = nb[u, i]
            if seen[v] or cond[v] or dr[v, u]:
                continue
            if v == x:
                return False
            seen[v] = True
            stack[top] = v
            top += 1
    return True


@njit(cache=True, error_model="numpy")
def _cliques(adj: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every clique among `cand` (the empty one first, then depth first in `cand`'s order), as members
    flat[starts[c]:starts[c + 1]]. Enumerating cliques, not subsets, keeps a hub's many neighbours cheap: a subset
    is only ever scored as a clique."""
    m = len(cand)
    flat = np.empty(max(4 * m, 16), dtype=np.int64)
    starts = np.zeros(max(2 * m + 2, 16), dtype=np.int64)
    count, used = 1, 0
    clique = np.empty(m + 1, dtype=np.int64)  # the clique being grown
    nxt = np.zeros(m + 1, dtype=np.int64)  # the next candidate to try at each depth
    d = 0
    while True:
        if nxt[d] >= m:
            if d == 0:
                return flat[:used], starts[:count + 1]
            d -= 1
            continue
        j = nxt[d]
        nxt[d] += 1
        if not _all_adjacent(adj, cand[j], clique[:d]):
            continue
        clique[d] = cand[j]
        d += 1
        nxt[d] = j + 1
        if used + d > len(flat):
            flat = np.concatenate((flat, np.empty(len(flat) + d, dtype=np.int64)))
        if count + 2 > len(starts):
            starts = np.concatenate((starts, np.zeros(len(starts), dtype=np.int64)))
        flat[used:used + d] = clique[:d]
        used += d
        count += 1
        starts[count] = used


@njit(cache=True, error_model="numpy")
def _evaluate(cov: np.ndarray, n: float, cost: float, adj: np.ndarray, dr: np.ndarray, nb: np.ndarray,
              nd: np.ndarray, max_degree: int, x: int, y: int, chosen: np.ndarray) -> tuple[float, int]:
    """The best valid Insert(x, y, T): its gain (NONE if none is valid) and T's size, T written to `chosen`."""
    if adj[x, y] or nd[x] >= max_degree or nd[y] >= max_degree:
        return NONE, 0
    base = np.empty(nd[y], dtype=np.int64)  # y's parents, then NA(y, x)
    k = 0
    t0 = np.empty(nd[y], dtype=np.int64)
    m = 0
    for i in range(nd[y]):
        if dr[nb[y, i], y]:
            base[k] = nb[y, i]
            k += 1
    parents = k
    for i in range(nd[y]):
        w = nb[y, i]
        if _undirected(adj, dr, w, y):
            if adj[w, x]:
                base[k] = w
                k += 1
            else:
                t0[m] = w
                m += 1
    for i in range(parents, k):  # NA(y, x) must be a clique
        if not _all_adjacent(adj, base[i], base[i + 1:k]):
            return NONE, 0
    fits = np.empty(m, dtype=np.int64)  # T's candidates: adjacent to all of NA(y, x)
    f = 0
    for i in range(m):
        if _all_adjacent(adj, t0[i], base[parents:k]):
            fits[f] = t0[i]
            f += 1
    flat, starts = _cliques(adj, fits[:f])
    cond = np.empty(k + f + 1, dtype=np.int64)
    cond[:k] = base[:k]
    inside = np.zeros(adj.shape[0], dtype=np.bool_)
    best, best_clique = NONE, 0
    for c in range(len(starts) - 1):  # the best T whose set with NA(y, x) blocks every semi-directed path y ~> x
        size = k + starts[c + 1] - starts[c]
        cond[k:size] = flat[starts[c]:starts[c + 1]]
        without = _score(cov, y, cond[:size], n, cost)
        cond[size] = x
        gain = _score(cov, y, cond[:size + 1], n, cost) - without
        if gain > best:
            inside[:] = False
            inside[cond[parents:size]] = True
            if _blocked(adj, dr, nb, nd, y, x, inside):
                best, best_clique = gain, c
    size = starts[best_clique + 1] - starts[best_clique]
    chosen[:size] = flat[starts[best_clique]:starts[best_clique + 1]]
    return best, (size if best > NONE else 0)


@njit(cache=True, error_model="numpy")
def _orient_by_meek(adj: np.ndarray, dr: np.ndarray, nb: np.ndarray, nd: np.ndarray, a: int, b: int) -> bool:
    """Whether Meek's rules 1-3 direct the undirected edge a - b as a -> b."""
    for i in range(nd[a]):
        c = nb[a, i]
        if c == b:
            continue
        if dr[c, a] and not adj[c, b]:  # rule 1
            return True
        if dr[a, c] and dr[c, b]:  # rule 2
            return True
    for i in range(nd[a]):  # rule 3: a - c -> b, a - d -> b, c and d not adjacent
        c = nb[a, i]
        if c == b or not dr[c, b] or not _undirected(adj, dr, a, c):
            continue
        for j in range(i + 1, nd[a]):
            d = nb[a, j]
            if d != b and dr[d, b] and _undirected(adj, dr, a, d) and not adj[c, d]:
                return True
    return False


@njit(cache=True, error_model="numpy")
def _rebuild(adj: np.ndarray, dr: np.ndarray, nb: np.ndarray, nd: np.ndarray, changed: np.ndarray) -> None:
    """Make the graph its pattern again: only the unshielded colliders of its directed edges stay directed, then
    Meek's rules 1-3 to closure. Marks `changed` at both ends of every edge whose marks moved."""
    p = adj.shape[0]
    before = dr.copy()
    collider = np.zeros((p, p), dtype=np.bool_)
    for c in range(p):
        for i in range(nd[c]):
            a = nb[c, i]
            if not dr[a, c]:
                continue
            for j in range(i + 1, nd[c]):
                b = nb[c, j]
                if dr[b, c] and not adj[a, b]:
                    collider[a, c] = True
                    collider[b, c] = True
    for c in range(p):
        for i in range(nd[c]):
            dr[nb[c, i], c] = collider[nb[c, i], c]
    moved = True
    while moved:
        moved = False
        for a in range(p):
            for i in range(nd[a]):
                b = nb[a, i]
                if _undirected(adj, dr, a, b) and _orient_by_meek(adj, dr, nb, nd, a, b):
                    dr[a, b] = True
                    moved = True
    for a in range(p):
        for i in range(nd[a]):
            b = nb[a, i]
            if dr[a, b] != before[a, b]:
                changed[a] = True
                changed[b] = True


@njit(cache=True, error_model="numpy")
def _candidates(adj: np.ndarray, dr: np.ndarray, nb: np.ndarray, nd: np.ndarray, pairs: np.ndarray, cover: bool,
                y: int, row: np.ndarray) -> None:
    """row[x]: whether the arrow x -> y is scored in this phase: a pair of `pairs`, or with `cover` one two steps
    from y through a neighbour that is no collider between them (fGES's phase that covers non-colliders)."""
    if not cover:
        row[:] = pairs[y]
        return
    row[:] = False
    for i in range(nd[y]):
        k = nb[y, i]
        for j in range(nd[k]):
            m = nb[k, j]
            if m != y and pairs[y, m] and not adj[y, m] and not (dr[m, k] and dr[y, k]):
                row[m] = True


@njit(cache=True, error_model="numpy")
def _refresh(cov: np.ndarray, n: float, cost: float, adj: np.ndarray, dr: np.ndarray, nb: np.ndarray, nd: np.ndarray,
             max_degree: int, pairs: np.ndarray, cover: bool, gain: np.ndarray, best: np.ndarray, y: int,
             chosen: np.ndarray, row: np.ndarray) -> None:
    """Recompute every arrow into y (gain[y, x]) and y's best (best[y])."""
    _candidates(adj, dr, nb, nd, pairs, cover, y, row)
    best[y] = NONE
    for x in range(adj.shape[0]):
        gain[y, x] = _evaluate(cov, n, cost, adj, dr, nb, nd, max_degree, x, y, chosen)[0] if row[x] else NONE
        if gain[y, x] > best[y]:
            best[y] = gain[y, x]


@njit(cache=True, error_model="numpy")
def _add(adj: np.ndarray, nb: np.ndarray, nd: np.ndarray, a: int, b: int) -> None:
    adj[a, b] = True
    adj[b, a] = True
    nb[a, nd[a]] = b
    nd[a] += 1
    nb[b, nd[b]] = a
    nd[b] += 1


@njit(cache=True, error_model="numpy")
def _evaluate_delete(cov: np.ndarray, n: float, cost: float, adj: np.ndarray, dr: np.ndarray, nb: np.ndarray,
                     nd: np.ndarray, x: int, y: int, chosen: np.ndarray) -> tuple[float, int]:
    """The best valid Delete(x, y, H) of the edge x -> y or x - y: its gain (NONE if x and y are not so joined) and
    H's size, H written to `chosen`. H comes from NA(y, x) and what it leaves of NA(y, x) must be a clique."""
    if not adj[x, y] or dr[y, x]:
        return NONE, 0
    base = np.empty(nd[y] + 1, dtype=np.int64)  # y's parents but x, then what H leaves of NA(y, x), then x
    k = 0
    na = np.empty(nd[y], dtype=np.int64)
    m = 0
    for i in range(nd[y]):
        w = nb[y, i]
        if w == x:
            continue
        if dr[w, y]:
            base[k] = w
            k += 1
        elif _undirected(adj, dr, w, y) and adj[w, x]:
            na[m] = w
            m += 1
    flat, starts = _cliques(adj, na[:m])
    best, best_clique = NONE, 0
    for c in range(len(starts) - 1):  # the clique NA(y, x) keeps; H is the rest
        size = k + starts[c + 1] - starts[c]
        base[k:size] = flat[starts[c]:starts[c + 1]]
        without = _score(cov, y, base[:size], n, cost)
        base[size] = x
        gain = without - _score(cov, y, base[:size + 1], n, cost)
        if gain > best:
            best, best_clique = gain, c
    kept = np.zeros(adj.shape[0], dtype=np.bool_)
    kept[flat[starts[best_clique]:starts[best_clique + 1]]] = True
    size = 0
    for i in range(m):
        if not kept[na[i]]:
            chosen[size] = na[i]
            size += 1
    return best, size


@njit(cache=True, error_model="numpy")
def _remove(adj: np.ndarray, dr: np.ndarray, nb: np.ndarray, nd: np.ndarray, a: int, b: int) -> None:
    adj[a, b] = adj[b, a] = dr[a, b] = dr[b, a] = False
    for u, v in ((a, b), (b, a)):
        for i in range(nd[u]):
            if nb[u, i] == v:
                nb[u, i:nd[u] - 1] = nb[u, i + 1:nd[u]].copy()
                nd[u] -= 1
                break


@njit(cache=True, error_model="numpy")
def _refresh_deletes(cov: np.ndarray, n: float, cost: float, adj: np.ndarray, dr: np.ndarray, nb: np.ndarray,
                     nd: np.ndarray, gain: np.ndarray, best: np.ndarray, z: int, chosen: np.ndarray) -> None:
    """Recompute every deletion of an edge at z (into z: gain[z, x]; out of z: gain[w, z])."""
    for i in range(nd[z]):
        w = nb[z, i]
        gain[z, w] = _evaluate_delete(cov, n, cost, adj, dr, nb, nd, w, z, chosen)[0]
        gain[w, z] = _evaluate_delete(cov, n, cost, adj, dr, nb, nd, z, w, chosen)[0]
    for v in range(adj.shape[0]):
        if adj[v, z] or v == z:
            best[v] = np.max(gain[v])


@njit(cache=True, error_model="numpy")
def _best_arrow(gain: np.ndarray, best: np.ndarray) -> tuple[int, int]:
    """The arrow x -> y (gain[y, x]) of the highest kept gain, the lowest indices on ties; (-1, -1) if none gains."""
    y = int(np.argmax(best))
    if not best[y] > TOLERANCE:
        return -1, -1
    return int(np.argmax(gain[y])), y


@njit(cache=True, error_model="numpy")
def _still(gain: np.ndarray, best: np.ndarray, x: int, y: int, fresh: float) -> bool:
    """Whether the arrow's kept gain is its `fresh` one; if it went stale, keep the fresh one to choose again."""
    if fresh == gain[y, x]:
        return True
    gain[y, x] = fresh
    best[y] = np.max(gain[y])
    return False


@njit(cache=True, error_model="numpy")
def _backward(cov: np.ndarray, n: float, cost: float, adj: np.ndarray, dr: np.ndarray, nb: np.ndarray,
              nd: np.ndarray) -> None:
    """BES from the forward phase's pattern: the best deletion while one gains."""
    p = adj.shape[0]
    gain = np.full((p, p), NONE)  # gain[y, x]: deleting x -> y (or x - y, with y as the head)
    best = np.full(p, NONE)
    chosen = np.empty(p, dtype=np.int64)
    for y in range(p):
        _refresh_deletes(cov, n, cost, adj, dr, nb, nd, gain, best, y, chosen)
    changed = np.zeros(p, dtype=np.bool_)
    while True:
        x, y = _best_arrow(gain, best)
        if y < 0:
            return
        fresh, size = _evaluate_delete(cov, n, cost, adj, dr, nb, nd, x, y, chosen)
        if not _still(gain, best, x, y, fresh):
            continue
        _remove(adj, dr, nb, nd, x, y)
        gain[y, x] = gain[x, y] = NONE
        for i in range(size):
            h = chosen[i]
            dr[y, h] = True
            if _undirected(adj, dr, x, h):
                dr[x, h] = True
        changed[:] = False
        changed[x] = True
        changed[y] = True
        _rebuild(adj, dr, nb, nd, changed)
        for z in range(p):
            if changed[z]:
                _refresh_deletes(cov, n, cost, adj, dr, nb, nd, gain, best, z, chosen)
        best[x] = np.max(gain[x])
        best[y] = np.max(gain[y])


@njit(cache=True, error_model="numpy")
def _forward(cov: np.ndarray, n: float, cost: float, adj: np.ndarray, dr: np.ndarray, nb: np.ndarray, nd: np.ndarray,
             max_degree: int, pairs: np.ndarray, cover: bool) -> None:
    """FES over the arrows _candidates names: the best insert while one gains."""
    p = adj.shape[0]
    gain = np.full((p, p), NONE)  # gain[y, x]: the arrow x -> y's best insert
    best = np.full(p, NONE)
    chosen = np.empty(p, dtype=np.int64)
    row = np.zeros(p, dtype=np.bool_)
    for y in range(p):
        _refresh(cov, n, cost, adj, dr, nb, nd, max_degree, pairs, cover, gain, best, y, chosen, row)
    changed = np.zeros(p, dtype=np.bool_)
    while True:
        x, y = _best_arrow(gain, best)
        if y < 0:
            return
        fresh, size = _evaluate(cov, n, cost, adj, dr, nb, nd, max_degree, x, y, chosen)
        if not _still(gain, best, x, y, fresh):
            continue
        _add(adj, nb, nd, x, y)
        dr[x, y] = True
        for i in range(size):
            dr[chosen[i], y] = True
        changed[:] = False
        changed[x] = True
        changed[y] = True
        _rebuild(adj, dr, nb, nd, changed)
        for i in range(nd[x]):  # their common neighbours' cliques moved
            if adj[nb[x, i], y]:
                changed[nb[x, i]] = True
        for z in range(p):
            if changed[z]:
                _refresh(cov, n, cost, adj, dr, nb, nd, max_degree, pairs, cover, gain, best, z, chosen, row)
                for w in range(p):  # the arrows out of z: their NA(w, z) moved (candidates are symmetric)
                    if row[w] and not changed[w]:
                        gain[w, z] = _evaluate(cov, n, cost, adj, dr, nb, nd, max_degree, z, w, chosen)[0]
                        best[w] = np.max(gain[w])


@njit(cache=True, error_model="numpy")
def ges(cov: np.ndarray, n: float, penalty: float, max_degree: int, allowed: np.ndarray, faithful: bool,
        adj: np.ndarray, dr: np.ndarray) -> None:
    """GES over the pairs `allowed` (a symmetric mask, its diagonal cleared here) from the graph `adj`, `dr` (its
    adjacencies and directed edges, made a pattern first; changed in place), in fGES's phases: FES and BES over the
    pairs whose correlation alone gains, then over the pairs two steps apart through a non-collider, then (unless
    `faithful`, which assumes those are all) over every pair. Each FES adds no edge past `max_degree` neighbours."""
    p = cov.shape[0]
    cost = penalty * math.log(n)
    nd = np.zeros(p, dtype=np.int64)
    for y in range(p):
        allowed[y, y] = False
        nd[y] = np.count_nonzero(adj[y])
    nb = np.zeros((p, max(1, min(p, max(max_degree, np.max(nd))))), dtype=np.int64)
    for y in range(p):
        nb[y, :nd[y]] = np.flatnonzero(adj[y])
    _rebuild(adj, dr, nb, nd, np.zeros(p, dtype=np.bool_))
    pairs = allowed.copy()  # the pairs whose correlation alone gains
    one = np.empty(1, dtype=np.int64)
    for y in range(p):
        alone = _score(cov, y, one[:0], n, cost)
        for x in range(p):
            if pairs[x, y]:
                one[0] = x
                pairs[x, y] = _score(cov, y, one, n, cost) - alone > TOLERANCE
    pairs &= pairs.T  # the same test both ways, up to rounding
    _forward(cov, n, cost, adj, dr, nb, nd, max_degree, pairs, False)
    _backward(cov, n, cost, adj, dr, nb, nd)
    _forward(cov, n, cost, adj, dr, nb, nd, max_degree, allowed, True)
    _backward(cov, n, cost, adj, dr, nb, nd)
    if not faithful:
        _forward(cov, n, cost, adj, dr, nb, nd, max_degree, allowed, False)
        _backward(cov, n, cost, adj, dr, nb, nd)


def ges_pattern(cov: np.ndarray, n: int, penalty: float, max_degree: int | None, pairs: np.ndarray | None = None,
                faithful: bool = True,
                start: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The pattern GES finds (ges), as directed (parent, child) and undirected (i < j) edge rows: from the empty
    graph or the PDAG `start` (its directed and undirected rows), adding edges only between `pairs` (rows i, j;
    None: any pair) and, by FES, to at most `max_degree` neighbours (None: no bound)."""
    p = cov.shape[0]
    allowed = np.ones((p, p), dtype=np.bool_)
    if pairs is not None:
        allowed[:] = False
        allowed[pairs[:, 0], pairs[:, 1]] = True
        allowed[pairs[:, 1], pairs[:, 0]] = True
    adj = np.zeros((p, p), dtype=np.bool_)
    dr = np.zeros((p, p), dtype=np.bool_)
    if start is not None:
        for rows in start:
            rows = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
            adj[rows[:, 0], rows[:, 1]] = adj[rows[:, 1], rows[:, 0]] = True
        directed = np.asarray(start[0], dtype=np.int64).reshape(-1, 2)
        dr[directed[:, 0], directed[:, 1]] = True
    ges(np.require(cov, dtype=np.float64, requirements=["C", "W"]), float(n), float(penalty),
        p if max_degree is None or max_degree < 0 else int(max_degree), allowed, bool(faithful), adj, dr)
    return np.argwhere(dr).astype(np.int64), np.argwhere(np.triu(adj & ~dr & ~dr.T, 1)).astype(np.int64)


def run_ges(cov: np.ndarray, n: int, penalty: float, max_degree: int,
            faithfulness: bool) -> tuple[np.ndarray, np.ndarray]:
    """The fGES member's compiled runner (hpc.learners.members.FGES): ges_pattern over every pair."""
    return ges_pattern(cov, n, penalty, max_degree, None, faithfulness)


def run_ges_bounded(x: np.ndarray, penalty: float, directed: np.ndarray, undirected: np.ndarray,
                    pairs: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The repair's compiled runner (hpc.pef.repair): fGES's phases assuming faithfulness over the columns of `x`,
    from the PDAG (`directed`, `undirected`), new edges only between `pairs` (None: any pair), no degree bound."""
    from hpc.learners.bic import covariance

    return ges_pattern(covariance(x), x.shape[0], penalty, None, pairs, True, (directed, undirected))
