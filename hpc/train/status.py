"""Where an Auto-SLE training stands, from its checkpoint alone: `psle train --status`.

The file is opened read-only and without HDF5's file lock, so looking never writes, never waits
for and never blocks the training (which replaces the file by renaming a new one over it). The
estimate of the time left is the mean seconds of the trials timed so far times the trials left in
the k rounds: rounds differ in cost (their configurations do), so it is an estimate.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import h5py

from hpc.errors import PsleError
from hpc.train.checkpoint import Contents, read_contents, split_key
from hpc.train.space import PAPER_SPACE


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def eta(trials: dict[tuple[int, int], dict[str, Any]], left: int) -> float | None:
    """Mean seconds per timed trial x trials left (None before a trial was timed)."""
    timed = [t["seconds"] for t in trials.values() if math.isfinite(t["seconds"])]
    return sum(timed) / len(timed) * left if timed else None


def member_text(spec: dict[str, Any]) -> str:
    return f"{spec['method']}({', '.join(f'{k}={v}' for k, v in spec.items() if k != 'method')})"


def under_way(c: Contents) -> tuple[dict[str, Any] | None, int]:
    """The member of the trial under way (its evaluations are in the checkpoint, its trial record is not yet)
    and how many of its problems are evaluated; (None, 0) between trials. A trial's evaluations are kept as
    they finish, so a resumed run runs only the problems this count lacks."""
    recorded = {t["member"] for t in c.trials.values()}
    open_members = Counter(m for m in (split_key(k)[0] for k in c.evaluations) if m not in recorded)
    if c.resumes is None or not open_members:  # a file from before trial records cannot tell
        return None, 0
    member, done = open_members.most_common(1)[0]
    return json.loads(member), done


def read_status(path: str | os.PathLike) -> dict[str, Any]:
    """The training's state as one dict (what `--json` prints); a PsleError naming the file if it is not a
    readable psle train checkpoint."""
    path = Path(path)
    if not path.is_file():
        raise PsleError(f"{path}: {'is a directory' if path.is_dir() else 'no such file'}, expected a psle train "
                        "checkpoint (the --checkpoint of psle train)")
    written = path.stat().st_mtime
    contents = read_checkpoint(path)
    return {"checkpoint": str(path), "written": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(written)),
            "written_seconds_ago": max(time.time() - written, 0.0), **summary(contents)}


def read_checkpoint(path: str | os.PathLike) -> Contents:
    """A checkpoint's contents, opened read-only and unlocked; a PsleError naming the file if it is not a
    readable psle train checkpoint."""
    path = Path(path)
    try:
        f = h5py.File(path, "r", locking=False)
    except OSError as exc:
        if "truncated" in str(exc) or path.stat().st_size == 0:
            raise PsleError(f"{path}: cannot be read now: it is incomplete (still being written or copied?); "
                            "try again in a moment") from None
        raise PsleError(f"{path}: not an HDF5 file, so not a psle train checkpoint") from None
    try:
        with f:
            contents = read_contents(f, path)
    except PsleError:
        raise
    except Exception as exc:  # h5py reports damage as OSError, KeyError, ValueError, ... by where it broke
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise PsleError(f"{path}: damaged checkpoint ({first})") from None
    return contents


def summary(c: Contents) -> dict[str, Any]:
    """Settings, finished rounds, the current round's trials, totals, resumes, time and its estimate."""
    settings = {"objective": "portfolio", "space": list(PAPER_SPACE), **c.settings}  # defaults are left out
    k, per_round = int(settings["k"]), int(settings["trials"])
    known = c.resumes is not None  # a file from before trials were kept cannot say how far its round is
    current = len(c.rounds) + 1
    gains = [t["gain"] for (r, _), t in c.trials.items() if r == current]
    stopped = len(c.rounds) < k and len(gains) >= per_round and max(gains) <= 0
    finished = len(c.rounds) >= k or stopped
    done = min(current, k) * per_round if finished else len(c.rounds) * per_round + len(gains) if known else None
    left = 0 if finished else None if done is None else k * per_round - done
    timed = [t["seconds"] for t in c.trials.values() if math.isfinite(t["seconds"])]
    member, evaluated = under_way(c)
    return {
        "settings": settings,
        "rounds": c.rounds,
        "round": None if finished else current,
        "round_trials_done": len(gains) if known and not finished else None,
        "round_best_gain": max(gains) if gains and not finished else None,
        "finished": finished,
        "stopped_early": stopped,
        "trials_done": done,
        "trials_total": k * per_round,
        "trials_recorded": len(c.trials),
        "evaluations": len(c.evaluations),
        "resumes": c.resumes,
        "resumes_at_least": c.resumes_uncounted,
        "trial_seconds": sum(timed),
        "trials_timed": len(timed),
        "eta_seconds": None if left is None else eta(c.trials, left),
        "trial_under_way": None if finished or member is None else {
            "member": member, "problems_done": evaluated, "problems": int(settings["training"]["problems"])},
    }


def show(s: dict[str, Any]) -> str:
    """The status in a few lines."""
    st, k, per_round = s["settings"], s["settings"]["k"], s["settings"]["trials"]
    t = st["training"]
    lines = [f"{s['checkpoint']}: psle train checkpoint, last written {s['written']} "
             f"({duration(s['written_seconds_ago'])} ago)",
             f"settings: k {k}, {per_round} trials per round, {t['problems']} problems ({t['min_nodes']}-"
             f"{t['max_nodes']} nodes, {t['samples']} samples), space {','.join(st['space'])}, objective "
             f"{st['objective']}, seed {st['seed']}"]
    lines += [f"round {r['round']}/{k}: {member_text(r['member'])}, gain {r['gain']:.4f}, Q {r['quality']:.4f}"
              for r in s["rounds"]]
    if s["stopped_early"]:
        lines.append(f"finished: round {len(s['rounds']) + 1} found no configuration that improves the ensemble; "
                     f"{members(len(s['rounds']))}")
    elif s["finished"]:
        lines.append(f"finished: {members(k)}")
    elif s["round_trials_done"] is None:
        lines.append(f"round {s['round']}/{k}: trials done unknown (the checkpoint predates trial records; "
                     "resuming it records them)")
    else:
        best = "none yet" if s["round_best_gain"] is None else f"{s['round_best_gain']:.4f}"
        line = f"round {s['round']}/{k}: {s['round_trials_done']}/{per_round} trials, best gain so far {best}"
        if (w := s["trial_under_way"]) is not None:
            line += (f"; trial {s['round_trials_done'] + 1} under way, {w['problems_done']}/{w['problems']} problems "
                     f"evaluated: {member_text(w['member'])}")
        lines.append(line)
    done = "?" if s["trials_done"] is None else s["trials_done"]
    lines.append(f"trials: {done}/{s['trials_total']} done, {s['trials_recorded']} recorded, {s['evaluations']} "
                 f"evaluations; {resumes_text(s['resumes'], s['resumes_at_least'])}")
    lines.append(time_line(s))
    return "\n".join(lines)


def members(n: int) -> str:
    return f"{n} member{'' if n == 1 else 's'}"


def resumes_text(resumes: int | None, at_least: bool) -> str:
    if resumes is None:
        return "resumes unknown (the checkpoint predates the counter)"
    if resumes == 0:
        return "never resumed"
    return f"resumed {'at least ' if at_least else ''}{'once' if resumes == 1 else f'{resumes} times'}"


def time_line(s: dict[str, Any]) -> str:
    spent = f"time: {duration(s['trial_seconds'])} in {s['trials_timed']} timed trials"
    if s["trials_timed"] < s["trials_recorded"]:
        spent += f" ({s['trials_recorded'] - s['trials_timed']} replayed untimed from an older checkpoint)"
    if s["finished"]:
        return f"{spent}; finished"
    if s["eta_seconds"] is None:
        return f"{spent}; ETA unknown until a trial is timed"
    left = s["trials_total"] - s["trials_done"]
    return (f"{spent}, {s['trial_seconds'] / s['trials_timed']:.1f} s per trial; ETA {duration(s['eta_seconds'])} "
            f"for the {left} trials left (an estimate: mean seconds per trial x trials left)")
