"""Check an experiment's settings before anything is written or submitted.

`check_task` reads one task's config (seed, limits, dataset, method) without loading data;
every task runs it first, and the SLURM launcher runs it, before submitting, on as many of a
sweep's tasks as it takes to see every swept value once, so a typo in the 400th task of a
sweep stops the sweep at once, in one line.
Hydra turns exceptions in callbacks into warnings, so the launcher checks run in a thin
subclass of hydra-submitit-launcher's SlurmLauncher (hydra_plugins/psle_launcher, targeted by
conf/hydra/launcher/submitit_slurm.yaml): a wrong partition or a zero memory request stops
the sweep with one clear line too.
"""

from __future__ import annotations

import math
import numbers
import shutil
import subprocess
from pathlib import Path
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
    check_resources(params)


def _minutes(text: str) -> float:
    """SLURM's time format ([days-]hours:minutes:seconds, minutes, or "infinite") in minutes."""
    if text in ("infinite", "UNLIMITED", "n/a", ""):
        return float("inf")
    days, _, clock = text.rpartition("-")
    parts = [int(x) for x in clock.split(":")]
    hours, minutes, seconds = ([0] * (3 - len(parts)) + parts) if len(parts) > 1 else (0, parts[0], 0)
    return (int(days or 0) * 24 + hours) * 60 + minutes + seconds / 60


def check_resources(params: Any, names: dict[str, str] | None = None) -> None:
    """Refuse, before anything is submitted, a request no node of the partition can ever run: SLURM
    would accept it and leave it pending for good ("PartitionConfig"/"Resources") without a word.
    `names` says how the message names each setting (default: hydra.launcher.<key>)."""
    def named(key: str) -> str:
        return (names or {}).get(key, f"hydra.launcher.{key}")

    partition = params.get("partition")
    command = ["sinfo", "-h", "-o", "%P|%c|%m|%l", *(["-p", str(partition)] if partition else [])]
    listed = subprocess.run(command, capture_output=True, text=True)
    rows = [line.split("|") for line in listed.stdout.split() if line.count("|") == 3]
    if listed.returncode != 0 or not rows:
        return  # sinfo says nothing usable: leave the decision to sbatch
    if not partition:  # the default partition is marked with '*'
        rows = [r for r in rows if r[0].endswith("*")] or rows
    name = rows[0][0].rstrip("*")
    cpus = max(int(r[1].rstrip("+")) for r in rows)
    memory_mb = max(int(r[2].rstrip("+")) for r in rows)
    limit = max(_minutes(r[3]) for r in rows)
    per_node = int(params.get("cpus_per_task") or 1) * int(params.get("tasks_per_node") or 1)
    if per_node > cpus:
        raise PsleError(f"{named('cpus_per_task')}={params.get('cpus_per_task')}: partition {name}'s largest "
                        f"node has {cpus} CPUs; ask for at most {cpus // int(params.get('tasks_per_node') or 1)}")
    mem = params.get("mem_gb")
    if mem is not None and float(mem) * 1024 > memory_mb:
        raise PsleError(f"{named('mem_gb')}={mem}: partition {name}'s largest node has {memory_mb / 1024:.1f} GB")
    timeout = params.get("timeout_min")
    if timeout is not None and int(timeout) > limit:
        raise PsleError(f"{named('timeout_min')}={timeout}: partition {name} allows at most {limit:.0f} minutes")


def _whole(value: Any, name: str, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise PsleError(f"{name}={value}: must be a whole number of at least {least}")


def check_task(cfg: Any) -> None:
    """Raise PsleError naming the first bad setting of one experiment task (`key=value: why`)."""
    from omegaconf import OmegaConf

    from hpc.data.generate import GRAPH_MODELS, WEIGHTS, check_weights
    from hpc.data.networks import network_names
    from hpc.executors import check_executor_kind
    from hpc.launch.tasks import method_spec
    from hpc.learners.members import Member
    from hpc.run import build_estimator

    if cfg.task not in ("learn", "train"):
        raise PsleError(f"task={cfg.task}: must be learn or train")
    check_executor_kind(cfg.executor.get("kind", "local"))
    _whole(cfg.seed, "seed", 0)
    for name in ("time_limit", "wall_limit"):
        value = cfg.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0):
            raise PsleError(f"{name}={value}: must be a positive number of seconds, or null for none")
    if cfg.task == "train":
        from hpc.train.space import check_space

        try:
            check_space(tuple(cfg.train.get("space") or ()))
            check_weights(cfg.train.get("weights") or WEIGHTS)
        except PsleError as exc:
            raise PsleError(f"train.{exc}") from None
        return
    ds = cfg.dataset
    if ds.kind == "file":
        if OmegaConf.is_missing(ds, "path"):
            raise PsleError("dataset=file needs dataset.path=FILE (a CSV or a problem .h5)")
        if not Path(str(ds.path)).is_file():
            raise PsleError(f"dataset.path={ds.path}: no such file")
    elif ds.kind in ("bnlearn", *GRAPH_MODELS):
        if ds.kind == "bnlearn" and ds.network not in network_names():
            raise PsleError(f"dataset.network={ds.network}: unknown network; known: {', '.join(network_names())}")
        _whole(ds.nodes, "dataset.nodes", 1)
        _whole(ds.samples, "dataset.samples", 2)
        try:
            check_weights(ds.get("weights", WEIGHTS))
        except PsleError as exc:
            raise PsleError(f"dataset.{exc}") from None
    else:
        raise PsleError(f"dataset.kind={ds.kind}: must be bnlearn, file or one of {', '.join(GRAPH_MODELS)}")
    try:
        estimator = build_estimator(method_spec(cfg), cfg.time_limit, cfg.get("wall_limit"))
        if isinstance(estimator, Member) and ds.kind != "file":  # a learner alone sees the whole problem
            estimator.check_size(int(ds.samples), generated_variables(ds))
    except PsleError as exc:
        raise PsleError(f"method={cfg.method.name}: {exc}") from None


def generated_variables(ds: Any) -> int:
    """How many variables a generated dataset will have, without generating it: a bnlearn network is
    replicated ceil(nodes / |V|) times, a random graph has exactly `nodes`."""
    if ds.kind != "bnlearn":
        return int(ds.nodes)
    from hpc.data.networks import load_network

    size = load_network(ds.network).p
    return math.ceil(int(ds.nodes) / size) * size
