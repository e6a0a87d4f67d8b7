"""Auto-SLE's memory: every finished (configuration, problem) evaluation, in one HDF5 file, with the
trials and resumes that tell where a training stands (hpc.train.status).

The file is rewritten whole (temporary file, fsync, rename) after each evaluation, so a kill
at any moment leaves either the previous or the next complete version. It carries a
fingerprint of the run's settings and a sha256 of its content; a file from other settings, not
from `psle train` at all, or damaged in place is refused with a clear message, never loaded or
overwritten. The trials (round, trial, member, gain, seconds) and the resume counter have a sha256
of their own, so a psle from before them reads the evaluations' part unchanged; a file from before
them has neither, and says so ("unknown").
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from hpc.errors import PsleError
from hpc.store import (StoreFormat, add_columns, canonical, check_settings, check_sha256, fingerprint, read_store,
                       writing)

#: Version 2 added the content sha256; version 1 files still resume, unverified.
STORE = StoreFormat("psle-autosle-checkpoint", 2, "psle train checkpoint", {1: None})


def content_hash(settings: dict[str, Any], rounds: list[dict[str, Any]],
                 evaluations: dict[str, dict[str, Any]]) -> str:
    """sha256 of what a resumed run reads back, in the form it reads it."""
    return hashlib.sha256(canonical([settings, rounds, evaluations]).encode()).hexdigest()


def progress_hash(trials: dict[tuple[int, int], dict[str, Any]], resumes: int | None, uncounted: bool) -> str:
    return hashlib.sha256(canonical([[[*key, t] for key, t in sorted(trials.items())], resumes, uncounted])
                          .encode()).hexdigest()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else value


@dataclass
class Contents:
    """What a checkpoint file holds. `trials` maps (round, trial), both from 1, to the trial's member (canonical
    spec), gain and seconds (NaN: not timed); `resumes` is None in a file from before the counter, and
    `resumes_uncounted` says a file was resumed before it had one (so the count is a lower bound)."""

    settings: dict[str, Any]
    fingerprint: str | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)
    evaluations: dict[str, dict[str, Any]] = field(default_factory=dict)
    trials: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    resumes: int | None = 0
    resumes_uncounted: bool = False


def read_contents(f: h5py.File, path: str | os.PathLike) -> Contents:
    """A checkpoint's contents, checked (format, columns, both checksums), under the settings it names."""
    version = STORE.check(f, path)
    settings = json.loads(f.attrs.get("settings", "{}"))
    try:
        keys = [_text(k) for k in f["evaluations/keys"][()]]
        quality = f["evaluations/quality"][()]
        seconds = f["evaluations/seconds"][()]
        status = [_text(s) for s in f["evaluations/status"][()]]
        runs = f["evaluations/runs"][()]
        # Checkpoints written before BIC was kept have none: the paper's objective does not need it.
        bics = f["evaluations/bic"][()] if "evaluations/bic" in f else np.full(len(keys), np.nan)
        rounds = json.loads(f.attrs.get("rounds", "[]"))
    except KeyError as exc:
        raise PsleError(f"{path}: checkpoint is incomplete ({exc})") from None
    if not len(keys) == len(quality) == len(seconds) == len(status) == len(runs) == len(bics):
        raise PsleError(f"{path}: damaged checkpoint (evaluation columns differ in length)")
    evaluations = {k: {"quality": float(q), "seconds": float(s), "status": st, "runs": int(n),
                       "bic": None if np.isnan(b) else float(b)}
                   for k, q, s, st, n, b in zip(keys, quality, seconds, status, runs, bics)}
    if version == STORE.version:
        check_sha256(path, f.attrs.get("sha256"), content_hash(settings, rounds, evaluations))
    return Contents(settings, f.attrs.get("fingerprint"), rounds, evaluations, *_progress(f, path))


def _progress(f: h5py.File, path: str | os.PathLike) -> tuple[dict[tuple[int, int], dict[str, Any]], int | None, bool]:
    """The trials and resume counter; none in a file from before them."""
    if "trials" not in f and "resumes" not in f.attrs and "progress_sha256" not in f.attrs:
        return {}, None, False
    try:
        g = f["trials"]
        trials = {(int(r), int(t)): {"member": _text(m), "gain": float(gain), "seconds": float(s)}
                  for r, t, m, gain, s in zip(g["round"][()], g["trial"][()], g["member"][()], g["gain"][()],
                                              g["seconds"][()])}
        resumes, uncounted = int(f.attrs["resumes"]), bool(f.attrs.get("resumes_uncounted", False))
    except KeyError as exc:
        raise PsleError(f"{path}: checkpoint is incomplete ({exc})") from None
    check_sha256(path, f.attrs.get("progress_sha256"), progress_hash(trials, resumes, uncounted))
    return trials, resumes, uncounted


def split_key(key: str) -> tuple[str, int]:
    """An evaluation's key (Checkpoint.key) as its member (canonical spec) and problem index."""
    member, _, problem = key.rpartition("#")
    return member, int(problem)


class Checkpoint(Contents):
    """Evaluations keyed by (member spec, problem index), and the trials; `put` and `record_trial` persist
    at once. `existed`: the file was there when this process opened it (a resume, if it trains on);
    `predates_trials`: it was written by a psle that kept no trials, so a resumed run replays the ones
    already done without timing them."""

    def __init__(self, path: str | os.PathLike, settings: dict[str, Any]):
        super().__init__(settings, fingerprint(settings))
        self.path = Path(path)
        self.existed, self.predates_trials = self.path.exists(), False
        if self.existed:
            self._load()

    @staticmethod
    def key(spec: dict[str, Any], problem: int) -> str:
        return f"{canonical(spec)}#{problem}"

    def _load(self) -> None:
        read_store(self.path, self._read, "checkpoint")

    def _read(self, f: h5py.File) -> None:
        found = read_contents(f, self.path)
        if found.fingerprint != self.fingerprint:
            check_settings(self.path, found.settings, self.settings, "checkpoint",
                           "rerun with those settings or another --checkpoint")
            check_sha256(self.path, found.fingerprint, fingerprint(self.settings))  # same settings, other stamp
        self.rounds, self.evaluations, self.trials = found.rounds, found.evaluations, found.trials
        self.predates_trials = found.resumes is None
        # Resumes before the counter are not known: count from here on, as a lower bound.
        self.resumes, self.resumes_uncounted = (0, True) if found.resumes is None else \
            (found.resumes, found.resumes_uncounted)

    def get(self, spec: dict[str, Any], problem: int) -> dict[str, Any] | None:
        return self.evaluations.get(self.key(spec, problem))

    def put(self, spec: dict[str, Any], problem: int, result: dict[str, Any]) -> None:
        key = self.key(spec, problem)
        runs = self.evaluations.get(key, {}).get("runs", 0) + 1  # > 1 would mean work was redone: audited by tests
        self.evaluations[key] = {**{k: result[k] for k in ("quality", "seconds", "status")}, "runs": runs,
                                 "bic": result.get("bic")}
        self.save()

    def set_rounds(self, rounds: list[dict[str, Any]]) -> None:
        """The finished rounds; a resumed run replaying rounds already kept leaves the file as it is."""
        if rounds != self.rounds[:len(rounds)]:
            self.rounds = list(rounds)
            self.save()

    def count_resume(self) -> int:
        """One more process continues this checkpoint: the new count, kept at once."""
        self.resumes = (self.resumes or 0) + 1
        self.save()
        return self.resumes

    def record_trial(self, round_: int, trial: int, spec: dict[str, Any], gain: float, seconds: float) -> bool:
        """Keep a finished trial (round and trial from 1); False, keeping the first record, when a resumed
        run replays one already recorded (its replay takes no time, which would skew the estimate)."""
        if (round_, trial) in self.trials:
            return False
        self.trials[round_, trial] = {"member": canonical(spec), "gain": float(gain), "seconds": float(seconds)}
        self.save()
        return True

    def save(self) -> None:
        items = list(self.evaluations.values())
        trials = [(*key, t) for key, t in sorted(self.trials.items())]
        attrs = {"format": STORE.tag, "version": STORE.version, "fingerprint": self.fingerprint,
                 "settings": canonical(self.settings), "rounds": canonical(self.rounds),
                 "sha256": content_hash(self.settings, self.rounds, self.evaluations),
                 "resumes": self.resumes or 0, "resumes_uncounted": self.resumes_uncounted,
                 "progress_sha256": progress_hash(self.trials, self.resumes or 0, self.resumes_uncounted)}
        with writing(self.path, attrs) as f:
            add_columns(f, "evaluations", {
                "keys": np.array(list(self.evaluations), dtype=object),
                "quality": np.array([v["quality"] for v in items], dtype=np.float64),
                "seconds": np.array([v["seconds"] for v in items], dtype=np.float64),
                "runs": np.array([v["runs"] for v in items], dtype=np.int64),
                "bic": np.array([np.nan if v["bic"] is None else v["bic"] for v in items], dtype=np.float64),
                "status": np.array([v["status"] for v in items], dtype=object)})
            add_columns(f, "trials", {
                "round": np.array([r for r, _, _ in trials], dtype=np.int64),
                "trial": np.array([t for _, t, _ in trials], dtype=np.int64),
                "member": np.array([v["member"] for _, _, v in trials], dtype=object),
                "gain": np.array([v["gain"] for _, _, v in trials], dtype=np.float64),
                "seconds": np.array([v["seconds"] for _, _, v in trials], dtype=np.float64)})
