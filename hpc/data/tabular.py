"""Users' own data: a CSV with a header row of variable names, or a problem HDF5 file.

Every rejection names the file and, where it applies, the column, row and value, so a user
with a 20,000-column spreadsheet can find the bad cell. The rules, each one line:
- separators: comma (.csv; a semicolon-separated .csv is read too, with decimal commas if its
  numbers have them), tab (.tsv), any of the three (.txt);
- missing values (an empty cell, NA, N/A, NaN, null): the rows holding them are left out, with a
  warning saying how many; other text, and infinities, are refused;
- refused: fewer than 3 rows, a constant column, two columns that are copies of each other (up to
  scale and sign), which no Gaussian score can tell apart;
- warned: a column that counts the rows (an index, not a variable?), columns with two values
  (modelled as Gaussian all the same), and, by the learners, a search over no fewer variables than
  rows (the whole problem, or PEF's largest cluster), where scores and tests are unreliable.
"""

from __future__ import annotations

import csv
import hashlib
import os
import warnings
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


def _without_missing(path: Path, values: np.ndarray, header: list[str]) -> np.ndarray:
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
    binary = np.flatnonzero(_distinct_at_most(x, 2))
    if len(binary):
        warnings.warn(f"{source}: {len(binary)} column(s) with two values ({_names(names, binary)}) are modelled as "
                      "Gaussian like every column: their edges are a linear approximation", stacklevel=3)


def warn_few_rows(n: int, p: int, what: str) -> None:
    """One warning when a search sees at least as many variables (`p`, in `what`) as there are rows: its
    covariance is singular there, so scores and tests are unreliable."""
    if n <= p:
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


def _distinct_at_most(x: np.ndarray, k: int) -> np.ndarray:
    out = []
    for lo in range(0, x.shape[1], CHECK_BLOCK):
        block = np.sort(x[:, lo:lo + CHECK_BLOCK], axis=0)
        out.append((np.diff(block, axis=0) != 0).sum(axis=0) + 1 <= k)
    return np.concatenate(out)
