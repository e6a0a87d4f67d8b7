"""The project's checked HDF5 stores: Auto-SLE's checkpoint, PEF's checkpoint, the selection records and
problem files are read and written one way.

A store file carries a format tag, a version, the settings it was made under (canonical JSON, and
their sha256 as a fingerprint) and a sha256 of its content. It is written whole into a temporary file
and renamed into place, so a kill at any moment leaves the previous file or the next one. Reading
refuses, in one line naming the file, anything that is not such a store, a version this psle does not
read, a file from other settings ("differ in: ...") and a file whose content no longer matches its
checksum; a refused file is never overwritten.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import h5py
import numpy as np

from hpc.atomic import atomic_path
from hpc.errors import PsleError
from hpc.jsontext import dumps

T = TypeVar("T")


def canonical(obj: Any) -> str:
    """JSON with sorted keys and no spaces: equal settings give equal text, and so equal hashes."""
    return dumps(obj, sort_keys=True, separators=(",", ":"))


def fingerprint(settings: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(settings).encode()).hexdigest()


@dataclass(frozen=True)
class StoreFormat:
    """A store's tag and version, and what older versions do: `older` maps a version to None (it still
    loads) or to the reason it is refused."""

    tag: str
    version: int
    what: str  # how messages name the file: "psle train checkpoint"
    older: Mapping[int, str | None] = field(default_factory=dict)

    def check(self, f: h5py.File, path: str | os.PathLike) -> int:
        """The file's version, if this psle reads it; otherwise a PsleError saying why not."""
        if f.attrs.get("format") != self.tag:
            raise PsleError(f"{path}: not a {self.what} (no '{self.tag}' marker); refusing to use or overwrite it")
        version = int(f.attrs.get("version", -1))
        if version == self.version or (version in self.older and self.older[version] is None):
            return version
        if version in self.older:
            raise PsleError(f"{path}: {self.what} of an earlier psle (format version {version}), "
                            f"{self.older[version]}")
        raise PsleError(f"{path}: {self.what} format version {f.attrs.get('version')} is not {self.version}")


def differing(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The settings whose values differ between two settings dicts (compared as canonical JSON)."""
    return sorted(k for k in set(saved) | set(current) if canonical(saved.get(k)) != canonical(current.get(k)))


def check_settings(path: str | os.PathLike, saved: Mapping[str, Any], current: Mapping[str, Any], what: str,
                   hint: str) -> None:
    """Refuse a store made under other settings, naming them."""
    differ = differing(saved, current)
    if differ:
        raise PsleError(f"{path}: {what} was made with other {'data' if differ == ['data'] else 'settings'} "
                        f"(differ in: {', '.join(differ)}); {hint}")


def check_sha256(path: str | os.PathLike, stored: Any, computed: str) -> None:
    if stored != computed:
        raise PsleError(f"{path}: content does not match its checksum (the file is damaged); refusing to use or "
                        "overwrite it")


def read_store(path: str | os.PathLike, read: Callable[[h5py.File], T], what: str, kept: bool = True) -> T:
    """`read(file)` on `path`, with every failure as one PsleError naming the file: not HDF5 at all,
    `read`'s own refusals, or damage, which h5py reports as OSError, KeyError, ValueError, ...
    depending on where it broke. `what` names the file's kind ("checkpoint"); `kept`: the caller would
    write to the file (a store), so the message says a refused one is left alone."""
    left = "; refusing to use or overwrite it" if kept else ""
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise PsleError(f"{path}: not an HDF5 file{left}") from None
    try:
        with f:
            return read(f)
    except PsleError:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise PsleError(f"{path}: damaged {what} ({first}){left}") from None


@contextmanager
def writing(path: str | os.PathLike, attrs: Mapping[str, Any]) -> Iterator[h5py.File]:
    """An HDF5 file with `attrs`, renamed into place at `path` only when the block completes."""
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            for name, value in attrs.items():
                f.attrs[name] = value
            yield f


def write_columns(path: str | os.PathLike, attrs: Mapping[str, Any], group: str,
                  columns: Mapping[str, np.ndarray]) -> None:
    """`attrs` on the file and `columns` as datasets of `group`, atomically (see add_columns)."""
    with writing(path, attrs) as f:
        add_columns(f, group, columns)


def add_columns(f: h5py.File, group: str, columns: Mapping[str, np.ndarray]) -> None:
    """`columns` as datasets of a new `group` of `f`. Object columns are stored as UTF-8 strings; no
    timestamps, so equal content gives equal bytes."""
    strings = h5py.string_dtype("utf-8")
    g = f.create_group(group)
    for name, data in columns.items():
        g.create_dataset(name, data=data, dtype=strings if data.dtype == object else data.dtype, track_times=False)
