"""`psle learn`: one method on a data file, here or as a SLURM job; the flags become the run path's
MethodSpec (hpc.run)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hpc.errors import PsleError
from hpc.cli.options import (PROBLEM_SUFFIXES, check_scheduler, executor_options, positive, probability,
                             slurm_options, whole)



def parse_params(items: list[str]) -> dict[str, object]:
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


def flag(name: str) -> str:
    """A setting's name as `psle learn` spells it."""
    return "--" + name.replace("_", "-")


def method_spec(args: argparse.Namespace):
    """`psle learn`'s method flags as the run path's MethodSpec (hpc.run.method_spec, which hpc.learn shares)."""
    from hpc.run import method_spec as spec

    return spec(args.method, args.sle, args.selection, args.selector, args.top_k, args.runaway,
                parse_params(args.param), parse_params(args.pef) if args.pef else None, flag)


def describe_run(spec, learner) -> str:
    """How a run introduces itself on the terminal."""
    from hpc.learners.ensemble import SLE
    from hpc.pef.pipeline import PEF

    if isinstance(learner, PEF) and spec.selection == "predicted":
        selector = learner._selector()
        name = selector.portfolio_name if spec.sle is None else Path(spec.sle).stem
        chosen = "the learner" if spec.top_k == 1 else f"the {spec.top_k} learners (best BIC kept)"
        return (f"p-sle: each cluster learned by {chosen} the '{spec.selector}' selector expects to do best there, "
                f"of {len(learner.ensemble())} learners ('{name}')")
    if spec.sle is not None and isinstance(learner, (PEF, SLE)):
        return f"{spec.name} ({Path(spec.sle).stem} ensemble, {len(learner.ensemble())} members)"
    if isinstance(learner, PEF):
        return f"{spec.name} ({member_repr(learner.ensemble()[0])})"
    return repr(learner)


def member_repr(spec: dict) -> str:
    from hpc.learners.members import member_from_spec

    return repr(member_from_spec(spec))


def run(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.graphs.io import GRAPH_FORMATS
    from hpc.run import build_estimator, learn_file

    check_output(args.output, GRAPH_FORMATS, "the graph file", inputs=(args.data,))
    if args.slurm and args.checkpoint is None and args.method.startswith("p-") and not args.bootstrap:
        # a requeued job resumes from it (a bootstrap keeps its finished resamples instead)
        args.checkpoint = str(Path(args.output).with_suffix(".checkpoint.h5"))
    if args.checkpoint:
        check_output(args.checkpoint, PROBLEM_SUFFIXES, "the checkpoint", inputs=(args.data, args.output))
    spec = method_spec(args)
    try:
        learner = build_estimator(spec, args.time_limit, args.wall_limit, checkpoint=args.checkpoint)
    except PsleError as exc:
        raise PsleError(str(exc).replace("PEF setting ", "--pef ")) from None
    label = describe_run(spec, learner)
    check_scheduler(args)
    if not Path(args.data).is_file():
        raise PsleError(f"{args.data}: no such file")
    if args.knowledge and not Path(args.knowledge).is_file():
        raise PsleError(f"{args.knowledge}: no such file")
    if args.bootstrap:
        run_bootstrap(args, spec, label)
        return
    worker_job = worker_jobs_of(args, spec)
    if args.slurm:
        submit(args, spec, label, worker_job)
        return
    learn_file(args.data, args.output, spec, args.time_limit, args.wall_limit, args.checkpoint, not args.serial,
               args.scheduler, args.workers, label, args.knowledge, args.nodes, worker_job)


def worker_jobs_of(args: argparse.Namespace, spec):
    """With --nodes: the worker jobs' request, sized from the data and checked against the partition (and the
    submitted run's own memory against --mem-gb), before anything is submitted."""
    if args.nodes is None:
        return None
    from hpc.launch.workers import data_shape, driver_gb, worker_jobs

    if not spec.pef and spec.name != "sle":
        raise PsleError(f"--nodes spreads PEF's and the ensemble's tasks over SLURM jobs; --method {spec.name} runs "
                        "in one process")
    if args.serial or args.scheduler or args.workers:
        raise PsleError("--nodes starts its own dask workers as SLURM jobs: drop --serial, --scheduler and --workers")
    if args.slurm and args.mem_gb < (need := driver_gb(*data_shape(args.data))):
        raise PsleError(f"--mem-gb {args.mem_gb:g}: the submitted run itself (dask's scheduler and the steps between "
                        f"tasks) needs about {need} GB for {args.data}; raise --mem-gb")
    return worker_jobs(args.data, args.worker_cpus, args.worker_mem_gb, args.partition, args.time_min,
                       args.worker_sbatch)


def run_bootstrap(args: argparse.Namespace, spec, label: str) -> None:
    """`--bootstrap B`: the resamples here (sharing the dask cluster) or as one SLURM array task each."""
    from hpc.bootstrap import Bootstrap, bootstrap_file

    if args.checkpoint:
        raise PsleError("--checkpoint does not apply with --bootstrap: every finished resample is kept instead")
    boot = Bootstrap(args.bootstrap, args.subsample, args.bootstrap_seed, args.consensus, args.threshold)
    boot.validate()
    if args.slurm:
        from hpc.launch.slurm import submit_bootstrap

        folder = Path(args.output).resolve().parent / ".submitit"
        jobs = submit_bootstrap(spec, str(Path(args.data).resolve()), str(Path(args.output).resolve()), boot,
                                args.time_limit, args.wall_limit, args.workers, label, folder, args.partition,
                                args.time_min, args.mem_gb, args.cpus, args.requeues, args.container,
                                str(Path(args.knowledge).resolve()) if args.knowledge else None)
        if not jobs:
            print("psle: every resample is done; writing the consensus here", file=sys.stderr)
        else:
            print(f"psle: submitted SLURM array job {jobs[0].job_id.split('_')[0]} ({len(jobs)} resamples; logs in "
                  f"{folder}); rerun this command without --slurm, or with --wait, for the consensus", file=sys.stderr)
            if not args.wait:
                return
            for job in jobs:
                job.result()
    bootstrap_file(args.data, args.output, spec, boot, args.time_limit, args.wall_limit, not args.serial,
                   args.scheduler, args.workers, label, knowledge=args.knowledge)


def submit(args: argparse.Namespace, spec, label: str, worker_job=None) -> None:
    from hpc.launch.slurm import submit_learn

    paths = [str(Path(p).resolve()) if p else None for p in (args.data, args.output, args.checkpoint)]
    folder = Path(paths[1]).parent / ".submitit"
    job = submit_learn(spec, *paths, args.time_limit, args.wall_limit, args.workers, label, folder, args.partition,
                       args.time_min, args.mem_gb, args.cpus, args.requeues, args.container, args.nodes, worker_job,
                       str(Path(args.knowledge).resolve()) if args.knowledge else None)
    print(f"psle: submitted SLURM job {job.job_id} (logs in {folder})"
          + (f"; preemption-safe: it resumes {args.checkpoint}" if args.checkpoint else ""), file=sys.stderr)
    if args.wait:
        job.result()
        print(f"psle: job {job.job_id} finished -> {args.output}", file=sys.stderr)


def param_help() -> str:
    """The --param help: each registered learner's parameters."""
    from hpc.learners.members import MEMBERS

    return "learner parameters; " + "; ".join(cls.describe() for cls in MEMBERS.values())


def pef_help() -> str:
    """The --pef help, with each setting's default read from its config class."""
    from dataclasses import fields

    from hpc.pef.fusion import FusionConfig
    from hpc.pef.partition import PartitionConfig
    from hpc.pef.steps import help_text

    settings = ", ".join(f"{f.name} ({getattr(c, f.name)})" for c in (PartitionConfig(), FusionConfig())
                         for f in fields(c))
    return (f"PEF settings (default): {settings}; e.g. context (outside variables each cluster's search sees, per "
            "cluster variable), max_size (split clusters above it; 0: the paper's rule), whole_below (learn smaller "
            f"problems whole). The steps after fusion, in order, each off at 0: {help_text()}")


def add(sub) -> None:
    """Declare `psle learn`."""
    from hpc.run import methods

    learn = sub.add_parser("learn", help="learn a CPDAG from data (CSV with a header row, or problem .h5)")
    learn.add_argument("data", help="data file: CSV (header = variable names) or problem .h5")
    learn.add_argument("--method", default="p-sle", choices=methods(),
                       help="p-sle (default): PEF with an ensemble; sle: the ensemble on the whole problem; "
                            "p-<learner>: PEF with one learner; <learner>: one learner on the whole problem")
    learn.add_argument("--sle", default=None, help="ensemble for sle/p-sle: learned, trained, default, random, portfolio or "
                                                   "a .yaml (with --selection all: default learned; with predicted: "
                                                   "the selector's portfolio)")
    learn.add_argument("--selection", default=None, choices=["all", "predicted"],
                       help="p-sle: only the member(s) a selector predicts from each cluster's features (predicted, "
                            "the default) or all members on every cluster, keeping the best BIC (all, the paper; the "
                            "default for --method sle and for an --sle ensemble without --selector)")
    learn.add_argument("--selector", default=None, metavar="NAME|PATH",
                       help="with --selection predicted: truth (best F1 on held-out families; default), bic (the "
                            "paper's BIC winner, fewer runs) or a selector .json from `psle selector fit`")
    learn.add_argument("--top-k", type=whole(1), default=1, metavar="K",
                       help="with --selection predicted: run the K most likely members and keep the best BIC")
    learn.add_argument("--runaway", type=float, default=None, metavar="FACTOR",
                       help="with --selection predicted: cut a member run at FACTOR times its predicted seconds "
                            "(at least 900 s) and run the next member instead, unless it is the last (default 20; "
                            "0: off)")
    learn.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help=param_help())
    learn.add_argument("--pef", action="append", default=[], metavar="NAME=VALUE",
                       help=pef_help())
    learn.add_argument("--time-limit", type=positive, default=None, metavar="SECONDS",
                       help="per member run (per cluster under PEF)")
    learn.add_argument("--wall-limit", type=positive, default=None, metavar="SECONDS",
                       help="for the whole run: member runs still going are cut and nothing is written (a single "
                            "learner's one run is the whole run: the smaller limit applies)")
    learn.add_argument("--checkpoint", default=None, metavar="RUN.h5",
                       help="PEF methods: keep the partition and every finished member run here; the same command "
                            "after a kill or preemption resumes from it")
    learn.add_argument("--knowledge", default=None, metavar="FILE",
                       help="prior knowledge in Tetrad's text format (/knowledge; addtemporal tiers, forbiddirect, "
                            "requiredirect), checked against the data's columns; every method honours it (PEF: the "
                            "cluster searches, fusion and the repair)")
    executor_options(learn)
    boot = learn.add_argument_group("bootstrap (edge confidence)")
    boot.add_argument("--bootstrap", type=whole(1), default=None, metavar="B",
                      help="run the method on B resamples of the rows; write each edge type's frequency (CSV, PNG, "
                           "and in the graph file) and a consensus graph; finished resamples are kept beside the "
                           "output (OUTPUT.resamples/), so a rerun only runs what is missing")
    boot.add_argument("--subsample", type=probability, default=None, metavar="F",
                      help="resample round(F n) rows without replacement (default: n rows with replacement)")
    boot.add_argument("--bootstrap-seed", type=whole(0), default=0, metavar="S", help="seed of the resamples")
    boot.add_argument("--consensus", default="threshold", choices=["threshold", "majority", "highest", "preserved"],
                      help="consensus rule: threshold (pairs adjacent in at least --threshold of the resamples, "
                           "most frequent mark; default), majority, highest or preserved (Tetrad's rules)")
    boot.add_argument("--threshold", type=probability, default=0.5, metavar="T",
                      help="the threshold rule's adjacency frequency (default 0.5)")
    learn.add_argument("-o", "--output", required=True,
                       help="graph file to write (.json with the run's account, .csv, Tetrad .txt, .graphml or .dot)")
    slurm_options(learn, "the run", 240)
    nodes_options(learn)
    learn.set_defaults(func=run)


def nodes_options(learn: argparse.ArgumentParser) -> None:
    """--nodes and the worker jobs' request."""
    nodes = learn.add_argument_group("several nodes (dask workers as SLURM jobs, dask-jobqueue)")
    nodes.add_argument("--nodes", type=whole(1), default=None, metavar="N",
                       help="run the tasks (neighbour blocks, member runs, fusion and repair blocks) on N SLURM worker "
                            "jobs; the dask scheduler runs here, or with --slurm in the submitted job. A requeued "
                            "worker job rejoins; with --checkpoint a requeued run resumes")
    nodes.add_argument("--worker-cpus", type=whole(1), default=2, help="cores per worker job (one dask worker each)")
    nodes.add_argument("--worker-mem-gb", type=positive, default=None,
                       help="memory per worker job (default: from the data's size and the cores)")
    nodes.add_argument("--worker-sbatch", action="append", default=[], metavar="DIRECTIVE",
                       help="an extra #SBATCH directive for each worker job, e.g. --worker-sbatch=--account=proj")
