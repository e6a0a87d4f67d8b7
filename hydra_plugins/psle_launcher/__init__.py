"""Hydra only instantiates launchers from the hydra_plugins namespace: P/SLE's checked SLURM launcher."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher

from hpc.errors import PsleError
from hpc.launch.preflight import check_slurm_launcher


class CheckedSlurmLauncher(SlurmLauncher):
    """hydra-submitit-launcher's SlurmLauncher that validates its settings before submitting."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        try:
            check_slurm_launcher(self.params)
        except PsleError as exc:  # Hydra would print a traceback; a settings error is one line
            print(f"psle-experiment: error: {exc}; nothing was submitted", file=sys.stderr)
            raise SystemExit(2) from None
        return super().launch(job_overrides, initial_job_idx)
