"""BOSS's order search over candidate partners: the engine of the rival, the polish, the recut and BOSS members.

Why not Tetrad's BOSS: its every move rescans the whole order and copies each prefix, about p³ work a pass
whatever the candidate pairs, and its searches were half of a run's seconds. Here a variable's parents may
come only from its partners, so moving `x` changes only its own score and those of the partners it passes.
Better still, a variable's best parents are a walk down its tree, and the walk looks at few partners: its
score changes with x's place only if the walk looked at x. A move of x therefore re-walks just the variables
that looked at x (an index kept as the search goes) and x's own walk only where what it looked at changes
sides, which over every pair of 1,000 variables is tens of walks a move, not 2,000.

A local score is Tetrad's SemBicScore (hpc.learners.bic, constants dropped), and a variable's parents under a
prefix come from a grow-shrink tree (as BOSS's): the grow adds the partner with the best gain while it gains,
the shrink then removes the parent whose removal gains most while one does. The tree keeps each node's
partners ranked by gain, so a prefix's parent set is a walk down it. The trees and their walks are compiled
(hpc.learners.trees_kernel); the moves are here. Everything is arithmetic on one covariance in a fixed order (what
the trees hold depends only on the calls before), so the same input gives the same DAG on any machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import numpy as np

from hpc.learners import trees_kernel as kernel

#: This module's search as a worker runner (hpc.learners.worker), for the steps that run it in a task.
RUNNER = "hpc.learners.order_search:run_order_search"
#: A move must raise the total BIC by more than this (rounding in sums of cached scores is far below it).
TOLERANCE = 1e-6
#: The compiled walk, typed as called (numba's dispatcher hides its signature).
_walk = cast(Callable[..., tuple[float, np.ndarray, np.ndarray, int]], kernel.walk)
#: Passes over the order at most; a pass moves every variable once, to its best place. On a hub-1000 run's
#: polish searches (seed 100) the final DAG came within 1-4 passes.
MAX_PASSES = 50


class GrowShrinkTrees:
    """Each variable's grow-shrink tree over `cov` (hpc.learners.trees_kernel, compiled): `best(v, ...)` is v's
    local score and parent set when only its partners in a given prefix of the order may be parents. Nodes and
    shrinks are kept for the search."""

    def __init__(self, cov: np.ndarray, n: int, penalty: float, partners: list[np.ndarray]) -> None:
        self.cov = np.ascontiguousarray(cov, dtype=np.float64)
        self.diag = np.ascontiguousarray(np.diag(self.cov))
        self.n = float(n)
        self.cost = penalty * math.log(n)
        self.needed = -math.expm1(-self.cost / n)  # the share of a residual a parent must explain to gain
        self.pstart = np.concatenate([[0], np.cumsum([len(w) for w in partners])]).astype(np.int64)
        self.plist = (np.concatenate(partners).astype(np.int64) if partners else np.empty(0, dtype=np.int64))
        self.trees = kernel.new_trees(len(partners))

    @property
    def created(self) -> int:
        """Nodes made so far: the search's work, counted the same on any machine."""
        return int(self.trees[13][0])

    def best(self, v: int, pos: np.ndarray, limit: int, x: int = -1, x_in: bool = False) -> Walk:
        """v's local score and parents when its partners placed before `limit` in `pos` (each variable's place)
        may be parents, except that partner `x`, if given, may be one exactly when `x_in`; the partners the walk
        looked at (only a change in whether one of those may be a parent can change the answer); and the first
        place of those it looked at that might not be parents (len(pos) if none)."""
        return _walk(*self.trees, self.cov, self.diag, self.pstart, self.plist, self.n, self.cost, self.needed, v, pos,
                     limit, x, x_in)


Walk = tuple[float, np.ndarray, np.ndarray, int]  # score, parents, the partners looked at, the first place


def own_walks(trees: GrowShrinkTrees, x: int, at: list[int], pos: np.ndarray) -> list[tuple[int, Walk]]:
    """x's walk at each place g of the order without x (from g on, until the next entry): the same until a partner
    it looked at comes before it, so only those places need a walk."""
    px = at[x]
    own: list[tuple[int, Walk]] = []
    g = 0
    while True:
        walk = trees.best(x, pos, g if g <= px else g + 1)
        own.append((g, walk))
        if walk[3] == len(at):  # no partner it looked at comes later: the same walk from here on
            return own
        g = walk[3] - (walk[3] > px) + 1


def partners_of(p: int, pairs: np.ndarray | None) -> list[np.ndarray]:
    """Each variable's partners in `pairs` (unordered; None: every other variable), sorted."""
    if pairs is None:
        everyone = np.arange(p, dtype=np.int64)
        return [np.delete(everyone, v) for v in range(p)]
    near: list[set[int]] = [set() for _ in range(p)]
    for a, b in np.asarray(pairs, dtype=np.int64).reshape(-1, 2).tolist():
        if a != b:
            near[a].add(b)
            near[b].add(a)
    return [np.array(sorted(s), dtype=np.int64) for s in near]


Move = tuple[int, Walk, list[int], list[int], list[Walk]]


def best_place(trees: GrowShrinkTrees, x: int, at: list[int], pos: np.ndarray, score: list[float],
               users: list[set[int]]) -> Move | None:
    """Where x raises the total BIC most, if by more than TOLERANCE over where it stands: the first place of that
    stretch (in the order without x), x's walk there, and the variables whose walk looked at x with their places
    and their walks with x's side turned; None when x stays.

    Places are counted in the order without x: inserting at g puts x before the variable now at g, so a variable
    at q (without x) stands behind x exactly when g <= q, and may then take x as a parent. The total is constant
    between the places where x's own walk or an affected variable's side changes, so only those are scored."""
    px = at[x]
    affected = sorted(users[x], key=at.__getitem__)
    q_aff = [at[w] - (at[w] > px) for w in affected]
    toggled = [trees.best(w, pos, at[w], x, not at[w] > px) for w in affected]
    gain = [(score[w] - t[0]) if at[w] > px else (t[0] - score[w]) for w, t in zip(affected, toggled)]
    own = own_walks(trees, x, at, pos)
    starts = np.array(sorted({0, *(q + 1 for q in q_aff), *(g for g, _ in own)}), dtype=np.int64)
    tail = np.concatenate([np.cumsum(np.array(gain[::-1], dtype=np.float64))[::-1], [0.0]])
    own_at = np.searchsorted(np.array([g for g, _ in own], dtype=np.int64), starts, side="right") - 1
    behind = np.searchsorted(np.array(q_aff, dtype=np.int64), starts)  # affected variables behind each start
    total = np.array([own[i][1][0] for i in own_at.tolist()]) + tail[behind]
    stretch = int(np.argmax(total >= total.max() - TOLERANCE))  # of places equal but for rounding, the first
    here = int(np.searchsorted(starts, px, side="right")) - 1
    if not total[stretch] > total[here] + TOLERANCE:
        return None
    return int(starts[stretch]), own[int(own_at[stretch])][1], affected, q_aff, toggled


def order_search(cov: np.ndarray, n: int, penalty: float, order: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
    """BOSS over the variables of `cov` (covariance of `n` rows) with BIC penalty discount `penalty`, started from
    `order`, where a variable's parents may come only from its partners in `pairs` (unordered, local indices;
    None: every pair): the DAG it ends at, as parent -> child rows.

    Each pass takes the variables in the order's sequence at the pass's start and moves each to the place that
    raises the total BIC most (strictly, by more than TOLERANCE; of equal places, the nearest to where it was);
    passes repeat until one moves nothing (at most MAX_PASSES)."""
    return bounded_order_search(cov, n, penalty, order, pairs, None)[0]


def bounded_order_search(cov: np.ndarray, n: int, penalty: float, order: np.ndarray, pairs: np.ndarray | None,
                         nodes: int | None) -> tuple[np.ndarray, bool]:
    """`order_search`, stopped before the next move once its trees hold over `nodes` nodes (None: no bound): the
    DAG of the order reached, and whether the bound stopped it. Nodes, not seconds, so the same input stops at the
    same place on any machine."""
    p = cov.shape[0]
    partners = partners_of(p, pairs)
    cov = np.asarray(cov, dtype=np.float64)
    trees = GrowShrinkTrees((cov + cov.T) / 2, n, penalty, partners)  # exactly symmetric: rows serve as columns
    seq = [int(v) for v in order]
    pos = np.empty(p, dtype=np.int64)
    pos[seq] = np.arange(p)
    at = pos.tolist()  # the same places, as a list for the moves here; the compiled walks read `pos`
    score = [0.0] * p
    seen: list[set[int]] = [set() for _ in range(p)]  # the partners each variable's current walk looked at
    users: list[set[int]] = [set() for _ in range(p)]  # users[c]: the variables whose walk looked at c

    def settle(v: int, walk: Walk) -> None:
        score[v] = walk[0]
        now = set(walk[2].tolist())
        for c in seen[v] - now:
            users[c].discard(v)
        for c in now - seen[v]:
            users[c].add(v)
        seen[v] = now

    for v in range(p):
        settle(v, trees.best(v, pos, at[v]))
    stopped = False
    for _ in range(MAX_PASSES):
        moved = False
        for x in list(seq):
            if nodes is not None and trees.created > nodes:
                stopped = True
                break
            move = best_place(trees, x, at, pos, score, users) if len(partners[x]) else None
            if move is None:
                continue
            lo, walk, affected, q_aff, toggled = move
            # x goes into the first gap between partners of the stretch; in it, as near its old place as it allows
            px = at[x]
            q_partners = np.sort(pos[partners[x]] - (pos[partners[x]] > px))
            nxt = q_partners[q_partners >= lo]
            j = min(max(px, lo), int(nxt[0]) if len(nxt) else p - 1)
            seq.pop(px)
            seq.insert(j, x)
            first, last = min(px, j), max(px, j)
            for i in range(first, last + 1):
                at[seq[i]] = i
            pos[seq[first:last + 1]] = np.arange(first, last + 1)
            settle(x, walk)
            for w, q, t in zip(affected, q_aff, toggled):
                if (q >= lo) != (q >= px):  # w changed sides of x: its walk is the toggled one
                    settle(w, t)
            moved = True
        if stopped or not moved:
            break
    rows = [(u, v) for v in range(p) for u in trees.best(v, pos, at[v])[1].tolist()]
    return np.array(rows, dtype=np.int64).reshape(-1, 2), stopped


def run_order_search(x: np.ndarray, penalty: float, order: np.ndarray, pairs: np.ndarray | None, threads: int = 1,
                     knowledge: dict | None = None) -> np.ndarray:
    """`order_search` on the data `x` (rows = samples), as a worker runner with run_boss_bounded's arguments;
    with prior knowledge it is Tetrad's BOSS, which keeps tiers and required edges in its moves."""
    if knowledge:
        from hpc.learners.tetrad import run_boss_bounded

        every = np.stack(np.triu_indices(x.shape[1], 1), axis=1)
        return run_boss_bounded(x, penalty, order, every if pairs is None else pairs, threads, knowledge)
    return run_bounded(x, penalty, order, pairs, None)[0]


#: `run_bounded` as a worker runner.
BOUNDED_RUNNER = "hpc.learners.order_search:run_bounded"


def run_bounded(x: np.ndarray, penalty: float, order: np.ndarray, pairs: np.ndarray | None,
                nodes: int | None) -> tuple[np.ndarray, bool]:
    """`bounded_order_search` on the data `x` (rows = samples), with one BLAS thread: the search's products are
    small, a second thread only waits for a core that another task holds (sf-1000's rival took twice its idle
    seconds beside an fGES so), and one thread keeps the products' rounding independent of the core count."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        cov = np.atleast_2d(np.cov(x, rowvar=False))
        return bounded_order_search(cov, x.shape[0], penalty, order, pairs, nodes)


def compile_kernel() -> None:
    """Compile the trees' kernel now (numba keeps it on disk), so that a run's first search does not pay for it
    (about 15 s, once per installation)."""
    x = np.random.default_rng(0).normal(size=(20, 3))
    order_search(np.cov(x, rowvar=False), 20, 2.0, np.arange(3), None)
