"""BOSS's order search over candidate partners, in numpy: the engine of the polish, the recut and BOSS members.

Why not Tetrad's BOSS: its every move rescans the whole order and copies each prefix, about p³ work a pass
whatever the candidate pairs, and its searches were half of a run's seconds. Here a variable's parents may
come only from its partners, so moving `x` changes only its own score and those of the partners it passes:
the score of every position follows from x's partners alone. Moving x in front of a partner w or behind it
changes w's score by a fixed amount, and x's own best parent set changes only where the prefix gains a
partner, so the deg(x) + 1 gaps between x's partners (in the current order) are all the positions to score.

A local score is Tetrad's SemBicScore (hpc.learners.bic, constants dropped), and a variable's parents under a
prefix come from a grow-shrink tree (as BOSS's): the grow adds the partner with the best gain while it gains,
the shrink then removes the parent whose removal gains most while one does. The tree keeps each node's
partners ranked by gain, so a prefix's parent set is a walk down it. Everything is arithmetic on one
covariance in a fixed order, so the same input gives the same DAG on any machine with the same numpy.
"""

from __future__ import annotations

import math

import numpy as np

from hpc.learners.bic import MIN_RESIDUAL, residual_variance

#: A move must raise the total BIC by more than this (rounding in sums of cached scores is far below it).
TOLERANCE = 1e-6
#: Passes over the order at most; a pass moves every variable once, to its best place. On a hub-1000 run's
#: polish searches (seed 100) the final DAG came within 1-4 passes.
MAX_PASSES = 50


class GrowShrinkTrees:
    """Each variable's grow-shrink tree over `cov`: `best(v, ...)` is v's local score and parent set when only
    its partners in a given prefix of the order may be parents. Nodes and shrinks are cached for the search."""

    def __init__(self, cov: np.ndarray, n: int, penalty: float, partners: list[np.ndarray]) -> None:
        self.cov, self.n = cov, n
        self.cost = penalty * math.log(n)
        self.partners = partners
        self.nodes: list[dict[tuple[int, ...], tuple[list[int], float]]] = [{} for _ in partners]
        self.shrunk: list[dict[tuple[int, ...], tuple[float, tuple[int, ...]]]] = [{} for _ in partners]

    def _fit(self, path: tuple[int, ...], targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Covariances of `path` with `targets`, and the regression coefficients of each target on `path` (least
        squares where the block is singular: collinear data)."""
        idx = np.array(path, dtype=np.int64)
        block, rhs = self.cov[np.ix_(idx, idx)], self.cov[np.ix_(idx, targets)]
        try:
            return rhs, np.linalg.solve(block, rhs)
        except np.linalg.LinAlgError:
            return rhs, np.linalg.lstsq(block, rhs, rcond=None)[0]

    def _node(self, v: int, path: tuple[int, ...]) -> tuple[list[int], float]:
        """The partners that raise v's score when added to `path`, best first, and v's residual on `path`."""
        node = self.nodes[v].get(path)
        if node is not None:
            return node
        c = self.cov
        cands = self.partners[v]
        if path:
            cands = cands[~np.isin(cands, path)]
            rhs, beta = self._fit(path, np.concatenate([[v], cands]).astype(np.int64))
            s2 = float(max(c[v, v] - rhs[:, 0] @ beta[:, 0], MIN_RESIDUAL * c[v, v]))
            cross = c[cands, v] - rhs[:, 1:].T @ beta[:, 0]  # partial covariances with v, given the path
            var = c[cands, cands] - np.einsum("ij,ij->j", rhs[:, 1:], beta[:, 1:])
        else:
            s2 = float(c[v, v])
            cross, var = c[cands, v], c[cands, cands]
        with np.errstate(divide="ignore", invalid="ignore"):
            after = s2 - np.where(var > MIN_RESIDUAL * c[cands, cands], cross * cross / var, 0.0)
        after = np.maximum(after, MIN_RESIDUAL * c[v, v])
        gain = -self.n * np.log(after / s2) - self.cost
        keep = gain > 0
        node = (cands[keep][np.argsort(-gain[keep], kind="stable")].tolist(), s2)
        self.nodes[v][path] = node
        return node

    def _shrink(self, v: int, grown: tuple[int, ...], s2: float) -> tuple[float, tuple[int, ...]]:
        key = tuple(sorted(grown))
        done = self.shrunk[v].get(key)
        if done is not None:
            return done
        parents = list(key)
        score = -self.n * math.log(s2) - self.cost * len(parents)
        while parents:
            best, drop = score, -1
            for i in range(len(parents)):
                rest = tuple(parents[:i] + parents[i + 1:])
                left = residual_variance(self.cov, v, np.array(rest, dtype=np.int64)) if rest else self.cov[v, v]
                s = -self.n * math.log(left) - self.cost * len(rest)
                if s > best + TOLERANCE:
                    best, drop = s, i
            if drop < 0:
                break
            parents.pop(drop)
            score = best
        done = (score, tuple(parents))
        self.shrunk[v][key] = done
        return done

    def best(self, v: int, pos: list[int], limit: int, x: int = -1, x_in: bool = False) -> tuple[float, tuple[int, ...]]:
        """v's local score and parents when its partners placed before `limit` in `pos` may be parents, except
        that partner `x`, if given, may be one exactly when `x_in`."""
        path: tuple[int, ...] = ()
        while True:
            ranked, s2 = self._node(v, path)
            for c in ranked:
                if (x_in if c == x else pos[c] < limit):
                    path = path + (c,)
                    break
            else:
                break
        if not path:
            return -self.n * math.log(s2), ()
        return self._shrink(v, path, s2)


def order_search(cov: np.ndarray, n: int, penalty: float, order: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """BOSS over the variables of `cov` (covariance of `n` rows) with BIC penalty discount `penalty`, started from
    `order`, where a variable's parents may come only from its partners in `pairs` (unordered, local indices):
    the DAG it ends at, as parent -> child rows.

    Each pass takes the variables in the order's sequence at the pass's start and moves each to the place that
    raises the total BIC most (strictly, by more than TOLERANCE; of equal places, the nearest to where it was);
    passes repeat until one moves nothing (at most MAX_PASSES)."""
    p = cov.shape[0]
    near: list[set[int]] = [set() for _ in range(p)]
    for a, b in np.asarray(pairs, dtype=np.int64).reshape(-1, 2).tolist():
        if a != b:
            near[a].add(b)
            near[b].add(a)
    partners = [np.array(sorted(s), dtype=np.int64) for s in near]
    trees = GrowShrinkTrees(np.asarray(cov, dtype=np.float64), n, penalty, partners)
    seq = [int(v) for v in order]
    pos = np.empty(p, dtype=np.int64)
    pos[seq] = np.arange(p)
    at = pos.tolist()  # the same places, as a list: the trees' walks read it one variable at a time
    score = np.array([trees.best(v, at, at[v])[0] for v in range(p)])
    for _ in range(MAX_PASSES):
        moved = False
        for x in list(seq):
            ws = partners[x]
            if not len(ws):
                continue
            px = at[x]
            ws = ws[np.argsort(pos[ws], kind="stable")]
            wl = ws.tolist()
            after = pos[ws] > px
            other = np.array([trees.best(w, at, at[w], x, not a)[0] for w, a in zip(wl, after.tolist())])
            with_x = np.where(after, score[ws], other)
            without_x = np.where(after, other, score[ws])
            # what the partners behind gap k gain from x in their prefix, for each gap k (after k partners)
            tail = np.concatenate([np.cumsum((with_x - without_x)[::-1])[::-1], [0.0]])
            own = [trees.best(x, at, at[w])[0] for w in wl] + [trees.best(x, at, p)[0]]
            total = np.asarray(own) + tail
            here = int(np.count_nonzero(~after))
            k = int(np.argmax(total))
            if not total[k] > total[here] + TOLERANCE:
                continue
            # x goes into gap k; in the order without x, as near its old place as the gap allows
            shifted = pos[ws] - after
            lo = int(shifted[k - 1]) + 1 if k > 0 else 0
            hi = int(shifted[k]) if k < len(ws) else p - 1
            j = min(max(px, lo), hi)
            seq.pop(px)
            seq.insert(j, x)
            first, last = min(px, j), max(px, j)
            for i in range(first, last + 1):
                at[seq[i]] = i
            pos[seq[first:last + 1]] = np.arange(first, last + 1)
            score[x] = own[k]
            score[ws] = np.where(pos[ws] > j, with_x, without_x)
            moved = True
        if not moved:
            break
    rows = [(u, v) for v in range(p) for u in trees.best(v, at, at[v])[1]]
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def run_order_search(x: np.ndarray, penalty: float, order: np.ndarray, pairs: np.ndarray, threads: int = 1,
                     knowledge: dict | None = None) -> np.ndarray:
    """`order_search` on the data `x` (rows = samples), as a worker runner with run_boss_bounded's arguments;
    with prior knowledge it is Tetrad's BOSS, which keeps tiers and required edges in its moves."""
    if knowledge:
        from hpc.learners.tetrad import run_boss_bounded

        return run_boss_bounded(x, penalty, order, pairs, threads, knowledge)
    cov = np.atleast_2d(np.cov(x, rowvar=False))
    return order_search(cov, x.shape[0], penalty, order, pairs)
