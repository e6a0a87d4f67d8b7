"""The preemption guard in a real process: SIGTERM while the task is blocked (as on workers that are gone)."""

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

GUARDED = """
import faulthandler, signal, sys, time
from hpc.launch.preemption import preemption_guard

signal.signal(signal.SIGTERM, lambda *a: print("previous handler ran", file=sys.stderr, flush=True))
where = open(sys.argv[2], "w")
faulthandler.register(signal.SIGUSR1, file=where)  # SIGUSR1: write where the process is now
with preemption_guard() as stopped:
    print("ready", flush=True)
    if sys.argv[1] == "block":
        while True:
            time.sleep(3600)  # a client waiting on futures that will never finish
    while not stopped.is_set():  # the signal first, then the error
        time.sleep(0.01)
    print("raising", flush=True)
    raise RuntimeError("a dask error after the signal")
"""

HANG = 120  # seconds: only a hang guard; every wait below ends at an event


def _terminate(mode: str, where: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", GUARDED, mode, str(where)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    return proc


def lines(stream) -> queue.Queue:
    """The stream's lines as they come, so that a wait for one can have a hang guard."""
    q: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [q.put(line) for line in stream], daemon=True).start()
    return q


def test_a_blocked_task_says_it_was_stopped_as_the_signal_arrives(tmp_path):
    proc = _terminate("block", tmp_path / "where.txt")
    err = lines(proc.stderr)
    # The task blocks for ever: the line can only come from the signal, not from a way out.
    line = err.get(timeout=HANG)
    assert line.startswith("psle: stopped by SLURM") and "resumes from its checkpoint" in line
    assert err.get(timeout=HANG) == "previous handler ran\n"  # submitit's handler still runs
    assert proc.poll() is None
    proc.kill()
    proc.wait()


def top_frame(proc: subprocess.Popen, where: Path) -> str:
    """The innermost Python frame the process is in now (faulthandler's dump on SIGUSR1), '' once it ended."""
    done = where.read_text()
    proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + HANG
    while not (dump := where.read_text()[len(done):]).rstrip().endswith("in <module>"):  # the outermost frame
        if proc.poll() is not None:
            return ""
        assert time.monotonic() < deadline, "no stack dump"
        time.sleep(0.05)
    return next(ln.strip() for ln in dump.splitlines() if ln.strip().startswith("File "))


def test_an_error_after_the_signal_is_not_a_result(tmp_path):
    where = tmp_path / "where.txt"
    proc = _terminate("raise", where)
    assert proc.stdout.readline() == "raising\n"
    # Asked where it is until it is inside the guard (it holds the process there for SLURM's SIGKILL).
    deadline = time.monotonic() + HANG
    while not (frame := top_frame(proc, where)).endswith("in preemption_guard"):
        assert frame, "the process ended by itself after the error"
        assert time.monotonic() < deadline, frame
    assert proc.poll() is None
    proc.kill()
    err = proc.communicate()[1]
    assert "stopped by SLURM" in err and "Traceback" not in err and "RuntimeError" not in err
