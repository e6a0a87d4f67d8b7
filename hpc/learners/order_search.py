"""BOSS's order search over candidate partners, in numpy: the engine of the polish, the recut and BOSS members.

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
partners ranked by gain, so a prefix's parent set is a walk down it. A node's partial covariances come from its
parent's by one sweep on the variable the path added, and the path's inverse from the parent's by a block update,
where the parent's are still held (a bounded memory of recent nodes): a deep tree then costs O(k m) a node, not
O(k² m) and an inversion. Everything is arithmetic on one covariance in
a fixed order (what is held depends only on the calls before), so the same input gives the same DAG on any
machine with the same numpy.
"""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from hpc.learners.bic import MIN_RESIDUAL, residual_variance

#: This module's search as a worker runner (hpc.learners.worker), for the steps that run it in a task.
RUNNER = "hpc.learners.order_search:run_order_search"
#: A move must raise the total BIC by more than this (rounding in sums of cached scores is far below it).
TOLERANCE = 1e-6
#: Memory for the partials of recent tree nodes, from which a child's come cheaply (GrowShrinkTrees._partials).
HELD_BYTES = 64 * 2**20
#: A variable with at least this many partners has its tree's nodes derived from their parents' (deep trees over
#: every pair); with fewer (the polish's candidate pairs) each node is derived directly, which costs less than
#: holding partials there (on hub-1000's polish searches, 24 % more seconds when held).
SWEEP_FROM = 256
#: Passes over the order at most; a pass moves every variable once, to its best place. On a hub-1000 run's
#: polish searches (seed 100) the final DAG came within 1-4 passes.
MAX_PASSES = 50


@dataclass(frozen=True)
class Held:
    """A tree node's partials over its variable's partners (`cross`: partial covariances with it, `var`: partial
    variances; both 0 for the path's own variables), its residual on the node's path (not floored) and the inverse
    of the path's covariance block."""

    cross: np.ndarray
    var: np.ndarray
    s2: float
    inv: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.cross.nbytes + self.var.nbytes + self.inv.nbytes


class GrowShrinkTrees:
    """Each variable's grow-shrink tree over `cov`: `best(v, ...)` is v's local score and parent set when only
    its partners in a given prefix of the order may be parents. Nodes and shrinks are cached for the search."""

    def __init__(self, cov: np.ndarray, n: int, penalty: float, partners: list[np.ndarray]) -> None:
        self.cov, self.n = cov, n
        self.cost = penalty * math.log(n)
        self.partners = partners
        # each node's ranked partners as 4-byte ints: over every pair of a dense 1,000-variable problem (layer) a
        # search visits a million nodes of some 200 gaining partners each, 8.8 GB as lists of Python ints
        self.nodes: list[dict[tuple[int, ...], tuple[array, float]]] = [{} for _ in partners]
        self.shrunk: list[dict[tuple[int, ...], tuple[float, tuple[int, ...]]]] = [{} for _ in partners]
        self.created = 0  # nodes made so far: the search's work, counted the same on any machine
        self.free = np.ones(cov.shape[0], dtype=bool)  # scratch: which variables are off the current path
        # what recent nodes' children are derived from (_partials), oldest first, in at most HELD_BYTES
        self.held: OrderedDict[tuple[int, tuple[int, ...]], Held] = OrderedDict()
        self.held_bytes = 0
        self.diag = np.ascontiguousarray(np.diag(cov))
        self.needed = -math.expm1(-self.cost / n)  # the share of a residual a parent must explain to gain

    def _inverse(self, idx: np.ndarray) -> np.ndarray:
        """The inverse of the covariance block of `idx` (a pseudo-inverse where it is singular: collinear data)."""
        block = self.cov[np.ix_(idx, idx)]
        try:
            return np.linalg.inv(block)
        except np.linalg.LinAlgError:
            return np.linalg.pinv(block)

    def _partials(self, v: int, path: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, float]:
        """Over v's partners: their partial covariances with v and their partial variances given `path`, and
        v's residual on `path`. A child's come from its parent's in O(k m) (one sweep on the path's last
        variable, and the path's inverse from the parent's by a block update) where the parent's are still
        held, else directly in O(k^2 m)."""
        key = (v, path)
        held = self.held.get(key)
        if held is None:
            held = self._derived(v, path)
            self.held[key] = held
            self.held_bytes += held.nbytes
            while self.held_bytes > HELD_BYTES and len(self.held) > 1:
                self.held_bytes -= self.held.popitem(last=False)[1].nbytes
        else:
            self.held.move_to_end(key)
        return held.cross, held.var, max(held.s2, MIN_RESIDUAL * float(self.cov[v, v]))

    def _derived(self, v: int, path: tuple[int, ...]) -> Held:
        """`_partials`' node, from its parent's where that is held and the added variable is not (nearly) a
        combination of the path before it, else from the covariance."""
        c, ws = self.cov, self.partners[v]
        if not path:
            return Held(c[v, ws], self.diag[ws], float(c[v, v]), np.empty((0, 0)))
        parent = self.held.get((v, path[:-1]))
        last = path[-1]
        j = int(np.searchsorted(ws, last))
        if parent is not None and parent.var[j] > MIN_RESIDUAL * self.diag[last]:
            vc = float(parent.var[j])
            before = np.array(path[:-1], dtype=np.int64)
            b = parent.inv @ c[before, last]
            # whole rows, then the partners: a row gather is cheaper than a 2-d one (a variable with a sweep has at
            # least SWEEP_FROM partners, so most of each row)
            rc = (c[last] - b @ c[before])[ws] if len(before) else c[last, ws]
            k = len(path)
            inv = np.empty((k, k))
            inv[:-1, :-1] = parent.inv + np.outer(b, b) / vc
            inv[:-1, -1] = inv[-1, :-1] = -b / vc
            inv[-1, -1] = 1.0 / vc
            g = parent.cross[j] / vc
            cross, var = parent.cross - g * rc, parent.var - rc * rc / vc
            cross[j] = var[j] = 0.0  # on the path now: no longer a candidate (_node)
            return Held(cross, var, parent.s2 - g * parent.cross[j], inv)
        idx = np.array(path, dtype=np.int64)
        inv, beta, s2 = self._fit(v, idx)
        cross, var = self._given(v, idx, inv, beta, ws)
        on_path = np.searchsorted(ws, idx)
        cross[on_path] = var[on_path] = 0.0
        return Held(cross, var, s2, inv)

    def _direct(self, v: int, path: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """v's partners off `path`, their partial covariances with v and partial variances given it, and v's
        residual on it, from the covariance directly: for a few partners, cheaper than holding partials."""
        c = self.cov
        cands = self.partners[v]
        if not path:
            return cands, c[v, cands], self.diag[cands], float(c[v, v])
        idx = np.array(path, dtype=np.int64)
        self.free[idx] = False
        cands = cands[self.free[cands]]
        self.free[idx] = True
        inv, beta, s2 = self._fit(v, idx)
        return (cands, *self._given(v, idx, inv, beta, cands), max(s2, MIN_RESIDUAL * float(c[v, v])))

    def _fit(self, v: int, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """The inverse of the path `idx`'s covariance block, v's coefficients on it and v's residual on it (not
        yet floored at MIN_RESIDUAL)."""
        c = self.cov
        inv = self._inverse(idx)
        to_v = c[v, idx]
        beta = inv @ to_v
        return inv, beta, float(c[v, v] - to_v @ beta)

    def _given(self, v: int, idx: np.ndarray, inv: np.ndarray, beta: np.ndarray,
               cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The partial covariances with v and the partial variances of `cols`, given the path `idx` (`_fit`'s
        inverse and coefficients), in O(k^2 m)."""
        rows = self.cov[np.ix_(idx, cols)]  # path x cols
        return self.cov[v, cols] - beta @ rows, self.diag[cols] - np.einsum("ij,ij->j", rows, inv @ rows)

    def _node(self, v: int, path: tuple[int, ...]) -> tuple[array, float]:
        """The partners that raise v's score when added to `path`, best first, and v's residual on `path`."""
        node = self.nodes[v].get(path)
        if node is not None:
            return node
        self.created += 1
        ws = self.partners[v]
        if len(ws) < SWEEP_FROM:
            cands, cross, var, s2 = self._direct(v, path)
        else:
            cands = ws
            cross, var, s2 = self._partials(v, path)  # the path's own partial variances are 0: never kept below
        c = self.cov
        # a candidate gains when it explains more than s2 * (1 - e^(-cost/n)) of v's residual (its BIC gain is
        # -n ln(1 - explained / s2) - cost); ranking by what it explains is ranking by gain
        explained = np.zeros(len(cands))
        np.divide(cross * cross, var, out=explained, where=var > MIN_RESIDUAL * self.diag[cands])
        np.minimum(explained, s2 - MIN_RESIDUAL * c[v, v], out=explained)
        keep = explained > s2 * self.needed
        ranked = array("i")
        ranked.frombytes(cands[keep][np.argsort(-explained[keep], kind="stable")].astype(np.int32).tobytes())
        node = (ranked, s2)
        self.nodes[v][path] = node
        return node

    def _shrink(self, v: int, grown: tuple[int, ...], s2: float) -> tuple[float, tuple[int, ...]]:
        """v's score and parents after the shrink of `grown` (whose residual is `s2`). Each step's leave-one-out
        residuals come from one inverse: dropping parent i raises the residual by beta_i^2 / inv_ii."""
        key = tuple(sorted(grown))
        done = self.shrunk[v].get(key)
        if done is not None:
            return done
        parents = list(key)
        c = self.cov
        score = -self.n * math.log(s2) - self.cost * len(parents)
        while parents:
            if len(parents) == 1:
                left = np.array([c[v, v]])
            else:
                idx = np.array(parents, dtype=np.int64)
                inv = self._inverse(idx)
                beta = inv @ c[idx, v]
                full = c[v, v] - c[idx, v] @ beta
                left = full + beta * beta / np.diag(inv)
                if not (full > MIN_RESIDUAL * c[v, v] and np.all(np.diag(inv) > 0)):  # collinear: one fit each
                    left = np.array([residual_variance(c, v, np.delete(idx, i)) for i in range(len(idx))])
            left = np.maximum(left, MIN_RESIDUAL * c[v, v])
            s = -self.n * np.log(left) - self.cost * (len(parents) - 1)
            drop = int(np.argmax(s))
            if not s[drop] > score + TOLERANCE:
                break
            parents.pop(drop)
            score = float(s[drop])
        done = (score, tuple(parents))
        self.shrunk[v][key] = done
        return done

    def best(self, v: int, pos: list[int], limit: int, x: int = -1, x_in: bool = False) -> Walk:
        """v's local score and parents when its partners placed before `limit` in `pos` may be parents, except
        that partner `x`, if given, may be one exactly when `x_in`; the partners the walk looked at (only a change
        in whether one of those may be a parent can change the answer); and the first place of those it looked
        at that might not be parents (len(pos) if none)."""
        path: tuple[int, ...] = ()
        seen: list[int] = []
        low = len(pos)
        while True:
            ranked, s2 = self._node(v, path)
            i = 0
            for c in ranked:
                q = pos[c]
                if (x_in if c == x else q < limit):
                    break
                if q < low:
                    low = q
                i += 1
            seen += ranked[:i + 1]
            if i == len(ranked):
                break
            path = path + (ranked[i],)
        if not path:
            return -self.n * math.log(s2), (), seen, low
        return (*self._shrink(v, path, s2), seen, low)


Walk = tuple[float, tuple[int, ...], list[int], int]


def own_walks(trees: GrowShrinkTrees, x: int, at: list[int]) -> list[tuple[int, Walk]]:
    """x's walk at each place g of the order without x (from g on, until the next entry): the same until a partner
    it looked at comes before it, so only those places need a walk."""
    px = at[x]
    own: list[tuple[int, Walk]] = []
    g = 0
    while True:
        walk = trees.best(x, at, g if g <= px else g + 1)
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


def best_place(trees: GrowShrinkTrees, x: int, at: list[int], score: list[float], users: list[set[int]]) -> Move | None:
    """Where x raises the total BIC most, if by more than TOLERANCE over where it stands: the first place of that
    stretch (in the order without x), x's walk there, and the variables whose walk looked at x with their places
    and their walks with x's side turned; None when x stays.

    Places are counted in the order without x: inserting at g puts x before the variable now at g, so a variable
    at q (without x) stands behind x exactly when g <= q, and may then take x as a parent. The total is constant
    between the places where x's own walk or an affected variable's side changes, so only those are scored."""
    px = at[x]
    affected = sorted(users[x], key=at.__getitem__)
    q_aff = [at[w] - (at[w] > px) for w in affected]
    toggled = [trees.best(w, at, at[w], x, not at[w] > px) for w in affected]
    gain = [(score[w] - t[0]) if at[w] > px else (t[0] - score[w]) for w, t in zip(affected, toggled)]
    own = own_walks(trees, x, at)
    starts = np.array(sorted({0, *(q + 1 for q in q_aff), *(g for g, _ in own)}), dtype=np.int64)
    tail = np.concatenate([np.cumsum(np.array(gain[::-1], dtype=np.float64))[::-1], [0.0]])
    own_at = np.searchsorted(np.array([g for g, _ in own], dtype=np.int64), starts, side="right") - 1
    behind = np.searchsorted(np.array(q_aff, dtype=np.int64), starts)  # affected variables behind each start
    total = np.array([own[i][1][0] for i in own_at.tolist()]) + tail[behind]
    stretch = int(np.argmax(total))
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
    at = pos.tolist()  # the same places, as a list: the trees' walks read it one variable at a time
    score = [0.0] * p
    seen: list[set[int]] = [set() for _ in range(p)]  # the partners each variable's current walk looked at
    users: list[set[int]] = [set() for _ in range(p)]  # users[c]: the variables whose walk looked at c

    def settle(v: int, walk: Walk) -> None:
        score[v] = walk[0]
        now = set(walk[2])
        for c in seen[v] - now:
            users[c].discard(v)
        for c in now - seen[v]:
            users[c].add(v)
        seen[v] = now

    for v in range(p):
        settle(v, trees.best(v, at, at[v]))
    stopped = False
    for _ in range(MAX_PASSES):
        moved = False
        for x in list(seq):
            if nodes is not None and trees.created > nodes:
                stopped = True
                break
            move = best_place(trees, x, at, score, users) if len(partners[x]) else None
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
    rows = [(u, v) for v in range(p) for u in trees.best(v, at, at[v])[1]]
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
