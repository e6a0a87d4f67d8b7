"""Gather experiment result files into one table.

Each learn task writes `<results_dir>/<method>/<dataset>/seed<k>.json`; a sweep leaves hundreds
of them, possibly from several experiments. One row per file, so a CSV of them is what
spreadsheets, pandas and `psle report` all start from.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from hpc.errors import PsleError
from hpc.graphs.metrics import METRIC_INFO

#: A result row's fields (hpc.launch.tasks writes them, `collect` reads them): the task, then every declared
#: metric (hpc.graphs.metrics.METRIC_INFO, so none is dropped on the way), then a PEF run's account.
TASK_FIELDS = ("experiment", "method", "network", "nodes", "p", "edges", "seed", "status", "time_limit", "wall_limit")
PEF_FIELDS = ("clusters", "largest_cluster", "clusters_finished", "selection", "selector", "member_seconds")
COLUMNS = [*TASK_FIELDS, "column_order", *METRIC_INFO, *PEF_FIELDS]
REQUIRED = ("method", "network", "seed", "status")
RESULT_NAME = re.compile(r"seed\d+\.json")  # not seed<k>.graph.json or seed<k>.runs.json


def pef_fields(account: dict[str, Any]) -> dict[str, Any]:
    """A PEF run's columns from its account (the graph's `meta`): how far it got (clusters finished, for a
    timed-out run), which selector chose the members (its file's digest) and what the member runs cost, the
    price selection exists to cut."""
    clusters = account["clusters"]
    return {"clusters": len(clusters), "largest_cluster": max(c["size"] for c in clusters),
            "clusters_finished": sum(c["winner"] is not None for c in clusters), "selection": account["selection"],
            "selector": account["selector"]["sha256"][:12] if "selector" in account else None,
            "member_seconds": round(sum(r.get("seconds", 0.0) for c in clusters for r in c["runs"]), 3)}


def column_order(row: dict[str, Any], library: frozenset[str]) -> str | None:
    """The problem's column order as the row records it; a row of a `library` network from before the setting
    existed was written in the generator's order (replica by replica), and a random family's order was
    always random, so it is left unknown."""
    recorded = (row.get("dataset") or {}).get("order")
    if recorded is not None:
        return str(recorded)
    return "generator" if row["network"] in library else None


def result_files(root: str | Path) -> list[Path]:
    """Every task result under `root` (graphs, run accounts and Hydra's own files excluded)."""
    root = Path(root)
    if not root.is_dir():
        raise PsleError(f"{root}: no such results directory")
    return sorted(p for p in root.rglob("seed*.json")
                  if RESULT_NAME.fullmatch(p.name) and ".hydra" not in p.parts and ".submitit" not in p.parts)


def read_result(path: Path) -> dict:
    try:
        row = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise PsleError(f"{path}: not a readable result file ({exc})") from None
    missing = [k for k in REQUIRED if not isinstance(row, dict) or k not in row]
    if missing:
        raise PsleError(f"{path}: not a psle result (missing {', '.join(missing)})")
    return row


def collect(root: str | Path) -> pd.DataFrame:
    """All results under `root` as one DataFrame, sorted by experiment, network, size, method, seed."""
    files = result_files(root)
    if not files:
        raise PsleError(f"{root}: no result files (seed*.json) found")
    from hpc.data.networks import network_names

    library, rows = frozenset(network_names()), []
    for path in files:
        row = read_result(path)
        row["column_order"] = column_order(row, library)
        # A dataset run off its family's config (folder er-1000-n300: 300 samples) is another problem:
        # its network is named with those settings, so tables keep it apart from er-1000.
        base, folder = f"{row['network']}-{row.get('nodes')}", path.parent.name
        if folder.startswith(base + "-"):
            row["network"] = row["network"] + folder[len(base):]
        row["file"] = str(path.relative_to(root))
        rows.append(row)
    frame = pd.DataFrame(rows)
    for col in COLUMNS:
        if col not in frame:
            frame[col] = pd.NA
    frame = frame[COLUMNS + ["file"]]
    return frame.sort_values(["experiment", "network", "p", "method", "seed"], kind="stable").reset_index(drop=True)
