"""Standard JSON out: Python's `json` writes NaN and Infinity, which strict parsers (jq, browsers,
Java's Jackson by default) reject. Non-finite numbers become null: "no value", which is what a
BIC of a failed run or an undefined ratio means."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def finite(obj: Any) -> Any:
    """`obj` with every non-finite float (Python or numpy) replaced by None, numpy scalars as Python's."""
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    return json.dumps(finite(obj), allow_nan=False, **kwargs)
