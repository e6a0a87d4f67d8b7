"""What several `psle` commands share: argument types that refuse bad values in one line, and the option
groups (dask executor, SLURM, edge weights) declared once."""

from __future__ import annotations

import argparse
from collections.abc import Callable

PROBLEM_SUFFIXES = (".h5", ".hdf5")


class Parser(argparse.ArgumentParser):
    """argparse's errors as one line (its default prints the whole usage first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"psle: error: {message} (see {self.prog} --help)\n")


def whole(least: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {least}, got {text!r}")
        return value
    return parse


def real(accepts: Callable[[float], bool], what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")  # refused below: NaN passes no test
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value
    return parse


positive = real(lambda v: 0 < v < float("inf"), "a positive number")
probability = real(lambda v: 0 <= v <= 1, "a number in [0, 1]")
non_negative = real(lambda v: 0 <= v < float("inf"), "a number >= 0")


def executor_options(parser: argparse.ArgumentParser) -> None:
    """Where the command's work runs: a dask scheduler to join, local dask workers, or this process."""
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS", help="join this dask scheduler")
    parser.add_argument("--workers", type=whole(1), default=None,
                        help="local dask workers (default: one per allocated CPU)")
    parser.add_argument("--serial", action="store_true", help="no dask: run everything in this process")


def check_scheduler(args: argparse.Namespace) -> None:
    from hpc.executors import check_scheduler as check

    if args.scheduler and not args.serial:
        check(args.scheduler)


def slurm_options(parser: argparse.ArgumentParser, what: str, minutes: int) -> None:
    sl = parser.add_argument_group(f"SLURM (with --slurm: {what} as a preemption-safe, self-requeueing job)")
    sl.add_argument("--slurm", action="store_true", help="submit to SLURM instead of running here")
    sl.add_argument("--partition", default=None)
    sl.add_argument("--time-min", type=whole(1), default=minutes, help="job time limit in minutes (it requeues itself)")
    sl.add_argument("--mem-gb", type=positive, default=8)
    sl.add_argument("--cpus", type=whole(1), default=2)
    sl.add_argument("--requeues", type=whole(0), default=10, help="how often a timed-out job may requeue itself")
    sl.add_argument("--container", default=None, metavar="IMAGE.sif", help="run the job inside this Apptainer image")
    sl.add_argument("--wait", action="store_true", help="wait for the job to finish")


def weights_option(parser: argparse.ArgumentParser) -> None:
    from hpc.data.generate import WEIGHTS

    parser.add_argument("--weights", nargs=2, type=positive, default=list(WEIGHTS), metavar=("LOW", "HIGH"),
                        help="edge-weight magnitudes, each with a random sign (default: the paper's 0.5 1; "
                             "smaller means weaker effects)")


def print_table(cols: list[str], rows: list[list[str]]) -> None:
    """A Markdown table on stdout: what `psle selector` prints, to read or paste into notes."""
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for row in rows:
        print("| " + " | ".join(row) + " |")
