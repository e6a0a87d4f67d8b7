"""A SLURM task stopped from outside (preemption, `scontrol requeue`, the job's own time limit)
gets SIGTERM in every process at once: its dask workers die first, and the task would then fail
with a dask error that the sweep's launcher reads as the task's result. Under this guard the task
says why in one line as the signal arrives (it may be blocked on workers that are gone, so it may
never see an error before SLURM's SIGKILL), the dask logs that follow are quieted, and a dask error
after the signal is not a result: the task waits for the SIGKILL, leaving no result behind; the
requeued task resumes from its checkpoint."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator

GRACE = 5.0  # seconds for a SIGTERM sent with the workers' to reach this process too


def message(then: str) -> bytes:
    """Said as the signal arrives, before it is known whether the task still finishes within SLURM's KillWait."""
    return (f"psle: stopped by SLURM (preemption, requeue or time limit); unless this task finishes before "
            f"SLURM's kill, the requeued task {then}\n").encode()


@contextlib.contextmanager
def preemption_guard(then: str = "resumes from its checkpoint") -> Iterator[threading.Event]:
    """`then`: what the requeued task will do, for the line said as the signal arrives."""
    said = message(then)
    stopped = threading.Event()
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: object) -> None:
        if not stopped.is_set():
            os.write(2, said)  # not print: the main thread may be inside a write to stderr
            logging.getLogger("distributed").setLevel(logging.CRITICAL)  # the dying workers' comm errors
        stopped.set()
        if callable(previous):  # submitit's own handler (it logs and lets SLURM requeue)
            previous(signum, frame)

    signal.signal(signal.SIGTERM, on_term)
    try:
        yield stopped
    except Exception:
        if stopped.wait(GRACE):
            while True:  # SLURM's SIGKILL follows within its KillWait
                time.sleep(60)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
