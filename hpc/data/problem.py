"""Problem files (HDF5): data, variable names and, for benchmarks, the true DAG.

Layout: `/data` float64 (n, p); `/variables` UTF-8 strings (p,); `/truth/edges` int64 (E, 2)
as (parent, child) indices, with `/truth/weights` (E,) and `/truth/noise_sd` (p,) when the
SEM is known. File attributes record how it was made. Timestamps are switched off so the
same seed writes the same bytes.

Files written here carry a format tag and a sha256 of their content: a damaged benchmark would
otherwise score learners against a wrong truth without a word. Files made by other tools (a
user's own HDF5 data) have neither and are read after the same type and name checks.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from hpc.atomic import atomic_path
from hpc.errors import PsleError
from hpc.store import read_store
from hpc.graphs.pdag import PDAG
from hpc.jsontext import dumps

FORMAT = "psle-problem/1"
FORMAT_ATTR, HASH_ATTR = "psle_format", "psle_sha256"


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


def content_hash(problem: Problem) -> str:
    """sha256 of everything a reader gets back: data, names, truth and attributes."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(problem.data, dtype=np.float64).tobytes())
    h.update("\0".join(problem.variables).encode())
    for part in (None if problem.truth is None else problem.truth.directed, problem.weights, problem.noise_sd):
        h.update(b"-" if part is None else np.ascontiguousarray(part, dtype=np.float64).tobytes())
    h.update(dumps(problem.attrs, sort_keys=True).encode())
    return h.hexdigest()


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
            f.attrs[FORMAT_ATTR] = FORMAT
            f.attrs[HASH_ATTR] = content_hash(problem)


def _need(f: h5py.File, name: str, path: str | os.PathLike) -> h5py.Dataset:
    if name not in f or not isinstance(f[name], h5py.Dataset):
        raise PsleError(f"{path}: missing dataset /{name}")
    return f[name]


def _real(f: h5py.File, name: str, path: str | os.PathLike, kinds: str = "iuf") -> np.ndarray:
    """A numeric dataset, refusing what a cast would silently change (complex, strings, floats as indices)."""
    ds = _need(f, name, path)
    if ds.dtype.kind not in kinds:
        what = "integers" if kinds == "iu" else "real numbers"
        raise PsleError(f"{path}: /{name} holds {ds.dtype} values; expected {what}")
    return ds[()]


def _names(f: h5py.File, path: str | os.PathLike) -> tuple[str, ...]:
    ds = _need(f, "variables", path)
    if ds.dtype.kind not in "OSU" or ds.ndim != 1:
        raise PsleError(f"{path}: /variables must be a list of strings, got {ds.dtype} of shape {ds.shape}")
    try:
        names = tuple(v.decode() if isinstance(v, bytes) else str(v) for v in ds[()])
    except UnicodeDecodeError:
        raise PsleError(f"{path}: /variables is not UTF-8 text") from None
    seen: set[str] = set()
    for k, name in enumerate(names):
        if not name.strip():
            raise PsleError(f"{path}: /variables entry {k + 1} is empty")
        if name in seen:
            raise PsleError(f"{path}: variable name {name!r} appears twice in /variables")
        seen.add(name)
    return names


def read_problem(path: str | os.PathLike, need_truth: bool = False) -> Problem:
    """Read and check a problem file; `need_truth` makes a missing /truth/edges an error."""
    if not Path(path).is_file():
        raise PsleError(f"{path}: no such file")
    problem, tags = read_store(path, lambda f: _read(f, path, need_truth), "problem file", kept=False)
    if tags.get(FORMAT_ATTR, FORMAT) != FORMAT:
        raise PsleError(f"{path}: problem format {tags[FORMAT_ATTR]!r} is not {FORMAT!r}; regenerate it")
    if HASH_ATTR in tags and tags[HASH_ATTR] != content_hash(problem):
        raise PsleError(f"{path}: content does not match its checksum (the file is damaged); regenerate it")
    return problem


def _read(f: h5py.File, path: str | os.PathLike, need_truth: bool) -> tuple[Problem, dict[str, Any]]:
    data = _real(f, "data", path)
    variables = _names(f, path)
    if data.ndim != 2 or data.shape[1] != len(variables):
        raise PsleError(f"{path}: /data has shape {data.shape} but /variables names {len(variables)} columns")
    truth = weights = noise_sd = None
    if "truth/edges" in f or need_truth:
        edges = _real(f, "truth/edges", path, kinds="iu")
        if edges.ndim != 2 or (edges.size and edges.shape[1] != 2):
            raise PsleError(f"{path}: /truth/edges must have shape (E, 2), got {edges.shape}")
        try:
            truth = PDAG(variables, edges.astype(np.int64))
        except PsleError as exc:
            raise PsleError(f"{path}: /truth/edges: {exc}") from None
        weights = _real(f, "truth/weights", path) if "truth/weights" in f else None
        noise_sd = _real(f, "truth/noise_sd", path) if "truth/noise_sd" in f else None
    attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
    tags = {k: attrs.pop(k) for k in (FORMAT_ATTR, HASH_ATTR) if k in attrs}
    problem = Problem(np.asarray(data, dtype=np.float64), variables, truth,
                      None if weights is None else np.asarray(weights, dtype=np.float64),
                      None if noise_sd is None else np.asarray(noise_sd, dtype=np.float64), attrs)
    return problem, tags
