"""Users' own data: a CSV with a header row of variable names, or a problem HDF5 file.

Every rejection names the file and, where it applies, the column, row and value, so a user
with a 20,000-column spreadsheet can find the bad cell. The rules, each one line:
- separators: comma (.csv; a semicolon-separated .csv is read too, with decimal commas if its
  numbers have them), tab (.tsv), any of the three (.txt);
- missing values (an empty cell, NA, N/A, NaN, null): the rows holding them are left out, with a
  warning saying how many; other text, and infinities, are refused;
- refused: fewer than 3 rows, a constant column, two columns that are copies of each other (up to
  scale and sign), which no Gaussian score can tell apart;
- warned, once each: a column that counts the rows (an index, not a variable?), columns that look
  categorical (two values, or at most five whole-number values: modelled as continuous all the same),
  and no fewer variables than rows (then again, by PEF, when its largest cluster's search is that big),
  where scores and tests are unreliable.

A pandas DataFrame or a numpy array (the Python API) goes through the same rules as a file, with
its column names kept.
"""

from __future__ import annotations

import csv
import hashlib
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd

from hpc.errors import PsleError


DELIMITERS = {".csv": ",", ".tsv": "\t"}  # .txt: whichever of these (or ';') the header row uses
#: Cells read as missing values (R writes NA, pandas an empty cell, numpy nan).
MISSING = ["", "NA", "N/A", "n/a", "#N/A", "NaN", "nan", "null", "NULL"]


def _delimiter(path: Path, header_line: str) -> str:
    """The column separator: by suffix, checked against the header row, so a tab-separated file
    named .csv is refused instead of read as one column (a semicolon-separated .csv is read)."""
    used = [d for d in (",", "\t", ";") if d in header_line]
    expected = DELIMITERS.get(path.suffix.lower())
    if expected is None:
        return used[0] if used else ","
    if expected == "," and ";" in header_line and "," not in header_line:
        return ";"
    if expected not in header_line and used:
        name = {",": "comma", "\t": "tab", ";": "semicolon"}[used[0]]
        raise PsleError(f"{path}: the header row is {name}-separated, not {path.suffix} "
                        f"({'comma' if expected == ',' else 'tab'}-separated); rename the file or convert it")
    return expected


def csv_header(path: Path) -> tuple[str, list[str]]:
    """The column separator and the checked column names of a CSV/TSV file, from its header row alone."""
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
    return sep, header


def read_csv(path: str | os.PathLike) -> tuple[np.ndarray, tuple[str, ...]]:
    """(n × p float64 array, column names); rows are samples.

    The fast C parser reads clean files; only a file it rejects is re-read as text to
    find the offending cell. A UTF-8 byte-order mark (Excel's "CSV UTF-8") is dropped.
    """
    path = Path(path)
    sep, header = csv_header(path)
    values = _parse(path, sep)
    if values is not None and len(values) == 0:
        raise PsleError(f"{path}: no data rows under the header")
    if values is None or np.isinf(values).any():
        _raise_bad_cell(path, header, sep)
    return _without_missing(path, values, header), tuple(header)


def _parse(path: Path, sep: str) -> np.ndarray | None:
    """The values (NaN where missing), or None when a cell is not a number; a semicolon-separated file
    may write decimal commas."""
    for decimal in (".", ",") if sep == ";" else (".",):
        try:
            return pd.read_csv(path, sep=sep, dtype=np.float64, engine="c", encoding="utf-8-sig", decimal=decimal,
                               na_values=MISSING, keep_default_na=False).to_numpy()
        except UnicodeDecodeError:
            raise PsleError(f"{path}: not a UTF-8 text file") from None
        except pd.errors.ParserError as exc:
            raise PsleError(f"{path}: malformed CSV ({str(exc).strip()})") from None
        except ValueError:
            continue
    return None


def _without_missing(path: Path | str, values: np.ndarray, header: list[str]) -> np.ndarray:
    """The complete rows (listwise deletion), with one warning naming what was left out."""
    missing = np.isnan(values)
    if not missing.any():
        return values
    rows = missing.any(axis=1)
    if rows.all():
        raise PsleError(f"{path}: every row has a missing value; nothing is left to learn from")
    per_column = missing.sum(axis=0)
    worst = np.argsort(-per_column, kind="stable")[:3]
    shown = ", ".join(f"{header[c]!r} ({per_column[c]})" for c in worst if per_column[c])
    left = int(rows.sum())
    warnings.warn(f"{path}: {left} of {len(values)} rows {'has' if left == 1 else 'have'} missing values (most in "
                  f"{shown}); {'it is' if left == 1 else 'they are'} left out", stacklevel=3)
    return values[~rows]


def _raise_bad_cell(path: Path, header: list[str], sep: str) -> NoReturn:
    text = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, engine="c", encoding="utf-8-sig")
    numbers = text.apply(lambda c: pd.to_numeric(c.str.replace(",", ".") if sep == ";" else c, errors="coerce"))
    values = numbers.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) & ~text.apply(lambda c: c.str.strip().isin(MISSING)).to_numpy()
    if not bad.any():
        raise PsleError(f"{path}: numbers pandas cannot read (mixed decimal marks?)")
    row, col = np.argwhere(bad)[0]
    cell = text.iat[row, col].strip()
    what = f"{cell!r} is not a number" if np.isnan(values[row, col]) else f"{cell!r} is not a finite number"
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


def frame_data(frame: pd.DataFrame, source: str = "the DataFrame") -> tuple[np.ndarray, tuple[str, ...]]:
    """A DataFrame's values and column names, by a file's rules: numbers only (a text column is refused,
    naming it and a value), rows with missing values left out with one warning."""
    names = tuple(str(c) for c in frame.columns)
    _check_names(names, source)
    columns = []
    for name, (_, column) in zip(names, frame.items()):
        if column.dtype == bool or pd.api.types.is_numeric_dtype(column.dtype):
            columns.append(column.to_numpy(dtype=np.float64, na_value=np.nan))
            continue
        numbers = pd.to_numeric(column.astype(object).where(column.notna(), np.nan), errors="coerce")
        bad = numbers.isna() & column.notna() & ~column.astype(str).str.strip().isin(MISSING)
        if bad.any():
            row = bad.to_numpy().argmax()
            label = frame.index[row:row + 1].tolist()[0]
            raise PsleError(f"{source}: column {name!r} holds text, e.g. {column.iloc[row]!r} (row index {label!r}): "
                            "every column must be numeric; encode it as numbers or drop it")
        columns.append(numbers.to_numpy(dtype=np.float64))
    if not columns:
        raise PsleError(f"{source}: no columns")
    values = np.column_stack(columns)
    if len(values) == 0:
        raise PsleError(f"{source}: no rows")
    return _without_missing(source, values, list(names)), names


def array_data(x: object, names: Sequence[str] | None = None,
               source: str = "the array") -> tuple[np.ndarray, tuple[str, ...]]:
    """A 2-D array (rows are samples) of numbers, with `names` or X0, X1, ...; missing values as in a file."""
    array = np.asarray(x)
    if array.ndim != 2:
        raise PsleError(f"{source}: expected a 2-D array (rows are samples, columns variables), got {array.ndim}-D "
                        f"shape {array.shape}")
    given = None if names is None else tuple(str(n) for n in names)
    if given is not None and len(given) != array.shape[1]:
        raise PsleError(f"{source}: {len(given)} names for {array.shape[1]} columns")
    frame = pd.DataFrame(array, columns=given if given is not None else [f"X{i}" for i in range(array.shape[1])])
    return frame_data(frame, source)


def _check_names(names: tuple[str, ...], source: str) -> None:
    seen: set[str] = set()
    for k, name in enumerate(names):
        if not name.strip():
            raise PsleError(f"{source}: column {k + 1} has no name")
        if name in seen:
            raise PsleError(f"{source}: column name {name!r} appears twice")
        seen.add(name)


def as_learnable(x: np.ndarray, names: tuple[str, ...] | list[str] | None = None) -> tuple[np.ndarray, tuple[str, ...]]:
    """`x` as a float matrix with its column names (X0, X1, ... when none), checked by `check_learnable`."""
    x = np.asarray(x, dtype=np.float64)
    names = tuple(names) if names is not None else tuple(f"X{i}" for i in range(x.shape[1] if x.ndim == 2 else 0))
    check_learnable(x, names)
    return x, names


def check_learnable(x: np.ndarray, names: tuple[str, ...] | list[str], source: str = "data", warn: bool = True) -> None:
    """Reject data a Gaussian learner cannot use, naming the problem: too few rows, NaN/inf, constant or copied
    columns; and (`warn`) warn about row-index and two-valued columns. A caller that checks a file before
    handing its data to a learner passes warn=False: the learner's own check warns, once."""
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
        raise PsleError(f"{source}: {len(constant)} constant column(s) carry no information: {_names(names, constant)}")
    copies = copied_columns(x)
    if copies:
        a, b = copies[0]
        raise PsleError(f"{source}: columns {names[a]!r} and {names[b]!r} are copies of each other (up to scale and "
                        f"sign{f'; {len(copies)} such pairs' if len(copies) > 1 else ''}): keep one of each")
    if not warn:
        return
    counts = np.flatnonzero(_counts_rows(x))
    if len(counts):
        warnings.warn(f"{source}: column(s) {_names(names, counts)} number the rows 1..n (or 0..n-1): an index, not "
                      "a variable? It is learned as one", stacklevel=3)
    coded = np.flatnonzero(categorical_looking(x))
    if len(coded):
        warnings.warn(f"{source}: {len(coded)} column(s) look categorical (two values, or at most {CODED_VALUES} "
                      f"whole-number values: {_names(names, coded)}); the model is linear-Gaussian for continuous "
                      "data, so they are learned as continuous and their edges are a linear approximation",
                      stacklevel=3)
    if x.shape[0] <= x.shape[1]:
        warnings.warn(f"{source}: {x.shape[1]} variables for {x.shape[0]} rows (no fewer variables than rows): the "
                      f"covariance is singular, so a search that fits {x.shape[0]} or more variables at once is "
                      "unreliable (PEF searches smaller clusters, and warns again if its largest is that big; its "
                      "searches over every pair fit each variable on its few parents)", stacklevel=3)


#: What the learners call the whole data in `warn_few_rows`; `check_learnable` has warned about it already.
WHOLE_DATA = "data"


def warn_few_rows(n: int, p: int, what: str) -> None:
    """One warning when a search sees at least as many variables (`p`, in `what`) as there are rows: its
    covariance is singular there, so scores and tests are unreliable. A search over the whole data (`what`
    is WHOLE_DATA) says nothing new: `check_learnable` warned about the data itself, once."""
    if n <= p and what != WHOLE_DATA:
        warnings.warn(f"{what}: {p} variables for {n} rows (no fewer variables than rows): the covariance is "
                      "singular there, so scores and tests are unreliable and the graph is a rough sketch",
                      stacklevel=3)


def _names(names: tuple[str, ...] | list[str], columns: np.ndarray) -> str:
    return ", ".join(repr(names[c]) for c in columns[:5]) + (" ..." if len(columns) > 5 else "")


#: Columns per block in the column checks, so their memory stays bounded at 100,000 variables.
CHECK_BLOCK = 4096


def copied_columns(x: np.ndarray) -> list[tuple[int, int]]:
    """Pairs of columns equal up to scale, shift and sign (a digest of each standardised column, rounded)."""
    seen: dict[bytes, int] = {}
    pairs = []
    for lo in range(0, x.shape[1], CHECK_BLOCK):
        block = x[:, lo:lo + CHECK_BLOCK]
        z = (block - block.mean(axis=0)) / block.std(axis=0)
        z *= np.where(z[0] < 0, -1.0, 1.0)  # a sign flip is a copy too
        z = np.round(z, 9) + 0.0  # -0.0 -> 0.0
        for k in range(z.shape[1]):
            key = hashlib.blake2b(np.ascontiguousarray(z[:, k]).tobytes(), digest_size=16).digest()
            if key in seen:
                pairs.append((seen[key], lo + k))
            else:
                seen[key] = lo + k
    return pairs


def _counts_rows(x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    steps = np.arange(n, dtype=np.float64)[:, None]
    return np.concatenate([((x[:, lo:lo + CHECK_BLOCK] == steps).all(axis=0)
                            | (x[:, lo:lo + CHECK_BLOCK] == steps + 1).all(axis=0))
                           for lo in range(0, x.shape[1], CHECK_BLOCK)])


#: A column with at most this many distinct values, all whole numbers, looks like a coded category.
CODED_VALUES = 5


def categorical_looking(x: np.ndarray) -> np.ndarray:
    """Per column: two values, or at most CODED_VALUES whole-number values, each seen twice on average (so
    a handful of continuous rows is not taken for codes)."""
    out = []
    for lo in range(0, x.shape[1], CHECK_BLOCK):
        block = np.sort(x[:, lo:lo + CHECK_BLOCK], axis=0)
        distinct = (np.diff(block, axis=0) != 0).sum(axis=0) + 1
        whole = (block == np.round(block)).all(axis=0)
        out.append(((distinct == 2) | (whole & (distinct <= CODED_VALUES))) & (2 * distinct <= x.shape[0]))
    return np.concatenate(out)
