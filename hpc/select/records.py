"""The selection records' file format: one record per (problem, cluster, member), the cluster's features,
the member's status, seconds and BIC and, against the truth restricted to the cluster, F1-adjacency,
F1-arrowhead and SHD. `hpc.train.records` makes them; selectors are fit on what `read_records` reads.

The store is rewritten whole and renamed into place after each finished run (hpc.store), carries a
fingerprint of the settings and a checksum of its content, so a kill at any moment loses at most the
runs in flight and a damaged or foreign file is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from hpc.data.generate import WEIGHTS
from hpc.errors import PsleError
from hpc.select.features import FEATURES
from hpc.store import StoreFormat, canonical, check_settings, check_sha256, fingerprint, read_store, write_columns

STORE = StoreFormat("psle-selection-records", 1, "psle records file")


COLUMNS = {"size": np.int64, "seconds": np.float64, "bic": np.float64, "f1_adjacent": np.float64,
           "f1_arrowhead": np.float64, "shd": np.int64}


class RecordStore:
    """Records keyed by (problem, cluster, member index); `put` persists at once."""

    def __init__(self, path: str | os.PathLike, settings: dict[str, Any], shard: str = "0/1"):
        self.path = Path(path)
        self.settings = {**settings, "shard": shard}
        self.fingerprint = fingerprint(self.settings)
        self.rows: dict[str, dict[str, Any]] = {}
        self.done_problems: set[str] = set()
        if self.path.exists():
            self._load()

    @staticmethod
    def key(problem: str, cluster: int, member: int) -> str:
        """A record's key: its problem's key (canonical JSON of its name), cluster and member index."""
        return f"{problem}#{cluster}#{member}"

    def _load(self) -> None:
        doc = read_records(self.path)
        check_settings(self.path, doc["settings"], self.settings, "records file",
                       "rerun with those settings or another -o")
        self.rows = {r["key"]: r for r in doc["rows"]}
        self.done_problems = set(doc["done_problems"])

    def put(self, key: str, row: dict[str, Any]) -> None:
        self.rows[key] = {"key": key, **row}
        self.save()

    def finish_problem(self, problem: str) -> None:
        self.done_problems.add(problem)
        self.save()

    def save(self) -> None:
        rows = list(self.rows.values())
        arrays: dict[str, np.ndarray] = {
            "key": np.array([r["key"] for r in rows], dtype=object),
            "status": np.array([r["status"] for r in rows], dtype=object),
            "features": np.array([r["features"] for r in rows], dtype=np.float64).reshape(len(rows), len(FEATURES)),
            **{c: np.array([r[c] for r in rows], dtype=t) for c, t in COLUMNS.items()},
        }
        done = sorted(self.done_problems)
        write_columns(self.path, {"format": STORE.tag, "version": STORE.version, "fingerprint": self.fingerprint,
                             "settings": canonical(self.settings), "features": canonical(list(FEATURES)),
                             "done_problems": canonical(done), "sha256": content_hash(arrays, done)},
                      "records", arrays)


def content_hash(arrays: dict[str, np.ndarray], done: list[str]) -> str:
    h = hashlib.sha256(canonical(done).encode())
    for name in sorted(arrays):
        data = arrays[name]
        h.update(name.encode())
        h.update(canonical([str(v) for v in data]).encode() if data.dtype == object else
                 np.ascontiguousarray(data).tobytes())
    return h.hexdigest()


def read_records(path: str | os.PathLike, any_features: bool = False) -> dict[str, Any]:
    """A records file's settings and rows, checked (format, version, checksum); one-line errors.
    Records of other features than this version computes are refused unless `any_features` (to upgrade them)."""
    path = Path(path)
    if not path.is_file():
        raise PsleError(f"{path}: no such file")
    def read(f: h5py.File) -> tuple:
        STORE.check(f, path)
        g = f["records"]
        arrays = {name: g[name][()] for name in ("key", "status", "features", *COLUMNS)}
        for name in ("key", "status"):
            arrays[name] = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in arrays[name]],
                                    dtype=object)
        return (arrays, json.loads(f.attrs["settings"]), json.loads(f.attrs["done_problems"]),
                json.loads(f.attrs["features"]), f.attrs["sha256"], f.attrs["fingerprint"])

    arrays, settings, done, names, stored_hash, stamp = read_store(path, read, "records file")
    check_sha256(path, stored_hash, content_hash(arrays, done))
    check_sha256(path, stamp, fingerprint(settings))
    if names != list(FEATURES) and not any_features:
        raise PsleError(f"{path}: records hold other features ({len(names)}) than this version computes "
                        f"({len(FEATURES)}); upgrade them with psle records --upgrade {path} -o NEW.h5")
    rows = [{"key": arrays["key"][i], "status": arrays["status"][i], "features": arrays["features"][i],
             **{c: arrays[c][i].item() for c in COLUMNS}} for i in range(len(arrays["key"]))]
    return {"settings": settings, "fingerprint": stamp, "rows": rows, "done_problems": done, "features": names}


def data_conditions(paths: list[str]) -> dict[str, list]:
    """The sample sizes and edge-weight ranges the records' problems were generated with: a selector
    file names them, so a user can tell whether their data are like what it learned from."""
    settings = [read_store(p, lambda f: json.loads(f.attrs["settings"]), "records file") for p in paths]
    return {"samples": sorted({s["samples"] for s in settings}),
            "weights": [list(w) for w in sorted({tuple(s.get("weights", WEIGHTS)) for s in settings})]}


def join_records(docs: list[tuple[str, dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Records of several files as one: the union of their portfolios (in order of first appearance) and
    every row keyed by its member's index in it. Files may be shards of one portfolio or other members
    run on the same problems; a (cluster, member) recorded twice keeps the first, and a cluster whose
    features differ between files (other problems behind the same name) is refused."""
    members: list[dict[str, Any]] = []
    rows: dict[str, dict[str, Any]] = {}
    features: dict[str, tuple[str, np.ndarray]] = {}
    for path, doc in docs:
        local = []
        for spec in doc["settings"]["portfolio"]:
            if spec not in members:
                members.append(spec)
            local.append(members.index(spec))
        for r in doc["rows"]:
            cluster, _, m = r["key"].rpartition("#")
            seen = features.setdefault(cluster, (path, r["features"]))
            if not np.allclose(seen[1], r["features"], rtol=1e-6, atol=1e-9, equal_nan=True):
                raise PsleError(f"{path}: cluster {cluster} has other data than in {seen[0]} "
                                "(records made with other problem settings cannot be joined)")
            rows.setdefault(f"{cluster}#{local[int(m)]}", {**r, "key": f"{cluster}#{local[int(m)]}"})
    return members, list(rows.values())
