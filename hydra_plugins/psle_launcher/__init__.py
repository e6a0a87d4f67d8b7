"""Hydra only instantiates launchers from the hydra_plugins namespace: P/SLE's checked SLURM launcher."""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import OmegaConf

from hpc.errors import PsleError
from hpc.launch.container import image_python
from hpc.learners.ensemble import conf_dir
from hpc.launch.preflight import check_slurm_launcher, check_task


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
        if not image:
            return super().launch(job_overrides, initial_job_idx)
        # submitit takes the task's python command (slurm_python) only when the executor is built, and
        # the plugin builds it inside launch() with max_num_timeout as its only init key. Giving that one
        # constructor call the argument, for the duration of this launch, keeps the plugin's own launch()
        # (and its future fixes) instead of copying it here.
        import submitit

        # Each task re-composes its config from the launcher's config directory (a host path, pickled
        # with the task), so that directory is bound read-only at the same path in the image.
        python = image_python(image, read_only=(conf_dir().resolve(),))
        with mock.patch.object(submitit, "AutoExecutor", functools.partial(submitit.AutoExecutor, slurm_python=python)):
            return super().launch(job_overrides, initial_job_idx)
