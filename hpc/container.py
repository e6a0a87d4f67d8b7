"""How a SLURM job runs Python inside the project's Apptainer image (Apptainer.def)."""
from __future__ import annotations

import shlex
from pathlib import Path

# The Python of the project's venv inside the image; the image's PATH python would work too, but
# naming it keeps a bound host venv from shadowing it.
IMAGE_PYTHON = "/opt/psle/bin/python"


def image_python(image: str | Path, read_only: tuple[str | Path, ...] = ()) -> str:
    """The shell command that replaces `python` for a job: `apptainer exec [--bind D:D:ro] IMAGE python`.

    `read_only` host directories are bound at the same path, for jobs that read them by host path."""
    binds = [f"--bind {shlex.quote(str(d))}:{shlex.quote(str(d))}:ro" for d in read_only]
    return " ".join(["apptainer exec", *binds, shlex.quote(str(Path(image).resolve())), IMAGE_PYTHON])
