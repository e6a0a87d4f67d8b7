"""Where a submitted sweep stands, from its manifest, its result files and SLURM's accounting.

The SLURM launcher writes `psle-sweep.json` into the sweep folder as soon as the array is
submitted: one row per task with its overrides, SLURM task id, result file and log. A task is
done (or timed out by its own wall limit) when its result file exists, whatever SLURM says;
otherwise `squeue` (live) and `sacct` (history) tell pending, running, requeued or failed.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hpc.atomic import write_text_atomic
from hpc.errors import PsleError
from hpc.jsontext import dumps

MANIFEST = "psle-sweep.json"
ACTIVE = ("pending", "running", "requeued")
SLURM_STATES = {"PENDING": "pending", "CONFIGURING": "running", "RUNNING": "running", "COMPLETING": "running",
                "REQUEUED": "requeued", "REQUEUE_HOLD": "requeued", "REQUEUE_FED": "requeued", "PREEMPTED": "requeued",
                "RESIZING": "running", "SUSPENDED": "pending", "TIMEOUT": "failed (SLURM time limit)",
                "FAILED": "failed", "NODE_FAIL": "failed (node)", "OUT_OF_MEMORY": "failed (out of memory)",
                "CANCELLED": "cancelled", "BOOT_FAIL": "failed (node)", "DEADLINE": "failed (deadline)",
                "COMPLETED": "failed (no result)"}


def write_manifest(sweep_dir: str | Path, job_id: str, tasks: list[dict[str, Any]]) -> Path:
    path = Path(sweep_dir) / MANIFEST
    write_text_atomic(path, dumps({"job_id": job_id, "submitted": time.strftime("%Y-%m-%d %H:%M:%S"),
                                   "submitted_at": time.time(), "tasks": tasks}, indent=1) + "\n")
    return path


def find_manifest(folder: str | Path) -> Path:
    """`folder`'s manifest, or the newest one below it (a results folder holds every sweep)."""
    folder = Path(folder)
    if (folder / MANIFEST).is_file():
        return folder / MANIFEST
    if not folder.is_dir():
        raise PsleError(f"{folder}: no such folder")
    found = sorted(folder.rglob(MANIFEST), key=lambda p: p.stat().st_mtime)
    if not found:
        raise PsleError(f"{folder}: no sweep submitted from here ({MANIFEST} not found)")
    return found[-1]


def _slurm_states(job_id: str) -> dict[str, str]:
    """SLURM task id ("123_4") -> state, history first, then live states over it."""
    states: dict[str, str] = {}
    history = subprocess.run(["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "JobID,State"], capture_output=True,
                             text=True)
    for line in history.stdout.splitlines():
        task, _, state = line.partition("|")
        states[task] = state.split()[0] if state else ""
    live = subprocess.run(["squeue", "-r", "-h", "-j", job_id, "-o", "%i|%T"], capture_output=True, text=True)
    for line in live.stdout.splitlines():
        task, _, state = line.partition("|")
        states[task] = state
    return states


def task_states(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Each task's row with its `state` and, where it has one, its `result` row."""
    slurm = _slurm_states(str(manifest["job_id"]))
    rows = []
    for task in manifest["tasks"]:
        result = Path(task["result"])
        row = {**task}
        if result.is_file():
            try:
                outcome = json.loads(result.read_text())
            except (OSError, json.JSONDecodeError):
                outcome = {}
            row["state"] = "timed out (own limit)" if outcome.get("status") == "timed out" else "done"
            if result.stat().st_mtime < manifest.get("submitted_at", 0):  # there before this sweep: skipped
                row["state"] = "skipped (" + row["state"] + " before)"
            row["outcome"] = {k: outcome.get(k) for k in ("f1_adjacent", "f1_arrowhead", "shd", "seconds")}
        else:
            row["state"] = SLURM_STATES.get(slurm.get(task["job"], "PENDING"), "unknown")
        rows.append(row)
    return rows


def summary(rows: list[dict[str, Any]]) -> str:
    counts = Counter(r["state"] for r in rows)
    return ", ".join(f"{counts[s]} {s}" for s in sorted(counts, key=lambda s: (s not in ("done",), s)))


def show(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        where = r["result"] if "outcome" in r else r["log"]
        o = r.get("outcome") or {}
        scores = (f"  F1 {o['f1_adjacent']:.3f}/{o['f1_arrowhead']:.3f} SHD {o['shd']} {o['seconds']:.0f} s"
                  if o.get("f1_adjacent") is not None else "")
        lines.append(f"{r['index']:>4}  {r['job']:<12} {r['state']:<24} {' '.join(r['overrides'])}{scores}  ->  {where}")
    return "\n".join(lines)


def status(folder: str | Path, watch: float | None = None, stream=None) -> list[dict[str, Any]]:
    """Print the sweep's table and summary (every `watch` seconds until no task is active)."""
    import sys

    stream = stream or sys.stdout
    path = find_manifest(folder)
    manifest = json.loads(path.read_text())
    while True:
        rows = task_states(manifest)
        print(f"sweep {path.parent} (SLURM job {manifest['job_id']}, submitted {manifest['submitted']})\n"
              f"{show(rows)}\n{len(rows)} tasks: {summary(rows)}", file=stream, flush=True)
        if watch is None or not any(r["state"] in ACTIVE for r in rows):
            return rows
        time.sleep(watch)
