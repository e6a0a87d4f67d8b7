"""A variable order that comes from the data, not from the file.

A CSV's column order says nothing about causes, yet searches visit variables in index order:
BOSS and GRaSP start their order search from it, fGES and fusion break score ties by it. Every
learner therefore first sorts the columns by a digest of each column's bytes. The same data in
any column order then reaches the search as the same matrix, so the answer is the same graph,
and the start says nothing about the generator's (or the user's) order.
"""

from __future__ import annotations

import hashlib

import numpy as np

from hpc.graphs.pdag import PDAG


def canonical_order(x: np.ndarray) -> np.ndarray:
    """The permutation that sorts the columns of `x` by a digest of their values (exact, no rounding)."""
    x = np.asarray(x, dtype=np.float64)
    digests = [hashlib.blake2b(np.ascontiguousarray(x[:, j]).tobytes(), digest_size=16).digest()
               for j in range(x.shape[1])]
    return np.array(sorted(range(x.shape[1]), key=digests.__getitem__), dtype=np.int64)


def relabel(g: PDAG, order: np.ndarray, variables: tuple[str, ...]) -> PDAG:
    """`g`, learned on the columns `x[:, order]`, over the original `variables` and their indices."""
    return PDAG(tuple(variables), order[g.directed], order[g.undirected])


def canonical_columns(x: np.ndarray, variables: tuple[str, ...]) -> tuple[np.ndarray, tuple[str, ...], np.ndarray]:
    """`x` and `variables` in canonical column order, and that order (for `relabel`)."""
    order = canonical_order(x)
    return np.ascontiguousarray(x[:, order]), tuple(variables[i] for i in order), order
