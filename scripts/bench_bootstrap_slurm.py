"""Does a bootstrap survive preemption as a SLURM array? `psle learn --bootstrap B --slurm --wait` on one
problem, with one array task requeued (`scontrol requeue`, as preemption does) while its resample runs.

Checks what a cluster user relies on: the array completes and writes the consensus, the requeued task
runs its own resample again and no other, and every other resample's file is written once and never
touched again. Reports the wall time from submission to the consensus, and each task's elapsed time and
peak memory from `sacct`. Needs a running SLURM (`bash slurm/local/start.sh` here).

Usage:
  python scripts/bench_bootstrap_slurm.py PROBLEM.h5 --resamples 20 --requeue 2 --cpus 1 --mem-gb 6 \
      -o /tmp/boot/g.json [--pef repair.rounds=0]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from hpc.bootstrap import resample_folder


def task_logs(folder: Path, task: int) -> str:
    return "".join(p.read_text() for p in sorted(folder.glob(f"*_{task}_0_log.err")))


def starts(folder: Path, task: int) -> int:
    """How often the task began its share (once, or once more per requeue)."""
    return task_logs(folder, task).count(" resamples of ")


def kilobytes(rss: str) -> float:
    """sacct's MaxRSS ("123456K", "1.5G", "") in kB."""
    units = {"K": 1.0, "M": 1024.0, "G": 1024.0 ** 2, "T": 1024.0 ** 3}
    return float(rss[:-1]) * units[rss[-1]] if rss and rss[-1] in units else float(rss or 0) / 1024


def sacct_tasks(job: str) -> dict[str, dict[str, str]]:
    """Array task -> its elapsed time and the peak RSS of its largest step."""
    out = subprocess.run(["sacct", "-j", job, "-n", "-P", "-o", "JobID,Elapsed,MaxRSS"], capture_output=True,
                         text=True).stdout
    tasks: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        ident, elapsed, rss = line.split("|")
        task = ident.split("_", 1)[-1].split(".")[0]
        row = tasks.setdefault(task, {"elapsed": elapsed, "max_rss": ""})
        if kilobytes(rss) > kilobytes(row["max_rss"]):
            row["max_rss"] = rss
    return tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("--resamples", type=int, default=20)
    parser.add_argument("--requeue", type=int, default=2, metavar="TASK", help="the array task to requeue")
    parser.add_argument("--requeue-after", type=float, default=60.0, metavar="S",
                        help="seconds after the task began its resample")
    parser.add_argument("--cpus", type=int, default=1)
    parser.add_argument("--mem-gb", type=float, default=6.0)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--jsonl", type=Path, default=None)
    parser.add_argument("--pef", action="append", default=[], metavar="NAME=VALUE",
                        help="PEF settings for every resample, passed to psle learn (e.g. repair.rounds=0)")
    args = parser.parse_args()
    output = args.output.resolve()
    folder, logs = resample_folder(output), output.parent / ".submitit"
    if output.exists() or (folder.exists() and any(folder.iterdir())) or logs.exists():
        sys.exit(f"bench_bootstrap_slurm: {output}, its resamples or its .submitit logs exist already: a fresh "
                 "output is needed to see that no resample runs twice")
    if not 0 <= args.requeue < args.resamples:
        sys.exit(f"bench_bootstrap_slurm: --requeue {args.requeue}: the array has tasks 0..{args.resamples - 1}")
    psle = str(Path(sys.executable).with_name("psle"))
    start = time.monotonic()
    run = subprocess.Popen([psle, "learn", str(args.problem), "--bootstrap", str(args.resamples), "--slurm", "--wait",
                            "--cpus", str(args.cpus), "--mem-gb", f"{args.mem_gb:g}", "--workers", str(args.cpus),
                            *[a for kv in args.pef for a in ("--pef", kv)], "-o", str(output)],
                           stderr=(output.parent / f"{output.stem}.stderr.txt").open("w"))
    target = folder / f"resample-{args.requeue:05d}.json"
    began, requeued_at, job, mid_resample = None, None, None, False
    written: dict[str, int] = {}
    while run.poll() is None:
        for p in folder.glob("resample-*.json"):
            written.setdefault(p.name, p.stat().st_mtime_ns)
        if began is None and starts(logs, args.requeue):
            began = time.monotonic()
            job = next(logs.glob(f"*_{args.requeue}_0_log.err")).name.split("_")[0]
            print(f"bench_bootstrap_slurm: task {args.requeue} began at {began - start:.0f} s", file=sys.stderr)
        if began is not None and requeued_at is None and time.monotonic() - began >= args.requeue_after:
            mid_resample = not target.exists()
            subprocess.run(["scontrol", "requeue", f"{job}_{args.requeue}"], check=True)
            requeued_at = time.monotonic()
            print(f"bench_bootstrap_slurm: requeued task {args.requeue} at {requeued_at - start:.0f} s",
                  file=sys.stderr)
        time.sleep(1)
    wall = time.monotonic() - start
    if run.returncode != 0 or job is None or requeued_at is None:
        sys.exit(f"bench_bootstrap_slurm: psle learn failed (rc {run.returncode}) or ended before the requeue; "
                 f"see {output.stem}.stderr.txt")
    counts = {t: starts(logs, t) for t in range(args.resamples)}
    rewritten = [n for n, ns in written.items() if (folder / n).stat().st_mtime_ns != ns]
    again = "runs this resample again" in task_logs(logs, args.requeue)
    ok = (counts[args.requeue] == 2 and all(c == 1 for t, c in counts.items() if t != args.requeue)
          and not rewritten and again and output.exists())
    row = {"problem": str(args.problem), "pef": args.pef, "resamples": args.resamples,
           "requeued_task": args.requeue,
           "requeued_after_s": round(requeued_at - began, 1), "mid_resample": mid_resample,
           "wall_s": round(wall, 1), "starts": counts, "rewritten": rewritten, "ok": ok,
           "tasks": sacct_tasks(job), "edges": len(json.loads(output.read_text())["edges"])}
    others = sorted({c for t, c in counts.items() if t != args.requeue})
    print(f"| {args.problem.name} | B = {args.resamples} | task {args.requeue} requeued {row['requeued_after_s']:.0f} s "
          f"into its resample{'' if mid_resample else ' (after it had finished)'} | wall {wall:.0f} s | starts: "
          f"task {args.requeue} {counts[args.requeue]}, the others {others} | files rewritten: {len(rewritten)} | "
          f"{'ok' if ok else 'FAILED'} |")
    for task, used in row["tasks"].items():
        print(f"  {task}: elapsed {used['elapsed']}, peak RSS {used['max_rss']}")
    if args.jsonl:
        with args.jsonl.open("a") as f:
            f.write(json.dumps(row) + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
