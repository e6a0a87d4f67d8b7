"""`psle records`: the selection records (every portfolio member on every cluster of generated problems)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hpc.errors import PsleError
from hpc.cli.options import (PROBLEM_SUFFIXES, check_scheduler, executor_options, positive, weights_option, whole)
from hpc.data.generate import FAMILIES



def run(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.learners.ensemble import load_sle
    from hpc.learners.members import check_runtime
    from hpc.executors import announce_dashboard, make_executor
    from hpc.progress import Progress
    from hpc.train.records import RecordsConfig, build_records, parse_shard, record_problems

    check_output(args.output, PROBLEM_SUFFIXES, "the records file",
                 inputs=tuple(a for a in (args.upgrade, args.rerun) if a))
    if args.upgrade:
        from hpc.train.records import upgrade_records

        store, dropped = upgrade_records(args.upgrade, args.output, Progress(min_interval=5))
        print(f"psle: {len(store.rows)} records with this version's features -> {args.output}"
              + (f" ({dropped} cluster{'s' * (dropped > 1)} dropped: no longer regenerated with the same data)" if dropped
                 else ""), file=sys.stderr)
        return
    if args.rerun:
        rerun(args)
        return
    parse_shard(args.shard)
    if args.min_nodes > args.max_nodes:
        raise PsleError(f"--min-nodes {args.min_nodes} is above --max-nodes {args.max_nodes}")
    check_scheduler(args)
    config = RecordsConfig(families=record_families(args), problems_per_family=args.problems_per_family,
                           min_nodes=args.min_nodes, max_nodes=args.max_nodes, samples=args.samples, seed=args.seed,
                           networks=tuple(args.networks or ()), time_limit=args.time_limit,
                           weights=tuple(args.weights))
    record_problems(config)
    name, portfolio = load_sle(args.portfolio)
    check_runtime()
    with make_executor("serial" if args.serial else "local", args.scheduler, args.workers) as executor:
        announce_dashboard(executor)
        store = build_records(config, portfolio, args.output, executor, args.shard, Progress(min_interval=5))
    print(f"psle: {len(store.rows)} records ({len(store.done_problems)} problems, portfolio {name}) -> {args.output}",
          file=sys.stderr)


def rerun(args: argparse.Namespace) -> None:
    """`--rerun OLD.h5 --families …`: OLD's records with those families' member runs made again."""
    from hpc.executors import announce_dashboard, make_executor
    from hpc.learners.members import check_runtime
    from hpc.progress import Progress
    from hpc.train.records import rerun_records

    if not args.families:
        raise PsleError("--rerun needs --families: the families whose member runs to make again (e.g. bnlearn)")
    check_scheduler(args)
    check_runtime()
    with make_executor("serial" if args.serial else "local", args.scheduler, args.workers) as executor:
        announce_dashboard(executor)
        store = rerun_records(args.rerun, args.output, tuple(args.families), executor, Progress(min_interval=5),
                              tuple(args.methods or ()), args.min_size)
    print(f"psle: {len(store.rows)} records ({len(store.done_problems)} problems; {', '.join(args.families)} run "
          f"again) -> {args.output}", file=sys.stderr)


def record_families(args: argparse.Namespace) -> tuple[str, ...]:
    """`--families`, or left out: the families of the records file being resumed, so that a file begun
    before the generator gained a family resumes as begun; every family for a new file."""
    if args.families is not None:
        return tuple(args.families)
    if Path(args.output).is_file():
        from hpc.select.records import read_records

        return tuple(read_records(args.output)["settings"]["families"])
    return FAMILIES


def add(sub) -> None:
    """Declare `psle records`."""
    rc = sub.add_parser("records", help="run a portfolio on PEF's clusters of generated problems with known truth "
                                         "(what member selection learns from); rerun to resume")
    rc.add_argument("-o", "--output", required=True, help="records file (.h5); an existing one is resumed")
    rc.add_argument("--upgrade", metavar="OLD.h5", help="recompute the features of records an older psle made "
                                                        "(no member reruns) into a new -o file")
    rc.add_argument("--rerun", metavar="OLD.h5", help="make OLD's member runs on the problems of --families again "
                                                      "with this psle's generator and learners, copying the other "
                                                      "rows, into a new -o file (rerun to resume)")
    rc.add_argument("--families", nargs="+", default=None, choices=FAMILIES,
                    help="problem families (default: every one; resuming, those the file was begun with); "
                         "with --rerun, those to run again")
    rc.add_argument("--methods", nargs="+", default=None, metavar="METHOD",
                    help="with --rerun: only these members' runs (say, a learner that changed)")
    rc.add_argument("--min-size", type=whole(0), default=0,
                    help="with --rerun: only the runs on clusters of at least this many variables")
    rc.add_argument("--problems-per-family", type=whole(1), default=6)
    rc.add_argument("--min-nodes", type=whole(1), default=500)
    rc.add_argument("--max-nodes", type=whole(1), default=2000)
    rc.add_argument("--samples", type=whole(2), default=1000)
    rc.add_argument("--seed", type=whole(0), default=1, help="problem seeds derive from it (keep test seeds apart)")
    weights_option(rc)
    rc.add_argument("--networks", nargs="*", help="bnlearn pool (default: library networks of <= 250 nodes, "
                                                  "minus the paper's ten test networks)")
    rc.add_argument("--portfolio", default="portfolio", help="ensemble to run: a conf/sle name or a .yaml")
    rc.add_argument("--time-limit", type=positive, default=300.0, metavar="SECONDS", help="per member run")
    rc.add_argument("--shard", default="0/1", metavar="K/N",
                    help="this array task's share of the problems (e.g. $SLURM_ARRAY_TASK_ID/8), one file each")
    executor_options(rc)
    rc.set_defaults(func=run)
