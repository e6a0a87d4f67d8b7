"""A JVM in a child process, so a learner can be stopped (or crash) without taking its caller down.

Killing a JVM mid-call from inside its own process segfaults, and JPype has aborted whole
Python processes on large fGES runs: each request therefore goes to a long-lived child
(`python -m hpc.learners.worker`) over a pipe; on a time limit the child is SIGKILLed and
a fresh one is started for the next request. Subprocess (not multiprocessing) so it also
works inside daemonic dask workers.
"""

from __future__ import annotations

import atexit
import importlib
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import IO, Any

_HEADER = struct.Struct("<Q")
PARENT_ENV = "PSLE_WORKER_PARENT"


class WorkerTimeout(Exception):
    """The request did not finish within its time limit; the worker was killed."""


class WorkerCrash(Exception):
    """The worker process died (JVM abort, out of memory, killed from outside)."""


class WorkerError(Exception):
    """The request raised inside the worker (e.g. a Java exception); message is one line."""


def _send(stream: IO[bytes], obj: Any) -> None:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def _recv_blocking(stream: IO[bytes]) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    return pickle.loads(stream.read(_HEADER.unpack(header)[0]))


class TetradWorker:
    """Client of one worker process; `call` runs a request with a deadline."""

    def __init__(self, heap: str | None = None):
        self.heap = heap
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._log = tempfile.TemporaryFile(mode="w+b")
            env = {**os.environ, PARENT_ENV: str(os.getpid())}
            if self.heap:
                env["PSLE_JAVA_HEAP"] = self.heap
            self._proc = subprocess.Popen([sys.executable, "-m", "hpc.learners.worker"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._log, env=env)
        return self._proc

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        lines = [ln for ln in self._log.read().decode(errors="replace").splitlines() if ln.strip()]
        return lines[-1].strip() if lines else ""

    def call(self, function: str, kwargs: dict[str, Any], timeout: float | None = None) -> Any:
        proc = self._start()
        deadline = None if timeout is None else time.monotonic() + timeout
        assert proc.stdin is not None and proc.stdout is not None  # `_start` opens both as pipes
        try:
            _send(proc.stdin, (function, kwargs))
        except BrokenPipeError:
            raise WorkerCrash(self._crash_message()) from None
        fd = proc.stdout.fileno()
        buf = bytearray()
        need = _HEADER.size
        have_header = False
        while len(buf) < need:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                self.kill()
                raise WorkerTimeout(f"no result within {timeout:g} s")
            chunk = os.read(fd, max(need - len(buf), 1 << 16))
            if not chunk:
                raise WorkerCrash(self._crash_message())
            buf += chunk
            if not have_header and len(buf) >= _HEADER.size:
                need = _HEADER.size + _HEADER.unpack(bytes(buf[:_HEADER.size]))[0]
                have_header = True
        status, value = pickle.loads(bytes(buf[_HEADER.size:need]))
        if status == "error":
            raise WorkerError(value)
        return value

    def _crash_message(self) -> str:
        code = self._proc.wait() if self._proc else None
        tail = self._log_tail()
        return f"worker process died (exit code {code})" + (f": {tail}" if tail else "")

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    close = kill


_local = threading.local()


def default_worker() -> TetradWorker:
    """One worker per calling thread, started on first use and killed at exit: a dask worker with
    several threads runs several members at once, and one pipe cannot carry two conversations."""
    worker = getattr(_local, "worker", None)
    if worker is None:
        worker = _local.worker = TetradWorker()
        atexit.register(worker.kill)
    return worker


def call_within(function: str, kwargs: dict[str, Any], limit: float | None) -> Any:
    """`function` in this thread's worker; None when `limit` seconds pass first (or none are left), so a
    guarded step keeps what it had instead of failing."""
    if limit is not None and limit <= 0:
        return None
    try:
        return default_worker().call(function, kwargs, timeout=limit)
    except WorkerTimeout:
        return None


def _exit_with_parent(parent: int) -> None:
    """A worker whose caller was killed (not closed) would compute for nobody until its search ends,
    hours at the time limits used: exit as soon as the parent is gone. Java calls release the GIL,
    so this thread runs during a search."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _runner(name: str) -> Any:
    """The function a request names as "module:function", from the project's learner modules only."""
    module, _, attr = name.partition(":")
    if not module.startswith("hpc.learners.") or not attr:
        raise ValueError(f"not a learner runner: {name!r}")
    return getattr(importlib.import_module(module), attr)


def _serve() -> None:
    """Worker main loop: requests on stdin, results on the original stdout.

    Java and native code may print to fd 1, so the protocol gets a private copy of it and
    fd 1 is pointed at stderr.
    """
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    if os.environ.get(PARENT_ENV, "").isdigit():
        threading.Thread(target=_exit_with_parent, args=(int(os.environ[PARENT_ENV]),), daemon=True).start()
    functions: dict[str, Any] = {}
    while True:
        request = _recv_blocking(sys.stdin.buffer)
        if request is None:
            return
        function, kwargs = request
        try:
            if function not in functions:
                functions[function] = _runner(function)
            result = ("ok", functions[function](**kwargs))
        except Exception as exc:  # report, keep serving: one bad request must not kill the JVM
            text = str(exc).strip().splitlines()
            message = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
            traceback.print_exc()
            result = ("error", message)
        _send(out, result)


if __name__ == "__main__":
    _serve()
