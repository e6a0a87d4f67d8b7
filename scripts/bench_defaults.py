"""Which BIC penalty should a single learner run alone (`psle learn --method fges|boss|grasp`) use?

Runs each learner at several penalty discounts on small problems of several families (shuffled columns,
seeds >= 100, which no test uses) and prints mean F1-adjacency, F1-arrowhead and SHD per learner and
penalty, over every family and per family, so the default is chosen across families, not on one.

Usage: python scripts/bench_defaults.py [--families alarm er sf hub sbm ws] [--nodes 200] [--seeds 100-101]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from hpc.data.generate import benchmark_problem
from hpc.graphs.metrics import evaluate
from hpc.learners.members import member_from_spec


def seeds_arg(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", default=["alarm", "er", "sf", "hub", "sbm", "ws"])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("100-101"))
    ap.add_argument("--learners", nargs="+", default=["fges", "boss", "grasp"])
    ap.add_argument("--penalties", nargs="+", type=float, default=[1.0, 2.0, 4.0])
    ap.add_argument("--limit", type=float, default=300.0, help="seconds per run")
    args = ap.parse_args()
    scores: dict[tuple[str, float], list[tuple[str, float, float, int, float]]] = defaultdict(list)
    for family in args.families:
        for seed in args.seeds:
            network = family if family not in ("er", "sf", "hub", "sbm", "ws") else None
            problem = benchmark_problem(args.nodes, seed, network=network, graph=None if network else family)
            for learner in args.learners:
                for penalty in args.penalties:
                    member = member_from_spec({"method": learner, "penalty": penalty}, args.limit)
                    start = time.perf_counter()
                    member.fit(problem.data, problem.variables)
                    if member.status_ != "ok":
                        continue
                    m = evaluate(member.graph_, problem.truth)
                    scores[learner, penalty].append((family, m.f1_adjacent, m.f1_arrowhead, m.shd,
                                                     time.perf_counter() - start))
    print("| learner | penalty | runs | F1-adj | F1-arrow | SHD | seconds | F1-adj per family |")
    print("|---|---|---|---|---|---|---|---|")
    for (learner, penalty), rows in sorted(scores.items()):
        per_family = defaultdict(list)
        for family, f1a, *_ in rows:
            per_family[family].append(f1a)
        cells = ", ".join(f"{f} {np.mean(v):.3f}" for f, v in per_family.items())
        print(f"| {learner} | {penalty:g} | {len(rows)} | {np.mean([r[1] for r in rows]):.3f} | "
              f"{np.mean([r[2] for r in rows]):.3f} | {np.mean([r[3] for r in rows]):.0f} | "
              f"{np.mean([r[4] for r in rows]):.1f} | {cells} |")


if __name__ == "__main__":
    main()
