"""`psle train --slurm`: Auto-SLE as a submitit Checkpointable job that survives preemption.

On a preemption or time-limit signal, submitit calls `checkpoint()`, which requeues the same
call; every finished evaluation is already in the HDF5 checkpoint, so the requeued job resumes
where the last one stopped. `scontrol requeue` (a restart without the signal) resumes the same way.
The job calls the library's training run directly (the same one `psle train` uses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import submitit

from hpc.launch.container import image_python
from hpc.launch.preflight import check_slurm_launcher


class TrainJob(submitit.helpers.Checkpointable):
    def __call__(self, config: Any, checkpoint: str, output: str, workers: int | None = None) -> str:
        from hpc.executors import make_executor
        from hpc.run import train_ensemble

        with make_executor("local", None, workers) as executor:
            train_ensemble(config, checkpoint, output, executor)
        return output


def submit_train(config: Any, checkpoint: str | Path, output: str | Path, workers: int | None, folder: str | Path,
                 partition: str | None = None, timeout_min: int = 1440, mem_gb: float = 8, cpus: int = 2,
                 requeues: int = 10, container: str | None = None) -> Any:
    """Submit Auto-SLE with `config` (a TrainConfig) and return the submitit job (job.job_id, job.result())."""
    check_slurm_launcher({"partition": partition, "timeout_min": timeout_min, "mem_gb": mem_gb,
                          "cpus_per_task": cpus})
    extra = {"slurm_python": image_python(container)} if container else {}
    executor = submitit.AutoExecutor(folder=str(folder), cluster="slurm", slurm_max_num_timeout=requeues, **extra)
    executor.update_parameters(name="psle-train", timeout_min=timeout_min, mem_gb=mem_gb, cpus_per_task=cpus,
                               slurm_partition=partition, slurm_setup=["export PYTHONHASHSEED=0"])
    return executor.submit(TrainJob(), config, str(checkpoint), str(output), workers)
