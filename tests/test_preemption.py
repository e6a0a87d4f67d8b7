"""The preemption guard in a real process: SIGTERM while the task is blocked (as on workers that are gone)."""

import signal
import subprocess
import sys
import time

GUARDED = """
import signal, sys, time
from hpc.launch.preemption import preemption_guard

signal.signal(signal.SIGTERM, lambda *a: print("previous handler ran", file=sys.stderr, flush=True))
with preemption_guard():
    print("ready", flush=True)
    if sys.argv[1] == "block":
        time.sleep(30)  # a client waiting on futures that will never finish
    else:
        time.sleep(1)
        raise RuntimeError("a dask error after the signal")
"""


def _terminate(mode: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", GUARDED, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    return proc


def test_a_blocked_task_says_it_was_stopped_as_the_signal_arrives():
    proc = _terminate("block")
    start = time.monotonic()
    line = proc.stderr.readline()
    assert time.monotonic() - start < 5
    assert line.startswith("psle: stopped by SLURM") and "resumes from its checkpoint" in line
    assert proc.stderr.readline() == "previous handler ran\n"  # submitit's handler still runs
    proc.kill()
    proc.wait()


def test_an_error_after_the_signal_is_not_a_result():
    proc = _terminate("raise")
    time.sleep(3)  # the error has been raised by now; the guard holds the process for SLURM's SIGKILL
    assert proc.poll() is None
    proc.kill()
    err = proc.communicate()[1]
    assert "stopped by SLURM" in err and "Traceback" not in err and "RuntimeError" not in err
