"""Hydra only instantiates launchers from the hydra_plugins namespace: P/SLE's checked SLURM launcher."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from hydra.core.utils import JobStatus
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import OmegaConf

from hpc.errors import PsleError
from hpc.container import image_python
from hpc.learners.ensemble import conf_dir
from hpc.launch.preflight import check_slurm_launcher, check_task
from hpc.launch.status import MANIFEST, summary, task_states, write_manifest


class CheckedSlurmLauncher(SlurmLauncher):
    """hydra-submitit-launcher's SlurmLauncher that validates its settings and every task's before submitting and,
    with `executor.container=IMAGE.sif`, runs every task inside that Apptainer image."""

    def _check_tasks(self, job_overrides: Sequence[Sequence[str]]) -> None:
        """Compose and check tasks as they will run, until every swept value has been seen in one: a
        whole 500-task sweep costs ~25 compositions, not 500."""
        seen: set[str] = set()
        for overrides in job_overrides:
            if seen.issuperset(overrides):
                continue
            seen.update(overrides)
            try:
                check_task(self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides)))
            except PsleError as exc:
                raise PsleError(f"task [{' '.join(overrides)}]: {exc}") from None

    def _task_rows(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[dict[str, Any]]:
        """Each task's overrides and the result file that will say it is done (for `psle status`)."""
        from hpc.launch.tasks import result_path

        rows = []
        for k, overrides in enumerate(job_overrides):
            cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            result = result_path(cfg) if cfg.task == "learn" else Path(cfg.results_dir) / f"sle-seed{cfg.seed}.yaml"
            rows.append({"index": initial_job_idx + k, "overrides": list(overrides), "result": str(result)})
        return rows

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        image = OmegaConf.select(self.config, "executor.container") if self.config is not None else None
        try:
            learn = self.config is not None and OmegaConf.select(self.config, "task") == "learn"
            check_slurm_launcher(self.params, OmegaConf.select(self.config, "wall_limit") if learn else None)
            self._check_tasks(job_overrides)
            if image and not Path(image).is_file():
                raise PsleError(f"executor.container={image}: no such image (build it with scripts/build_container.sh)")
        except PsleError as exc:  # Hydra would print a traceback; a settings error is one line
            print(f"psle-experiment: error: {exc}; nothing was submitted", file=sys.stderr)
            raise SystemExit(2) from None
        import submitit
        from submitit.core import core

        wait = bool(OmegaConf.select(self.config, "wait", default=True))
        submit = core.Executor.map_array  # what AutoExecutor.map_array is
        sweep_dir = None

        def submitted(executor: Any, fn: Any, *iterables: Any) -> Any:
            """Right after submission: the manifest and where to look, then (wait=false) leave."""
            nonlocal sweep_dir
            sweep_dir = Path(str(self.config.hydra.sweep.dir))
            rows = self._task_rows(job_overrides, initial_job_idx)
            jobs = submit(executor, fn, *iterables)
            for row, job in zip(rows, jobs):
                row.update(job=job.job_id, log=str(job.paths.stdout))
            write_manifest(sweep_dir, jobs[0].job_id.split("_")[0], rows)
            print(f"psle-experiment: submitted SLURM array job {jobs[0].job_id.split('_')[0]} ({len(jobs)} tasks); "
                  f"sweep folder {sweep_dir}; check it with: psle status {sweep_dir}", file=sys.stderr, flush=True)
            if not wait:
                raise _Submitted()
            return jobs

        with contextlib.ExitStack() as stack:
            stack.enter_context(mock.patch.object(core.Executor, "map_array", submitted))
            if image:
                # submitit takes the task's python command (slurm_python) only when the executor is built, and
                # the plugin builds it inside launch() with max_num_timeout as its only init key. Giving that one
                # constructor call the argument, for the duration of this launch, keeps the plugin's own launch()
                # (and its future fixes) instead of copying it here. Each task re-composes its config from the
                # launcher's config directory (a host path, pickled with the task): it is bound read-only.
                python = image_python(image, read_only=(conf_dir().resolve(),))
                stack.enter_context(mock.patch.object(
                    submitit, "AutoExecutor", functools.partial(submitit.AutoExecutor, slurm_python=python)))
            try:
                returns = super().launch(job_overrides, initial_job_idx)
            except _Submitted:
                raise SystemExit(0) from None
            except Exception as exc:  # a task that ended without a result: the summary says which
                if sweep_dir is None:  # nothing was submitted: not a task's failure
                    raise
                states = task_states(json.loads((sweep_dir / MANIFEST).read_text()))
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                print(f"psle-experiment: a task failed ({first}); {len(states)} tasks: {summary(states)}; "
                      f"details: psle status {sweep_dir}", file=sys.stderr)
                raise SystemExit(1) from None
        states = task_states(json.loads((sweep_dir / MANIFEST).read_text()))
        print(f"psle-experiment: {len(states)} tasks: {summary(states)} (psle status {sweep_dir})", file=sys.stderr)
        failed = [r for r in returns if r.status == JobStatus.FAILED]
        if failed:  # Hydra would re-raise the first task's exception with its traceback
            error = failed[0]._return_value
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            print(f"psle-experiment: {len(failed)} task(s) failed, the first with: {first}; logs: psle status "
                  f"{sweep_dir}", file=sys.stderr)
            raise SystemExit(1)
        return returns


class _Submitted(Exception):
    """wait=false: the array is submitted; leave without waiting for it."""
