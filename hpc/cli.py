"""`psle`: generate benchmark problems, learn graphs, evaluate them.

Every sub-command is a thin shell over library functions; user errors print one line
(`psle: error: ...`) and exit 2 without writing partial output.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from hpc.errors import PsleError


def _generate(args: argparse.Namespace) -> None:
    from hpc.atomic import check_writable
    from hpc.data.generate import benchmark_problem
    from hpc.data.problem import write_problem

    check_writable(args.output)
    start = time.perf_counter()
    problem = benchmark_problem(args.nodes, args.seed, args.samples, network=args.network, graph=args.graph,
                                edges_per_node=args.edges_per_node, rewire=args.rewire)
    write_problem(args.output, problem)
    name = args.network or args.graph
    print(f"{name}-{args.nodes} seed {args.seed}: {problem.p} variables, {len(problem.truth.directed)} edges, "
          f"{problem.n} samples -> {args.output} ({time.perf_counter() - start:.1f} s)", file=sys.stderr)


def _evaluate(args: argparse.Namespace) -> None:
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
        print(json.dumps(metrics))
    else:
        for key, value in metrics.items():
            print(f"{key:20s} {value:.4f}" if isinstance(value, float) else f"{key:20s} {value}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="psle", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="write a benchmark problem (HDF5) as in the paper's §4.1.1")
    source = gen.add_mutually_exclusive_group(required=True)
    source.add_argument("--network", help="bnlearn network to replicate (e.g. alarm)")
    source.add_argument("--graph", choices=["er", "sf", "ws"], help="random graph model instead")
    gen.add_argument("--nodes", type=int, required=True, help="target number of variables")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--samples", type=int, default=1000)
    gen.add_argument("--edges-per-node", type=int, default=2, help="random graphs: edges = this x nodes")
    gen.add_argument("--rewire", type=float, default=0.1, help="Watts-Strogatz rewiring probability")
    gen.add_argument("-o", "--output", required=True, help="problem file to write (.h5)")
    gen.set_defaults(func=_generate)

    ev = sub.add_parser("evaluate", help="compare a learned graph with a problem's true DAG (as CPDAGs)")
    ev.add_argument("result", help="learned graph (.json, .csv edge list or Tetrad .txt)")
    ev.add_argument("--truth", required=True, help="problem file (.h5) holding /truth/edges")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.set_defaults(func=_evaluate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except PsleError as exc:
        print(f"psle: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("psle: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
