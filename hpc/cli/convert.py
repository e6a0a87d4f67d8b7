"""`psle convert`: one graph file format into another (JSON, CSV edge list, Tetrad text, GraphML, DOT)."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.graphs.io import GRAPH_FORMATS, read_graph, read_json, write_graph

    check_output(args.output, GRAPH_FORMATS, "the graph file", inputs=(args.graph,))
    graph = read_graph(args.graph)
    meta = read_json(args.graph)[1] if args.graph.lower().endswith(".json") else None
    write_graph(args.output, graph, meta)
    print(f"psle: {graph.p} variables, {graph.n_edges} edges -> {args.output}", file=sys.stderr)


def add(sub) -> None:
    """Declare `psle convert`."""
    from hpc.graphs.io import GRAPH_FORMATS

    formats = ", ".join(GRAPH_FORMATS)
    cv = sub.add_parser("convert", help=f"convert a graph file into another format ({formats}; by suffix)")
    cv.add_argument("graph", help="graph file to read")
    cv.add_argument("-o", "--output", required=True, help="graph file to write (its suffix names the format)")
    cv.set_defaults(func=run)
