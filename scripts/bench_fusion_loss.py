"""Where P/SLE loses accuracy against one search on the whole problem: inside clusters, or at the seams.

Runs `psle learn`'s defaults on a generated problem (shuffled columns) without and with the repair
pass, the BOSS polish, the rival and the recut after it (the same partition), and one whole-problem
learner (fGES λ 2.53767, m 91 with the faithfulness assumption), then splits the true edges by PEF's
partition into within-cluster and cross-cluster edges and reports, for each graph, adjacency recall and
precision on each kind and the arrowhead agreement of the true edges each graph found (against the truth's
CPDAG).

Usage: python scripts/bench_fusion_loss.py [--network alarm | --graph er] [--nodes 1000] [--seeds 0] [--workers 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlib import FGES_FAITHFUL, problem as make_problem
from hpc.executors import make_executor
from hpc.graphs.equivalence import dag_to_cpdag
from hpc.graphs.metrics import evaluate
from hpc.graphs.pdag import PDAG
from hpc.pef.partition import cluster_labels
from hpc.run import MethodSpec, build_estimator


def pairs(g: PDAG) -> set[tuple[int, int]]:
    return {tuple(sorted(e)) for e in np.vstack([g.directed, g.undirected]).tolist()}


def split(edges: set[tuple[int, int]], label: np.ndarray) -> tuple[set, set]:
    within = {e for e in edges if label[e[0]] == label[e[1]]}
    return within, edges - within


def breakdown(estimate: PDAG, truth_cpdag: PDAG, label: np.ndarray) -> dict[str, float]:
    true_w, true_x = split(pairs(truth_cpdag), label)
    est_w, est_x = split(pairs(estimate), label)
    marks = lambda g: {tuple(e) for e in g.directed.tolist()}  # noqa: E731
    t_marks, e_marks = marks(truth_cpdag), marks(estimate)

    def arrow_agree(kind: set) -> float:
        found = [e for e in kind if e in pairs(estimate)]
        same = sum((((a, b) in t_marks) == ((a, b) in e_marks)) and (((b, a) in t_marks) == ((b, a) in e_marks))
                   for a, b in found)
        return same / max(len(found), 1)

    return {"true within": len(true_w), "true cross": len(true_x),
            "recall within": len(est_w & true_w) / max(len(true_w), 1),
            "recall cross": len(est_x & true_x) / max(len(true_x), 1),
            "precision within": len(est_w & true_w) / max(len(est_w), 1),
            "precision cross": len(est_x & true_x) / max(len(est_x), 1),
            "marks agree within": arrow_agree(true_w), "marks agree cross": arrow_agree(true_x)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="alarm", help="a bnlearn network, or a random graph model (er, sf, ...)")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    keys = ["recall within", "recall cross", "precision within", "precision cross", "marks agree within",
            "marks agree cross"]
    print("| seed | graph | true within / cross | F1-adj | F1-arrow | SHD | seconds | " + " | ".join(keys) + " |")
    print("|---" * (7 + len(keys)) + "|", flush=True)
    for seed in args.seeds:
        problem = make_problem(args.network, args.nodes, seed)
        truth = dag_to_cpdag(problem.truth)
        runs = []
        with make_executor("local", None, args.workers) as executor:
            before = {"rival.upto": 0, "sweep.upto": 0}
            for name, options in (("psle without repair", {"repair.rounds": 0, "polish.upto": 0, **before}),
                                  ("psle with the repair only", {"polish.upto": 0, **before}),
                                  ("psle (repair + polish)", {**before, "recut.passes": 0}),
                                  ("psle (+ rival)", {"sweep.upto": 0, "recut.passes": 0}),
                                  ("psle (+ sweep)", {"recut.passes": 0}), ("psle (defaults: + recut)", {})):
                start = time.perf_counter()
                pef = build_estimator(MethodSpec("psle", True, selection="predicted", selector="truth",
                                                 pef_options=options), executor=executor, progress=False)
                pef.fit(problem.data, problem.variables)
                runs.append((name, pef.graph_, time.perf_counter() - start))
        label = cluster_labels(pef.clusters_, problem.p)
        start = time.perf_counter()
        whole = build_estimator(MethodSpec("fges", False, members=(FGES_FAITHFUL,))).fit(problem.data, problem.variables)
        whole_seconds = time.perf_counter() - start
        for name, graph, seconds in (*runs, ("fGES whole (λ 2.54, m 91, faithful)", whole.graph_, whole_seconds)):
            m = evaluate(graph, problem.truth)
            b = breakdown(graph, truth, label)
            print(f"| {seed} | {name} | {b['true within']} / {b['true cross']} | {m.f1_adjacent:.3f} | "
                  f"{m.f1_arrowhead:.3f} | {m.shd} | {seconds:.0f} | " + " | ".join(f"{b[k]:.3f}" for k in keys)
                  + " |", flush=True)


if __name__ == "__main__":
    main()
