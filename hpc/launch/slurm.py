"""`psle train --slurm` and `psle learn --slurm`: one submitit Checkpointable job that survives preemption.

On a preemption or time-limit signal, submitit calls `checkpoint()`, which requeues the same
call; every finished evaluation is already in the HDF5 checkpoint, so the requeued job resumes
where the last one stopped (a learn job: from its run checkpoint). `scontrol requeue` (a restart
without the signal) resumes the same way. The jobs call the library's runs directly, the same
ones `psle train` and `psle learn` use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import submitit

from hpc.container import image_python
from hpc.launch.preflight import check_slurm_launcher


class TrainJob(submitit.helpers.Checkpointable):
    def __call__(self, config: Any, checkpoint: str, output: str, workers: int | None = None) -> str:
        from hpc.executors import make_executor
        from hpc.launch.preemption import preemption_guard
        from hpc.run import train_ensemble

        with preemption_guard(), make_executor("local", None, workers) as executor:
            train_ensemble(config, checkpoint, output, executor)
        return output


class LearnJob(submitit.helpers.Checkpointable):
    """`psle learn` in a job; with `nodes`, its dask workers are further SLURM jobs (`worker_job` each)."""

    def __call__(self, spec: Any, data: str, output: str, checkpoint: str | None, time_limit: float | None,
                 wall_limit: float | None, workers: int | None, label: str, nodes: int | None = None,
                 worker_job: Any = None, knowledge: str | None = None) -> str:
        from hpc.launch.preemption import preemption_guard
        from hpc.run import learn_file

        with preemption_guard():
            learn_file(data, output, spec, time_limit, wall_limit, checkpoint, True, None, workers, label,
                       knowledge=knowledge, nodes=nodes, worker_job=worker_job)
        return output


class BootstrapJob(submitit.helpers.Checkpointable):
    """One resample of `psle learn --bootstrap`: an array task; requeued, it reruns only its own resample if
    that had not finished (finished ones are files beside the output)."""

    def __call__(self, spec: Any, data: str, output: str, boot: Any, resample: int, time_limit: float | None,
                 wall_limit: float | None, workers: int | None, label: str, knowledge: str | None = None) -> int:
        from hpc.bootstrap import bootstrap_file
        from hpc.launch.preemption import preemption_guard

        with preemption_guard("runs this resample again (finished ones are kept)"):
            bootstrap_file(data, output, spec, boot, time_limit, wall_limit, True, None, workers, label,
                           only=[resample], knowledge=knowledge)
        return resample


def _executor(name: str, folder: str | Path, partition: str | None, timeout_min: int, mem_gb: float, cpus: int,
              requeues: int, container: str | None) -> Any:
    check_slurm_launcher({"partition": partition, "timeout_min": timeout_min, "mem_gb": mem_gb,
                          "cpus_per_task": cpus})
    extra = {"slurm_python": image_python(container)} if container else {}
    executor = submitit.AutoExecutor(folder=str(folder), cluster="slurm", slurm_max_num_timeout=requeues, **extra)
    executor.update_parameters(name=name, timeout_min=timeout_min, mem_gb=mem_gb, cpus_per_task=cpus,
                               slurm_partition=partition, slurm_setup=["export PYTHONHASHSEED=0"])
    return executor


def submit_learn(spec: Any, data: str, output: str, checkpoint: str | None, time_limit: float | None,
                 wall_limit: float | None, workers: int | None, label: str, folder: str | Path,
                 partition: str | None = None, timeout_min: int = 240, mem_gb: float = 8, cpus: int = 2,
                 requeues: int = 10, container: str | None = None, nodes: int | None = None,
                 worker_job: Any = None, knowledge: str | None = None) -> Any:
    """Submit `psle learn` of `spec` (a MethodSpec) on `data` and return the submitit job."""
    executor = _executor("psle-learn", folder, partition, timeout_min, mem_gb, cpus, requeues, container)
    return executor.submit(LearnJob(), spec, data, output, checkpoint, time_limit, wall_limit, workers, label, nodes,
                           worker_job, knowledge)


def submit_train(config: Any, checkpoint: str | Path, output: str | Path, workers: int | None, folder: str | Path,
                 partition: str | None = None, timeout_min: int = 1440, mem_gb: float = 8, cpus: int = 2,
                 requeues: int = 10, container: str | None = None) -> Any:
    """Submit Auto-SLE with `config` (a TrainConfig) and return the submitit job (job.job_id, job.result())."""
    executor = _executor("psle-train", folder, partition, timeout_min, mem_gb, cpus, requeues, container)
    return executor.submit(TrainJob(), config, str(checkpoint), str(output), workers)


def submit_bootstrap(spec: Any, data: str, output: str, boot: Any, time_limit: float | None,
                     wall_limit: float | None, workers: int | None, label: str, folder: str | Path,
                     partition: str | None = None, timeout_min: int = 240, mem_gb: float = 8, cpus: int = 2,
                     requeues: int = 10, container: str | None = None, knowledge: str | None = None) -> list[Any]:
    """One array task per resample not yet finished (none when all are); returns the submitit jobs."""
    from hpc.bootstrap import finished, resample_folder, resample_stamp
    from hpc.data.tabular import read_data

    x, variables = read_data(data)
    done = finished(resample_folder(output), boot.resamples, resample_stamp(x, variables, spec, boot, knowledge)[0])
    todo = [b for b in range(boot.resamples) if b not in done]
    if not todo:
        return []
    executor = _executor("psle-bootstrap", folder, partition, timeout_min, mem_gb, cpus, requeues, container)
    n = len(todo)
    return executor.map_array(BootstrapJob(), [spec] * n, [data] * n, [output] * n, [boot] * n, todo,
                              [time_limit] * n, [wall_limit] * n, [workers] * n, [label] * n, [knowledge] * n)
