"""`psle train`: Auto-SLE, here or as a self-requeueing SLURM job."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hpc.errors import PsleError
from hpc.cli.options import (PROBLEM_SUFFIXES, check_scheduler, executor_options, positive, slurm_options, weights_option, whole)



def run(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output

    if args.status is not None:
        status(args)
        return
    if args.json:
        raise PsleError("--json goes with --status (psle train --status CHECKPOINT --json)")
    if args.output is None or args.checkpoint is None:
        raise PsleError("psle train needs -o/--output and --checkpoint (or --status CHECKPOINT to see where a "
                        "training stands)")
    check_output(args.output, (".yaml", ".yml"), "the ensemble file", inputs=(args.checkpoint,))
    check_output(args.checkpoint, PROBLEM_SUFFIXES, "the checkpoint")
    if args.min_nodes > args.max_nodes:
        raise PsleError(f"--min-nodes {args.min_nodes} is above --max-nodes {args.max_nodes}")
    from hpc.train.checkpoint import Checkpoint  # the heavy imports (SMAC, dask) after the quick checks
    from hpc.train.space import check_space
    from hpc.train.autosle import TrainConfig
    from hpc.train.problems import TrainingConfig
    from hpc.executors import announce_dashboard, make_executor
    from hpc.learners.members import check_runtime
    from hpc.run import train_ensemble

    training = TrainingConfig(problems=args.problems, min_nodes=args.min_nodes, max_nodes=args.max_nodes,
                              samples=args.samples, seed=args.seed, networks=tuple(args.networks or ()),
                              weights=tuple(args.weights))
    config = TrainConfig(k=args.k, trials=args.trials, seed=args.seed, time_limit=args.time_limit, training=training,
                         objective=args.objective, space=check_space(args.space.split(",")))
    if Path(args.checkpoint).exists():  # a foreign, damaged or other-settings checkpoint: refuse before work starts
        Checkpoint(args.checkpoint, config.settings())
    check_scheduler(args)
    check_runtime()
    if args.slurm:
        submit_train(args, config)
        return
    with make_executor("serial" if args.serial else "local", args.scheduler, args.workers) as executor:
        announce_dashboard(executor)
        result = train_ensemble(config, args.checkpoint, args.output, executor)
    print(f"psle: {len(result.members)} members -> {args.output}", file=sys.stderr)


def status(args: argparse.Namespace) -> None:
    """Where the training stands, from its checkpoint only (read-only: safe while it runs)."""
    from hpc.jsontext import dumps
    from hpc.train.status import read_status, show

    path = args.checkpoint if args.status is True else args.status
    if path is None:
        raise PsleError("--status needs the checkpoint: psle train --status CHECKPOINT")
    found = read_status(path)
    print(dumps(found) if args.json else show(found))


def submit_train(args: argparse.Namespace, config) -> None:
    from hpc.launch.slurm import submit_train

    checkpoint, output = Path(args.checkpoint).resolve(), Path(args.output).resolve()
    folder = checkpoint.parent / ".submitit"
    job = submit_train(config, checkpoint, output, args.workers, folder, args.partition, args.time_min, args.mem_gb,
                       args.cpus, args.requeues, args.container)
    print(f"psle: submitted SLURM job {job.job_id} (logs in {folder}); rerun-safe: it resumes {args.checkpoint}",
          file=sys.stderr)
    if args.wait:
        job.result()
        print(f"psle: job {job.job_id} finished -> {args.output}", file=sys.stderr)


def add(sub) -> None:
    """Declare `psle train`."""
    from hpc.learners.members import MEMBERS

    tr = sub.add_parser("train", help="Auto-SLE: learn an ensemble with SMAC3 on generated training problems")
    tr.add_argument("-o", "--output", help="learned ensemble (.yaml, usable as --sle); required to train")
    tr.add_argument("--checkpoint", help="HDF5 checkpoint; rerun the same command to resume; required to train")
    tr.add_argument("--status", nargs="?", const=True, default=None, metavar="CHECKPOINT",
                    help="do not train: show where the training of CHECKPOINT (default: the --checkpoint) stands, "
                         "read-only, safe while it runs: rounds, trials, resumes, time and an estimate of what is left")
    tr.add_argument("--json", action="store_true", help="with --status: print one JSON object")
    tr.add_argument("--k", type=whole(1), default=4, help="ensemble size")
    tr.add_argument("--trials", type=whole(1), default=100, help="SMAC configurations per round")
    tr.add_argument("--problems", type=whole(1), default=100, help="training problems")
    tr.add_argument("--min-nodes", type=whole(1), default=5)
    tr.add_argument("--max-nodes", type=whole(1), default=1000)
    tr.add_argument("--samples", type=whole(2), default=1000)
    weights_option(tr)
    tr.add_argument("--networks", nargs="*", help="bases to draw problems from: bnlearn networks and random graph "
                    "models (er, sf, plc, geo, modular, ...; default: the bnlearn library)")
    tr.add_argument("--seed", type=whole(0), default=0)
    tr.add_argument("--time-limit", type=positive, default=300.0, metavar="SECONDS", help="per member run")
    tr.add_argument("--space", default="fges,pc-stable", metavar="LEARNER,...",
                    help="learners Auto-SLE chooses from (default: the paper's); registered: " + ", ".join(MEMBERS))
    tr.add_argument("--objective", choices=["portfolio", "bic"], default="portfolio",
                    help="portfolio (the paper's Q(A, D): the best member's Q, what a perfect selector reaches) or "
                         "bic (the Q of the member the BIC rule returns)")
    executor_options(tr)
    slurm_options(tr, "Auto-SLE", 1440)
    tr.set_defaults(func=run)
