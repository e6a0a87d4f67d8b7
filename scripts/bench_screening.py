"""What screening only each variable's strongest neighbours costs fusion: cross-edge recall against F1 over every cross pair.

On a generated problem (shuffled columns) and `psle learn`'s partition, fusion starts from the true DAG's
edges inside clusters (so the cluster searches' errors play no part) and adds cross-cluster edges; for
F1 over every cross-cluster pair and over the cross pairs among each variable's k strongest |r|, the table
gives the true cross edges found (adjacency recall), the precision of the added edges, pairs screened,
seconds and peak memory of this process tree.

Usage: python scripts/bench_screening.py --network alarm --nodes 10000 --seeds 100 --candidates 20 50 [--no-all]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlib import problem as make_problem
from hpc.graphs.pdag import PDAG
from hpc.pef.fusion import FusionConfig, fuse
from hpc.pef.partition import PartitionConfig, cluster_labels, partition, standardize
from hpc.resources import PeakMemory


def run(prob, clusters: list[np.ndarray], config: FusionConfig) -> dict:
    label = cluster_labels(clusters, prob.p)
    true = prob.truth.directed
    inside = label[true[:, 0]] == label[true[:, 1]]
    union = PDAG(prob.variables, true[inside])
    z = standardize(prob.data, np.float64)
    start = time.perf_counter()
    with PeakMemory() as mem:
        dag, stats = fuse(z, prob.n, union, clusters, config)
    added = {frozenset(e) for e in dag.directed.tolist()} - {frozenset(e) for e in union.directed.tolist()}
    cross = {frozenset(e) for e in true[~inside].tolist()}
    return {"cross_edges": len(cross), "recall": len(added & cross) / max(len(cross), 1),
            "precision": len(added & cross) / max(len(added), 1), "pairs": stats.pairs_screened,
            "seconds": time.perf_counter() - start, "peak_mb": mem.peak / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="alarm", help="a bnlearn network, or a random graph model (er, sf, ...)")
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[100])
    ap.add_argument("--candidates", type=int, nargs="+", default=[20, 50])
    ap.add_argument("--no-all", action="store_true", help="skip F1 over every cross pair (above ~50,000 variables)")
    args = ap.parse_args()
    print("| problem | screening | true cross edges | recall | precision of added | pairs screened | seconds | "
          "peak MB |\n|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        prob = make_problem(args.network, args.nodes, seed)
        clusters = partition(prob.data, PartitionConfig())
        configs = ([] if args.no_all else [("every cross pair", FusionConfig(candidates_above=10**9))]) + [
            (f"{k} strongest", FusionConfig(candidates_above=0, candidates=k)) for k in args.candidates]
        for name, config in configs:
            r = run(prob, clusters, config)
            print(f"| {args.network}-{args.nodes} s{seed} | {name} | {r['cross_edges']} | {r['recall']:.3f} | "
                  f"{r['precision']:.3f} | {r['pairs']:,} | {r['seconds']:.0f} | {r['peak_mb']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
