"""Which BIC penalty should a single learner run alone (`psle learn --method fges|boss|grasp`) use?

Runs each learner at several penalty discounts on small problems of several families (shuffled columns,
seeds >= 100, which no test uses) and prints mean F1-adjacency, F1-arrowhead and SHD per learner and
penalty, over every family and per family, so the default is chosen across families, not on one.

Usage: python scripts/bench_defaults.py [--families alarm er sf hub sbm ws] [--nodes 200] [--seeds 100-101]
       [--learners fges boss grasp flop] [--penalties 1 2 4]
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np

from benchlib import grid, seeds_arg, summary
from hpc.learners.members import member_from_spec


def run(learner: str, penalty: float, limit: float, problem) -> tuple:
    member = member_from_spec({"method": learner, "penalty": penalty}, limit)
    member.fit(problem.data, problem.variables)
    return member.graph_, member.status_, {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", default=["alarm", "er", "sf", "hub", "sbm", "ws"])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("100-101"))
    ap.add_argument("--learners", nargs="+", default=["fges", "boss", "grasp"])
    ap.add_argument("--penalties", nargs="+", type=float, default=[1.0, 2.0, 4.0])
    ap.add_argument("--limit", type=float, default=300.0, help="seconds per run")
    args = ap.parse_args()
    methods = {f"{learner} {penalty:g}": partial(run, learner, penalty, args.limit)
               for learner in args.learners for penalty in args.penalties}
    rows = grid(args.families, args.nodes, args.seeds, methods)
    print("\n" + summary(rows, limit=args.limit))
    print("\n| method | " + " | ".join(f"F1-adj {f}" for f in args.families) + " |\n|---" * 1
          + "|---" * len(args.families) + "|")
    for method in methods:
        cells = [np.mean([r["f1_adjacent"] for r in rows if r["method"] == method and r["network"] == f
                          and r["status"] == "ok"] or [np.nan]) for f in args.families]
        print(f"| {method} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
