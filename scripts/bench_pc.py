"""PC-Stable, Tetrad vs numpy engine, on the clusters PEF makes at Alarm-10000 (seed 0, n = 1000).

Partitions Alarm-10000 as P/PC-Stable does, then runs both engines on chosen clusters (by rank
of size) in fresh worker processes under a time limit, and reports seconds, whether the skeletons
are equal and F1-arrowhead against the CPDAG of the true DAG induced on the cluster.

Usage: python scripts/bench_pc.py [--nodes 10000] [--ranks 0 9] [--limit 1800]
"""

from __future__ import annotations

import argparse

import numpy as np

from hpc.data.generate import benchmark_problem
from hpc.graphs.metrics import evaluate
from hpc.learners import PCStable
from hpc.learners.worker import TetradWorker
from hpc.pef.partition import partition


def skeleton(graph) -> set[tuple[int, int]]:
    return {tuple(sorted(e)) for e in np.vstack([graph.directed, graph.undirected]).tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--ranks", type=int, nargs="+", default=[0, 9], help="clusters by size rank (0 = smallest)")
    ap.add_argument("--limit", type=float, default=1800)
    args = ap.parse_args()

    problem = benchmark_problem(args.nodes, 0, 1000, network="alarm")
    clusters = sorted(partition(problem.data), key=len)
    print(f"alarm-{args.nodes}: cluster sizes {[len(c) for c in clusters]}")
    print("| variables | engine | seconds | edges | F1-arrowhead | skeleton = Tetrad's |")
    print("|---|---|---|---|---|---|")
    for rank in args.ranks:
        idx = clusters[rank]
        names = tuple(problem.variables[i] for i in idx)
        truth = problem.truth.subgraph(idx)  # the true DAG induced on the cluster
        graphs = {}
        for engine in ("tetrad", "numpy"):
            worker = TetradWorker()
            m = PCStable(engine=engine, time_limit=args.limit, worker=worker).fit(problem.data[:, idx], names)
            worker.kill()
            if m.status_ != "ok":
                print(f"| {len(idx)} | {engine} | > {args.limit:.0f} | | | |", flush=True)
                continue
            graphs[engine] = m.graph_
            f1 = f"{evaluate(m.graph_, truth).f1_arrowhead:.3f}"
            same = "" if engine == "tetrad" or "tetrad" not in graphs else str(skeleton(m.graph_) == skeleton(graphs["tetrad"]))
            print(f"| {len(idx)} | {engine} | {m.seconds_:.1f} | {len(skeleton(m.graph_))} | {f1} | {same} |", flush=True)


if __name__ == "__main__":
    main()
