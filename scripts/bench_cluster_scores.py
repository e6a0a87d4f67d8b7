"""Where two PEF results on the same problem differ: each cluster's own accuracy, row by row.

A row's F1 mixes every cluster and the seams between them, so a selector that loses 0.01 overall does not
say where. This regenerates each row's problem, repeats PEF's partition (the default settings, which the
selection experiments use), and scores every row's graph inside each cluster against the true subgraph
(Q = F1-adjacency + F1-arrowhead, as the selection records do), with the member each row ran there.

    python scripts/bench_cluster_scores.py ROW.json [ROW.json ...] [--min-size 100]

Rows are experiment rows (`seed*.json` beside their `seed*.graph.json`); rows of one dataset and seed are
printed together, one line per row, one column per cluster (largest first).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from hpc.data.generate import GRAPH_MODELS, benchmark_problem
from hpc.graphs.io import read_json
from hpc.graphs.metrics import evaluate
from hpc.pef.partition import partition


def problem_of(row: dict):
    """The generated problem a row was scored on, from the settings the row records."""
    settings = dict(row.get("dataset") or {})
    if "weights" in settings:
        settings["weights"] = tuple(settings["weights"])
    kind = {"graph": row["network"]} if row["network"] in GRAPH_MODELS else {"network": row["network"]}
    return benchmark_problem(row["nodes"], row["seed"], **kind, **settings)


def cluster_q(graph, truth, idx: np.ndarray) -> float:
    """Q of `graph` inside the cluster `idx`, against the CPDAG of the true DAG's subgraph (as the records score)."""
    m = evaluate(graph.subgraph(idx), truth.subgraph(idx))
    return m.f1_adjacent + m.f1_arrowhead


def member_label(spec: dict) -> str:
    if spec["method"] == "pc-stable":
        return f"PC a{spec['alpha']:g}"
    return f"{spec['method']} l{spec['penalty']:.3g}"


def first_runs(meta: dict) -> dict[int, str]:
    """Cluster size -> the member a selecting row ran first there (clusters of equal size share a key)."""
    out = {}
    for c in meta.get("clusters", []):
        ran = c.get("selection", {}).get("ran")
        if ran:
            out[c["size"]] = member_label(c["runs"][ran[0]]["member"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+", type=Path)
    ap.add_argument("--min-size", type=int, default=100, help="score clusters of at least this many variables")
    args = ap.parse_args()
    groups: dict[tuple, list[tuple[Path, dict]]] = defaultdict(list)
    for path in args.rows:
        row = json.loads(path.read_text())
        groups[(row["network"], row["nodes"], json.dumps(row.get("dataset"), sort_keys=True), row["seed"])].append(
            (path, row))
    for (network, nodes, dataset, seed), members in groups.items():
        problem = problem_of(members[0][1])
        clusters = sorted((c for c in partition(np.asarray(problem.data)) if len(c) >= args.min_size), key=len,
                          reverse=True)
        print(f"{network}-{nodes} {dataset} seed {seed}: clusters of {[len(c) for c in clusters]}")
        for path, row in members:
            graph, meta = read_json(path.with_suffix(".graph.json"))
            graph = graph.reindexed(list(problem.variables))
            ran = first_runs(meta)
            cells = []
            for c in clusters:
                cells.append(f"{cluster_q(graph, problem.truth, c):.3f}" + (f" ({ran[len(c)]})" if len(c) in ran else ""))
            print(f"  {row['method']:18s} {row['f1_adjacent']:.3f} | " + "  ".join(cells) + f"   {path.parent}")


if __name__ == "__main__":
    main()
