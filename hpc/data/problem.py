"""Problem files (HDF5): data, variable names and, for benchmarks, the true DAG.

Layout: `/data` float64 (n, p); `/variables` UTF-8 strings (p,); `/truth/edges` int64 (E, 2)
as (parent, child) indices, with `/truth/weights` (E,) and `/truth/noise_sd` (p,) when the
SEM is known. File attributes record how it was made. Timestamps are switched off so the
same seed writes the same bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from hpc.atomic import atomic_path
from hpc.errors import PsleError
from hpc.graphs.pdag import PDAG


@dataclass(frozen=True)
class Problem:
    data: np.ndarray
    variables: tuple[str, ...]
    truth: PDAG | None = None
    weights: np.ndarray | None = None
    noise_sd: np.ndarray | None = None
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.data.shape[0]

    @property
    def p(self) -> int:
        return self.data.shape[1]


def _dataset(f: h5py.File, name: str, data: np.ndarray, **kw: Any) -> None:
    f.create_dataset(name, data=data, track_times=False, **kw)


def write_problem(path: str | os.PathLike, problem: Problem) -> None:
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w", track_order=False) as f:
            _dataset(f, "data", np.ascontiguousarray(problem.data, dtype=np.float64))
            _dataset(f, "variables", np.array(problem.variables, dtype=object),
                     dtype=h5py.string_dtype("utf-8"))
            if problem.truth is not None:
                f.create_group("truth", track_order=False)
                _dataset(f, "truth/edges", problem.truth.directed.astype(np.int64))
                if problem.weights is not None:
                    _dataset(f, "truth/weights", problem.weights.astype(np.float64))
                if problem.noise_sd is not None:
                    _dataset(f, "truth/noise_sd", problem.noise_sd.astype(np.float64))
            for key, value in sorted(problem.attrs.items()):
                f.attrs[key] = value


def _need(f: h5py.File, name: str, path: str | os.PathLike) -> h5py.Dataset:
    if name not in f or not isinstance(f[name], h5py.Dataset):
        raise PsleError(f"{path}: missing dataset /{name}")
    return f[name]


def read_problem(path: str | os.PathLike, need_truth: bool = False) -> Problem:
    """Read and check a problem file; `need_truth` makes a missing /truth/edges an error."""
    if not Path(path).is_file():
        raise PsleError(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise PsleError(f"{path}: not an HDF5 file") from None
    with f:
        data = _need(f, "data", path)[()]
        variables = tuple(v.decode() if isinstance(v, bytes) else str(v) for v in _need(f, "variables", path)[()])
        if data.ndim != 2 or data.shape[1] != len(variables):
            raise PsleError(f"{path}: /data has shape {data.shape} but /variables names {len(variables)} columns")
        truth = weights = noise_sd = None
        if "truth/edges" in f or need_truth:
            edges = _need(f, "truth/edges", path)[()]
            if edges.ndim != 2 or (edges.size and edges.shape[1] != 2):
                raise PsleError(f"{path}: /truth/edges must have shape (E, 2), got {edges.shape}")
            try:
                truth = PDAG(variables, edges.astype(np.int64))
            except PsleError as exc:
                raise PsleError(f"{path}: /truth/edges: {exc}") from None
            weights = f["truth/weights"][()] if "truth/weights" in f else None
            noise_sd = f["truth/noise_sd"][()] if "truth/noise_sd" in f else None
        attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
    return Problem(np.asarray(data, dtype=np.float64), variables, truth, weights, noise_sd, attrs)
