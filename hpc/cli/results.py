"""`psle aggregate | report | status`: an experiment's results, its report, a sweep's progress."""

from __future__ import annotations

import argparse
import sys

from hpc.cli.options import (positive)



def aggregate(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.report import aggregate

    check_output(args.output, (".csv",), "the aggregate")
    frame = aggregate(args.results, args.output)
    print(f"psle: {len(frame)} results -> {args.output}", file=sys.stderr)


def report(args: argparse.Namespace) -> None:
    from hpc.report import build_report

    files = build_report(args.results, args.output, args.notes)
    print(f"psle: report -> {files[0]} ({len(files)} files in {args.output})", file=sys.stderr)


def status(args: argparse.Namespace) -> None:
    from hpc.launch.status import status

    status(args.sweep, args.watch)


def add(sub) -> None:
    """Declare `psle results`."""
    ag = sub.add_parser("aggregate", help="gather an experiment's result files into one CSV")
    ag.add_argument("results", help="results directory (searched recursively for seed<k>.json)")
    ag.add_argument("-o", "--output", required=True, help="CSV file to write")
    ag.set_defaults(func=aggregate)

    rp = sub.add_parser("report", help="the paper's tables (Markdown, CSV) and curves (PNG) from results")
    rp.add_argument("results", help="results directory (searched recursively for seed<k>.json)")
    rp.add_argument("-o", "--output", required=True, help="report directory (created)")
    rp.add_argument("--notes", default=None, help="Markdown file appended to REPORT.md (explanations)")
    rp.set_defaults(func=report)

    st = sub.add_parser("status", help="where a sweep stands: per task done / pending / running / requeued / failed "
                                       "(SLURM), or done / started (local), with its result or log")
    st.add_argument("sweep", help="the sweep folder psle-experiment printed (or a results folder: its newest sweep)")
    st.add_argument("--watch", type=positive, nargs="?", const=30.0, default=None, metavar="SECONDS",
                    help="refresh every SECONDS (default 30) until no task is pending, running or requeued")
    st.set_defaults(func=status)
