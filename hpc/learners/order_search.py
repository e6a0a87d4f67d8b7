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
(hpc.learners.trees_kernel), and so are the moves (hpc.learners.moves_kernel). Everything is arithmetic on one
covariance in a fixed order (what the trees hold depends only on the calls before), so the same input gives the
same DAG on any machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import numpy as np

from hpc.learners import moves_kernel as moves
from hpc.learners import trees_kernel as kernel
from hpc.learners.bic import covariance, residual_variance

#: This module's search as a worker runner (hpc.learners.worker), for the steps that run it in a task.
RUNNER = "hpc.learners.order_search:run_order_search"
#: Passes over the order at most; a pass moves every variable once, to its best place. On a hub-1000 run's
#: polish searches (seed 100) the final DAG came within 1-4 passes.
MAX_PASSES = 50


class GrowShrinkTrees:
    """Each variable's grow-shrink tree over `cov` (hpc.learners.trees_kernel, compiled), where a variable's
    parents may come only from its `partners`; the moves over them are hpc.learners.moves_kernel's."""

    def __init__(self, cov: np.ndarray, n: int, penalty: float, partners: list[np.ndarray]) -> None:
        # Writable C arrays, always: numba compiles the kernels anew (about 30 s) for each new layout or read-only
        # flag, and np.diag's read-only view was itself contiguous for one variable
        self.cov = np.require(cov, dtype=np.float64, requirements=["C", "W"])
        self.diag = np.diag(self.cov).copy()
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

    def search(self, order: np.ndarray, nodes: int | None) -> tuple[np.ndarray, bool]:
        """BOSS from `order`, stopped before the next move once the trees hold over `nodes` nodes (None: no
        bound): the DAG reached (parent -> child rows) and whether the bound stopped it."""
        return _search(*self.trees, self.cov, self.diag, self.pstart, self.plist, self.n, self.cost, self.needed,
                       np.array(order, dtype=np.int64), -1 if nodes is None else int(nodes), MAX_PASSES)


#: The compiled search, typed as called (numba's dispatcher hides its signature).
_search = cast(Callable[..., tuple[np.ndarray, bool]], moves.search)


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


def order_search(cov: np.ndarray, n: int, penalty: float, order: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
    """BOSS over the variables of `cov` (covariance of `n` rows) with BIC penalty discount `penalty`, started from
    `order`, where a variable's parents may come only from its partners in `pairs` (unordered, local indices;
    None: every pair): the DAG it ends at, as parent -> child rows.

    Each pass takes the variables in the order's sequence at the pass's start and moves each to the place that
    raises the total BIC most (strictly, by more than a tolerance; of equal places, the nearest to where it was);
    passes repeat until one moves nothing (at most MAX_PASSES)."""
    return bounded_order_search(cov, n, penalty, order, pairs, None)[0]


def bounded_order_search(cov: np.ndarray, n: int, penalty: float, order: np.ndarray, pairs: np.ndarray | None,
                         nodes: int | None) -> tuple[np.ndarray, bool]:
    """`order_search`, stopped before the next move once its trees hold over `nodes` nodes (None: no bound): the
    DAG of the order reached, and whether the bound stopped it. Nodes, not seconds, so the same input stops at the
    same place on any machine."""
    cov = np.asarray(cov, dtype=np.float64)
    trees = GrowShrinkTrees((cov + cov.T) / 2, n, penalty, partners_of(cov.shape[0], pairs))  # exactly symmetric
    return trees.search(order, nodes)


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
    """`bounded_order_search` on the data `x` (rows = samples), with one BLAS thread. The covariance and the trees
    use no BLAS; only the pseudo-inverse of a block that is not positive definite does, and one thread keeps its
    rounding independent of the core count (a second would also only wait for a core another task holds: sf-1000's
    rival took twice its idle seconds beside an fGES so, when the search's products were BLAS's)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        cov = covariance(x)
        return bounded_order_search(cov, x.shape[0], penalty, order, pairs, nodes)


def compile_kernel() -> None:
    """Compile the trees' kernel, GES's (hpc.learners.ges_kernel), the covariance's and BIC's residual now (numba keeps
    them on disk), so that a run's first search does not pay for it (about 30 s, once per installation)."""
    from hpc.learners.ges_kernel import ges_pattern

    cov = covariance(np.random.default_rng(0).normal(size=(20, 3)))
    order_search(cov, 20, 2.0, np.arange(3), None)
    ges_pattern(cov, 20, 2.0, 3)
    residual_variance(cov, 0, np.arange(1, 3))
