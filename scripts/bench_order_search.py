"""The numpy order search against Tetrad's BOSS: the same search from the same start, their DAGs and seconds.

Two settings, as P/SLE runs them: every pair allowed (a cluster's BOSS member, started from a faithful fGES's
order) and the polish's candidate pairs (the true graph's adjacent and two-step pairs, from the order of a
DAG of the true CPDAG with a tenth of its edges left out, the way a seam leaves them). Both engines get the
same standardised data, penalty and start; the table gives each one's BIC (larger is better), its SHD against
the truth, its seconds, and whether the two DAGs are in one equivalence class.

Usage:
  python scripts/bench_order_search.py --graph hub --nodes 300 --seeds 100-102 --penalty 10
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlib import problem, seeds_arg
from hpc.graphs.equivalence import dag_to_cpdag, pdag_to_dag, topological_order
from hpc.graphs.metrics import evaluate
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import local_scores
from hpc.learners.order_search import order_search
from hpc.learners.tetrad import run_boss_bounded, start_order
from hpc.pef.candidates import candidate_pairs


def dag_bic(cov: np.ndarray, n: int, rows: np.ndarray, penalty: float) -> float:
    parents: list[list[int]] = [[] for _ in range(cov.shape[0])]
    for a, b in rows.tolist():
        parents[b].append(a)
    return float(local_scores(cov, n, parents, penalty).sum())


def settings(truth: PDAG, cov: np.ndarray, n: int, penalty: float, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each setting's start order and pairs."""
    p = truth.p
    every = np.stack(np.triu_indices(p, 1), axis=1)
    rng = np.random.default_rng(seed)
    kept = truth.directed[rng.random(len(truth.directed)) >= 0.1]
    seamed = dag_to_cpdag(PDAG(truth.variables, kept))
    return {"every pair": (start_order(cov, n, penalty, "fges"), every),
            "candidate pairs": (topological_order(pdag_to_dag(seamed, strict=False)), candidate_pairs(seamed))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", default="hub")
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--seeds", type=seeds_arg, default=[100])
    ap.add_argument("--penalty", type=float, default=10.0)
    args = ap.parse_args()
    print("| problem | pairs | Tetrad BIC, SHD, s | numpy BIC, SHD, s | same class |")
    print("|---|---|---|---|---|")
    for seed in args.seeds:
        prob = problem(args.graph, args.nodes, seed)
        x = (prob.data - prob.data.mean(axis=0)) / prob.data.std(axis=0)
        cov, n = np.cov(x, rowvar=False), x.shape[0]
        for name, (start, pairs) in settings(prob.truth, cov, n, args.penalty, seed).items():
            begin = time.perf_counter()
            theirs = run_boss_bounded(x, args.penalty, start, pairs)
            t_theirs = time.perf_counter() - begin
            begin = time.perf_counter()
            mine = order_search(cov, n, args.penalty, start, pairs)
            t_mine = time.perf_counter() - begin
            a, b = (dag_to_cpdag(PDAG(prob.truth.variables, rows)) for rows in (theirs, mine))
            cells = [f"{dag_bic(cov, n, rows, args.penalty):,.1f}, {evaluate(g, prob.truth).shd}, {t:.1f}"
                     for rows, g, t in ((theirs, a, t_theirs), (mine, b, t_mine))]
            print(f"| {args.graph}-{args.nodes} seed {seed}, λ {args.penalty:g} | {name} ({len(pairs):,}) | "
                  f"{cells[0]} | {cells[1]} | {'yes' if a == b else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
