"""Our results beside the paper's: parse a results table of the .tex and print a Markdown comparison.

    python scripts/paper_table.py ../shared/paper/auto-sle-paper.tex --label tab:results_1000 \
        --results results/paper_table_1000 [--csv paper.csv]
    python scripts/paper_table.py ../shared/paper/auto-sle-paper.tex --label tab:big_alarm \
        --results results/generalization --method P/PC-Stable=p-pc-stable-numpy
    python scripts/paper_table.py ../shared/paper/auto-sle-paper.tex --export   # hpc/report/paper_tables.csv

Each cell shows ours (mean over our seeds) / the paper's mean; methods and metrics as in the paper
("·": we have no run; "-": a run hit the time limit, or the paper has no number). The parsing lives in
hpc.report.paper; `--export` refreshes the copy of all the paper's tables that `psle report` shows.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from hpc.report.paper import METHODS, SHIPPED, export, parse
from hpc.results import collect

EXPORT_HEADER = ("# The paper's results tables (Tables V and VI, the WS table of its section 4.4, the Alarm and Asia\n"
                 "# scale tables) as data, for psle report. Written by: python scripts/paper_table.py TEX --export\n")


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
    ap.add_argument("--results", type=Path)
    ap.add_argument("--export", action="store_true",
                    help=f"write every results table of the paper to {SHIPPED.name} (shipped for psle report)")
    ap.add_argument("--method", action="append", default=[], metavar="PAPER=OURS",
                    help="compare the paper's PAPER row with our method OURS (e.g. P/PC-Stable=p-pc-stable-numpy)")
    ap.add_argument("--csv", type=Path, default=None, help="also write the parsed paper table here")
    args = ap.parse_args()
    if args.export:
        SHIPPED.write_text(EXPORT_HEADER + export(args.tex.read_text()).to_csv(index=False))
        print(f"wrote {SHIPPED}")
        return
    if args.results is None:
        ap.error("--results is required (unless --export)")
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
