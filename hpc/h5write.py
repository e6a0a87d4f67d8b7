"""Writing the project's HDF5 stores (checkpoints, records): whole, atomically, strings as UTF-8."""

from __future__ import annotations

import os
from typing import Any

import h5py
import numpy as np

from hpc.atomic import atomic_path


def write_h5(path: str | os.PathLike, attrs: dict[str, Any], group: str, columns: dict[str, np.ndarray]) -> None:
    """`attrs` on the file and `columns` as datasets of `group`, renamed into place only when complete,
    so a kill at any moment leaves the previous file or the new one, never a torn one. Object
    columns are stored as UTF-8 strings; no timestamps, so equal content gives equal bytes."""
    strings = h5py.string_dtype("utf-8")
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            for name, value in attrs.items():
                f.attrs[name] = value
            g = f.create_group(group)
            for name, data in columns.items():
                g.create_dataset(name, data=data, dtype=strings if data.dtype == object else data.dtype,
                                 track_times=False)
