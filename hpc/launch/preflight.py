"""Check SLURM launcher settings before anything is submitted.

Hydra turns exceptions in callbacks into warnings, so the check runs in a thin subclass of
hydra-submitit-launcher's SlurmLauncher (hydra_plugins/psle_launcher, targeted by
conf/hydra/launcher/submitit_slurm.yaml): a wrong partition or a zero memory request stops
the sweep with one clear line.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

from hpc.errors import PsleError


SETUP_SECONDS = 600  # a task's work outside its wall limit: loading or generating data, starting dask, writing


def check_slurm_launcher(params: Any, wall_limit: float | None = None) -> None:
    """Raise PsleError naming the first bad setting: missing sbatch, unknown partition, zero memory, or a
    SLURM time limit that would kill a learn task before its own `wall_limit` ends it (and requeue it to
    start over, max_num_timeout times, instead of recording it as timed out)."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        raise PsleError("hydra/launcher=submitit_slurm: sbatch/sinfo not found; is this a SLURM login node?")
    for name in ("timeout_min", "cpus_per_task", "nodes", "tasks_per_node"):
        value = params.get(name)
        if value is not None and int(value) < 1:
            raise PsleError(f"hydra.launcher.{name}={value}: must be at least 1")
    timeout = params.get("timeout_min")
    if wall_limit is not None and timeout is not None and int(timeout) * 60 < wall_limit + SETUP_SECONDS:
        raise PsleError(f"hydra.launcher.timeout_min={timeout}: SLURM would stop each task before its wall_limit of "
                        f"{wall_limit:g} s (+{SETUP_SECONDS} s set-up) and requeue it; raise timeout_min to at least "
                        f"{-(-(wall_limit + SETUP_SECONDS) // 60):.0f} or lower time_limit/wall_limit")
    mem = params.get("mem_gb")
    if mem is not None and float(mem) <= 0:
        raise PsleError(f"hydra.launcher.mem_gb={mem}: must be positive (SLURM reads 0 as 'the whole node')")
    partition = params.get("partition")
    if partition:
        found = subprocess.run(["sinfo", "-h", "-o", "%P", "-p", str(partition)], capture_output=True, text=True)
        if found.returncode != 0 or not found.stdout.strip():
            known = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True).stdout.split()
            raise PsleError(f"hydra.launcher.partition={partition}: no such SLURM partition "
                            f"(known: {', '.join(p.rstrip('*') for p in known) or 'none'})")
