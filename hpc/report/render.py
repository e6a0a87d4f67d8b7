"""Tables in the paper's layout as Markdown (for people) and long CSV (for programs)."""

from __future__ import annotations

import math

import pandas as pd

from hpc.graphs.metrics import METRIC_INFO
from hpc.report.summary import LABELS, METRICS, OURS, Cell, datasets, improvement, methods, table

def display_name(method: str) -> str:
    """A method's name in tables: P/SLE for the ensembles, P/<label> and <label> for registered learners
    (an engine variant such as p-pc-stable-tetrad says its engine), else the config name itself."""
    from hpc.learners.members import MEMBERS

    special = {"p-sle": "P/SLE", "p-sle-d": "P/SLE(D)", "p-sle-r": "P/SLE(R)",
               "p-sle-truth": "P/SLE (truth selector)", "p-sle-bic": "P/SLE (bic selector)"}
    if method in special:
        return special[method]
    pef, base = (True, method[2:]) if method.startswith("p-") else (False, method)
    base, _, variant = next(((m, "-", base[len(m) + 1:]) for m in MEMBERS if base.startswith(m + "-")), (base, "", ""))
    if base not in MEMBERS:
        return method
    engine = {"numpy": " (numpy)", "tetrad": " (Tetrad)"}.get(variant, f" ({variant})" if variant else "")
    return ("P/" if pef else "") + MEMBERS[base].label + engine


def _number(value: float, metric: str) -> str:
    return f"{value:.{METRIC_INFO[metric].digits if metric in METRIC_INFO else 1}f}"


def format_cell(c: Cell | None, metric: str, limit: float | None = None) -> str:
    if c is None:
        return ""
    if metric == "seconds" and not c.complete:
        return f"> {limit:g}" if limit else "-"
    if not c.complete:
        return "-"
    text = _number(c.mean, metric) + (f"±{_number(c.std, metric)}" if c.n > 1 else "")
    if c.bold:
        text = f"**{text}**"
    if c.best:
        text = f"<ins>{text}</ins>"
    return text


Tables = dict[str, dict[tuple[str, int, str], Cell]]


def all_tables(frame: pd.DataFrame) -> Tables:
    """Every shown metric's cells for one experiment (peak memory only when it was recorded)."""
    shown = (*METRICS, "seconds") + (("peak_mb",) if frame["peak_mb"].notna().any() else ())
    return {metric: table(frame, metric) for metric in shown}


def markdown_table(frame: pd.DataFrame, cells: Tables) -> str:
    """One experiment: networks across, method × metric down, then the improvement-ratio rows."""
    cols = datasets(frame)
    edges = frame.groupby(["network", "nodes"])[["p", "edges"]].first()
    head = ["Problem", ""] + [n.capitalize() + (f"-{v}" if len({x for _, x in cols}) > 1 else "") for n, v in cols]
    sizes = ["(\\|V\\|, \\|E\\|)", ""] + [f"({int(edges.loc[(n, v), 'p'])}, {int(edges.loc[(n, v), 'edges'])})"
                                          if not pd.isna(edges.loc[(n, v), "edges"]) else "" for n, v in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), "| " + " | ".join(sizes) + " |"]
    limit = frame["time_limit"].dropna().max() if frame["time_limit"].notna().any() else None
    for m in methods(frame):
        for metric in cells:
            row = [display_name(m) if metric == METRICS[0] else "", LABELS[metric]]
            row += [format_cell(cells[metric].get((n, v, m)), metric, limit) for n, v in cols]
            lines.append("| " + " | ".join(row) + " |")
    lines += paper_rows(frame, [int(edges.loc[c, "p"]) for c in cols], cols)
    if OURS in set(frame["method"]) and frame["method"].nunique() > 1:
        for metric in METRICS:
            row = ["Impro. ratio" if metric == METRICS[0] else "", LABELS[metric]]
            for n, v in cols:
                r = improvement(cells[metric], n, v, metric)
                row.append("" if r is None else f"{100 * r:.1f}%")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def paper_rows(frame: pd.DataFrame, ps: list[int], cols: list[tuple[str, int]]) -> list[str]:
    """Markdown rows of the paper's numbers for the methods this experiment has a variant of (and the
    paper's P/SLE-b beside P/SLE), matched to our columns by network and number of variables; the
    paper's "-" (no solution within its 24 h) shows as "-", its seconds as "> 86400". They take no
    part in best and bold. A problem in two of the paper's tables (Alarm-1000 in Table V and the
    Alarm scale table) is taken from the scale table where this experiment spans several sizes, as
    its curves are."""
    from hpc.report.paper import METHODS, paper_method, shipped

    paper = shipped()
    scale = len({v for _, v in cols}) > 1
    paper = paper.sort_values("table", key=lambda t: t.str.startswith("tab:big_") != scale, kind="stable")
    paper = paper.drop_duplicates(["network", "p", "method", "metric"])
    ours = {paper_method(m) for m in frame["method"].unique()}
    ours |= {"p-sle-b"} if "p-sle" in ours else set()
    names = {v: k for k, v in METHODS.items()}
    wanted = {(n, p) for (n, _), p in zip(cols, ps)}
    lines = []
    for method in dict.fromkeys(METHODS.values()):
        values = {(r.network, r.p, r.metric): (r.mean, r.std) for r in paper[paper.method == method].itertuples()
                  if (r.network, r.p) in wanted}
        if method not in ours or not values:
            continue
        for metric in ("f1_adjacent", "f1_arrowhead", "shd", "seconds"):
            row = [f"paper: {names[method]}" if metric == "f1_adjacent" else "", LABELS[metric]]
            for (n, _), p in zip(cols, ps):
                if (n, p, metric) not in values:
                    row.append("")
                    continue
                mean, std = values[(n, p, metric)]
                if metric == "seconds" and pd.isna(values.get((n, p, "shd"), (math.nan,))[0]):
                    row.append(f"> {mean:g}")  # no solution: the seconds are the paper's budget
                elif pd.isna(mean):
                    row.append("-")
                else:
                    row.append(_number(mean, metric) + ("" if pd.isna(std) else f"±{_number(std, metric)}"))
            lines.append("| " + " | ".join(row) + " |")
    return lines


def long_table(cells: Tables) -> pd.DataFrame:
    """One row per (network, nodes, method, metric) with mean, std, seeds and the best/bold marks."""
    rows = []
    for metric, by_cell in cells.items():
        for (n, v, m), c in by_cell.items():
            rows.append({"network": n, "nodes": v, "method": m, "metric": metric,
                         "mean": c.mean if c.complete or metric == "seconds" else math.nan, "std": c.std,
                         "seeds": c.n, "complete": c.complete, "best": c.best, "not_significantly_worse": c.bold})
    return pd.DataFrame(rows)


#: How the report names each column order.
ORDER_TEXT = {"shuffled": "shuffled columns",
              "generator": "the generator's column order (replica by replica, as in the paper's files, where most "
                           "true edges point forward)"}


def column_orders(frame: pd.DataFrame) -> str | None:
    """One sentence saying which methods' runs saw which column order, so a table that mixes runs made
    before and after columns were shuffled by default says so; None when no row records an order."""
    known = frame.dropna(subset=["column_order"])
    if known.empty:
        return None
    parts = []
    for order, part in known.groupby("column_order", sort=True):
        runs = part.groupby("method").size()
        named = ", ".join(f"{display_name(m)} ({n} run{'s' * (n > 1)})" for m, n in runs.items())
        parts.append(f"{ORDER_TEXT.get(str(order), str(order))}: {named}")
    return "Columns: " + "; ".join(parts) + "."


def shortfalls(frame: pd.DataFrame, tables: Tables, ours: str = OURS) -> list[str]:
    """Sentences for every dataset and metric where ours is not the best: by how much, behind whom."""
    notes = []
    if ours not in set(frame["method"]):
        return notes
    for metric in METRICS:
        cells = tables[metric]
        for n, v in datasets(frame):
            mine = cells.get((n, v, ours))
            winner = next((m for (a, b, m), c in cells.items() if (a, b) == (n, v) and c.best), None)
            if mine is None or winner is None or winner == ours or mine.best:
                continue
            if not mine.complete:
                notes.append(f"{n}-{v}: {display_name(ours)} did not finish every seed; {display_name(winner)} is best "
                             f"on {LABELS[metric]}.")
                continue
            best = cells[(n, v, winner)]
            gap = abs(best.mean - mine.mean)
            verdict = "not significantly" if mine.bold else "significantly"
            seeds = f"{mine.n} seeds" if mine.n == best.n else f"{mine.n} and {best.n} seeds"
            notes.append(f"{n}-{v} {LABELS[metric]}: {display_name(ours)} {_number(mine.mean, metric)} trails "
                         f"{display_name(winner)} {_number(best.mean, metric)} by {_number(gap, metric)}, means over "
                         f"{seeds} ({verdict} worse: one-sided Wilcoxon over {mine.paired} paired seeds, "
                         f"p = {mine.p_value:.3f}).")
    return notes
