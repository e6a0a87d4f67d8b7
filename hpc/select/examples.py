"""Selection examples: the records of member runs, joined per cluster, as what a selector learns from.

An example is one cluster with every portfolio member's outcome on it (status, BIC, Q =
F1-adjacency + F1-arrowhead against the restricted truth, seconds). Records files written by
`psle records` may be shards of one portfolio or runs of other members on the same problems;
`load_examples` joins them and keeps the members of the portfolio asked for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from hpc.errors import PsleError


@dataclass(frozen=True)
class Example:
    """One cluster of the records: features, size, and per portfolio member its status, BIC, Q and seconds."""

    group: str  # the problem it came from
    family: str
    features: np.ndarray
    size: int
    ok: np.ndarray
    bic: np.ndarray
    quality: np.ndarray
    seconds: np.ndarray
    timed_out: np.ndarray
    #: Q's two parts and the SHD per member (NaN and -1 where it has no graph): tables report them beside Q.
    f1_adjacent: np.ndarray | None = None
    f1_arrowhead: np.ndarray | None = None
    shd: np.ndarray | None = None


#: A truth selector's default tolerance (Q = F1-adjacency + F1-arrowhead): chosen by cross-validation on the
#: selection records (bench/HISTORY.md, "Cost-aware selection"), and what the shipped truth selector was fit
#: with. A bic selector ranks by probability and has none.
TRUTH_TOLERANCE = 0.01


def default_tolerance(target: str) -> float:
    return TRUTH_TOLERANCE if target == "truth" else 0.0


def examples_from_rows(rows: list[dict[str, Any]], members: list[int]) -> list[Example]:
    """Clusters with a record for every one of `members` (indices into the records' portfolio)."""
    by_cluster: dict[str, dict[int, dict[str, Any]]] = {}
    for r in rows:
        cluster, _, m = r["key"].rpartition("#")
        by_cluster.setdefault(cluster, {})[int(m)] = r
    out = []
    for cluster, runs in by_cluster.items():
        if not all(m in runs for m in members):
            continue
        rs = [runs[m] for m in members]
        ok = np.array([r["status"] == "ok" for r in rs])
        problem = json.loads(cluster.rpartition("#")[0])
        out.append(Example(
            cluster.rpartition("#")[0], problem["family"], np.asarray(rs[0]["features"], dtype=np.float64),
            int(rs[0]["size"]), ok,
            np.array([r["bic"] if o else -np.inf for r, o in zip(rs, ok)]),
            np.array([r["f1_adjacent"] + r["f1_arrowhead"] if o else 0.0 for r, o in zip(rs, ok)]),
            np.array([r["seconds"] for r in rs]), np.array([r["status"] == "timed out" for r in rs]),
            np.array([r["f1_adjacent"] if o else np.nan for r, o in zip(rs, ok)]),
            np.array([r["f1_arrowhead"] if o else np.nan for r, o in zip(rs, ok)]),
            np.array([r["shd"] if o else -1 for r, o in zip(rs, ok)])))
    return out


def label(example: Example, target: str) -> int:
    """The member to run: best BIC or best Q among successful runs; ties go to the fastest (and with
    no successful run, where every choice is as bad, the fastest to fail). A BIC recorded as NaN (records
    made before the BIC handled singular parent blocks) is unknown, not a winner."""
    if not example.ok.any():
        return int(np.argmin(example.seconds))
    known = example.ok & ~np.isnan(example.bic) if target == "bic" else example.ok
    value = np.where(known, example.bic if target == "bic" else example.quality, -np.inf)
    # With no BIC known every finished run ties at -inf, so the fastest of them is the label.
    best = np.flatnonzero(np.isclose(value, value.max(), rtol=0, atol=1e-9) & example.ok)
    return int(best[np.argmin(example.seconds[best])])


def scores(example: Example, target: str) -> np.ndarray:
    """What the model learns per member: `truth`, each member's Q (0 where it failed, as a run that
    gave nothing; NaN, unknown, where it timed out); `bic`, a one-hot row marking the BIC winner (BIC
    values do not compare across clusters)."""
    if target == "truth":
        return np.where(example.timed_out, np.nan, np.where(example.ok, example.quality, 0.0))
    row = np.zeros(len(example.quality))
    row[label(example, "bic")] = 1.0
    return row


def load_examples(paths: list[str], portfolio: str | tuple[str, list] | None = None,
                  exclude: tuple[str, ...] | list[str] = ()) -> tuple[str, list[dict[str, Any]], list[Example]]:
    """The portfolio's name, its members and the examples of the records files `paths`, restricted to
    `portfolio` (a conf/sle name or .yaml, a (name, members) pair, or None for every member the
    records ran) and without the families in `exclude`."""
    from hpc.learners.ensemble import load_sle
    from hpc.select.records import join_records, read_records

    recorded, rows = join_records([(p, read_records(p)) for p in paths])
    if isinstance(portfolio, tuple):
        name, members = portfolio
    else:
        name, members = load_sle(portfolio) if portfolio else ("portfolio", recorded)
    missing = [m for m in members if m not in recorded]
    if missing:
        raise PsleError(f"portfolio {name}: member {missing[0]} was not run in the records")
    index = [recorded.index(m) for m in members]
    examples = [e for e in examples_from_rows(rows, index) if e.family not in exclude]
    if not examples:
        raise PsleError(f"no cluster in {', '.join(paths)} has a record for every member of {name}")
    return name, members, examples
