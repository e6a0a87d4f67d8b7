"""Our results beside the paper's: parse a results table of the .tex and print a Markdown comparison.

    python scripts/paper_table.py ../shared/paper/auto-sle-paper.tex --label tab:results_1000 \
        --results results/paper_table_1000 [--csv paper.csv]
    python scripts/paper_table.py ../shared/paper/auto-sle-paper.tex --label tab:big_alarm \
        --results results/generalization --method P/PC-Stable=p-pc-stable-numpy

Each cell shows ours (mean over our seeds) / the paper's mean; methods and metrics as in the paper
("·": we have no run; "-": a run hit the time limit, or the paper has no number). The size tables (`tab:big_alarm`,
`tab:big_asia`) give F1 in percent; they are read as fractions.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

from hpc.results import collect

METHODS = {"P/SLE": "p-sle", "P/SLE(D)": "p-sle-d", "P/SLE(R)": "p-sle-r", "P/PC-Stable": "p-pc-stable",
           "P/fGES": "p-fges", "PC-Stable": "pc-stable", "fGES": "fges"}
METRICS = {r"$\text{F1}^{-}$": "f1_adjacent", r"$\text{F1}^{\rightarrow}$": "f1_arrowhead", "SHD": "shd",
           "T (s)": "seconds", "F1 Adjacent": "f1_adjacent", "F1 Arrowhead": "f1_arrowhead", "Runtime": "seconds",
           "Runtime (s)": "seconds"}


def _problem(cell: str) -> tuple[str, int | None]:
    """'Alarm' -> ('alarm', None); 'Alarm-2000' -> ('alarm', 2000)."""
    name, _, nodes = cell.strip().lower().partition("-")
    return name, int(nodes) if nodes.isdigit() else None


def _number(cell: str, percent: bool) -> tuple[float, float]:
    value = re.sub(r"\\(underline|textbf)|[{}%]", "", cell).strip()
    mean, _, std = value.partition("±")
    if mean in ("-", "/", ""):
        return float("nan"), float("nan")
    scale = 100.0 if percent else 1.0
    return float(mean) / scale, float(std) / scale if std else float("nan")


def parse(tex: str, label: str) -> pd.DataFrame:
    """Rows (network, nodes, method, metric, mean, std) of the table whose \\label is `label`."""
    body = tex[:tex.index(f"\\label{{{label}}}")]
    body = body[body.rindex("\\begin{tabular}"):]
    lines = [ln.strip() for ln in body.split("\\\\")]
    header = next(ln for ln in lines if "Problem" in ln and "&" in ln)
    problems = [_problem(c) for c in header.split("&")[1:] if c.strip()]  # "Problem" may span two columns
    rows, method = [], None
    for ln in lines:
        cells = [c.strip() for c in re.sub(r"\\(midrule|bottomrule|toprule|cmidrule\{[^}]*\})", "", ln).split("&")]
        if len(cells) != len(problems) + 2:
            continue
        found = re.search(r"\\multirow\{\d+\}(?:\[\d+\])?\{\*\}\{([^}]*)\}", cells[0])
        method = METHODS.get(found.group(1).strip(), None) if found else method
        metric = METRICS.get(cells[1])
        if method is None or metric is None:
            continue
        percent = metric.startswith("f1") and cells[1].startswith("F1 ")
        for (network, nodes), cell in zip(problems, cells[2:]):
            mean, std = _number(cell, percent)
            rows.append({"network": network, "nodes": nodes, "method": method, "metric": metric,
                         "mean": mean, "std": std})
    return pd.DataFrame(rows)


def compare(paper: pd.DataFrame, ours: pd.DataFrame) -> str:
    """Markdown: one row per method × metric, one column per problem, cells 'ours / paper'."""
    problems = [(n, k) for n, k in dict.fromkeys(zip(paper["network"], paper["nodes"]))
                if pd.isna(k) or (ours.nodes == k).any()]  # of the size tables, only the sizes we ran
    title = [n.capitalize() + ("" if pd.isna(k) else f"-{int(k)}") for n, k in problems]
    lines = ["| method | metric | " + " | ".join(title) + " |", "|---|---|" + "---|" * len(problems)]
    for method in [m for m in dict.fromkeys(paper["method"]) if (ours.method == m).any()]:
        for metric in ("f1_adjacent", "f1_arrowhead", "shd", "seconds"):
            row = [method if metric == "f1_adjacent" else "", metric]
            for n, k in problems:
                here = paper[(paper.network == n) & (paper.method == method) & (paper.metric == metric)]
                ref = here["mean"] if pd.isna(k) else here[here.nodes == k]["mean"]
                runs = ours[(ours.network == n) & (ours.method == method) & (pd.isna(k) or (ours.nodes == k))]
                mine = runs[runs.status == "ok"][metric]
                fmt = ".2f" if metric.startswith("f1") else ".0f"
                a = "-" if (runs.status == "timed out").any() else f"{mine.mean():{fmt}}" if len(mine) else "·"
                b = f"{ref.iloc[0]:{fmt}}" if len(ref) and ref.notna().iloc[0] else "-"
                row.append(f"{a} / {b}")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tex", type=Path)
    ap.add_argument("--label", default="tab:results_1000")
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--method", action="append", default=[], metavar="PAPER=OURS",
                    help="compare the paper's PAPER row with our method OURS (e.g. P/PC-Stable=p-pc-stable-numpy)")
    ap.add_argument("--csv", type=Path, default=None, help="also write the parsed paper table here")
    args = ap.parse_args()
    paper = parse(args.tex.read_text(), args.label)
    for pair in args.method:
        name, _, ours = pair.partition("=")
        if name not in METHODS or not ours:
            raise SystemExit(f"--method {pair!r}: expected PAPER=OURS with PAPER one of {', '.join(METHODS)}")
        paper.loc[paper.method == METHODS[name], "method"] = ours
    if args.csv:
        paper.to_csv(args.csv, index=False)
    print(compare(paper, collect(args.results)))


if __name__ == "__main__":
    main()
