"""`psle-experiment`: the Hydra app behind every experiment and sweep.

    psle-experiment -m experiment=paper_table_1000 hydra/launcher=submitit_slurm
"""

from __future__ import annotations

import os
import sys
import warnings

import hydra
from omegaconf import DictConfig, OmegaConf

from hpc.errors import one_line_warning
from hpc.learners.ensemble import conf_dir

# Where results go by default: the directory psle-experiment was started in. SLURM jobs start in
# the submission directory, so launcher and tasks agree (hydra:runtime.cwd is unset in launchers).
OmegaConf.register_new_resolver("psle.cwd", os.getcwd, replace=True)
# conf/hydra/launcher/submitit_*.yaml deliberately share the plugin's names (so the documented
# `hydra/launcher=submitit_slurm` picks ours); Hydra warns about that on every run.
warnings.filterwarnings("ignore", message="(?s).*is validated against ConfigStore schema with the same name")


class _Tee:
    """stderr that also appends to the task's log file (Hydra's job log gets only `logging` records)."""

    def __init__(self, stream, log):
        self._stream, self._log = stream, log

    def write(self, text: str) -> int:
        self._log.write(text)
        self._log.flush()
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def log_progress() -> None:
    """Copy psle's progress and result lines into the task's log (experiment.log) too."""
    import logging

    files = [h for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]
    if files and not isinstance(sys.stderr, _Tee):
        sys.stderr = _Tee(sys.stderr, open(files[0].baseFilename, "a"))


def quiet_dask() -> None:
    """Importing distributed sets its logger to INFO over Hydra's job_logging, and scheduler and
    worker chatter would drown the progress lines; dask's own setting is read at that import
    (and passed on to the workers)."""
    import dask

    dask.config.set({"distributed.logging.distributed": "warning"})


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
def main(cfg: DictConfig) -> dict:
    from hpc.errors import PsleError
    from hpc.launch.preflight import check_task
    from hpc.launch.tasks import run_task

    quiet_dask()
    log_progress()
    warnings.formatwarning = one_line_warning  # one line per warning, as psle learn prints them
    try:
        check_task(cfg)
        if "SLURM_JOB_ID" not in os.environ:
            return run_task(cfg)
        from hpc.launch.preemption import preemption_guard

        with preemption_guard():
            return run_task(cfg)
    except PsleError as exc:
        if "SUBMITIT_EXECUTOR" in os.environ:  # a submitit job: the launcher reports it with the job's logs
            raise
        # Hydra would print a traceback; a user's mistake is one line.
        print(f"psle-experiment: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        if "SUBMITIT_EXECUTOR" in os.environ:
            raise
        # Ctrl-C on a local sweep: the task's workers are already stopped (its executor closed on the
        # way out); finished tasks and this task's checkpoint stay, so the same command continues.
        print("psle-experiment: interrupted; finished tasks and this task's checkpoint are kept "
              "(the same command continues)", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
