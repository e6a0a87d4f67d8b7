"""Seconds and peak memory of PEF's partition and fusion steps at 10,000–30,000 variables.

The two steps around the learners are where PEF's cost grows with p². To
measure them alone, each cluster's estimate is the true DAG restricted to the cluster (an
oracle), so fusion sees realistic parent sets and its added edges can be scored against the
true cross-cluster edges. Fusion's screening runs on a dask LocalCluster, as in `psle learn`.
Peak memory is the summed RSS of this process and its dask workers, sampled every 0.2 s.

With --prescreen-alpha, fusion runs once per level given ("none": F1 tests every cross pair),
on the same partition and oracle estimates, so the rows show what the marginal prescreen costs
in cross edges and saves in seconds.

Usage:
  python scripts/bench_scale.py --network alarm --nodes 10000 20000 30000 [--workers 2]
                                [--prescreen-alpha none 0.01] [--max-size 500]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hpc.data.generate import benchmark_problem
from hpc.graphs.pdag import PDAG
from hpc.executors import DaskExecutor
from hpc.pef.fusion import FusionConfig, fuse
from hpc.pef.partition import PartitionConfig, cluster_labels, partition, standardize
from hpc.pef.pipeline import screener
from hpc.resources import PeakMemory


def cross_edges(edges: np.ndarray, label: np.ndarray) -> set[tuple[int, int]]:
    """Adjacencies (as sorted pairs) whose ends lie in different clusters."""
    return {(min(a, b), max(a, b)) for a, b in edges.tolist() if label[a] != label[b]}


def measure(network: str, nodes: int, seed: int, executor: DaskExecutor, prescreens: list[float | None],
            max_size: int) -> list[dict]:
    """One row per prescreen level: partition once, then fusion of the oracle cluster DAGs."""
    start = time.perf_counter()
    problem = benchmark_problem(nodes, seed, 1000, network=network)
    row: dict = {"problem": f"{network}-{nodes}", "p": len(problem.variables),
                 "generate_s": time.perf_counter() - start}

    start = time.perf_counter()
    with PeakMemory() as mem:
        clusters = partition(problem.data, PartitionConfig(max_size=max_size))
    row.update(partition_s=time.perf_counter() - start, partition_mb=mem.peak / 2**20,
               clusters=len(clusters), sizes=f"{min(map(len, clusters))}–{max(map(len, clusters))}")

    label = cluster_labels(clusters, row["p"])
    true = problem.truth.directed
    inside = true[label[true[:, 0]] == label[true[:, 1]]]
    union = PDAG(problem.variables, inside)

    wanted = cross_edges(true, label)
    rows = []
    for level in prescreens:
        start = time.perf_counter()
        with PeakMemory() as mem:
            z = standardize(problem.data, np.float64)
            dag, stats = fuse(z, problem.n, union, clusters, FusionConfig(prescreen_alpha=level),
                              screen=screener(executor))
        added = cross_edges(dag.directed, label)
        hit = len(added & wanted)
        rows.append({**row, "prescreen": "none" if level is None else f"{level:g}",
                     "fusion_s": time.perf_counter() - start, "f1_s": stats.seconds["f1"],
                     "fusion_mb": mem.peak / 2**20, "pairs_screened": stats.pairs_screened,
                     "pairs_tested": stats.pairs_tested, "true_cross": len(wanted), "added": len(added),
                     "precision": hit / len(added) if added else float("nan"),
                     "recall": hit / len(wanted) if wanted else float("nan")})
    return rows


def level(text: str) -> float | None:
    return None if text == "none" else float(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="alarm")
    ap.add_argument("--nodes", type=int, nargs="+", default=[10000, 20000, 30000])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None, help="dask workers (default: one per core)")
    ap.add_argument("--prescreen-alpha", type=level, nargs="+", default=[None],
                    help="fusion's marginal prescreen levels to compare ('none': no prescreen)")
    ap.add_argument("--max-size", type=int, default=0, help="partition size cap (0: the paper's rule)")
    args = ap.parse_args()
    cols = ["problem", "p", "generate_s", "partition_s", "partition_mb", "clusters", "sizes", "prescreen",
            "fusion_s", "f1_s", "fusion_mb", "pairs_screened", "pairs_tested", "true_cross", "added", "precision",
            "recall"]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols), flush=True)
    with DaskExecutor(n_workers=args.workers) as executor:
        for nodes in args.nodes:
            for row in measure(args.network, nodes, args.seed, executor, args.prescreen_alpha, args.max_size):
                cells = [f"{row[c]:.3f}" if c in ("precision", "recall") else
                         f"{row[c]:.1f}" if isinstance(row[c], float) else
                         f"{row[c]:,}" if isinstance(row[c], int) else str(row[c]) for c in cols]
                print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
