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


def check_slurm_launcher(params: Any) -> None:
    """Raise PsleError naming the first bad setting: missing sbatch, unknown partition, zero memory..."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        raise PsleError("hydra/launcher=submitit_slurm: sbatch/sinfo not found; is this a SLURM login node?")
    for name in ("timeout_min", "cpus_per_task", "nodes", "tasks_per_node"):
        value = params.get(name)
        if value is not None and int(value) < 1:
            raise PsleError(f"hydra.launcher.{name}={value}: must be at least 1")
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
