"""Write files so that readers (and re-run sweeps) never see half a result."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hpc.errors import PsleError


def check_writable(path: str | os.PathLike) -> Path:
    """Fail before any work if `path` cannot be created, naming the reason."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise PsleError(f"{path}: is a directory, expected a file name")
    if not parent.is_dir():
        raise PsleError(f"{path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise PsleError(f"{path}: directory {parent} is not writable")
    return path


def check_output(path: str | os.PathLike, suffixes: tuple[str, ...], what: str,
                 inputs: tuple[str | os.PathLike, ...] = ()) -> Path:
    """`check_writable`, plus: a suffix the writer understands, and not one of the run's input files."""
    path = check_writable(path)
    if path.suffix.lower() not in suffixes:
        raise PsleError(f"{path}: {what} must be named {' or '.join(suffixes)}, not {path.suffix or 'without a suffix'}")
    for source in inputs:
        if path.resolve() == Path(source).resolve():
            raise PsleError(f"{path}: the output would overwrite the input {source}; choose another name")
    return path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success fsync it and rename it over `path`.

    On any exception the temporary file is removed and `path` is left untouched.
    """
    path = check_writable(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp_path, 0o644)
        os.replace(tmp_path, path)
        with contextlib.suppress(OSError):
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
