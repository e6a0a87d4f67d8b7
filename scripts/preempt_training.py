"""Preempt a running `psle train --slurm` job at random moments, as a cluster's scheduler does, and audit
what the resumes cost (BENCHMARKS.md, "Auto-SLE trained here").

    python scripts/preempt_training.py JOB CHECKPOINT --requeues 6 --boundary 3 --seed 1 --log preempt.jsonl
    python scripts/preempt_training.py JOB CHECKPOINT --audit --log preempt.jsonl

Each requeue (`scontrol requeue`, what preemption does) waits a random time after the job last started
(uniform in [--min-gap, --max-gap] minutes) and then for its moment: inside a trial (the trial's first
evaluation is in the checkpoint, the trial is not recorded yet), or, for the requeues named by
--boundary, the moment a round's last trial is recorded. Each cut is logged as one JSON line: when, where
(round, trial), and how many of the cut trial's problems had been evaluated. `--audit` reads the
checkpoint and the job's log: evaluations run more than once (a finished trial re-run), trials logged
more than once, and what became of each cut trial after the resume.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

from hpc.errors import PsleError
from hpc.store import canonical
from hpc.train.checkpoint import Contents
from hpc.train.status import read_checkpoint, under_way


def contents(path: Path) -> Contents:
    """The checkpoint as it is now; the training renames a new file over it, so a read can meet a moment
    where it is being replaced: try again."""
    for _ in range(100):
        try:
            return read_checkpoint(path)
        except (PsleError, OSError):
            time.sleep(0.2)
    raise SystemExit(f"{path}: could not be read for 20 s")


def job_state(job: str) -> str:
    out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True).stdout.split()
    return out[0] if out else "GONE"


def wait_running(job: str, resumes: int, ckpt: Path) -> float:
    """Until the job runs again and has counted its resume in the checkpoint; returns that moment."""
    while not (job_state(job) == "RUNNING" and (contents(ckpt).resumes or 0) > resumes):
        if job_state(job) == "GONE":
            raise SystemExit(f"job {job} left the queue")
        time.sleep(2)
    return time.time()


def moment(ckpt: Path, boundary: bool, per_round: int) -> tuple[Contents, dict | None, int]:
    """Poll until the cut's moment: a round's last trial just recorded, or a trial under way; the checkpoint
    then, with the trial under way and its problems done."""
    while True:
        c = contents(ckpt)
        member, done = under_way(c)
        if boundary and c.trials and len(c.trials) % per_round == 0 and member is None:
            return c, member, done
        if not boundary and member is not None and done >= 1:
            return c, member, done
        time.sleep(0.2)


def preempt(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    ckpt, log = Path(args.checkpoint), Path(args.log)
    per_round = int(contents(ckpt).settings["trials"])
    started = time.time()
    for i in range(args.first, args.first + args.requeues):
        gap = rng.uniform(args.min_gap, args.max_gap) * 60
        boundary = i in args.boundary
        time.sleep(max(0.0, started + gap - time.time()))
        c, spec, done = moment(ckpt, boundary, per_round)  # a boundary cut waits for the end of the round
        member = None if spec is None else canonical(spec)
        subprocess.run(["scontrol", "requeue", args.job], check=True)
        event = {"requeue": i, "at": time.strftime("%Y-%m-%d %H:%M:%S"), "kind": "boundary" if boundary else "trial",
                 "round": len(c.trials) // per_round + 1, "trial": len(c.trials) % per_round + 1,
                 "trials_recorded": len(c.trials), "evaluations": len(c.evaluations), "cut_member": member,
                 "cut_member_problems_done": done, "resumes_before": c.resumes or 0,
                 "minutes_since_start": round((time.time() - started) / 60, 1)}
        with log.open("a") as fh:
            fh.write(json.dumps(event) + "\n")
        print(json.dumps(event), flush=True)
        started = wait_running(args.job, c.resumes or 0, ckpt)


def audit(args: argparse.Namespace) -> None:
    c = contents(Path(args.checkpoint))
    events = [json.loads(line) for line in Path(args.log).read_text().splitlines() if line.strip()]
    logs = sorted(Path(args.checkpoint).parent.joinpath(".submitit").glob(f"{args.job}_*log.err"))
    text = "".join(p.read_text(errors="replace") for p in logs)
    logged = Counter(re.findall(r"round (\d+)/\d+, trial (\d+)/\d+, best gain", text))
    by_member = {t["member"]: (r, n) for (r, n), t in c.trials.items()}
    cuts = []
    for e in events:
        member = e["cut_member"]
        after = by_member.get(member) if member else None
        cuts.append({**{k: e[k] for k in ("requeue", "kind", "round", "trial", "cut_member_problems_done")},
                     "recorded_after_resume_as": after})
    runs = Counter(v["runs"] for v in c.evaluations.values())
    print(json.dumps({
        "requeues": len(events), "resumes_in_checkpoint": c.resumes, "trials_recorded": len(c.trials),
        "rounds": len(c.rounds), "evaluations": len(c.evaluations),
        "evaluations_run_more_than_once": sum(n for r, n in runs.items() if r > 1),
        "trials_logged_more_than_once": sum(1 for n in logged.values() if n > 1),
        "trial_seconds": round(sum(t["seconds"] for t in c.trials.values()), 1),
        "timeouts": sum(1 for v in c.evaluations.values() if v["status"] != "ok"),
        "cuts": cuts}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("job")
    ap.add_argument("checkpoint")
    ap.add_argument("--log", required=True, help="one JSON line per requeue")
    ap.add_argument("--requeues", type=int, default=6)
    ap.add_argument("--boundary", type=int, nargs="*", default=[], help="which requeues (from --first) wait for a round's end")
    ap.add_argument("--first", type=int, default=1, help="number of the first requeue (to go on with a log)")
    ap.add_argument("--min-gap", type=float, default=8.0, help="minutes")
    ap.add_argument("--max-gap", type=float, default=25.0, help="minutes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--audit", action="store_true", help="do not requeue: audit the checkpoint and the log")
    args = ap.parse_args()
    audit(args) if args.audit else preempt(args)


if __name__ == "__main__":
    main()
