"""Reading an HDF5 file the project wrote, where damage must be one line, never a traceback."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import h5py

from hpc.errors import PsleError

T = TypeVar("T")


def read_h5(path: str | os.PathLike, read: Callable[[h5py.File], T], what: str) -> T:
    """`read(file)` on `path`, with every failure as one PsleError naming the file: not HDF5 at all,
    `read`'s own refusals, or damage, which h5py reports as OSError, KeyError, ValueError, ...
    depending on where it broke. `what` names the file's kind ("checkpoint")."""
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise PsleError(f"{path}: not an HDF5 file; refusing to use or overwrite it") from None
    try:
        with f:
            return read(f)
    except PsleError:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise PsleError(f"{path}: damaged {what} ({first}); refusing to use or overwrite it") from None
