"""A SLURM task stopped from outside (preemption, `scontrol requeue`, the job's own time limit)
gets SIGTERM in every process at once: its dask workers die first, and the task would then fail
with a dask error that the sweep's launcher reads as the task's result. Under this guard such an
error, once SIGTERM has arrived, is not a result: the task says why in one line and waits for
SLURM's SIGKILL, leaving no result behind; the requeued task resumes from its checkpoint."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator

GRACE = 5.0  # seconds for a SIGTERM sent with the workers' to reach this process too


@contextlib.contextmanager
def preemption_guard() -> Iterator[threading.Event]:
    stopped = threading.Event()
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: object) -> None:
        stopped.set()
        if callable(previous):  # submitit's own handler (it logs and lets SLURM requeue)
            previous(signum, frame)

    signal.signal(signal.SIGTERM, on_term)
    try:
        yield stopped
    except Exception:
        if stopped.wait(GRACE):
            print("psle: stopped by SLURM (preemption, requeue or time limit) while running; no result written, "
                  "the requeued task resumes from its checkpoint", file=sys.stderr, flush=True)
            while True:  # SLURM's SIGKILL follows within its KillWait
                time.sleep(60)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
