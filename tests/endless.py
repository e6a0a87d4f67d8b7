"""Data on which Tetrad's searches never end: blocks of variables that all share one hidden cause.

Within a block every pair stays dependent given any small set of the others, so Tetrad's fGES (penalty 1)
scores ever more subsets of a variable's neighbours for each edge it adds, and PC-Stable tests ever
more conditioning sets: the work grows exponentially with the block. On the 2-core test machine
fGES took 77 s on a block of 20 variables and had not ended after 170 s on 25; a block of 80 would
take it years. Tests of time limits use these blocks, so that a limit of seconds is reached however
fast the machine is, instead of a problem that is merely slow today.
"""

from __future__ import annotations

import numpy as np

ENDLESS = 80  # variables per block: years of search on any machine


def endless_blocks(sizes: tuple[int, ...] = (ENDLESS,), n: int = 1000, seed: int = 0,
                   rho: float = 0.5) -> tuple[np.ndarray, tuple[str, ...]]:
    """n rows of independent blocks of the given sizes; within a block every pair has correlation `rho`."""
    rng = np.random.default_rng(seed)
    blocks = [np.sqrt(rho) * rng.standard_normal((n, 1)) + np.sqrt(1 - rho) * rng.standard_normal((n, size))
              for size in sizes]
    variables = tuple(f"b{b}x{i}" for b, size in enumerate(sizes) for i in range(size))
    return np.hstack(blocks), variables
