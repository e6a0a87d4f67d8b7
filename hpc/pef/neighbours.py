"""Each variable's most correlated others: the sparse view of the correlation matrix.

Above some tens of thousands of variables a p x p matrix no longer fits in memory (40 GB of float32
at 100,000), so partition and fusion work from each variable's k strongest |r| instead. They are
computed block by block of rows (one block of |z_rows.T @ z| at a time, a pure function a dask
worker can run), so memory grows with p * k plus one block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

#: Entries of one block of |r| (rows x p float32): 256 MB.
BLOCK_ENTRIES = 64_000_000
#: Rows whose k strongest are selected at a time (the selection's int64 indices are rows x p).
SELECT_ROWS = 64

#: Runs fn over tasks and yields (task index, result), in any order (an Executor's `run`).
TaskRunner = Callable[[Callable, list[tuple]], Iterable[tuple[int, Any]]]
#: Every variable's neighbours, strongest first, and their |r|: (p, k) int64 and float32.
Near = tuple[np.ndarray, np.ndarray]


def serial(fn: Callable, tasks: list[tuple]) -> Iterator[tuple[int, Any]]:
    return ((t, fn(*args)) for t, args in enumerate(tasks))


def row_blocks(p: int, entries: int = BLOCK_ENTRIES) -> list[tuple[int, int]]:
    """[lo, hi) ranges of rows whose |r| against all p variables fit in `entries`."""
    step = max(1, entries // max(p, 1))
    return [(lo, min(lo + step, p)) for lo in range(0, p, step)]


def strongest(z: np.ndarray, lo: int, hi: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For rows lo..hi-1: the k other variables with the largest |r| (int64, (hi-lo, k)) and those |r|
    (float32), each row sorted strongest first (ties by index). `z` is standardised data (z.T @ z = R).
    The selection runs SELECT_ROWS rows at a time, so its index arrays stay small beside the block."""
    p = z.shape[1]
    r = np.abs(z[:, lo:hi].T @ z)
    r[np.arange(hi - lo), np.arange(lo, hi)] = -1.0  # never one's own neighbour
    k = min(k, p - 1)
    index = np.empty((hi - lo, k), dtype=np.int64)
    strength = np.empty((hi - lo, k), dtype=np.float32)
    for a in range(0, hi - lo, SELECT_ROWS):
        rows = r[a:a + SELECT_ROWS]
        top = np.argpartition(rows, p - k, axis=1)[:, p - k:] if k < p else np.argsort(rows, axis=1)
        top.sort(axis=1)  # by index first, so the stable sort below breaks ties by index
        value = np.take_along_axis(rows, top, axis=1)
        order = np.argsort(-value, axis=1, kind="stable")
        index[a:a + len(rows)] = np.take_along_axis(top, order, axis=1)
        strength[a:a + len(rows)] = np.take_along_axis(value, order, axis=1)
    return index, strength


def nearest(z: Any, p: int, k: int, run: TaskRunner = serial,
            entries: int = BLOCK_ENTRIES) -> Near:
    """Every variable's k strongest neighbours and their |r|, (p, k) each, for standardised data `z` of p
    variables (or a handle to it on dask workers); `run` maps the row blocks."""
    k = min(k, p - 1)
    index = np.empty((p, k), dtype=np.int64)
    strength = np.empty((p, k), dtype=np.float32)
    blocks = row_blocks(p, entries)
    for b, (top, value) in run(strongest, [(z, lo, hi, k) for lo, hi in blocks]):
        lo, hi = blocks[b]
        index[lo:hi], strength[lo:hi] = top, value
    return index, strength


def similarity_graph(index: np.ndarray, strength: np.ndarray) -> sp.csr_matrix:
    """Symmetric sparse |r| over the union of every variable's neighbours (i near j or j near i)."""
    p, k = index.shape
    rows = np.repeat(np.arange(p), k)
    a = sp.csr_matrix((strength.ravel().astype(np.float64), (rows, index.ravel())), shape=(p, p))
    return a.maximum(a.T).tocsr()
