"""One table from benchmark rows: per network (columns) and method (rows), F1-adjacency / F1-arrowhead /
SHD and seconds, as means over the seeds each cell has.

Rows are the JSON lines `bench_pef.py --jsonl` appends; `--before DIR METHOD` adds a row from the
committed experiment results of an earlier measurement (`DIR/METHOD/NETWORK-NODES/seedS.json`) on the
same problems (those the method of that name was measured on), so a table says how far a figure moved; `--paper TABLE METHOD` the paper's own
means (hpc/report/paper_tables.csv; its seconds, on 96 cores, are left out).

Usage:
  python scripts/bench_table.py rows.jsonl [more.jsonl] [--before results/paper_table_1000 p-sle] \
      [--paper tab:results_1000 p-sle]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def read_rows(paths: list[Path]) -> list[dict]:
    return [json.loads(line) for path in paths for line in path.read_text().splitlines() if line.strip()]


def earlier(folder: Path, method: str, rows: list[dict]) -> list[dict]:
    """The committed results of `method` for the problems (network, nodes, seed) `method` was measured on in
    `rows` (all of theirs when it was not), as rows named after `folder`."""
    out = []
    mine = [r for r in rows if r["method"] == method] or rows
    for network, nodes, seed in sorted({(r["network"], r["nodes"], r["seed"]) for r in mine}):
        path = folder / method / f"{network}-{nodes}" / f"seed{seed}.json"
        if path.exists():
            out.append({**json.loads(path.read_text()), "method": f"{method} ({folder.name})"})
    return out


def paper(table_name: str, method: str, rows: list[dict]) -> list[dict]:
    """The paper's means of `method` in `table_name` for the networks of `rows`, as one row per network."""
    from hpc.report.paper import shipped

    tab = shipped()
    tab = tab[(tab["table"] == table_name) & (tab["method"] == method) & tab["network"].isin({r["network"] for r in rows})]
    found = {n: dict(zip(g["metric"], g["mean"].astype(float))) for n, g in tab.groupby("network", sort=False)}
    return [{"network": n, "method": f"{method} (the paper)", "seed": None, "status": "ok", **m, "seconds": None}
            for n, m in found.items() if {"f1_adjacent", "f1_arrowhead", "shd"} <= set(m)]


def cell(rows: list[dict]) -> str:
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        return "-" if rows else "·"
    mean = {k: statistics.mean(r[k] for r in ok) for k in ("f1_adjacent", "f1_arrowhead", "shd")}
    short = f" ({len(ok)} of {len(rows)})" if len(ok) < len(rows) else ""
    seconds = f" ({statistics.mean(r['seconds'] for r in ok):,.0f} s)" if ok[0]["seconds"] is not None else ""
    return f"{mean['f1_adjacent']:.3f} / {mean['f1_arrowhead']:.3f} / {mean['shd']:,.0f}{seconds}{short}"


def table(rows: list[dict]) -> str:
    networks = list(dict.fromkeys(r["network"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    lines = ["| method | " + " | ".join(networks) + " |", "|---" * (len(networks) + 1) + "|"]
    for m in methods:
        cells = [cell([r for r in rows if r["method"] == m and r["network"] == n]) for n in networks]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    seeds = sorted({r["seed"] for r in rows if r["seed"] is not None})
    return "\n".join(lines) + f"\n\n(F1-adjacency / F1-arrowhead / SHD (seconds), means over seeds {seeds})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+", type=Path, help="JSON-lines files from bench_pef.py --jsonl")
    ap.add_argument("--before", nargs=2, action="append", default=[], metavar=("DIR", "METHOD"),
                    help="add the committed results of METHOD under DIR on the same problems")
    ap.add_argument("--paper", nargs=2, action="append", default=[], metavar=("TABLE", "METHOD"),
                    help="add the paper's means of METHOD in TABLE (e.g. tab:results_1000 p-sle)")
    args = ap.parse_args()
    rows = read_rows(args.rows)
    measured = list(rows)
    for folder, method in args.before:
        rows += earlier(Path(folder), method, measured)
    for table_name, method in args.paper:
        rows += paper(table_name, method, measured)
    print(table(rows))


if __name__ == "__main__":
    main()
