"""Where independent work runs: in this process, on a local dask cluster (or a scheduler
address), or on dask workers that are SLURM jobs of their own.

Learners, PEF and Auto-SLE only see the `Executor` interface: `run(fn, arg_tuples)` yielding
`(index, result)` as results arrive, `run_drawn(fn, draw)` for work decided as it goes (a task is
drawn only when a worker is free for it), `scatter(obj)` for large inputs several tasks share (sent
once, not once per task), `task_threads(n)` and `close()`. `make_executor(kind, ...)` is the one
factory (`psle` and `psle-experiment` both use it); every kind sizes itself from the allocation.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hpc.errors import PsleError

LOCAL_TCP_TIMEOUT = "600s"
#: Times a scatter is tried while worker jobs come and go under it.
SCATTER_TRIES = 3
#: Times one task is submitted again after data it reads was lost with every worker that held it.
RESUBMIT_TRIES = 3
#: How often a drawn run looks again for workers that joined (SLURM jobs start when they start).
WORKER_POLL = 5.0

#: `run_drawn`'s draw: the next task as (key, args), or None when there is none to start now.
Draw = Callable[[], "tuple[Hashable, tuple] | None"]


def allocated_cpus() -> int:
    """CPUs this process may use: SLURM's allocation inside a job, else the CPUs it may run on
    (affinity), capped by a cgroup CPU quota (containers, systemd slices)."""
    for var in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    cpus = len(os.sched_getaffinity(0))
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota to read: affinity is the limit
    return cpus


class Executor(Protocol):
    """What learners, PEF and Auto-SLE need from a place to run work."""

    def task_threads(self, n_tasks: int) -> int: ...

    def run(self, fn: Callable, tasks: list[tuple]) -> Iterator[tuple[int, Any]]:
        """(index, result) as tasks finish; they start in the order given (callers put long ones first)."""
        ...

    def run_drawn(self, fn: Callable, draw: Draw) -> Iterator[tuple[Hashable, Any]]:
        """(key, result) as tasks finish, each task drawn only when a worker is free to start it, so
        `draw` can decide it from every result yielded so far; ends when nothing runs and `draw`
        gives None."""
        ...

    def scatter(self, obj: Any, broadcast: bool = True) -> Any: ...

    def placements(self) -> dict[str, int]:
        """Tasks per place since the last call (empty where places are not worth telling apart)."""
        ...

    def task_seconds(self) -> float: ...

    def close(self) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


def check_scheduler(address: str, timeout: float = 5.0) -> None:
    """Fail in one line, before any work, when nothing listens at a dask scheduler address."""
    from dask.distributed.comm import parse_address, parse_host_port

    try:
        protocol, location = parse_address(address)
        host, port = parse_host_port(location)
    except (ValueError, TypeError):
        raise PsleError(f"--scheduler {address}: not a scheduler address (expected tcp://HOST:PORT)") from None
    if protocol not in ("tcp", "tls"):
        return  # other transports (ucx, inproc) cannot be probed with a socket; Client reports them
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise PsleError(f"--scheduler {address}: no dask scheduler answers there ({exc.strerror or exc})") from None


@contextlib.contextmanager
def _sigint_ignored_in_children() -> Iterator[None]:
    """Processes started inside inherit an ignored SIGINT. Ctrl-C reaches the whole process group;
    local dask workers would each print a traceback. This process alone handles it, and stopping
    the cluster stops them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class SerialExecutor:
    """Runs tasks one after another in this process (tests, tiny problems, debugging)."""

    def task_threads(self, n_tasks: int) -> int:
        """Threads a multithreaded learner may use when `n_tasks` are run: here one at a time, so all CPUs."""
        return allocated_cpus()

    def run(self, fn: Callable, tasks: list[tuple]) -> Iterator[tuple[int, Any]]:
        for k, args in enumerate(tasks):
            yield k, fn(*args)

    def run_drawn(self, fn: Callable, draw: Draw) -> Iterator[tuple[Hashable, Any]]:
        while (task := draw()) is not None:
            key, args = task
            yield key, fn(*args)

    def scatter(self, obj: Any, broadcast: bool = True) -> Any:
        return obj

    def placements(self) -> dict[str, int]:
        return {}

    def task_seconds(self) -> float:
        """Seconds tasks took (summed over workers) since the last call; 0 where tasks run inline."""
        return 0.0

    def close(self) -> None:
        pass

    def __enter__(self) -> SerialExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DaskExecutor(SerialExecutor):
    """Tasks on dask workers; each worker process keeps its own JVM worker between tasks.

    With no address, a LocalCluster of one single-threaded worker process per core is
    started (and closed with the executor).
    """

    def __init__(self, address: str | None = None, n_workers: int | None = None):
        import dask
        from dask.distributed import Client, LocalCluster

        self._cluster = None
        if address:
            check_scheduler(address)
            self.client = Client(address, timeout="30s")
        else:
            # The scheduler lives in this process; a long partition or fusion step here can keep it from
            # reading its sockets past dask's 30 s TCP timeout, and the client then drops its connection
            # (seen at 30,000 variables). Workers inherit the setting through their nannies.
            if "DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP" not in os.environ:
                dask.config.set({"distributed.comm.timeouts.tcp": LOCAL_TCP_TIMEOUT})
            # Dashboard on a free port: two runs on one machine must not fight over 8787. Workers log only
            # CRITICAL: a task's error reaches this process through its future, and the rest is comm noise
            # (a worker outliving a SIGTERMed scheduler prints heartbeat tracebacks into a task's log).
            with _sigint_ignored_in_children():
                self._cluster = LocalCluster(n_workers=n_workers or allocated_cpus(), threads_per_worker=1,
                                             processes=True, dashboard_address=":0",
                                             silence_logs=logging.CRITICAL)
            self.client = Client(self._cluster)
        self.dashboard: str | None = self.client.dashboard_link if self.client.scheduler_info().get("services") \
            else None
        self._bookkeeping(tell_places=False)

    def _bookkeeping(self, tell_places: bool) -> None:
        self.tell_places = tell_places  # name the places tasks ran in (when workers live in SLURM jobs)
        self.placed: dict[str, int] = {}  # tasks per place since placements() was last asked
        self.busy = 0.0  # seconds tasks took since task_seconds() was last asked
        # What each live scattered key holds, to scatter it again: [object, broadcast, its replacement or None].
        self._kept: dict[Any, list] = {}

    def task_threads(self, n_tasks: int) -> int:
        """With fewer tasks than worker slots, the idle slots' cores go to the running tasks' threads
        (capped by the smallest host's slots, since a task's threads stay on its worker's host)."""
        workers = self.client.scheduler_info()["workers"].values()
        per_host: dict[str, int] = {}
        for w in workers:
            per_host[w["host"]] = per_host.get(w["host"], 0) + w["nthreads"]
        slots = sum(per_host.values())
        return max(1, min(min(per_host.values(), default=1), slots // max(n_tasks, 1)))

    def run(self, fn: Callable, tasks: list[tuple]) -> Iterator[tuple[int, Any]]:
        from dask.distributed import as_completed
        from distributed.client import FutureCancelledError

        # Explicit priorities keep the caller's order: without them, tasks that read scattered data
        # start last-submitted-first after the first one (measured), so PEF's largest clusters ran last.
        tasks = list(tasks)  # a task submitted again may read other futures than the caller's
        futures = {self._submit(fn, args, priority=len(tasks) - k): k for k, args in enumerate(tasks)}
        done = as_completed(futures)
        tries = dict.fromkeys(range(len(tasks)), 0)
        try:
            for future in done:
                k = futures.pop(future)
                try:
                    result = self._result(future)
                except FutureCancelledError:
                    if (args := self._rescattered(tasks[k], tries[k])) is None:
                        raise
                    tasks[k], tries[k] = args, tries[k] + 1
                    again = self._submit(fn, tasks[k], priority=len(tasks) - k)
                    futures[again] = k
                    done.add(again)
                    continue
                yield k, result
        finally:  # a caller that stops early (a wall limit, an error) leaves no tasks queued behind it
            # A caller interrupted between two results leaves this generator to the garbage collector,
            # which may close it after the client: then there is nothing left to cancel.
            if self.client.status == "running":
                self.client.cancel(list(futures))

    def run_drawn(self, fn: Callable, draw: Draw) -> Iterator[tuple[Hashable, Any]]:
        """As many tasks in flight as the workers have threads (re-counted as workers join or leave),
        and no more: a task queued behind a busy worker would be decided before the results it
        could learn from."""
        from dask.distributed import wait
        from distributed.client import FutureCancelledError, FuturesCancelledError

        running: dict[Any, tuple[Hashable, tuple, int]] = {}  # future: (key, args, times resubmitted)
        try:
            while True:
                slots = max(1, sum(self.client.nthreads().values()))
                while len(running) < slots and (task := draw()) is not None:
                    key, args = task
                    running[self._submit(fn, args)] = (key, args, 0)
                if not running:
                    return
                try:
                    wait(list(running), timeout=WORKER_POLL, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    continue
                except FuturesCancelledError:
                    pass  # each cancelled task is seen to below
                for future in [f for f in running if f.done()]:
                    key, args, tries = running.pop(future)
                    try:
                        result = self._result(future)
                    except FutureCancelledError:
                        if (args := self._rescattered(args, tries)) is None:
                            raise
                        running[self._submit(fn, args)] = (key, args, tries + 1)
                        continue
                    yield key, result
        finally:  # as in `run`: a caller that stops early leaves nothing running behind it
            if running and self.client.status == "running":
                self.client.cancel(list(running))

    def _submit(self, fn: Callable, args: tuple, **options: Any) -> Any:
        return self.client.submit(located, fn, *args, pure=False, **options)

    def _result(self, future: Any) -> Any:
        where, seconds, result = future.result()
        self.placed[where] = self.placed.get(where, 0) + 1
        self.busy += seconds
        return result

    def placements(self) -> dict[str, int]:
        placed, self.placed = self.placed, {}
        return placed if self.tell_places else {}

    def task_seconds(self) -> float:
        busy, self.busy = self.busy, 0.0
        return busy

    def scatter(self, obj: Any, broadcast: bool = True) -> Any:
        """`broadcast=False` for data only a few tasks read (one cluster's covariance): it moves on demand.
        Keys are fresh, not content hashes: the same matrix scattered again by a later step must not share
        a key with an earlier step's copy, whose release would cancel the later step's tasks.
        The object is kept (a reference: the caller holds it anyway) while the returned future lives, to
        scatter it again should every worker holding it leave."""
        future = self._copies(obj, broadcast)
        self._kept[future.key] = [obj, broadcast, None]
        weakref.finalize(future, self._kept.pop, future.key, None)
        return future

    def _copies(self, obj: Any, broadcast: bool) -> Any:
        return self.client.scatter(obj, broadcast=broadcast, hash=False)

    def _rescattered(self, args: tuple, tries: int) -> tuple | None:
        """A cancelled task's arguments with the scattered data it reads that no worker holds any more
        scattered again (None if it lost none, or was submitted again `tries` >= RESUBMIT_TRIES times):
        dask cannot recompute scattered data, and cancels every task reading data lost with its workers
        (a worker killed for its memory, a SLURM worker job preempted)."""
        # The scheduler tells the client of lost data before it cancels the tasks that read it.
        lost = {f.key for f in _futures_in(args) if f.key in self._kept and f.status != "finished"}
        if not lost or tries >= RESUBMIT_TRIES:
            return None
        for key in lost:
            kept = self._kept[key]
            if kept[2] is None or kept[2].status != "finished":
                kept[2] = self.scatter(kept[0], kept[1])
        return _swapped(args, {key: self._kept[key][2] for key in lost})

    def close(self) -> None:
        # Workers still heartbeating while the scheduler goes away log CommClosedError tracebacks:
        # harmless at shutdown, alarming on a user's terminal.
        log = logging.getLogger("distributed")
        level = log.level
        log.setLevel(logging.CRITICAL)
        try:
            self.client.close()
            if self._cluster is not None:
                self._cluster.close()
        finally:
            log.setLevel(level)


#: Set to 1 to have runs say where their dask dashboard is (per-worker load, task stream, memory).
DASHBOARD_ENV = "PSLE_DASHBOARD"


def announce_dashboard(executor: SerialExecutor) -> None:
    """Point a run at the dask dashboard, when asked (PSLE_DASHBOARD=1): most runs do not need it, and its
    line is noise there. Inside a SLURM job 127.0.0.1 would name the user's own machine: say the compute
    node and how to reach it."""
    link = getattr(executor, "dashboard", None)
    if not link or os.environ.get(DASHBOARD_ENV, "") in ("", "0"):
        return
    if os.environ.get("SLURM_JOB_ID"):
        from urllib.parse import urlsplit

        node, port = socket.gethostname(), urlsplit(link).port
        link = link.replace("127.0.0.1", node).replace("localhost", node) + \
            f" (from the login node: ssh -N -L {port}:{node}:{port} <login node>, then http://localhost:{port})"
    print(f"psle: dask dashboard at {link}", file=sys.stderr)


def _futures_in(value: Any) -> Iterator[Any]:
    """The dask futures in a task's arguments, where dask itself finds them (in tuples, lists and dicts)."""
    from distributed import Future

    if isinstance(value, Future):
        yield value
    elif type(value) in (tuple, list):
        for v in value:
            yield from _futures_in(v)
    elif type(value) is dict:
        for v in value.values():
            yield from _futures_in(v)


def _swapped(value: Any, swap: dict) -> Any:
    """`value` with each future whose key is in `swap` replaced by swap's future, where `_futures_in` finds them."""
    from distributed import Future

    if isinstance(value, Future):
        return swap.get(value.key, value)
    if type(value) in (tuple, list):
        return type(value)(_swapped(v, swap) for v in value)
    if type(value) is dict:
        return {k: _swapped(v, swap) for k, v in value.items()}
    return value


def located(fn: Callable, *args: Any) -> tuple[str, float, Any]:
    """fn(*args), where it ran (the worker's SLURM job and host) and its seconds."""
    job = os.environ.get("SLURM_JOB_ID")
    start = time.perf_counter()
    result = fn(*args)
    return (f"SLURM job {job} on {socket.gethostname()}" if job else socket.gethostname()), \
        time.perf_counter() - start, result


@dataclass(frozen=True)
class WorkerJob:
    """One dask worker job's request: `cores` worker processes (one thread each) sharing `memory`."""

    cores: int = 2
    memory: str = "8GB"
    walltime: str = "04:00:00"
    queue: str | None = None
    extra: tuple[str, ...] = ()  # further #SBATCH directives (e.g. --oversubscribe, --account=...)

    @classmethod
    def of(cls, cfg: Any) -> WorkerJob:
        """From an experiment's `executor.worker_job` mapping."""
        return cls(int(cfg.get("cores", 2)), str(cfg.get("memory", "8GB")), str(cfg.get("walltime", "04:00:00")),
                   cfg.get("queue"), tuple(cfg.get("extra") or ()))


def walltime_seconds(walltime: str) -> int:
    """SLURM's time formats (minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes,
    days-hours:minutes:seconds) as seconds."""
    days, dash, clock = walltime.rpartition("-")
    parts = [int(x) for x in clock.split(":")]
    if dash:  # after a day count the fields are hours[:minutes[:seconds]]
        parts = parts + [0] * (3 - len(parts))
    else:  # alone they are minutes, minutes:seconds, or hours:minutes:seconds
        parts = {1: [0, parts[0], 0], 2: [0, *parts]}.get(len(parts), parts)
    hours, minutes, seconds = parts
    return ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds


#: Seconds a worker job waits for its scheduler: one whose scheduler went away (a preempted driver job) exits.
DEATH_TIMEOUT = 120
#: Seconds the executor waits for its first worker job to start before it gives up (and cancels its jobs).
FIRST_WORKER_WAIT = 600


class SlurmDaskExecutor(DaskExecutor):
    """A dask-jobqueue SLURMCluster: `workers` SLURM jobs (on any nodes), each `worker_job.cores` dask
    workers. A worker job that is requeued (preemption) comes back as the same worker; its tasks meanwhile
    run elsewhere, since dask reruns the tasks of a worker it lost (and `run` scatters again the data lost
    with it). Counts where each task ran."""

    def __init__(self, workers: int, worker_job: WorkerJob, container: str | None = None):
        import dask
        from dask.distributed import Client
        from dask_jobqueue import SLURMCluster

        from hpc.container import image_python

        prologue = ["export PYTHONHASHSEED=0"]
        python = image_python(container) if container else None
        # The scheduler runs in this process. Its active memory manager would drop the copies workers fetch of
        # scattered data (keeping one per key), and a requeued worker job would then more often take the only one
        # with it (the data is then scattered again, and the tasks reading it rerun). dask-jobqueue
        # cancels a worker job whose worker has been gone `lost-worker-timeout` (15 s) and submits another: a
        # requeued job waiting in the queue would then compete with its own replacement for the node. Waiting
        # for it as long as a job may run lets the requeued job come back as the same worker.
        # Both for this executor's life only (`close` puts them back): a LocalCluster made later in the same
        # process (the Python API) gets dask's own.
        settings = {"distributed.scheduler.active-memory-manager.start": False,
                    "distributed.deploy.lost-worker-timeout": f"{walltime_seconds(worker_job.walltime)}s"}
        self._previous = {key: dask.config.get(key) for key in settings}
        dask.config.set(settings)
        self._cluster, self.client = None, None
        try:
            self._cluster = SLURMCluster(cores=worker_job.cores, processes=worker_job.cores, memory=worker_job.memory,
                                         walltime=worker_job.walltime, queue=worker_job.queue,
                                         job_extra_directives=["--requeue", *worker_job.extra],
                                         job_script_prologue=prologue, python=python, death_timeout=DEATH_TIMEOUT,
                                         scheduler_options={"dashboard_address": None})
            self._cluster.scale(jobs=workers)
            self.client = Client(self._cluster)
            self.client.wait_for_workers(1, timeout=FIRST_WORKER_WAIT)
        except BaseException as exc:  # no worker in time, or no cluster: cancel the jobs submitted, put dask's back
            self.close()
            if isinstance(exc, TimeoutError):
                raise PsleError(f"no SLURM worker job started within {FIRST_WORKER_WAIT} s (a busy queue, or a "
                                "request no node can meet: see squeue); its jobs were cancelled") from None
            raise
        self.dashboard = None
        self._bookkeeping(tell_places=True)

    def close(self) -> None:
        import dask

        try:
            if self.client is not None:
                super().close()
            elif self._cluster is not None:
                self._cluster.close()
        finally:
            dask.config.set(self._previous)

    def _copies(self, obj: Any, broadcast: bool) -> Any:
        """One copy, on one worker; the workers whose tasks read it fetch it from there. Never a broadcast: dask's
        replicate loops for ever when a worker it copies to leaves meanwhile (seen with a worker job requeued while
        fusion scattered its data), and a copy lost with its job is scattered again by `run`. A worker job that
        leaves while the copy is sent fails the scatter: a KeyError naming its address, or the scheduler closing
        the scatter's connection (CommClosedError, an OSError); it is then sent to a worker still there."""
        for _ in range(SCATTER_TRIES - 1):
            try:
                return super()._copies(obj, broadcast=False)
            except (KeyError, OSError):
                self.client.wait_for_workers(1, timeout=600)
        return super()._copies(obj, broadcast=False)


EXECUTOR_KINDS = ("local", "serial", "slurm_dask")


def check_executor_kind(kind: str) -> None:
    if kind not in EXECUTOR_KINDS:
        raise PsleError(f"executor.kind={kind}: unknown; choose one of {', '.join(EXECUTOR_KINDS)}")


def make_executor(kind: str = "local", scheduler: str | None = None, workers: int | None = None,
                  worker_job: Any = None, container: str | None = None) -> Executor:
    """`local`: a LocalCluster of one worker per allocated CPU (or `workers`), or join `scheduler`;
    `serial`: this process; `slurm_dask`: `workers` SLURM jobs described by `worker_job`."""
    check_executor_kind(kind)
    if kind == "serial":
        return SerialExecutor()
    if kind == "slurm_dask":
        return SlurmDaskExecutor(workers or 1, worker_job if isinstance(worker_job, WorkerJob) else
                                 WorkerJob.of(worker_job or {}), container)
    return DaskExecutor(scheduler, workers or allocated_cpus())


def executor_from_config(cfg: Any) -> Executor:
    """`make_executor` from an experiment's `executor` config group."""
    return make_executor(cfg.get("kind", "local"), cfg.get("scheduler"), cfg.get("workers"), cfg.get("worker_job"),
                         cfg.get("container"))
