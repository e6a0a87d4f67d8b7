"""The grow-shrink trees of the order search (hpc.learners.order_search), compiled with numba.

A walk down a variable's tree reads a few hundred partners per node and a new node costs a few vector sweeps;
in Python the interpreter's overhead on those loops was most of a search's seconds (sf-1000's rival: 33 s, 60 %
of it the walks' loops). Here the trees live in numba's typed containers and a walk is one compiled call.

The trees are a trie per variable: a node is a path of partners added in turn (the grow), and holds the partners
that raise the variable's score when added next, best first, and its residual on the path. It leaves out the
partners ranked above the path's own at a node on the way down (as Tetrad's GrowShrinkTree removes them from what
is available): every walk that reaches the node passed them as not allowed, so none would be a parent below. Those
are mostly the variable's strongest partners, its children among them, listed again at every depth: without them
a node of layer-1000's every-pair search lists 73 partners for 137, and the search takes a fifth fewer seconds with
the same DAGs. A new node's partial
covariances come from its parent's by one sweep on the added partner where the parent's are still held (the
most recent nodes, in at most HELD_BYTES, first in first out), else from the covariance directly. The sweep costs
O(k m) for a path of k partners out of m, the direct fit O(k^2 m): paths grow long where a hub may take its many
children as parents (sf-1000's polish: up to 130 partners of 175), and deriving every node there cut its searches
to a fifth of their seconds, with the same DAGs; on sparse searches the two cost the same. Every loop
runs in a fixed order, with no reassociation (no fastmath) and no BLAS (whose kernels and threads differ between
machines), so the same input gives the same trees. numpy's error model (a division by zero gives inf, not an
exception) only drops numba's check before each division: the same arithmetic, in loops that vectorise.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.typed import Dict, List

from hpc.learners.bic import MIN_RESIDUAL
from hpc.learners.gram_kernel import residual
from hpc.learners.numba_cache import ensure_cache_folder

ensure_cache_folder()  # before the first @njit(cache=True): numba refuses one it has nowhere to cache

#: Memory for the partials of recent tree nodes, from which a child's come cheaply.
HELD_BYTES = 64 * 2**20
#: A shrink step must raise the local score, and a move the total BIC, by more than this (rounding in sums of
#: cached scores is far below it).
TOLERANCE = 1e-6

_I32 = types.int32[::1]
_I64 = types.int64[::1]
_F64 = types.float64[::1]
_F64M = types.float64[:, ::1]

# The trees' state, in the order `new_trees` returns it:
#   root[v]: v's root node (-1: none yet); ranked[node], s2[node]: its ranked partners and residual (floored);
#   child[node * p + c]: the node one step down by partner c; held[node]: its partials' slot in cross, var, inv,
#   hs2; queue: held nodes in the order they came (FIFO); shrunk[node]: its slot in shrink_score, shrink_parents;
#   counts: nodes created, the queue's head, the bytes held.


@njit(cache=True, error_model="numpy")
def new_trees(p: int) -> tuple:
    return (np.full(p, -1, dtype=np.int64), List.empty_list(_I32), List.empty_list(types.float64),
            Dict.empty(types.int64, types.int64), Dict.empty(types.int64, types.int64), List.empty_list(_F64),
            List.empty_list(_F64), List.empty_list(_F64M), List.empty_list(types.float64),
            List.empty_list(types.int64), Dict.empty(types.int64, types.int64), List.empty_list(types.float64),
            List.empty_list(_I64), np.zeros(3, dtype=np.int64))


@njit(cache=True, error_model="numpy")
def _block(cov: np.ndarray, idx: np.ndarray) -> np.ndarray:
    k = len(idx)
    out = np.empty((k, k))
    for a in range(k):
        for b in range(k):
            out[a, b] = cov[idx[a], idx[b]]
    return out


@njit(cache=True, error_model="numpy")
def inverse(block: np.ndarray) -> np.ndarray:
    """The inverse of a covariance block, by its Cholesky factor in loops: blocks are small, LAPACK's calls cost
    more than their arithmetic there, and its threads would make the rounding depend on the core count. A
    pseudo-inverse where the block is not positive definite (collinear data)."""
    k = block.shape[0]
    low = np.zeros((k, k))
    for j in range(k):
        d = block[j, j]
        for t in range(j):
            d -= low[j, t] * low[j, t]
        if not d > 0:
            return np.ascontiguousarray(np.linalg.pinv(block))
        d = math.sqrt(d)
        low[j, j] = d
        for i in range(j + 1, k):
            e = block[i, j]
            for t in range(j):
                e -= low[i, t] * low[j, t]
            low[i, j] = e / d
    li = np.zeros((k, k))  # the factor's inverse, lower triangular too
    for i in range(k):
        li[i, i] = 1.0 / low[i, i]
        for j in range(i):
            e = 0.0
            for t in range(j, i):
                e -= low[i, t] * li[t, j]
            li[i, j] = e / low[i, i]
    inv = np.empty((k, k))
    for a in range(k):
        for b in range(a + 1):
            e = 0.0
            for t in range(a, k):
                e += li[t, a] * li[t, b]
            inv[a, b] = e
            inv[b, a] = e
    return inv


@njit(cache=True, error_model="numpy")
def fit(cov: np.ndarray, v: int, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The inverse of the path `idx`'s covariance block, v's coefficients on it and v's residual on it (not
    floored)."""
    inv = inverse(_block(cov, idx))
    beta, s2 = coefficients(cov, v, idx, inv)
    return inv, beta, s2


@njit(cache=True, error_model="numpy")
def coefficients(cov: np.ndarray, v: int, idx: np.ndarray, inv: np.ndarray) -> tuple[np.ndarray, float]:
    """v's coefficients on `idx` and its residual on them (not floored), given the inverse of their block."""
    k = len(idx)
    to_v = np.empty(k)
    for a in range(k):
        to_v[a] = cov[v, idx[a]]
    beta = np.zeros(k)  # loops, not BLAS, as in `inverse`
    for a in range(k):
        for t in range(k):
            beta[a] += inv[a, t] * to_v[t]
    s2 = cov[v, v]
    for a in range(k):
        s2 -= to_v[a] * beta[a]
    return beta, s2


@njit(cache=True, error_model="numpy")
def given(cov: np.ndarray, diag: np.ndarray, v: int, idx: np.ndarray, inv: np.ndarray, beta: np.ndarray,
          cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The partial covariances with v and the partial variances of `cols` given the path `idx` (`fit`'s inverse
    and coefficients)."""
    k, m = len(idx), len(cols)
    rows = np.empty((k, m))
    for a in range(k):
        for j in range(m):
            rows[a, j] = cov[idx[a], cols[j]]
    spread = np.zeros((k, m))
    for a in range(k):
        for t in range(k):
            it, rt, sa = inv[a, t], rows[t], spread[a]
            for j in range(m):
                sa[j] += it * rt[j]
    cross, var = np.empty(m), np.empty(m)
    for j in range(m):
        s, t = cov[v, cols[j]], diag[cols[j]]
        for a in range(k):
            s -= beta[a] * rows[a, j]
            t -= rows[a, j] * spread[a, j]
        cross[j], var[j] = s, t
    return cross, var


@njit(cache=True, error_model="numpy")
def direct(cov: np.ndarray, diag: np.ndarray, v: int, path: np.ndarray,
           ws: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Over the partners `ws`: their partial covariances with v and partial variances given `path` (0 for those on
    the path), v's residual on it (not floored) and the path's inverse, from the covariance."""
    if len(path) == 0:
        return cov[v][ws], diag[ws], cov[v, v], np.empty((0, 0))
    inv, beta, s2 = fit(cov, v, path)
    cross, var = given(cov, diag, v, path, inv, beta, ws)
    for a in range(len(path)):
        j = np.searchsorted(ws, path[a])
        if j < len(ws) and ws[j] == path[a]:
            cross[j] = 0.0
            var[j] = 0.0
    return cross, var, s2, inv


@njit(cache=True, error_model="numpy")
def derived(cov: np.ndarray, diag: np.ndarray, path: np.ndarray, ws: np.ndarray, cross0: np.ndarray, var0: np.ndarray,
            s20: float, inv0: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray] | None:
    """`direct`'s answer for `path` from its parent's (the path without its last partner: `cross0`, `var0`, `s20`,
    `inv0`) by one sweep on that partner, in O(k m) rather than O(k^2 m); None where the partner is (nearly) a
    combination of the path before it."""
    k = len(path)
    last = path[k - 1]
    j = np.searchsorted(ws, last)
    vc = var0[j]
    if not vc > MIN_RESIDUAL * diag[last]:
        return None
    b = np.zeros(k - 1)
    for a in range(k - 1):
        s = 0.0
        for t in range(k - 1):
            s += inv0[a, t] * cov[path[t], last]
        b[a] = s
    m = len(ws)
    if 8 * m < len(diag):  # few partners: gather them
        rc = np.empty(m)
        row = cov[last]
        for jj in range(m):
            rc[jj] = row[ws[jj]]
        for t in range(k - 1):
            bt, before = b[t], cov[path[t]]
            for jj in range(m):
                rc[jj] -= bt * before[ws[jj]]
    else:  # whole rows, then the partners: contiguous rows the compiler vectorises
        full = cov[last].copy()
        for t in range(k - 1):
            bt, before = b[t], cov[path[t]]
            for w in range(len(full)):
                full[w] -= bt * before[w]
        rc = full[ws]
    inv = np.empty((k, k))
    for a in range(k - 1):
        for t in range(k - 1):
            inv[a, t] = inv0[a, t] + b[a] * b[t] / vc
        inv[a, k - 1] = -b[a] / vc
        inv[k - 1, a] = -b[a] / vc
    inv[k - 1, k - 1] = 1.0 / vc
    g = cross0[j] / vc
    cross, var = np.empty(m), np.empty(m)
    for jj in range(m):
        cross[jj] = cross0[jj] - g * rc[jj]
        var[jj] = var0[jj] - rc[jj] * rc[jj] / vc
    cross[j] = 0.0
    var[j] = 0.0
    return cross, var, s20 - g * cross0[j], inv


@njit(cache=True, error_model="numpy")
def ranked_partners(cov: np.ndarray, diag: np.ndarray, v: int, cands: np.ndarray, cross: np.ndarray, var: np.ndarray,
                    s2: float, needed: float, passed: np.ndarray) -> np.ndarray:
    """The candidates that raise v's score when added (they explain more than s2 * needed of its residual `s2`),
    ranked by what they explain, best first (ties in the candidates' order), except those `passed`."""
    m = len(cands)
    cap = s2 - MIN_RESIDUAL * cov[v, v]
    gains = np.empty(m)
    kept = np.empty(m, dtype=np.int64)
    skip = np.zeros(len(diag), dtype=np.bool_)
    for c in passed:
        skip[c] = True
    count = 0
    for j in range(m):
        if skip[cands[j]]:
            continue
        explained = 0.0
        if var[j] > MIN_RESIDUAL * diag[cands[j]]:
            explained = cross[j] * cross[j] / var[j]
        if explained > cap:
            explained = cap
        if explained > s2 * needed:
            gains[count], kept[count] = explained, j
            count += 1
    rank(gains, kept, count)
    out = np.empty(count, dtype=np.int32)
    for i in range(count):
        out[i] = cands[kept[i]]
    return out


@njit(cache=True, error_model="numpy", inline="always")
def _ahead(ga: float, ka: int, gb: float, kb: int) -> bool:
    return ga > gb or (ga == gb and ka < kb)


@njit(cache=True, error_model="numpy")
def rank(gains: np.ndarray, keys: np.ndarray, count: int) -> None:
    """Sort the first `count` entries of `gains` and `keys` together, larger gains first and, of equal gains, smaller
    keys first: a stable sort's order, by a quicksort in place (a node's ranking was a fifth of a search's seconds
    under numba's argsort by merges, with its buffers)."""
    stack = np.empty(128, dtype=np.int64)
    top, lo, hi = 0, 0, count - 1
    while True:
        if hi - lo < 16:  # insertion sort
            for i in range(lo + 1, hi + 1):
                g, k = gains[i], keys[i]
                j = i - 1
                while j >= lo and _ahead(g, k, gains[j], keys[j]):
                    gains[j + 1], keys[j + 1] = gains[j], keys[j]
                    j -= 1
                gains[j + 1], keys[j + 1] = g, k
            if top == 0:
                return
            top -= 2
            lo, hi = stack[top], stack[top + 1]
            continue
        mid = (lo + hi) >> 1
        for a, b in ((lo, mid), (mid, hi), (lo, mid)):  # the median of three at mid
            if _ahead(gains[b], keys[b], gains[a], keys[a]):
                gains[a], gains[b] = gains[b], gains[a]
                keys[a], keys[b] = keys[b], keys[a]
        pg, pk = gains[mid], keys[mid]
        i, j = lo, hi
        while i <= j:
            while _ahead(gains[i], keys[i], pg, pk):
                i += 1
            while _ahead(pg, pk, gains[j], keys[j]):
                j -= 1
            if i <= j:
                gains[i], gains[j] = gains[j], gains[i]
                keys[i], keys[j] = keys[j], keys[i]
                i += 1
                j -= 1
        if j - lo > hi - i:  # the larger part waits, so the stack stays shallow
            stack[top], stack[top + 1] = lo, j
            lo = i
        else:
            stack[top], stack[top + 1] = i, hi
            hi = j
        top += 2


@njit(cache=True, error_model="numpy")
def hold(trees: tuple, node: int, cross: np.ndarray, var: np.ndarray, s2: float, inv: np.ndarray) -> None:
    """Keep a node's partials for its children, dropping the oldest held past HELD_BYTES."""
    held, hcross, hvar, hinv, hs2, queue, counts = trees[3], trees[5], trees[6], trees[7], trees[8], trees[9], trees[13]
    held[node] = len(hcross)
    hcross.append(cross)
    hvar.append(var)
    hinv.append(np.ascontiguousarray(inv))
    hs2.append(s2)
    queue.append(node)
    counts[2] += (cross.size + var.size + inv.size) * 8
    while counts[2] > HELD_BYTES and len(held) > 1:
        oldest = queue[counts[1]]
        counts[1] += 1
        slot = held[oldest]
        del held[oldest]
        counts[2] -= (hcross[slot].size + hvar[slot].size + hinv[slot].size) * 8
        hcross[slot], hvar[slot], hinv[slot] = np.empty(0), np.empty(0), np.empty((0, 0))


@njit(cache=True, error_model="numpy")
def make_node(trees: tuple, cov: np.ndarray, diag: np.ndarray, ws: np.ndarray, v: int, parent: int, path: np.ndarray,
              passed: np.ndarray, needed: float) -> int:
    """A new node of v's tree at `path` (its parent node `parent`, -1 for the root): its ranked partners (but those
    `passed` on the way down) and its residual, stored; returns its index."""
    counts = trees[13]
    counts[0] += 1
    found = None
    if parent >= 0 and parent in trees[3]:
        slot = trees[3][parent]
        found = derived(cov, diag, path, ws, trees[5][slot], trees[6][slot], trees[8][slot], trees[7][slot])
    if found is None:
        cross, var, s2, inv = direct(cov, diag, v, path, ws)
    else:
        cross, var, s2, inv = found
    hold(trees, len(trees[1]), cross, var, s2, inv)
    s2 = max(s2, MIN_RESIDUAL * cov[v, v])
    trees[1].append(ranked_partners(cov, diag, v, ws, cross, var, s2, needed, passed))
    trees[2].append(s2)
    return len(trees[1]) - 1


@njit(cache=True, error_model="numpy")
def without(inv: np.ndarray, i: int) -> np.ndarray:
    """The inverse of a block without its row and column i, from the block's inverse `inv` in O(k^2)."""
    k = inv.shape[0]
    out = np.empty((k - 1, k - 1))
    pivot = inv[i, i]
    for a in range(k - 1):
        sa = a + (a >= i)
        for b in range(k - 1):
            sb = b + (b >= i)
            out[a, b] = inv[sa, sb] - inv[sa, i] * inv[i, sb] / pivot
    return out


@njit(cache=True, error_model="numpy")
def shrink(cov: np.ndarray, n: float, cost: float, v: int, grown: np.ndarray, s2: float) -> tuple[float, np.ndarray]:
    """v's score and parents after the shrink of `grown` (whose residual is `s2`): while removing a parent gains,
    remove the one whose removal gains most. Each step's leave-one-out residuals come from the parents' inverse
    (dropping parent i raises the residual by beta_i^2 / inv_ii), and the next step's inverse from this one's."""
    parents = np.sort(grown)
    score = -n * math.log(s2) - cost * len(parents)
    floor = MIN_RESIDUAL * cov[v, v]
    inv = inverse(_block(cov, parents)) if len(parents) > 1 else np.empty((0, 0))
    while len(parents) > 0:
        k = len(parents)
        left = np.empty(k)
        if k == 1:
            left[0] = cov[v, v]
        else:
            beta, full = coefficients(cov, v, parents, inv)
            fine = full > floor
            for a in range(k):
                fine = fine and inv[a, a] > 0
            for a in range(k):
                left[a] = full + beta[a] * beta[a] / inv[a, a] if fine else 0.0
            if not fine:  # collinear: one fit each
                for a in range(k):
                    left[a] = residual(cov, v, np.delete(parents, a), MIN_RESIDUAL)
        best, drop = -np.inf, -1
        for a in range(k):
            s = -n * math.log(max(left[a], floor)) - cost * (k - 1)
            if s > best:
                best, drop = s, a
        if not best > score + TOLERANCE:
            break
        if k > 2:
            inv = without(inv, drop) if inv[drop, drop] > 0 else inverse(_block(cov, np.delete(parents, drop)))
        parents = np.delete(parents, drop)
        score = best
    return score, parents


@njit(cache=True, error_model="numpy")
def walk(root: np.ndarray, ranked: List, s2s: List, held: Dict, child: Dict, hcross: List, hvar: List, hinv: List,
         hs2: List, queue: List, shrunk: Dict, shrink_score: List, shrink_parents: List, counts: np.ndarray,
         cov: np.ndarray, diag: np.ndarray, pstart: np.ndarray, plist: np.ndarray, n: float, cost: float, needed: float,
         v: int, pos: np.ndarray, limit: int, x: int, x_in: bool) -> tuple[float, np.ndarray, np.ndarray, int]:
    """v's local score and parents when its partners placed before `limit` in `pos` may be parents, except that
    partner `x` (if >= 0) may be one exactly when `x_in`; the partners the walk looked at (only a change in whether
    one of those may be a parent can change the answer); and the first place of those it looked at that might not
    be parents (len(pos) if none)."""
    # one argument each, not the state's tuple: numba types a tuple argument member by member on every call
    trees = (root, ranked, s2s, held, child, hcross, hvar, hinv, hs2, queue, shrunk, shrink_score, shrink_parents,
             counts)
    p = len(pos)
    ws = plist[pstart[v]:pstart[v + 1]]
    node = root[v]
    if node < 0:
        node = make_node(trees, cov, diag, ws, v, -1, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64),
                         needed)
        root[v] = node
    path = np.empty(min(len(ws), 16), dtype=np.int64)  # grown as the walk goes deeper
    depth = 0
    seen = np.empty(64, dtype=np.int64)
    count = 0
    low = p
    while True:
        here = ranked[node]
        size = len(here)
        i, low = first_allowed(here, pos, limit, x, x_in, low)
        seen, count = appended(seen, count, here[:min(i + 1, size)])
        if i == size:
            break
        c = here[i]
        if depth == len(path):
            path = np.concatenate((path, np.empty(len(path), dtype=np.int64)))
        path[depth] = c
        depth += 1
        key = node * p + c
        if key in child:
            node = child[key]
        else:
            made = make_node(trees, cov, diag, ws, v, node, path[:depth], seen[:count], needed)
            child[key] = made
            node = made
    s2 = s2s[node]
    if depth == 0:
        return -n * math.log(s2), np.empty(0, dtype=np.int64), seen[:count], low
    if node not in shrunk:
        shrunk[node] = len(shrink_score)
        score, parents = shrink(cov, n, cost, v, path[:depth], s2)
        shrink_score.append(score)
        shrink_parents.append(parents)
    slot = shrunk[node]
    return shrink_score[slot], shrink_parents[slot], seen[:count], low


@njit(cache=True, error_model="numpy")
def first_allowed(here: np.ndarray, pos: np.ndarray, limit: int, x: int, x_in: bool, low: int) -> tuple[int, int]:
    """The index in a node's ranked partners `here` of the first that may be a parent (len(here) if none), and the
    lowest place among those before it (or `low`)."""
    i = 0
    while i < len(here):
        c = here[i]
        q = pos[c]
        if (x_in if c == x else q < limit):
            break
        if q < low:
            low = q
        i += 1
    return i, low


@njit(cache=True, error_model="numpy")
def appended(seen: np.ndarray, count: int, more: np.ndarray) -> tuple[np.ndarray, int]:
    """`more` after the first `count` entries of the buffer `seen` (grown when full), and the new count."""
    if count + len(more) > len(seen):
        grown = np.empty(2 * (count + len(more)), dtype=np.int64)
        grown[:count] = seen[:count]
        seen = grown
    for a in range(len(more)):
        seen[count + a] = more[a]
    return seen, count + len(more)
