"""`psle evaluate`: a learned graph against a problem's true DAG, as CPDAGs."""

from __future__ import annotations

import argparse

from hpc.errors import PsleError
from hpc.jsontext import dumps



def run(args: argparse.Namespace) -> None:
    from hpc.data.problem import read_problem
    from hpc.graphs.io import read_graph
    from hpc.graphs.metrics import evaluate

    problem = read_problem(args.truth, need_truth=True)
    estimate = read_graph(args.result)
    try:
        estimate = estimate.reindexed(problem.variables)
    except PsleError as exc:
        raise PsleError(f"{args.result}: {exc} {args.truth}") from None
    metrics = evaluate(estimate, problem.truth).as_dict()
    if args.json:
        print(dumps(metrics))
    else:
        for key, value in metrics.items():
            print(f"{key:20s} {value:.4f}" if isinstance(value, float) else f"{key:20s} {value}")


def add(sub) -> None:
    """Declare `psle evaluate`."""
    ev = sub.add_parser("evaluate", help="compare a learned graph with a problem's true DAG (as CPDAGs)")
    ev.add_argument("result", help="learned graph (.json, .csv edge list or Tetrad .txt)")
    ev.add_argument("--truth", required=True, help="problem file (.h5) holding /truth/edges")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.set_defaults(func=run)
