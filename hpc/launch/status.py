"""Where a sweep stands, from its manifest, its result files and SLURM's accounting.

The SLURM launcher writes `psle-sweep.json` into the sweep folder as soon as the array is
submitted: one row per task with its overrides, SLURM task id, result file and log. A task is
done (or timed out by its own wall limit) when its result file exists, whatever SLURM says;
otherwise `squeue` (live) and `sacct` (history) tell pending, running, requeued or failed.

A local sweep (Hydra's basic launcher) has no manifest: Hydra's `multirun.yaml` and one folder per
task started, holding that task's config, tell its tasks and where their results go. Nothing records
whether its process still runs, so a task started without a result is "started (no result yet)".
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


#: What Hydra writes into a local sweep's folder when it starts.
LOCAL_SWEEP = "multirun.yaml"


def find_manifest(folder: str | Path) -> Path:
    """`folder`'s sweep (a SLURM sweep's manifest or a local sweep's multirun.yaml), or the newest one below it
    (a results folder holds every sweep)."""
    folder = Path(folder)
    for name in (MANIFEST, LOCAL_SWEEP):
        if (folder / name).is_file():
            return folder / name
    if not folder.is_dir():
        raise PsleError(f"{folder}: no such folder")
    found = sorted([*folder.rglob(MANIFEST), *folder.rglob(LOCAL_SWEEP)], key=lambda p: p.stat().st_mtime)
    if not found:
        raise PsleError(f"{folder}: no sweep found here (neither a SLURM sweep's {MANIFEST} nor a local sweep's "
                        f".hydra/sweep/*/{LOCAL_SWEEP}); give the results folder or the sweep folder psle-experiment "
                        "printed")
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
        row = {**task, **finished(Path(task["result"]), manifest.get("submitted_at", 0))}
        if "state" not in row:
            row["state"] = SLURM_STATES.get(slurm.get(task["job"], "PENDING"), "unknown")
        rows.append(row)
    return rows


def finished(result: Path, since: float) -> dict[str, Any]:
    """A task's state and scores from its result file ({} without one); a file older than the sweep was skipped."""
    if not result.is_file():
        return {}
    try:
        outcome = json.loads(result.read_text())
    except (OSError, json.JSONDecodeError):
        outcome = {}
    state = "timed out (own limit)" if outcome.get("status") == "timed out" else "done"
    if result.stat().st_mtime < since:  # there before this sweep: skipped
        state = "skipped (" + state + " before)"
    return {"state": state, "outcome": {k: outcome.get(k) for k in ("f1_adjacent", "f1_arrowhead", "shd", "seconds")}}


def local_tasks(sweep: Path) -> tuple[list[dict[str, Any]], int | None]:
    """A local sweep's started tasks as rows (their result files found from each task's own config, results
    folder set to the one the sweep lives in), and how many tasks the sweep has in all (None: not known)."""
    from omegaconf import OmegaConf

    from hpc.launch.tasks import result_path

    results_dir = sweep.parent.parent.parent  # <results_dir>/.hydra/sweep/<started>
    since = (sweep / LOCAL_SWEEP).stat().st_mtime - 1
    rows = []
    for folder in sorted((d for d in sweep.iterdir() if d.name.isdigit()), key=lambda d: int(d.name)):
        config, overrides = folder / ".hydra" / "config.yaml", folder / ".hydra" / "overrides.yaml"
        if not config.is_file():
            continue
        cfg = OmegaConf.load(config)
        cfg.results_dir = str(results_dir)
        result = result_path(cfg)
        row = {"index": int(folder.name), "job": "local", "result": str(result), "log": str(folder / "experiment.log"),
               "overrides": list(OmegaConf.load(overrides)) if overrides.is_file() else []}
        rows.append({**row, **(finished(result, since) or {"state": "started (no result yet)"})})
    return rows, sweep_size(OmegaConf.load(sweep / LOCAL_SWEEP))


def sweep_size(multirun: Any) -> int | None:
    """How many tasks Hydra's basic sweeper makes of a sweep's overrides and sweeper params (a product)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = multirun.hydra.sweeper.get("params") or {}
    texts = [*multirun.hydra.overrides.task, *(f"{k}={v}" for k, v in params.items())]
    try:
        overrides = OverridesParser.create().parse_overrides(texts)
        size = 1
        for o in overrides:
            if o.is_sweep_override():
                size *= len(list(o.sweep_string_iterator()))
    except Exception:  # a sweep syntax this count does not follow
        return None
    return size


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
    if path.name == LOCAL_SWEEP:
        return local_status(path.parent, watch, stream)
    manifest = json.loads(path.read_text())
    while True:
        rows = task_states(manifest)
        print(f"sweep {path.parent} (SLURM job {manifest['job_id']}, submitted {manifest['submitted']})\n"
              f"{show(rows)}\n{len(rows)} tasks: {summary(rows)}", file=stream, flush=True)
        if watch is None or not any(r["state"] in ACTIVE for r in rows):
            return rows
        time.sleep(watch)


def local_status(sweep: Path, watch: float | None, stream) -> list[dict[str, Any]]:
    """A local sweep's table: its started tasks, their results so far, and how many have not started."""
    while True:
        rows, size = local_tasks(sweep)
        waiting = "" if size is None or size <= len(rows) else f", {size - len(rows)} not started"
        print(f"local sweep {sweep} (started {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime((sweep / LOCAL_SWEEP).stat().st_mtime))}; "
              "it runs in the terminal of the psle-experiment that started it, which shows its progress)\n"
              f"{show(rows)}\n{size if size is not None else len(rows)} tasks: {summary(rows)}{waiting}",
              file=stream, flush=True)
        if watch is None or (size is not None and all(r["state"] != "started (no result yet)" for r in rows)
                             and len(rows) >= size):
            return rows
        time.sleep(watch)
