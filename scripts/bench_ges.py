"""The compiled GES (hpc.learners.ges_kernel) against Tetrad's fGES: the same settings, their patterns and seconds.

Two settings, as P/SLE runs them: an order search's start (faithfulness assumed, degree at most 10, the BOSS
member's penalty) and an fGES member (the learned SLE's λ 20.6, degree 17, faithfulness not assumed). Both engines
get the same standardised data; the table gives each one's BIC at penalty 2 (larger is better), its SHD against
the truth, its seconds, and whether the two patterns are the same.

Usage:
  python scripts/bench_ges.py --graph sf --nodes 500 --seeds 100-102
"""

from __future__ import annotations

import argparse
import time


from benchlib import problem, seeds_arg
from hpc.graphs.metrics import evaluate
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import bic, covariance
from hpc.learners.ges_kernel import ges_pattern
from hpc.learners.tetrad import START_DEGREE, run_fges

#: (name, penalty, degree bound, faithfulness assumed)
SETTINGS = (("start", 10.0, START_DEGREE, True), ("member", 20.6045, 17, False))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", default="sf")
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--seeds", type=seeds_arg, default=[100])
    args = ap.parse_args()
    print("| problem | setting | Tetrad BIC, SHD, s | compiled BIC, SHD, s | same pattern |")
    print("|---|---|---|---|---|")
    for seed in args.seeds:
        prob = problem(args.graph, args.nodes, seed)
        x = (prob.data - prob.data.mean(axis=0)) / prob.data.std(axis=0)
        cov, n = covariance(x), x.shape[0]
        for name, penalty, degree, faithful in SETTINGS:
            graphs, cells = [], []
            for engine in (run_fges, lambda *a: ges_pattern(*a[:4], None, a[4])):
                begin = time.perf_counter()
                graph = PDAG(prob.truth.variables, *engine(cov, n, penalty, degree, faithful))
                seconds = time.perf_counter() - begin
                graphs.append(graph)
                cells.append(f"{bic(graph, cov, n, 2.0):,.0f}, {evaluate(graph, prob.truth).shd}, {seconds:.1f}")
            print(f"| {args.graph}-{args.nodes} seed {seed} | {name} (λ {penalty:g}, degree {degree}) | {cells[0]} | "
                  f"{cells[1]} | {'yes' if graphs[0] == graphs[1] else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
