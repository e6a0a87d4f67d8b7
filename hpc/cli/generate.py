"""`psle generate`: a benchmark problem with known truth, as in the paper's §4.1.1."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hpc.cli.options import (PROBLEM_SUFFIXES, probability, weights_option, whole)
from hpc.data.generate import GRAPH_MODELS, ORDERS
from hpc.errors import PsleError



def run(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.data.generate import benchmark_problem
    from hpc.data.problem import write_problem

    check_output(args.output, PROBLEM_SUFFIXES, "a problem file")
    if Path(args.output).exists() and not args.force:
        raise PsleError(f"{args.output} exists (results and checkpoints may name its data); --force replaces it")
    start = time.perf_counter()
    problem = benchmark_problem(args.nodes, args.seed, args.samples, network=args.network, graph=args.graph,
                                edges_per_node=args.edges_per_node, rewire=args.rewire, weights=tuple(args.weights),
                                order=args.order)
    write_problem(args.output, problem)
    name = args.network or args.graph
    print(f"{name}-{args.nodes} seed {args.seed}: {problem.p} variables, {len(problem.truth.directed)} edges, "
          f"{problem.n} samples -> {args.output} ({time.perf_counter() - start:.1f} s)", file=sys.stderr)


def add(sub) -> None:
    """Declare `psle generate`."""
    gen = sub.add_parser("generate", help="write a benchmark problem (HDF5) as in the paper's §4.1.1")
    source = gen.add_mutually_exclusive_group(required=True)
    source.add_argument("--network",
                        help="library network to replicate: bnlearn's (e.g. alarm) or yeast (4,441 genes, one copy)")
    source.add_argument("--graph", choices=GRAPH_MODELS, help="random graph model instead (hub: a few nodes with 30 children or parents; "
                        "sbm: communities of 20-50 variables; plc: scale-free with triangles; geo: 2-D neighbourhoods; "
                        "mosaic: blocks of 100-300 variables, each er, sf, ws or hub; layer: edges only from each "
                        "layer of 20-60 variables to the next; modular: modules of 20-200 variables, 1-3 parents "
                        "each, 85%% of them in the variable's module; modular-large: modules of 100-500, 90%% inside, "
                        "with hubs; both ignore --edges-per-node)")
    gen.add_argument("--nodes", type=whole(1), required=True, help="target number of variables")
    gen.add_argument("--seed", type=whole(0), default=0)
    gen.add_argument("--samples", type=whole(2), default=1000)
    gen.add_argument("--edges-per-node", type=whole(1), default=2, help="random graphs: edges = this x nodes (not modular)")
    gen.add_argument("--rewire", type=probability, default=0.1, help="Watts-Strogatz rewiring probability")
    gen.add_argument("--order", choices=ORDERS, default=ORDERS[0],
                     help="column order of a replicated network: shuffled (seeded; the default, since a file's order "
                          "says nothing about causes) or generator (replica by replica in the network's order, as in "
                          "the paper, where most true edges point forward)")
    weights_option(gen)
    gen.add_argument("-o", "--output", required=True, help="problem file to write (.h5)")
    gen.add_argument("--force", action="store_true", help="replace an existing problem file")
    gen.set_defaults(func=run)
