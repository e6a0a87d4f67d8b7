"""FLOP (Wienöbst, Henckel & Weichwald, ICLR 2026; PyPI `flopsearch` 0.2.2, Rust): an order search with BIC.

Runs inside the learner worker process (worker.py) like the Tetrad searches, so a time limit kills it
from outside. FLOP's own `timeout` is never passed: in 0.3.0 it stopped nothing (once it fires, the
restart loop runs on without end), and the flag it sets is global to the process, so it would also cut
every later call's restarts short.

FLOP takes a data matrix, the members a covariance. Its score reads the data only through their
correlation matrix and row count (it computes the correlation itself, and BIC from that and n), so
`factor` builds n rows whose sample covariance is `cov` exactly and FLOP sees what the data would
have shown it.

Pinned to 0.2.2, not the newer 0.3.0: 0.3.0 shuffles the candidate parents of every grow and shrink pass
with a generator seeded from the OS, which no caller can seed, so two runs on the same data gave
different graphs (SHD 24-64 apart on 200-variable, 1,000-row problems); 0.2.2 visits them in a fixed
order, so without restarts the same data give the same graph, at the same accuracy (er, sf, hub and ws
at 200 variables, seeds 100-102: mean SHD 80 against 85 for 0.3.0's). Restarts perturb the order at
random in both, so `restarts` > 0 is not reproducible. The search holds the GIL throughout.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

import numpy as np
from scipy.linalg.lapack import dpotrf

from hpc.learners.bic import MIN_RESIDUAL
from hpc.learners.tetrad import tetrad_name
from hpc.learners.worker import PARENT_ENV

PR_SET_PDEATHSIG = 1


def factor(cov: np.ndarray, n: int) -> np.ndarray:
    """An n x p matrix with centred columns whose sample covariance (divisor n - 1) is `cov`.

    Rows are H R sqrt(n - 1), with cov = RᵀR (Cholesky; refused when singular) and H the first p
    Helmert contrasts: p orthonormal columns orthogonal to the ones vector, nonzero in rows 0..p only.
    Row i of H R is a suffix sum of the scaled rows of R, so building it costs O(p²) besides the Cholesky.
    """
    p = cov.shape[0]
    if p >= n:
        raise ValueError(f"{p} variables for {n} rows: a sample covariance of full rank needs fewer variables")
    r, info = dpotrf(cov, lower=0, clean=1)  # cov = RᵀR; info = k > 0: variable k - 1 is where it broke down
    kept = np.diag(r) ** 2 / np.diag(cov) if info == 0 else np.zeros(p)  # variance left given the variables before
    if kept.min() < MIN_RESIDUAL:  # FLOP's own check lets some of these through, to search on rounding noise
        i = info - 1 if info > 0 else int(np.argmax(kept < MIN_RESIDUAL))
        # Named as the Tetrad runners name variables, so the member's message says the user's name.
        raise ValueError(f"{tetrad_name(i)} is a linear combination of other variables (the covariance is "
                         "singular): FLOP needs a covariance of full rank; drop it or one of them")
    j = np.arange(p)
    c = 1.0 / np.sqrt((j + 1.0) * (j + 2.0))
    scaled = c[:, None] * r
    x = np.zeros((n, p))
    x[:p] = np.cumsum(scaled[::-1], axis=0)[::-1]  # row i: sum over j >= i of c_j R_j
    x[1:p + 1] -= (j + 1.0)[:, None] * scaled  # row j + 1: minus (j + 1) c_j R_j
    return x * np.sqrt(n - 1.0)


def cpdag_arrays(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(directed, undirected) index arrays from FLOP's matrix: 1 at (i, j) is i -> j, 2 at (i, j) and
    (j, i) is i --- j."""
    a = np.asarray(a)
    undirected = np.argwhere((a == 2) & (a.T == 2))
    directed = np.argwhere(a == 1)
    if len(directed) + len(undirected) != np.count_nonzero(a) or np.any((a == 1) & (a.T != 0)):
        raise ValueError("FLOP returned a matrix that is not a CPDAG (entries other than 0, 1 and symmetric 2s)")
    return directed.astype(np.int64), undirected[undirected[:, 0] < undirected[:, 1]].astype(np.int64)


def _die_with_parent() -> None:
    """In a worker: the worker's own parent watch is a Python thread, which cannot run while FLOP holds
    the GIL, so ask the kernel to kill this process when its parent goes, or an orphaned search runs on.
    (The kernel's parent is the thread that started the worker; workers are per thread, so one whose
    thread has gone is unreachable anyway.)"""
    parent = os.environ.get(PARENT_ENV, "")
    if parent.isdigit() and sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != int(parent):  # the parent went before the request arrived
            os._exit(1)


def run_flop(cov: np.ndarray, n: int, penalty: float, restarts: int) -> tuple[np.ndarray, np.ndarray]:
    """FLOP's CPDAG on `cov` (divisor n - 1) and sample size n, as (directed, undirected) index arrays."""
    import flopsearch

    if len(cov) < 2:  # one variable has no edges (and flopsearch panics on it)
        return np.empty((0, 2), dtype=np.int64), np.empty((0, 2), dtype=np.int64)
    x = factor(np.asarray(cov, dtype=np.float64), int(n))
    _die_with_parent()
    try:
        a = flopsearch.flop(x, float(penalty), restarts=int(restarts))
    except RuntimeError as exc:  # e.g. "Cholesky decomposition failed" on a nearly singular covariance
        raise ValueError(f"{exc} (a nearly singular covariance: some variables are almost linear combinations "
                         "of others)") from None
    return cpdag_arrays(a)
