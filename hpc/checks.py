"""Setting checks shared by configs: one line naming the setting, its value and what it must be."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hpc.errors import PsleError


def check_number(name: str, value: Any, lo: float, hi: float = math.inf, *, integer: bool = False,
                 open_lo: bool = False, open_hi: bool = False, optional: bool = False) -> None:
    """`value` is a number (a whole one if `integer`) in the interval from `lo` to `hi`; None if `optional`."""
    if value is None and optional:
        return
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    kind = "a whole number" if integer else "a number"
    if hi == math.inf:
        what = f"{kind} {'>' if open_lo else '>='} {lo:g}"
    else:
        what = f"{kind} in {'(' if open_lo else '['}{lo:g}, {hi:g}{')' if open_hi else ']'}"
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise PsleError(f"{name}={value!r}: must be {what}" + (" (or null)" if optional else ""))
    if not (lo < value if open_lo else lo <= value) or not (value < hi if open_hi else value <= hi):
        raise PsleError(f"{name}={value!r}: must be {what}")


def check_choice(name: str, value: Any, known: tuple[str, ...]) -> None:
    """`value` is one of `known`."""
    if value not in known:
        raise PsleError(f"{name}: {value!r}; known: {', '.join(known)}")
