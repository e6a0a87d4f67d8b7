"""The dask executor a task runs its work on, from the `executor` config group."""

from __future__ import annotations

from typing import Any

from hpc.launch.container import image_python
from hpc.parallel import DaskExecutor, SerialExecutor, allocated_cpus


def make_executor(cfg: Any) -> SerialExecutor:
    """`local` (LocalCluster sized to the allocation, or join `scheduler`), `serial`, or `slurm_dask`."""
    kind = cfg.get("kind", "local")
    if kind == "serial":
        return SerialExecutor()
    if kind == "slurm_dask":
        return SlurmDaskExecutor(cfg)
    return DaskExecutor(cfg.get("scheduler"), cfg.get("workers") or allocated_cpus())


class SlurmDaskExecutor(DaskExecutor):
    """A dask-jobqueue SLURMCluster: each dask worker is a SLURM job of its own (several nodes)."""

    def __init__(self, cfg: Any):
        from dask.distributed import Client
        from dask_jobqueue import SLURMCluster

        job = cfg.worker_job
        prologue = ["export PYTHONHASHSEED=0"]
        python = None
        if cfg.get("container"):
            python = image_python(cfg.container)
        self._cluster = SLURMCluster(cores=job.cores, processes=job.cores, memory=job.memory, walltime=job.walltime,
                                     queue=job.get("queue"), job_script_prologue=prologue, python=python,
                                     scheduler_options={"dashboard_address": None})
        self._cluster.scale(jobs=cfg.workers)
        self.client = Client(self._cluster)
        self.client.wait_for_workers(1, timeout=600)
