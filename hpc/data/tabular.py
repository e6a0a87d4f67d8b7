"""Users' own data: a CSV with a header row of variable names, or a problem HDF5 file.

Every rejection names the file and, where it applies, the column, row and value, so a user
with a 20,000-column spreadsheet can find the bad cell.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pandas as pd

from hpc.errors import PsleError


DELIMITERS = {".csv": ",", ".tsv": "\t"}  # .txt: whichever of these (or ';') the header row uses


def _delimiter(path: Path, header_line: str) -> str:
    """The column separator: by suffix, checked against the header row, so a tab-separated file
    named .csv is refused instead of read as one column."""
    used = [d for d in (",", "\t", ";") if d in header_line]
    expected = DELIMITERS.get(path.suffix.lower())
    if expected is None:
        return used[0] if used else ","
    if expected not in header_line and used:
        name = {",": "comma", "\t": "tab", ";": "semicolon"}[used[0]]
        raise PsleError(f"{path}: the header row is {name}-separated, not {path.suffix} "
                        f"({'comma' if expected == ',' else 'tab'}-separated); rename the file or convert it")
    return expected


def read_csv(path: str | os.PathLike) -> tuple[np.ndarray, tuple[str, ...]]:
    """(n × p float64 array, column names); rows are samples.

    The fast C parser reads clean files; only a file it rejects is re-read as text to
    find the offending cell. A UTF-8 byte-order mark (Excel's "CSV UTF-8") is dropped.
    """
    path = Path(path)
    if not path.is_file():
        raise PsleError(f"{path}: no such file")
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            first = fh.readline()
    except UnicodeDecodeError:
        raise PsleError(f"{path}: not a UTF-8 text file") from None
    sep = _delimiter(path, first)
    header = [c.strip() for c in next(csv.reader([first], delimiter=sep), [])]
    if not header:
        raise PsleError(f"{path}: the file is empty")
    seen: set[str] = set()
    for k, name in enumerate(header):
        if not name:
            raise PsleError(f"{path}: column {k + 1} has no name in the header row")
        if name in seen:
            raise PsleError(f"{path}: column name {name!r} appears twice")
        seen.add(name)
    try:
        values = pd.read_csv(path, sep=sep, dtype=np.float64, engine="c", encoding="utf-8-sig").to_numpy()
    except UnicodeDecodeError:
        raise PsleError(f"{path}: not a UTF-8 text file") from None
    except pd.errors.ParserError as exc:
        raise PsleError(f"{path}: malformed CSV ({str(exc).strip()})") from None
    except ValueError:
        values = None
    if values is not None and len(values) == 0:
        raise PsleError(f"{path}: no data rows under the header")
    if values is None or not np.isfinite(values).all():
        _raise_bad_cell(path, header, sep)
    return values, tuple(header)


def _raise_bad_cell(path: Path, header: list[str], sep: str) -> None:
    text = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, engine="c", encoding="utf-8-sig")
    values = text.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    row, col = np.argwhere(~np.isfinite(values))[0]
    cell = text.iat[row, col].strip()
    if cell == "":
        what = "missing value"
    elif np.isnan(values[row, col]) and cell.lower() != "nan":
        what = f"{cell!r} is not a number"
    else:
        what = f"{cell!r} is not a finite number"
    raise PsleError(f"{path}: column {header[col]!r}, row {row + 1}: {what}")


def read_data(path: str | os.PathLike) -> tuple[np.ndarray, tuple[str, ...]]:
    """Data and names from a CSV or a problem HDF5 file (chosen by suffix)."""
    suffix = Path(path).suffix.lower()
    if suffix in (".h5", ".hdf5"):
        from hpc.data.problem import read_problem

        problem = read_problem(path)
        return problem.data, problem.variables
    if suffix in (".csv", ".txt", ".tsv"):
        return read_csv(path)
    raise PsleError(f"{path}: unknown data format {suffix!r} (use .csv, .tsv or .h5)")


def as_learnable(x: np.ndarray, names: tuple[str, ...] | list[str] | None = None) -> tuple[np.ndarray, tuple[str, ...]]:
    """`x` as a float matrix with its column names (X0, X1, ... when none), checked by `check_learnable`."""
    x = np.asarray(x, dtype=np.float64)
    names = tuple(names) if names is not None else tuple(f"X{i}" for i in range(x.shape[1] if x.ndim == 2 else 0))
    check_learnable(x, names)
    return x, names


def check_learnable(x: np.ndarray, names: tuple[str, ...] | list[str], source: str = "data") -> None:
    """Reject data a Gaussian learner cannot use, naming the problem: too few rows, NaN/inf, constant columns."""
    if x.ndim != 2 or x.shape[1] != len(names):
        raise PsleError(f"{source}: expected an n x {len(names)} array, got shape {x.shape}")
    if x.shape[0] < 3:
        raise PsleError(f"{source}: {x.shape[0]} row(s); structure learning needs at least 3")
    finite = np.isfinite(x)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        raise PsleError(f"{source}: column {names[col]!r}, row {row + 1}: value {x[row, col]} is not finite")
    constant = np.flatnonzero(np.ptp(x, axis=0) == 0)
    if len(constant):
        shown = ", ".join(repr(names[c]) for c in constant[:5]) + (" ..." if len(constant) > 5 else "")
        raise PsleError(f"{source}: {len(constant)} constant column(s) carry no information: {shown}")
