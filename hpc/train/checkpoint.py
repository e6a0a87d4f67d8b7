"""Auto-SLE's memory: every finished (configuration, problem) evaluation, in one HDF5 file.

The file is rewritten whole (temporary file, fsync, rename) after each evaluation, so a kill
at any moment leaves either the previous or the next complete version. It carries a
fingerprint of the run's settings and a sha256 of its content; a file from other settings, not
from `psle train` at all, or damaged in place is refused with a clear message, never loaded or
overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from hpc.errors import PsleError
from hpc.store import StoreFormat, canonical, check_settings, check_sha256, fingerprint, read_store, write_columns

#: Version 2 added the content sha256; version 1 files still resume, unverified.
STORE = StoreFormat("psle-autosle-checkpoint", 2, "psle train checkpoint", {1: None})


def content_hash(settings: dict[str, Any], rounds: list[dict[str, Any]],
                 evaluations: dict[str, dict[str, Any]]) -> str:
    """sha256 of what a resumed run reads back, in the form it reads it."""
    return hashlib.sha256(canonical([settings, rounds, evaluations]).encode()).hexdigest()


class Checkpoint:
    """Evaluations keyed by (member spec, problem index); `put` persists at once."""

    def __init__(self, path: str | os.PathLike, settings: dict[str, Any]):
        self.path = Path(path)
        self.settings = settings
        self.fingerprint = fingerprint(settings)
        self.evaluations: dict[str, dict[str, Any]] = {}
        self.rounds: list[dict[str, Any]] = []
        if self.path.exists():
            self._load()

    @staticmethod
    def key(spec: dict[str, Any], problem: int) -> str:
        return f"{canonical(spec)}#{problem}"

    def _load(self) -> None:
        read_store(self.path, self._read, "checkpoint")

    def _read(self, f: h5py.File) -> None:
        version = STORE.check(f, self.path)
        if f.attrs.get("fingerprint") != self.fingerprint:
            check_settings(self.path, json.loads(f.attrs.get("settings", "{}")), self.settings, "checkpoint",
                           "rerun with those settings or another --checkpoint")
            check_sha256(self.path, f.attrs.get("fingerprint"), self.fingerprint)  # same settings, other stamp
        try:
            keys = [k.decode() if isinstance(k, bytes) else k for k in f["evaluations/keys"][()]]
            quality = f["evaluations/quality"][()]
            seconds = f["evaluations/seconds"][()]
            status = [s.decode() if isinstance(s, bytes) else s for s in f["evaluations/status"][()]]
            runs = f["evaluations/runs"][()]
            # Checkpoints written before BIC was kept have none: the paper's objective does not need it.
            bics = f["evaluations/bic"][()] if "evaluations/bic" in f else np.full(len(keys), np.nan)
            rounds = json.loads(f.attrs.get("rounds", "[]"))
        except KeyError as exc:
            raise PsleError(f"{self.path}: checkpoint is incomplete ({exc})") from None
        if not len(keys) == len(quality) == len(seconds) == len(status) == len(runs) == len(bics):
            raise PsleError(f"{self.path}: damaged checkpoint (evaluation columns differ in length)")
        evaluations = {k: {"quality": float(q), "seconds": float(s), "status": st, "runs": int(n),
                           "bic": None if np.isnan(b) else float(b)}
                       for k, q, s, st, n, b in zip(keys, quality, seconds, status, runs, bics)}
        if version == STORE.version:
            check_sha256(self.path, f.attrs.get("sha256"), content_hash(self.settings, rounds, evaluations))
        self.rounds, self.evaluations = rounds, evaluations

    def get(self, spec: dict[str, Any], problem: int) -> dict[str, Any] | None:
        return self.evaluations.get(self.key(spec, problem))

    def put(self, spec: dict[str, Any], problem: int, result: dict[str, Any]) -> None:
        key = self.key(spec, problem)
        runs = self.evaluations.get(key, {}).get("runs", 0) + 1  # > 1 would mean work was redone: audited by tests
        self.evaluations[key] = {**{k: result[k] for k in ("quality", "seconds", "status")}, "runs": runs,
                                 "bic": result.get("bic")}
        self.save()

    def set_rounds(self, rounds: list[dict[str, Any]]) -> None:
        self.rounds = rounds
        self.save()

    def save(self) -> None:
        items = list(self.evaluations.values())
        write_columns(self.path, {"format": STORE.tag, "version": STORE.version, "fingerprint": self.fingerprint,
                             "settings": canonical(self.settings), "rounds": canonical(self.rounds),
                             "sha256": content_hash(self.settings, self.rounds, self.evaluations)}, "evaluations", {
            "keys": np.array(list(self.evaluations), dtype=object),
            "quality": np.array([v["quality"] for v in items], dtype=np.float64),
            "seconds": np.array([v["seconds"] for v in items], dtype=np.float64),
            "runs": np.array([v["runs"] for v in items], dtype=np.int64),
            "bic": np.array([np.nan if v["bic"] is None else v["bic"] for v in items], dtype=np.float64),
            "status": np.array([v["status"] for v in items], dtype=object)})
