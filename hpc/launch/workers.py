"""`psle learn --nodes N`: one run's dask workers as N SLURM jobs, sized from the data before any is submitted.

A worker process holds the data the steps scatter to it (the standardised data in float64 for fusion,
and in float32 for the neighbour search), a JVM with its heap, and Python; a worker job runs one such
process per core. The run's own process (the dask scheduler and the steps between tasks) holds the data
a few times over. The sizes are checked against the partition's nodes first: SLURM would accept a job
no node can hold and leave it pending without a word.
"""

from __future__ import annotations

import math
from pathlib import Path

import h5py

from hpc.data.tabular import csv_header
from hpc.errors import PsleError
from hpc.executors import WorkerJob
from hpc.launch.preflight import check_resources
from hpc.learners.jvm import DEFAULT_HEAP

#: Bytes per data value a worker process holds (float64 + float32 copies of the standardised data).
WORKER_BYTES = 12
#: Bytes per data value the run's own process holds (the data as read, in canonical order, standardised,
#: float32 for the neighbour search, and fusion's working copies).
DRIVER_BYTES = 40
#: A worker process besides the data: Python with numpy and dask, and the JVM beyond its heap.
PROCESS_GB = 1.0


def heap_gb(heap: str = DEFAULT_HEAP) -> float:
    """The JVM's -Xmx in GB ("2g", "512m")."""
    unit = {"g": 1.0, "m": 1 / 1024, "k": 1 / 1024**2}.get(heap[-1].lower())
    return float(heap[:-1]) * unit if unit else float(heap) / 1024**3


def data_shape(path: str | Path) -> tuple[int, int]:
    """(rows, variables) of a problem .h5 or a CSV/TSV with a header row, without reading the values."""
    path = Path(path)
    if not path.is_file():
        raise PsleError(f"{path}: no such file")
    if path.suffix.lower() in (".h5", ".hdf5"):
        with h5py.File(path, "r") as f:
            if "data" not in f or f["data"].ndim != 2:
                raise PsleError(f"{path}: no 2-D /data in this problem file")
            n, p = f["data"].shape
            return int(n), int(p)
    _, header = csv_header(path)  # the separator (comma, tab or semicolon) as psle learn will read it
    with open(path, "rb") as f:
        f.readline()
        rows = sum(1 for line in f if line.strip())
    return rows, len(header)


def worker_gb(n: int, p: int, cores: int) -> int:
    """Memory of one worker job of `cores` single-threaded worker processes, in whole GB."""
    return math.ceil(cores * (WORKER_BYTES * n * p / 1024**3 + heap_gb() + PROCESS_GB))


def driver_gb(n: int, p: int) -> int:
    """Memory of the run's own process (scheduler and the steps between tasks), in whole GB."""
    return math.ceil(DRIVER_BYTES * n * p / 1024**3 + 2 * PROCESS_GB)


def worker_jobs(data: str | Path, cores: int, mem_gb: float | None, partition: str | None, minutes: int,
                extra: list[str]) -> WorkerJob:
    """The worker jobs' request for `data`: `cores` each and memory from the data's size (or `mem_gb`),
    refused in one line when no node of `partition` could run one."""
    n, p = data_shape(data)
    memory = mem_gb if mem_gb is not None else worker_gb(n, p, cores)
    check_resources({"partition": partition, "cpus_per_task": cores, "mem_gb": memory, "timeout_min": minutes},
                    {"cpus_per_task": "--cpus", "timeout_min": "--time-min",
                     "mem_gb": f"--mem-gb (each worker job's GB{'' if mem_gb else f', from {n} rows x {p} variables'})"})
    hours, mins = divmod(minutes, 60)
    return WorkerJob(cores=cores, memory=f"{memory:g}GB", walltime=f"{hours:02d}:{mins:02d}:00", queue=partition,
                     extra=tuple(extra))
