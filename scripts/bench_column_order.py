"""Does `psle learn`'s answer depend on the file's column order? The same problem in its own order and
in three random column permutations: SHD of each permuted run's CPDAG against the first run's, and
against the truth.

Usage:
  python scripts/bench_column_order.py [--problems alarm-1000 asia-200 er-11] [--permutations 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlib import named_problem
from hpc.executors import DaskExecutor
from hpc.graphs.metrics import compare, evaluate
from hpc.graphs.order import relabel
from hpc.pef.pipeline import PEF


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=["alarm-1000", "asia-200", "er-11"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--permutations", type=int, default=3)
    args = ap.parse_args()
    print("| problem | run | F1-adj | F1-arrow | SHD to truth | SHD to the file's order | seconds |\n"
          "|---|---|---|---|---|---|---|")
    with DaskExecutor() as executor:
        for name in args.problems:
            pr = named_problem(name, args.seed)
            first = None
            for k in range(args.permutations + 1):
                perm = np.random.default_rng(1000 + k).permutation(pr.p) if k else np.arange(pr.p)
                start = time.perf_counter()
                pef = PEF(None, selection="predicted", selector="truth", executor=executor, progress=False)
                pef.fit(pr.data[:, perm], [pr.variables[i] for i in perm])
                graph = relabel(pef.graph_, perm, pr.variables)
                first = first or graph
                m = evaluate(graph, pr.truth)
                print(f"| {name} (p = {pr.p}) | {'file order' if k == 0 else f'permutation {k}'} | "
                      f"{m.f1_adjacent:.3f} | {m.f1_arrowhead:.3f} | {m.shd} | {compare(graph, first).shd} | "
                      f"{time.perf_counter() - start:.1f} |", flush=True)


if __name__ == "__main__":
    main()
