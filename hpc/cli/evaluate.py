"""`psle evaluate`: a learned graph against the truth, as CPDAGs: a problem file's true DAG, or a graph
file of your own (a DAG, or a CPDAG)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hpc.cli.options import PROBLEM_SUFFIXES
from hpc.errors import PsleError
from hpc.jsontext import dumps


def run(args: argparse.Namespace) -> None:
    from hpc.graphs.equivalence import to_cpdag
    from hpc.graphs.io import read_graph
    from hpc.graphs.metrics import compare

    if Path(args.truth).suffix.lower() in PROBLEM_SUFFIXES:
        from hpc.data.problem import read_problem

        truth = read_problem(args.truth, need_truth=True).truth
    else:
        truth = read_graph(args.truth)
    estimate = read_graph(args.result)
    try:
        estimate = estimate.reindexed(truth.variables)
    except PsleError as exc:
        raise PsleError(f"{args.result}: {exc} {args.truth}") from None
    try:
        reference = to_cpdag(truth)
    except PsleError as exc:
        # A reference network from the literature may have cycles (Sachs et al.'s consensus does): it has no
        # equivalence class, so it is compared as written, as published comparisons do.
        print(f"psle: {args.truth}: not a DAG ({exc}); compared edge by edge as given", file=sys.stderr)
        reference = truth
    metrics = compare(estimate, reference).as_dict()
    if args.json:
        print(dumps(metrics))
    else:
        for key, value in metrics.items():
            print(f"{key:20s} {value:.4f}" if isinstance(value, float) else f"{key:20s} {value}")


def add(sub) -> None:
    """Declare `psle evaluate`."""
    from hpc.graphs.io import GRAPH_FORMATS

    formats = ", ".join(GRAPH_FORMATS)
    ev = sub.add_parser("evaluate", help="compare a learned graph with the truth (as CPDAGs)")
    ev.add_argument("result", help=f"learned graph ({formats})")
    ev.add_argument("--truth", required=True,
                    help=f"a problem file (.h5) holding /truth/edges, or a true DAG or CPDAG ({formats})")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.set_defaults(func=run)
