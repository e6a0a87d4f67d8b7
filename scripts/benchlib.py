"""What the bench scripts share: problems named `family-nodes` (a bnlearn network or a random graph model),
seed ranges, one timed, memory-measured run per (problem, method, seed) as a row, rows appended to a
JSON-lines file, and Markdown tables of means ± sd. A script declares its methods as functions
problem -> (graph, status, extra columns); `grid` runs problem × method × seed and returns the rows.

Scripts import it as `from benchlib import ...` (they run from any folder: each puts scripts/ on the path).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hpc.data.generate import GRAPH_MODELS, benchmark_problem
from hpc.graphs.metrics import evaluate
from hpc.learners.members import LearnerError
from hpc.resources import PeakMemory

#: One whole fGES as the strongest Tetrad baseline here: faithfulness, at most 91 parents, the learned ensemble's
#: winning penalty (λ 2.54).
FGES_FAITHFUL: dict[str, Any] = {"method": "fges", "penalty": 2.53767, "max_parents": 91, "faithfulness": True}

#: A method: the problem in, (graph or None, status, extra columns) out.
Method = Callable[[Any], tuple[Any, str, dict[str, Any]]]


def seeds_arg(text: str) -> list[int]:
    """`3` or `0-9` (inclusive)."""
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def problem(family: str, nodes: int, seed: int, samples: int = 1000) -> Any:
    """A generated problem (shuffled columns): `family` a random graph model or a bnlearn network."""
    kind = {"graph": family} if family in GRAPH_MODELS else {"network": family}
    return benchmark_problem(nodes, seed, samples, **kind)


def named_problem(name: str, seed: int) -> Any:
    """`family-nodes`, e.g. alarm-1000 or er-11."""
    family, _, nodes = name.rpartition("-")
    return problem(family, int(nodes), seed)


def measured(method: Method, prob: Any) -> dict[str, Any]:
    """One run as a row: status, seconds, peak memory of this process tree, and the metrics when it gave a graph."""
    start = time.perf_counter()
    with PeakMemory() as mem:
        try:
            graph, status, extra = method(prob)
        except LearnerError as error:  # refused before any work (FLOP with no fewer variables than rows): a row
            return {"status": "refused", "reason": str(error), "seconds": time.perf_counter() - start, "peak_mb": 0.0}
    spans, tasks = extra.pop("spans", {}), extra.pop("task_seconds", {})  # PEF's steps
    if spans:  # each step's seconds, its tasks' seconds on the workers, and the peak memory while it ran
        extra["steps"] = {step: {"seconds": round(sum(hi - lo for lo, hi in s), 2),
                                 "task_seconds": round(tasks.get(step, 0.0), 2),
                                 "peak_mb": round(mem.peak_within(s) / 2**20)} for step, s in spans.items()}
    row = {"status": status, "seconds": time.perf_counter() - start, "peak_mb": mem.peak / 2**20, **extra}
    if status == "ok" and graph is not None:
        row.update(evaluate(graph, prob.truth).as_dict())
    return row


def grid(families: Iterable[str], nodes: int, seeds: Iterable[int], methods: dict[str, Method],
         jsonl: Path | None = None) -> list[dict[str, Any]]:
    """Every method on every (family, seed) problem; each row printed as JSON (and appended to `jsonl`)."""
    rows = []
    for family in families:
        for seed in seeds:
            prob = problem(family, nodes, seed)
            for name, method in methods.items():
                row = {"network": family, "nodes": nodes, "p": prob.p, "seed": seed, "method": name,
                       **measured(method, prob)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if jsonl:
                    with open(jsonl, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
    return rows


def mean_sd(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):{fmt}} ± {sd:{fmt}}"


def summary(rows: list[dict[str, Any]], by: str = "method", limit: float | None = None) -> str:
    """A Markdown table: per value of `by`, F1s, SHD and seconds (mean ± sd over finished runs), peak MB, runs."""
    lines = [f"| {by} | F1-adj | F1-arrow | SHD | seconds | peak MB | runs |", "|---|---|---|---|---|---|---|"]
    for key in dict.fromkeys(r[by] for r in rows):
        rs = [r for r in rows if r[by] == key]
        ok = [r for r in rs if r["status"] == "ok"]
        refused = sum(r["status"] == "refused" for r in rs)
        secs = (mean_sd([r["seconds"] for r in ok], ".1f") if len(ok) == len(rs)
                else f"refused ({refused} of {len(rs)})" if refused
                else f"> {limit:g} ({len(rs) - len(ok)} stopped)" if limit else f"({len(rs) - len(ok)} failed)")
        lines.append(f"| {key} | {mean_sd([r['f1_adjacent'] for r in ok], '.3f')} | "
                     f"{mean_sd([r['f1_arrowhead'] for r in ok], '.3f')} | {mean_sd([r['shd'] for r in ok], '.1f')} | "
                     f"{secs} | {max(r['peak_mb'] for r in rs):.0f} | {len(rs)} |")
    return "\n".join(lines)


def records_args(description: str, other: str, other_help: str) -> argparse.Namespace:
    """The selector scripts' arguments: --base records, another set of records, the portfolio, the tolerance."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--base", nargs="+", required=True, help="records the selector is fit on")
    parser.add_argument(f"--{other}", nargs="+", required=True, help=other_help)
    parser.add_argument("--portfolio", default="portfolio")
    parser.add_argument("--tolerance", type=float, default=0.01)
    warnings.filterwarnings("ignore", message=".*sklearn.utils.parallel.delayed.*")
    return parser.parse_args()
