"""Member selection against running every member: accuracy, wall seconds and member CPU seconds.

Reads experiment results (`seed<k>.json` and the `seed<k>.graph.json` beside it, whose meta holds
every member run's seconds) and prints one Markdown row per (dataset, method): means over seeds.

    python scripts/bench_selection.py RESULTS_DIR... [--baseline p-sle] [--versus METHOD]

`member s` is the sum of the member runs' seconds (what the ensemble paid for estimation);
`vs base` divides it by the baseline method's on the same dataset and seeds. `--versus` prints,
instead, each method minus METHOD seed by seed (mean and its standard error over the seeds both
finished): with a handful of seeds, a gap of 0.003 in F1 is only a gap if its error is smaller.
Several directories are read as one (e.g. seeds run on different days).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np


def member_seconds(graph_file: Path) -> float | None:
    if not graph_file.is_file():
        return None
    meta = json.loads(graph_file.read_text()).get("meta", {})
    clusters = meta.get("clusters")
    if clusters is None:
        return None
    return sum(r.get("seconds", 0.0) for c in clusters for r in c["runs"] if r.get("status") != "not run")


def collect(root: Path) -> dict[tuple[str, str], dict[int, dict]]:
    rows: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)
    for path in sorted(root.rglob("seed*.json")):
        if path.name.count(".") != 1:
            continue
        row = json.loads(path.read_text())
        if "member_seconds" not in row:  # rows written before they carried it: read the graph's meta
            row["member_seconds"] = member_seconds(path.with_suffix(".graph.json"))
        # Rows that name their selector's digest keep runs of different selectors apart.
        method = row["method"] + (f"@{row['selector'][:7]}" if row.get("selector") else "")
        rows[(path.parent.name, method)][row["seed"]] = row
    return rows


def paired(rows: dict[tuple[str, str], dict[int, dict]], versus: str) -> None:
    print(f"| dataset | method | seeds | F1-adj − {versus} | F1-arrow − {versus} | SHD − {versus} |")
    print("|---|---|---|---|---|---|")
    for (dataset, method), seeds in sorted(rows.items()):
        base = rows.get((dataset, versus), {})
        common = [s for s, r in seeds.items() if r["status"] == "ok" and base.get(s, {}).get("status") == "ok"]
        if method == versus or not common:
            continue
        cells = []
        for key, digits in (("f1_adjacent", 3), ("f1_arrowhead", 3), ("shd", 0)):
            diff = np.array([seeds[s][key] - base[s][key] for s in common], dtype=float)
            error = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
            cells.append(f"{diff.mean():+.{digits}f} ± {error:.{digits}f}")
        print(f"| {dataset} | {method} | {len(common)} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--baseline", default="p-sle", help="method whose member seconds the others are divided by")
    parser.add_argument("--versus", metavar="METHOD", help="print each method minus METHOD, seed by seed")
    args = parser.parse_args()
    rows: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)
    for root in args.results:
        for key, seeds in collect(root).items():
            rows[key].update(seeds)
    if args.versus:
        paired(rows, args.versus)
        return
    print("| dataset | method | seeds | F1-adj | F1-arrow | SHD | wall s | member s | vs base |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (dataset, method), seeds in sorted(rows.items()):
        ok = {s: r for s, r in seeds.items() if r["status"] == "ok"}
        if not ok:
            print(f"| {dataset} | {method} | {len(seeds)} | - | - | - | - | - | - |")
            continue
        mean = {k: float(np.mean([r[k] for r in ok.values()])) for k in ("f1_adjacent", "f1_arrowhead", "shd",
                                                                          "seconds")}
        base = rows.get((dataset, args.baseline), {})
        paid = [r["member_seconds"] for r in ok.values() if r["member_seconds"] is not None]
        pairs = [(r["member_seconds"], base[s]["member_seconds"]) for s, r in ok.items()
                 if s in base and r["member_seconds"] is not None and base[s].get("member_seconds")]
        ratio = f"{sum(a for a, _ in pairs) / sum(b for _, b in pairs):.2f}" if pairs else "-"
        timed_out = len(seeds) - len(ok)
        print(f"| {dataset} | {method} | {len(ok)}{f' (+{timed_out} -)' if timed_out else ''} | "
              f"{mean['f1_adjacent']:.3f} | {mean['f1_arrowhead']:.3f} | {mean['shd']:.0f} | {mean['seconds']:.0f} | "
              f"{np.mean(paid) if paid else float('nan'):.0f} | {ratio} |")


if __name__ == "__main__":
    main()
