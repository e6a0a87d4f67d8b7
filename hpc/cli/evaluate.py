"""`psle evaluate`: a learned graph against the truth, as CPDAGs: a problem file's true DAG, or a graph
file of your own (a DAG, or a CPDAG; an edge list `from,to[,edge]` need not list variables without edges).
The scoring is hpc.evaluate's (hpc.api.score)."""

from __future__ import annotations

import argparse
import sys

from hpc.jsontext import dumps


def run(args: argparse.Namespace) -> None:
    from hpc.api import read_result, read_truth, score

    metrics, notes = score(read_result(args.result), read_truth(args.truth), args.result, args.truth)
    for note in notes:
        print(f"psle: {note}", file=sys.stderr)
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
                    help=f"a problem file (.h5) holding /truth/edges, or a true DAG or CPDAG ({formats}; a .csv edge "
                         "list has the header from,to or from,to,edge with marks -->, <--, ---); variables of the "
                         "result it does not list count as having no true edges")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.set_defaults(func=run)
