"""`psle report`: experiment results as the paper's tables (Markdown, CSV) and curves (PNG)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hpc.atomic import write_text_atomic
from hpc.errors import PsleError
from hpc.report.render import all_tables, column_orders, long_table, markdown_table, shortfalls
from hpc.results import collect


def build_report(results_dir: str | Path, out_dir: str | Path, notes: str | Path | None = None) -> list[Path]:
    """Write REPORT.md, results.csv and per-experiment tables and plots into `out_dir`; return the files.

    `notes` (Markdown) is appended to REPORT.md: the place for the reasons behind the numbers.
    """
    from hpc.report.plots import curves

    frame = collect(results_dir)  # before creating anything: no results, no report directory
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.csv"]
    write_text_atomic(written[0], frame.to_csv(index=False))
    lines = [f"# Results report\n\nFrom {len(frame)} runs under `{results_dir}` "
             f"(`psle report {results_dir} -o {out_dir}` regenerates it). Cells are mean±std over seeds; "
             "<ins>underlined</ins> is the best, **bold** is not significantly worse than the best "
             "(one-sided Wilcoxon signed-rank over paired seeds, p = 0.05; with fewer than 5 seeds no difference "
             "can reach significance, so everything complete is bold); \"-\" means some seed hit the time limit.\n"]
    for experiment, part in frame.groupby("experiment", sort=True):
        lines.append(f"## {experiment}\n")
        tables = all_tables(part)  # Wilcoxon tests once per experiment, shared by the three views
        lines.append(markdown_table(part, tables))
        orders = column_orders(part)
        if orders:
            lines.append(orders + "\n")
        csv = out / f"{experiment}.csv"
        write_text_atomic(csv, long_table(tables).to_csv(index=False))
        written.append(csv)
        gaps = shortfalls(part, tables)
        if gaps:
            lines.append("Where P/SLE is not the best:\n\n" + "\n".join(f"- {g}" for g in gaps) + "\n")
        for network in sorted(part["network"].unique()):
            png = curves(part, network, out / f"{experiment}-{network}.png")
            if png is not None:
                lines.append(f"![{experiment} {network}]({png.name})\n")
                written.append(png)
    if notes is not None:
        try:
            lines.append(Path(notes).read_text())
        except OSError as exc:
            raise PsleError(f"{notes}: cannot read notes ({exc.strerror})") from None
    report = out / "REPORT.md"
    write_text_atomic(report, "\n".join(lines))
    return [report, *written]


def aggregate(results_dir: str | Path, output: str | Path) -> pd.DataFrame:
    """All result files under `results_dir` as one CSV."""
    frame = collect(results_dir)
    write_text_atomic(output, frame.to_csv(index=False))
    return frame
