"""The paper's result tables as data, so every report shows its numbers beside ours.

`parse` reads one results table of the paper's LaTeX source; `export` reads all of them into the
long table shipped as `paper_tables.csv` (the report cannot rely on the paper's source being
present). Problems are keyed by (network, number of variables) as the paper's "(|V|, |E|)" row
gives them, which is how our results name a problem too (`p`), so a paper cell is matched to ours
exactly, not by the requested size.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pandas as pd

SHIPPED = Path(__file__).with_name("paper_tables.csv")
#: The paper's tables of results: Table V (1,000 variables), Table VI (10,000), §4.4 (WS), and the scale tables.
LABELS = ("tab:results_1000", "tab:results_10000", "tab:no_block_results", "tab:big_alarm", "tab:big_asia")
METHODS = {"P/SLE": "p-sle", "P/SLE(D)": "p-sle-d", "P/SLE(R)": "p-sle-r", "P/SLE-b": "p-sle-b",
           "P/PC-Stable": "p-pc-stable", "P/fGES": "p-fges", "PC-Stable": "pc-stable", "fGES": "fges"}
METRICS = {r"$\text{F1}^{-}$": "f1_adjacent", r"$\text{F1}^{\rightarrow}$": "f1_arrowhead", "SHD": "shd",
           "T (s)": "seconds", "F1 Adjacent": "f1_adjacent", "F1 Arrowhead": "f1_arrowhead", "Runtime": "seconds",
           "Runtime (s)": "seconds"}


def _problem(cell: str) -> tuple[str, int | None]:
    """'Alarm' -> ('alarm', None); 'Alarm-2000' -> ('alarm', 2000)."""
    name, _, nodes = cell.strip().lower().partition("-")
    return name, int(nodes) if nodes.isdigit() else None


def _number(cell: str, percent: bool) -> tuple[float, float]:
    """(mean, std) of one cell; NaN for the paper's "-" and "/" (no solution within its budget)."""
    value = re.sub(r"\\(underline|textbf)|[{}%]", "", cell).strip()
    mean, _, std = value.partition("±")
    if mean in ("-", "/", ""):
        return float("nan"), float("nan")
    scale = 100.0 if percent else 1.0
    return float(mean) / scale, float(std) / scale if std else float("nan")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.sub(r"\\(midrule|bottomrule|toprule|cmidrule\{[^}]*\})", "", line).split("&")]


def parse(tex: str, label: str) -> pd.DataFrame:
    """Rows (table, network, nodes, p, method, metric, mean, std) of the table whose \\label is `label`.

    `nodes` is the size in the column title (Alarm-2000) where there is one, `p` the table's |V|.
    The size tables give F1 in percent; they are read as fractions.
    """
    body = tex[:tex.index(f"\\label{{{label}}}")]
    body = body[body.rindex("\\begin{tabular}"):]
    lines = [ln.strip() for ln in body.split("\\\\")]
    header = next(ln for ln in lines if "Problem" in ln and "&" in ln)
    problems = [_problem(c) for c in header.split("&")[1:] if c.strip()]  # "Problem" may span two columns
    sizes = next(ln for ln in lines if "|V|" in ln and "&" in ln)
    ps = [int(m.group(1)) for m in re.finditer(r"\(\s*(\d+)\s*,\s*\d+\s*\)", sizes)]
    if len(ps) != len(problems):
        raise ValueError(f"{label}: {len(problems)} problems but {len(ps)} sizes in the (|V|, |E|) row")
    rows, method = [], None
    for ln in lines:
        cells = _cells(ln)
        if len(cells) != len(problems) + 2:
            continue
        found = re.search(r"\\multirow\{\d+\}(?:\[\d+\])?\{\*\}\{([^}]*)\}", cells[0])
        method = METHODS.get(found.group(1).strip(), None) if found else method
        metric = METRICS.get(cells[1])
        if method is None or metric is None:
            continue
        percent = metric.startswith("f1") and cells[1].startswith("F1 ")
        for (network, nodes), p, cell in zip(problems, ps, cells[2:]):
            mean, std = _number(cell, percent)
            rows.append({"table": label, "network": network, "nodes": nodes, "p": p, "method": method,
                         "metric": metric, "mean": mean, "std": std})
    return pd.DataFrame(rows)


def export(tex: str) -> pd.DataFrame:
    """Every results table of the paper as one long table (what `paper_tables.csv` holds)."""
    return pd.concat([parse(tex, label) for label in LABELS], ignore_index=True)


@lru_cache(maxsize=1)
def shipped() -> pd.DataFrame:
    """The paper's tables as shipped with psle."""
    return pd.read_csv(SHIPPED, comment="#")


def paper_method(method: str) -> str | None:
    """The paper's method that one of ours is a variant of (p-sle-truth -> p-sle, p-pc-stable-numpy ->
    p-pc-stable); None where the paper has no such method."""
    bases = sorted(set(METHODS.values()), key=len, reverse=True)
    return next((b for b in bases if method == b or method.startswith(b + "-")), None)
