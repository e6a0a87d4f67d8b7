"""What Tetrad's fGES gains from threads: one fGES run on a benchmark problem at 1, 2, ... threads.

PEF gives fGES the cores of idle worker slots (few clusters, a plain `fges`); this measures what
those cores buy, and checks that the graph does not depend on the thread count.

Usage:
  python scripts/bench_threads.py --network alarm --nodes 300 --threads 1 2 [--repeats 2]
"""

from __future__ import annotations

import argparse
import time

from hpc.data.generate import benchmark_problem
from hpc.learners import FGES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", default="alarm")
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    problem = benchmark_problem(args.nodes, args.seed, 1000, network=args.network)
    FGES(penalty=50).fit(problem.data[:, :20], problem.variables[:20])  # start the JVM worker outside the timings
    graphs, best = {}, {}
    for _ in range(args.repeats):
        for t in args.threads:
            start = time.perf_counter()
            graphs[t] = FGES(threads=t).fit(problem.data, problem.variables).graph_
            best[t] = min(best.get(t, float("inf")), time.perf_counter() - start)
    base = best[args.threads[0]]
    print(f"| problem | p | threads | seconds (best of {args.repeats}) | speed-up | same graph |")
    print("|---|---|---|---|---|---|")
    for t in args.threads:
        same = graphs[t] == graphs[args.threads[0]]
        print(f"| {args.network}-{args.nodes} | {len(problem.variables)} | {t} | {best[t]:.1f} | {base / best[t]:.2f}× | "
              f"{'yes' if same else 'no'} |")


if __name__ == "__main__":
    main()
