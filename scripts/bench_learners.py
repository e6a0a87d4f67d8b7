"""Seconds and peak memory of the Tetrad members at 50 / 200 / 1,000 variables (Alarm-based, n = 1000).

Each run gets a fresh JVM worker (so peak RSS = that run's JVM, read from /proc VmHWM) and a
time limit; a run over it is reported as "> LIMIT s" with the peak it had reached when it was
stopped ("≥ MB", read each second while it ran). Members: fGES with Tetrad's defaults,
the four fGES members of the paper's learned SLE (table:greedyae), PC-Stable with defaults,
BOSS and GRaSP (one thread each, like every member here).

Usage: python scripts/bench_learners.py [--sizes 50 200 1000] [--limit 900] [--heap 4g] [--only BOSS GRaSP]
"""

from __future__ import annotations

import argparse
import math
import threading
import time
from pathlib import Path

from hpc.data.generate import benchmark_problem
from hpc.graphs.metrics import evaluate
from hpc.learners import FGES, PCStable
from hpc.learners.members import BOSS, GRaSP, LearnerError
from hpc.learners.worker import TetradWorker

MEMBERS = [
    ("fGES defaults (λ=1, m=1000)", lambda: FGES()),
    ("fGES λ=5.87273, m=185", lambda: FGES(penalty=5.87273, max_parents=185)),
    ("fGES λ=20.6045, m=17", lambda: FGES(penalty=20.6045, max_parents=17)),
    ("fGES λ=2.53767, m=91", lambda: FGES(penalty=2.53767, max_parents=91)),
    ("fGES λ=5.62460, m=11", lambda: FGES(penalty=5.62460, max_parents=11)),
    ("PC-Stable α=0.05, depth=1000", lambda: PCStable()),
    ("BOSS defaults (λ=1, 1 start)", lambda: BOSS()),
    ("BOSS λ=2.53767", lambda: BOSS(penalty=2.53767)),
    ("GRaSP defaults (λ=1, depth 3)", lambda: GRaSP()),
    ("GRaSP λ=2.53767", lambda: GRaSP(penalty=2.53767)),
]


def peak_rss_mb(pid: int) -> float:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:  # the process is gone
        return float("nan")
    return next((int(line.split()[1]) / 1024 for line in lines if line.startswith("VmHWM:")), float("nan"))


class HighWater(threading.Thread):
    """Reads a process's peak RSS every second while it runs: a worker killed at the time limit has
    no peak left to read afterwards, but the last reading is a lower bound of it."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.mb, self.done = pid, float("nan"), threading.Event()

    def run(self) -> None:
        while not self.done.wait(1.0):
            mb = peak_rss_mb(self.pid)
            if not math.isnan(mb):
                self.mb = mb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[50, 200, 1000])
    ap.add_argument("--limit", type=float, default=900.0, help="seconds per run")
    ap.add_argument("--heap", default="4g")
    ap.add_argument("--only", nargs="*", default=None, help="members whose label contains one of these")
    args = ap.parse_args()
    members = [(label, make) for label, make in MEMBERS if not args.only or any(o in label for o in args.only)]
    print("| variables | member | seconds | peak RSS (MB) | F1-adj | F1-arrow | status |")
    print("|---|---|---|---|---|---|---|", flush=True)
    for size in args.sizes:
        problem = benchmark_problem(size, 0, 1000, network="alarm")
        for label, make in members:
            worker = TetradWorker(heap=args.heap)
            worker.call("hpc.learners.jvm:start_jvm", {})
            member = make()
            member.time_limit, member.worker = args.limit, worker
            pid = worker.pid
            high = HighWater(pid)
            high.start()
            start = time.perf_counter()
            try:
                member.fit(problem.data, problem.variables)
                status = member.status_
            except LearnerError as exc:
                status = f"failed: {exc}"
            seconds = time.perf_counter() - start
            high.done.set()
            peak = peak_rss_mb(pid) if worker.pid == pid else float("nan")
            worker.kill()
            if status == "ok":
                m = evaluate(member.graph_, problem.truth)
                cells = f"{seconds:.1f} | {peak:.0f} | {m.f1_adjacent:.3f} | {m.f1_arrowhead:.3f}"
            else:
                stopped = "-" if math.isnan(high.mb) else f"≥ {high.mb:.0f}"
                time_cell = f"> {args.limit:g}" if status == "timed out" else f"{seconds:.1f}"
                cells = f"{time_cell} | {stopped} | - | -"
            print(f"| {problem.p} | {label} | {cells} | {status} |", flush=True)


if __name__ == "__main__":
    main()
