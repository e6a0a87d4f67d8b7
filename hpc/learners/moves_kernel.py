"""The order search's moves (hpc.learners.order_search), compiled with numba.

Each move asks its variable's walk at every stretch of the order and the walks of the variables that looked at it
with its side turned: tens of walks a move, each one compiled call. From Python each call paid about 7 µs to hand
numba the trees' fourteen containers, and the moves' own bookkeeping ran in the interpreter: together a quarter
of an every-pair search's seconds on layer-1000 (tuning seed 100). Here a whole search is one call.

The moves are those hpc.learners.order_search describes, in the same order and with the same arithmetic (sums
taken in the same sequence), so the DAGs are the ones the Python loop found (the same on 100 searches).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
from numba import njit, types
from numba.typed import Dict, List

from hpc.learners import trees_kernel as kernel
from hpc.learners.numba_cache import ensure_cache_folder
from hpc.learners.trees_kernel import TOLERANCE  # a move, like a shrink step, must gain more than this

ensure_cache_folder()

#: The compiled walk, typed as called (numba's dispatcher hides its signature).
_walk = cast(Callable[..., tuple], kernel.walk)
#: A set of variables, as a typed dict (numba's own sets can loop forever on lookups after many removals:
#: numba/numba#6543; its typed dicts resize past their deleted entries, as CPython's do).
_VARIABLES = types.DictType(types.int64, types.boolean)


@njit(cache=True, error_model="numpy")
def _variables() -> Dict:
    """An empty set of variables."""
    return Dict.empty(types.int64, types.boolean)


@njit(cache=True, error_model="numpy")
def _best(trees: tuple, ctx: tuple, v: int, pos: np.ndarray, limit: int, x: int, x_in: bool) -> tuple:
    """v's walk (trees_kernel.walk): score, parents, the partners looked at, the first place among those that
    might not be parents."""
    return _walk(*trees, *ctx, v, pos, limit, x, x_in)


@njit(cache=True, error_model="numpy")
def _settle(v: int, walk: tuple, score: np.ndarray, seen: List, users: List) -> None:
    """Take `walk` as v's: its score, and the index of who looked at whom."""
    score[v] = walk[0]
    now = _variables()
    for c in walk[2]:
        now[c] = True
    before = seen[v]
    for c in before.keys():
        if c not in now:
            users[c].pop(v, False)
    for c in now.keys():
        if c not in before:
            users[c][v] = True
    seen[v] = now


@njit(cache=True, error_model="numpy")
def _own_walks(trees: tuple, ctx: tuple, x: int, pos: np.ndarray) -> tuple[list, list]:
    """x's walk at each place g of the order without x (from g on, until the next entry): the same until a partner
    it looked at comes before it, so only those places need a walk."""
    p = len(pos)
    px = pos[x]
    places, walks = [0], [_best(trees, ctx, x, pos, 0, -1, False)]
    while walks[-1][3] != p:  # else no partner it looked at comes later: the same walk from here on
        g = walks[-1][3] - (1 if walks[-1][3] > px else 0) + 1
        places.append(g)
        walks.append(_best(trees, ctx, x, pos, g if g <= px else g + 1, -1, False))
    return places, walks


@njit(cache=True, error_model="numpy")
def _best_place(trees: tuple, ctx: tuple, x: int, pos: np.ndarray, score: np.ndarray, users: List) -> tuple:
    """Where x raises the total BIC most, if by more than TOLERANCE over where it stands: whether it moves, the
    first place of that stretch (in the order without x), x's walk there, the variables whose walk looked at x (by
    place), their places without x and their walks with x's side turned.

    Places are counted in the order without x: inserting at g puts x before the variable now at g, so a variable
    at q (without x) stands behind x exactly when g <= q, and may then take x as a parent. The total is constant
    between the places where x's own walk or an affected variable's side changes, so only those are scored."""
    px = pos[x]
    affected = np.empty(len(users[x]), dtype=np.int64)
    i = 0
    for w in users[x].keys():
        affected[i] = w
        i += 1
    affected = affected[np.argsort(pos[affected])]
    m = len(affected)
    q_aff = np.empty(m, dtype=np.int64)
    gain = np.empty(m)
    toggled = []
    for i in range(m):
        w = affected[i]
        behind_x = pos[w] > px
        q_aff[i] = pos[w] - (1 if behind_x else 0)
        t = _best(trees, ctx, w, pos, pos[w], x, not behind_x)
        toggled.append(t)
        gain[i] = (score[w] - t[0]) if behind_x else (t[0] - score[w])
    places, walks = _own_walks(trees, ctx, x, pos)
    own_places = np.array(places, dtype=np.int64)
    starts = np.unique(np.concatenate((np.zeros(1, dtype=np.int64), q_aff + 1, own_places)))
    tail = np.zeros(m + 1)
    for i in range(m - 1, -1, -1):
        tail[i] = tail[i + 1] + gain[i]
    own_at = np.searchsorted(own_places, starts, side="right") - 1
    behind = np.searchsorted(q_aff, starts)  # affected variables behind each start
    total = np.empty(len(starts))
    for i in range(len(starts)):
        total[i] = walks[own_at[i]][0] + tail[behind[i]]
    top = total.max() - TOLERANCE
    stretch = 0
    while total[stretch] < top:  # of places equal but for rounding, the first
        stretch += 1
    here = np.searchsorted(starts, px, side="right") - 1
    moves = total[stretch] > total[here] + TOLERANCE
    return moves, starts[stretch], walks[own_at[stretch]], affected, q_aff, toggled


@njit(cache=True, error_model="numpy")
def search(root: np.ndarray, ranked: list, s2s: list, held: dict, child: dict, hcross: list, hvar: list, hinv: list,
           hs2: list, queue: list, shrunk: dict, shrink_score: list, shrink_parents: list, counts: np.ndarray,
           cov: np.ndarray, diag: np.ndarray, pstart: np.ndarray, plist: np.ndarray, n: float,
           cost: float, needed: float, order: np.ndarray, nodes: int, passes: int) -> tuple[np.ndarray, bool]:
    """BOSS from `order` over the trees (trees_kernel.new_trees and their context), stopped before the next move
    once they hold over `nodes` nodes (-1: no bound), at most `passes` passes: the DAG reached (parent -> child
    rows) and whether the bound stopped it."""
    trees = (root, ranked, s2s, held, child, hcross, hvar, hinv, hs2, queue, shrunk, shrink_score, shrink_parents,
             counts)
    ctx = (cov, diag, pstart, plist, n, cost, needed)
    p = len(order)
    seq = order.copy()
    pos = np.empty(p, dtype=np.int64)
    pos[seq] = np.arange(p)
    score = np.zeros(p)
    seen = List.empty_list(_VARIABLES)  # the partners each variable's current walk looked at
    users = List.empty_list(_VARIABLES)  # users[c]: the variables whose walk looked at c
    for v in range(p):
        seen.append(_variables())
        users.append(_variables())
    for v in range(p):
        _settle(v, _best(trees, ctx, v, pos, pos[v], -1, False), score, seen, users)
    stopped = False
    for _ in range(passes):
        moved = False
        for x in seq.copy():
            if nodes >= 0 and counts[0] > nodes:
                stopped = True
                break
            if pstart[x + 1] == pstart[x]:
                continue
            moves, lo, walk, affected, q_aff, toggled = _best_place(trees, ctx, x, pos, score, users)
            if not moves:
                continue
            _move(x, lo, walk, affected, q_aff, toggled, seq, pos, score, seen, users, plist[pstart[x]:pstart[x + 1]])
            moved = True
        if stopped or not moved:
            break
    return _dag(trees, ctx, pos), stopped


@njit(cache=True, error_model="numpy")
def _move(x: int, lo: int, walk: tuple, affected: np.ndarray, q_aff: np.ndarray, toggled: list, seq: np.ndarray,
          pos: np.ndarray, score: np.ndarray, seen: List, users: List, partners: np.ndarray) -> None:
    """Move x to the stretch starting at `lo` (_best_place's answer): into the first gap between its partners
    there, as near its old place as the gap allows; take its walk there, and the turned walks of those it passed."""
    p = len(seq)
    px = pos[x]
    q_partners = np.sort(pos[partners] - (pos[partners] > px))
    k = np.searchsorted(q_partners, lo)
    j = min(max(px, lo), q_partners[k] if k < len(q_partners) else p - 1)
    if j > px:
        for i in range(px, j):
            seq[i] = seq[i + 1]
    else:
        for i in range(px, j, -1):
            seq[i] = seq[i - 1]
    seq[j] = x
    for i in range(min(px, j), max(px, j) + 1):
        pos[seq[i]] = i
    _settle(x, walk, score, seen, users)
    for i in range(len(affected)):
        if (q_aff[i] >= lo) != (q_aff[i] >= px):  # it changed sides of x: its walk is the toggled one
            _settle(affected[i], toggled[i], score, seen, users)


@njit(cache=True, error_model="numpy")
def _dag(trees: tuple, ctx: tuple, pos: np.ndarray) -> np.ndarray:
    """The DAG of the order `pos` (each variable's place): parent -> child rows, children in index order."""
    rows = []
    for v in range(len(pos)):
        for u in _best(trees, ctx, v, pos, pos[v], -1, False)[1]:
            rows.append((u, v))
    out = np.empty((len(rows), 2), dtype=np.int64)
    for i in range(len(rows)):
        out[i, 0], out[i, 1] = rows[i]
    return out
