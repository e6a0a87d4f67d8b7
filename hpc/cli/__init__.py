"""`psle`: generate benchmark problems, learn graphs, evaluate them.

Every sub-command is a thin shell over library functions, one module each; user errors print one line
(`psle: error: ...`) and exit 2 without writing partial output.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import warnings
from collections.abc import Sequence

from hpc.cli import convert, doctor, evaluate, example, generate, learn, records, results, selector, train
from hpc.cli.options import Parser
from hpc.errors import PsleError, one_line_warning

COMMANDS = (generate, example, evaluate, convert, learn, train, records, selector, results, doctor)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="psle", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's kill, `kill PID`): unwinds like Ctrl-C, so workers stop and temp files go."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "train" and not args.status and os.environ.get("PYTHONHASHSEED") != "0":
        # SMAC's choices depend on string hashing; resuming replays them, so fix the seed (see autosle.train);
        # a status only reads the checkpoint.
        os.execve(sys.executable, [sys.executable, "-m", "hpc.cli", *(sys.argv[1:] if argv is None else argv)],
                  {**os.environ, "PYTHONHASHSEED": "0"})
    formatwarning, sigterm = warnings.formatwarning, signal.getsignal(signal.SIGTERM)
    warnings.formatwarning = one_line_warning
    # Inside a submitit job its own handlers must stay (they requeue on preemption): only replace the default.
    if sigterm == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)
    try:
        args.func(args)
    except PsleError as exc:
        print(f"psle: error: {exc}", file=sys.stderr)
        return 2
    except Terminated:
        print("psle: terminated (SIGTERM); nothing more written", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("psle: interrupted; nothing more written", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`psle evaluate ... | head -1`): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        warnings.formatwarning = formatwarning
        if sigterm == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, sigterm)
    return 0
