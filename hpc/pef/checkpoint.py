"""A PEF run's memory (`psle learn --checkpoint RUN.h5`): the partition and every finished member
run, in one HDF5 file rewritten atomically after each run, so a run killed or preempted after
hours continues where it stopped and never recomputes a finished member run.

The file names the data (sha256 of the matrix and variable names) and the settings that decide
its content (members, per-run time limit, partition, selection); a checkpoint of other data or
settings, a foreign file or a damaged one (content sha256) is refused in one line and left alone.
It also counts every member run and step result it was ever handed (`recorded`): equal to the number it
holds unless a finished run was computed again, which is what resuming must never do.

Fusion's progress is kept too: the F1 screening result of every finished cluster pair, under the
fusion settings that produced it (other fusion settings on resume start the screening afresh
instead of refusing: the member runs are still good). Screening blocks finish many per second,
so those are written at most every `flush_seconds` and once at the end of the screening.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from hpc.learners.ensemble import MemberRun
from hpc.store import StoreFormat, canonical, check_settings, check_sha256, read_store, writing

#: Version 2 added the count of recorded runs, 3 fusion's screened blocks, 4 the repair's rounds and the data
#: in its canonical column order (hpc.graphs.order), 5 the steps after fusion's results by step name. Versions
#: 1-3 hold runs made in the file's column order, 4 steps after fusion cut by clocks, so they are refused with a
#: message saying so, rather than resumed into a different graph.
_COLUMN_ORDER = "whose runs followed the file's column order; delete it to start afresh"
STORE = StoreFormat("psle-learn-checkpoint", 5, "psle learn checkpoint", {
    1: _COLUMN_ORDER, 2: _COLUMN_ORDER, 3: _COLUMN_ORDER,
    4: "whose steps after fusion were cut by clocks; delete it to start afresh"})

Screened = tuple[np.ndarray, np.ndarray, int]  # F1 of one cluster pair: pairs found, their p-values, pairs tested


def data_hash(x: np.ndarray, variables: tuple[str, ...]) -> str:
    h = hashlib.sha256(np.ascontiguousarray(x, dtype=np.float64).tobytes())
    h.update("\0".join(variables).encode())
    return h.hexdigest()


def _content_hash(settings: str, runs: str, *arrays: np.ndarray, recorded: int, screen_key: str) -> str:
    h = hashlib.sha256(settings.encode())
    h.update(runs.encode())
    h.update(f"recorded={recorded}".encode())
    h.update(f"screen={screen_key}".encode())
    for a in arrays:
        a = np.asarray(a)
        h.update(np.ascontiguousarray(a, dtype=np.float64 if a.dtype.kind == "f" else np.int64).tobytes())
    return h.hexdigest()


SCREEN_SETS = ("screened_blocks", "screened_tested", "screened_counts", "screened_pairs", "screened_p")


class RunCheckpoint:
    """Partition and member runs keyed by (cluster, member index), the steps after fusion's results keyed by
    (step name, index). Results persist at once, but screened blocks and the step results put with
    `at_once=False` (the polish's searches, which can come hundreds a second: a recut pass at 10,000 variables
    makes 700, and each save takes 0.1 s) at most every `flush_seconds` and at `flush`: a kill loses at most
    those seconds of work, never the graph, which a resumed run recomputes the same."""

    def __init__(self, path: str | os.PathLike, settings: dict[str, Any], flush_seconds: float = 10.0):
        self.path = Path(path)
        self.settings = settings
        self.clusters: list[np.ndarray] | None = None
        self.runs: dict[tuple[int, int], MemberRun] = {}
        self.recorded = 0
        self.screen_key: str | None = None  # the fusion settings the screened blocks belong to
        self.screened: dict[int, Screened] = {}
        self.steps: dict[tuple[str, int], MemberRun] = {}
        self.flush_seconds, self._saved_at, self._dirty = flush_seconds, 0.0, False
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        read_store(self.path, self._read, "checkpoint")

    def _read(self, f: h5py.File) -> None:
        STORE.check(f, self.path)
        check_settings(self.path, json.loads(f.attrs["settings"]), self.settings, "checkpoint",
                       "use another --checkpoint or the same command")
        runs_text = f["runs"][()].decode()
        members, sizes, edges = f["cluster_members"][()], f["cluster_sizes"][()], f["edges"][()]
        recorded = int(f.attrs["recorded"])
        screen_key = str(f.attrs["screen_key"])
        screen = [f[name][()] for name in SCREEN_SETS]
        check_sha256(self.path, f.attrs.get("sha256"),
                     _content_hash(f.attrs["settings"], runs_text, members, sizes, edges, *screen,
                                   recorded=recorded, screen_key=screen_key))
        if len(sizes):  # the clusters in their own order: member runs index variables within them
            self.clusters = np.split(members, np.cumsum(sizes)[:-1])
        for row in json.loads(runs_text):
            lo, mid, hi = row.pop("edges")
            directed = None if row["status"] != "ok" else edges[lo:mid].reshape(-1, 2)
            undirected = None if row["status"] != "ok" else edges[mid:hi].reshape(-1, 2)
            run = MemberRun(row["spec"], row["status"], directed, undirected, row["bic"], row["seconds"],
                            row.get("error"))
            if "step" in row:
                self.steps[row["step"], row["index"]] = run
            else:
                self.runs[row["cluster"], row["member"]] = run
        self.recorded = recorded
        if screen:
            blocks, tested, counts, pairs, pvals = screen
            bounds = np.cumsum(counts)[:-1]
            self.screen_key = screen_key
            self.screened = {int(b): (fp, pv, int(t)) for b, t, fp, pv in
                             zip(blocks, tested, np.split(pairs.reshape(-1, 2), bounds), np.split(pvals, bounds))}

    def screened_under(self, key: str) -> dict[int, Screened]:
        """Screened blocks kept for these fusion settings; other settings drop them (screening starts afresh)."""
        if key != self.screen_key:
            self.screen_key, self.screened = key, {}
        return dict(self.screened)

    def put_screened(self, block: int, result: Screened) -> None:
        self.screened[block] = result
        self._touch()

    def _touch(self) -> None:
        self._dirty = True
        if time.monotonic() - self._saved_at >= self.flush_seconds:
            self.save()

    def flush(self) -> None:
        if self._dirty:
            self.save()

    def set_clusters(self, clusters: list[np.ndarray]) -> None:
        self.clusters = clusters
        self.save()

    def put(self, cluster: int, member: int, run: MemberRun) -> None:
        self.runs[cluster, member] = run
        self.recorded += 1
        self.save()

    def put_step(self, step: str, index: int, run: MemberRun, at_once: bool = True) -> None:
        """A step after fusion's result (a repair round, a polish search, ...); each step's results carry the spec
        of the search that made them, so a resumed run reuses one only for the same search."""
        self.steps[step, index] = run
        self.recorded += 1
        if at_once:
            self.save()
        else:
            self._touch()

    def save(self) -> None:
        clusters = self.clusters or []
        members = np.concatenate(clusters).astype(np.int64) if clusters else np.empty(0, dtype=np.int64)
        sizes = np.array([len(c) for c in clusters], dtype=np.int64)
        rows, parts, at = [], [], 0
        keyed: list[tuple[dict[str, Any], MemberRun]] = [({"cluster": c, "member": k}, run)
                                                         for (c, k), run in sorted(self.runs.items())]
        keyed += [({"step": name, "index": i}, run) for (name, i), run in sorted(self.steps.items())]
        for key, run in keyed:
            d = np.empty((0, 2), dtype=np.int64) if run.directed is None else np.asarray(run.directed, dtype=np.int64)
            u = np.empty((0, 2), dtype=np.int64) if run.undirected is None else np.asarray(run.undirected,
                                                                                            dtype=np.int64)
            parts += [d.ravel(), u.ravel()]
            rows.append({**key, "spec": run.spec, "status": run.status, "bic": run.bic,
                         "seconds": run.seconds, "error": run.error, "edges": [at, at + d.size, at + d.size + u.size]})
            at += d.size + u.size
        edges = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        settings, runs = canonical(self.settings), canonical(rows)
        blocks = sorted(self.screened)
        screen = [np.array(blocks, dtype=np.int64),
                  np.array([self.screened[b][2] for b in blocks], dtype=np.int64),
                  np.array([len(self.screened[b][0]) for b in blocks], dtype=np.int64),
                  np.concatenate([np.asarray(self.screened[b][0], dtype=np.int64).reshape(-1, 2) for b in blocks]
                                 or [np.empty((0, 2), dtype=np.int64)]),
                  np.concatenate([np.asarray(self.screened[b][1], dtype=np.float64) for b in blocks]
                                 or [np.empty(0)])]
        screen_key = self.screen_key or ""
        attrs = {"format": STORE.tag, "version": STORE.version, "settings": settings, "recorded": self.recorded,
                 "screen_key": screen_key,
                 "sha256": _content_hash(settings, runs, members, sizes, edges, *screen,
                                         recorded=self.recorded, screen_key=screen_key)}
        with writing(self.path, attrs) as f:
            f.create_dataset("runs", data=runs.encode())  # a dataset: attributes stop at 64 kB
            f.create_dataset("cluster_members", data=members)
            f.create_dataset("cluster_sizes", data=sizes)
            f.create_dataset("edges", data=edges)
            for name, data in zip(SCREEN_SETS, screen):
                f.create_dataset(name, data=data)
        self._saved_at, self._dirty = time.monotonic(), False
