"""Seconds and peak memory of PEF's partition and fusion steps at 10,000–30,000 variables.

The two steps around the learners are where PEF's cost grows with p² (issue 4, item 5). To
measure them alone, each cluster's estimate is the true DAG restricted to the cluster (an
oracle), so fusion sees realistic parent sets and its added edges can be scored against the
true cross-cluster edges. Fusion's screening runs on a dask LocalCluster, as in `psle learn`.
Peak memory is the summed RSS of this process and its dask workers, sampled every 0.2 s.

Usage:
  python scripts/bench_scale.py --network alarm --nodes 10000 20000 30000 [--workers 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hpc.data.generate import benchmark_problem
from hpc.graphs.pdag import PDAG
from hpc.executors import DaskExecutor
from hpc.pef.fusion import FusionConfig, fuse
from hpc.pef.partition import PartitionConfig, partition, standardize
from hpc.pef.pipeline import screener
from hpc.resources import PeakMemory


def cross_edges(edges: np.ndarray, label: np.ndarray) -> set[tuple[int, int]]:
    """Adjacencies (as sorted pairs) whose ends lie in different clusters."""
    return {(min(a, b), max(a, b)) for a, b in edges.tolist() if label[a] != label[b]}


def measure(network: str, nodes: int, seed: int, executor: DaskExecutor) -> dict:
    start = time.perf_counter()
    problem = benchmark_problem(nodes, seed, 1000, network=network)
    row: dict = {"problem": f"{network}-{nodes}", "p": len(problem.variables),
                 "generate_s": time.perf_counter() - start}

    start = time.perf_counter()
    with PeakMemory() as mem:
        clusters = partition(problem.data, PartitionConfig())
    row.update(partition_s=time.perf_counter() - start, partition_mb=mem.peak / 2**20,
               clusters=len(clusters), sizes=f"{min(map(len, clusters))}–{max(map(len, clusters))}")

    label = np.empty(row["p"], dtype=np.int64)
    for c, idx in enumerate(clusters):
        label[idx] = c
    true = problem.truth.directed
    inside = true[label[true[:, 0]] == label[true[:, 1]]]
    union = PDAG(problem.variables, inside)

    start = time.perf_counter()
    with PeakMemory() as mem:
        z = standardize(problem.data, np.float64)
        dag, stats = fuse(z, problem.n, union, clusters, FusionConfig(), screen=screener(executor))
    added = cross_edges(dag.directed, label)
    wanted = cross_edges(true, label)
    hit = len(added & wanted)
    row.update(fusion_s=time.perf_counter() - start, fusion_mb=mem.peak / 2**20,
               pairs_screened=stats.pairs_screened, true_cross=len(wanted), added=len(added),
               precision=hit / len(added) if added else float("nan"),
               recall=hit / len(wanted) if wanted else float("nan"))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="alarm")
    ap.add_argument("--nodes", type=int, nargs="+", default=[10000, 20000, 30000])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None, help="dask workers (default: one per core)")
    args = ap.parse_args()
    cols = ["problem", "p", "generate_s", "partition_s", "partition_mb", "clusters", "sizes", "fusion_s",
            "fusion_mb", "pairs_screened", "true_cross", "added", "precision", "recall"]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols), flush=True)
    with DaskExecutor(n_workers=args.workers) as executor:
        for nodes in args.nodes:
            row = measure(args.network, nodes, args.seed, executor)
            cells = [f"{row[c]:.3f}" if c in ("precision", "recall") else
                     f"{row[c]:.1f}" if isinstance(row[c], float) else
                     f"{row[c]:,}" if isinstance(row[c], int) else str(row[c]) for c in cols]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
