"""Our results beside the paper's: parse a results table of the .tex and print a Markdown comparison.

    python scripts/paper_table.py ../shared/paper/auto-sle-paper.tex --label tab:results_1000 \
        --results results/paper_table_1000 [--csv paper.csv]

Each cell shows ours (mean over our seeds) / the paper's mean; methods and metrics as in the paper.
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
           "T (s)": "seconds"}


def parse(tex: str, label: str) -> pd.DataFrame:
    """Rows (network, method, metric, mean, std) of the table whose \\label is `label`."""
    body = tex[:tex.index(f"\\label{{{label}}}")]
    body = body[body.rindex("\\begin{tabular}"):]
    lines = [ln.strip() for ln in body.split("\\\\")]
    header = next(ln for ln in lines if "Problem" in ln and "Alarm" in ln)
    networks = [c.strip().lower() for c in header.split("&")[2:]]
    rows, method = [], None
    for ln in lines:
        cells = [c.strip() for c in re.sub(r"\\(midrule|bottomrule|toprule)", "", ln).split("&")]
        if len(cells) != len(networks) + 2:
            continue
        found = re.search(r"\\multirow\{\d+\}\{\*\}\{([^}]*)\}", cells[0])
        method = METHODS.get(found.group(1).strip(), None) if found else method
        metric = METRICS.get(cells[1])
        if method is None or metric is None:
            continue
        for network, cell in zip(networks, cells[2:]):
            value = re.sub(r"\\(underline|textbf)|[{}]", "", cell).strip()
            mean, _, std = value.partition("±")
            rows.append({"network": network, "method": method, "metric": metric,
                         "mean": float(mean) if mean not in ("-", "") else float("nan"),
                         "std": float(std) if std else float("nan")})
    return pd.DataFrame(rows)


def compare(paper: pd.DataFrame, ours: pd.DataFrame) -> str:
    """Markdown: one row per method × metric, one column per network, cells 'ours / paper'."""
    networks = list(dict.fromkeys(paper["network"]))
    ok = ours[ours.status == "ok"]
    lines = ["| method | metric | " + " | ".join(n.capitalize() for n in networks) + " |",
             "|---|---|" + "---|" * len(networks)]
    for method in dict.fromkeys(paper["method"]):
        for metric in ("f1_adjacent", "f1_arrowhead", "shd"):
            row = [method if metric == "f1_adjacent" else "", metric]
            for n in networks:
                ref = paper[(paper.network == n) & (paper.method == method) & (paper.metric == metric)]["mean"]
                mine = ok[(ok.network == n) & (ok.method == method)][metric]
                fmt = ".2f" if metric.startswith("f1") else ".0f"
                a = f"{mine.mean():{fmt}}" if len(mine) else "·"
                b = f"{ref.iloc[0]:{fmt}}" if len(ref) and ref.notna().iloc[0] else "-"
                row.append(f"{a} / {b}")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tex", type=Path)
    ap.add_argument("--label", default="tab:results_1000")
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--csv", type=Path, default=None, help="also write the parsed paper table here")
    args = ap.parse_args()
    paper = parse(args.tex.read_text(), args.label)
    if args.csv:
        paper.to_csv(args.csv, index=False)
    print(compare(paper, collect(args.results)))


if __name__ == "__main__":
    main()
