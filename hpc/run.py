"""One run path for `psle` and `psle-experiment`: a method spec becomes an estimator, a fitted
estimator gives one graph `meta` layout (or one account of why there is no graph), and a
training run writes one ensemble file. Both front ends only translate their settings into these.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from hpc.errors import PsleError


@dataclass(frozen=True)
class MethodSpec:
    """What to run. `members` (explicit member specs) or `sle` (an ensemble name or YAML file);
    PEF around them when `pef`. With `selection="predicted"` and neither, the selector's portfolio."""

    name: str
    pef: bool
    members: tuple[dict[str, Any], ...] | None = None
    sle: str | None = None
    selection: str = "all"
    selector: str | None = None
    top_k: int = 1
    runaway: float | None = None  # None: PEF's default factor
    pef_options: dict[str, Any] = field(default_factory=dict)


def pef_configs(options: dict[str, Any]):
    """PartitionConfig, FusionConfig and RepairConfig with `options` (names from any) applied and checked."""
    from hpc.pef.fusion import FusionConfig
    from hpc.pef.partition import PartitionConfig
    from hpc.pef.repair import RepairConfig

    configs = [PartitionConfig(), FusionConfig(), RepairConfig()]
    known = [{f.name for f in fields(c)} for c in configs]
    for name, value in options.items():
        where = [k for k, names in enumerate(known) if name in names]
        if not where:
            raise PsleError(f"PEF setting {name}: unknown; known: {', '.join(sorted(set().union(*known)))}")
        configs[where[0]] = replace(configs[where[0]], **{name: value})
    try:
        for config in configs:
            config.validate()
    except PsleError as exc:
        raise PsleError(f"PEF setting {exc}") from None
    return tuple(configs)


def build_estimator(spec: MethodSpec, time_limit: float | None = None, wall_limit: float | None = None,
                    executor: Any = None, progress: bool = True, checkpoint: str | Path | None = None):
    """The validated estimator `spec` stands for. A single learner outside PEF runs alone, so its one
    run is the whole run: both limits apply to it, and it may use every allocated CPU. `checkpoint`
    (PEF only) keeps the partition and every finished member run, so a rerun resumes."""
    from hpc.executors import allocated_cpus
    from hpc.learners.ensemble import SLE, load_sle
    from hpc.learners.members import member_from_spec
    from hpc.pef.pipeline import PEF

    if spec.selection != "all" and not (spec.pef and spec.members is None):
        raise PsleError(f"selection={spec.selection} applies to PEF around an ensemble (p-sle), not {spec.name}")
    if spec.pef_options and not spec.pef:
        raise PsleError(f"PEF settings apply to PEF methods, not {spec.name}")
    if checkpoint is not None and not spec.pef:
        raise PsleError(f"a run checkpoint applies to PEF methods (p-*), not {spec.name}")
    members = load_sle(spec.sle)[1] if spec.sle else None if spec.members is None else [dict(m) for m in spec.members]
    if spec.pef:
        partition, fusion, repair = pef_configs(spec.pef_options)
        estimator = PEF(members, time_limit, partition, fusion, executor=executor, progress=progress, repair=repair,
                        wall_limit=wall_limit, selection=spec.selection, selector=spec.selector, top_k=spec.top_k,
                        **({} if spec.runaway is None else {"runaway": spec.runaway}),
                        checkpoint=None if checkpoint is None else str(checkpoint))
    elif members and len(members) == 1 and spec.sle is None:
        limit = min((t for t in (time_limit, wall_limit) if t is not None), default=None)
        estimator = member_from_spec(members[0], limit, allocated_cpus())
    else:
        estimator = SLE(members or [], time_limit, executor, wall_limit=wall_limit)
    estimator.validate()
    return estimator


def lost_runs(estimator: Any) -> str:
    """For a run without a complete answer: how many clusters lost every member, and to what."""
    winners = getattr(estimator, "winners_", None)
    if not winners or all(w is not None for w in winners):
        return ""
    statuses = [r.status for c, w in enumerate(winners) if w is None for r in estimator.cluster_runs_[c]
                if r is not None]
    counts = {s: statuses.count(s) for s in sorted(set(statuses))}
    return (f": {sum(w is None for w in winners)} of {len(winners)} clusters have no result (member runs "
            f"{', '.join(f'{k}: {v}' for k, v in counts.items())})")


def graph_meta(estimator: Any, method: str, seconds: float, **context: Any) -> dict[str, Any]:
    """The `meta` of a result graph (or of a run's account without one), the same from every front end."""
    from hpc.learners.runtime import TETRAD_VERSION

    return {**estimator.result_meta(), "method": method, **context, "total_seconds": round(seconds, 3),
            "tetrad_version": TETRAD_VERSION}


def learn_file(data: str | Path, output: str | Path, spec: MethodSpec, time_limit: float | None = None,
               wall_limit: float | None = None, checkpoint: str | Path | None = None, parallel: bool = True,
               scheduler: str | None = None, workers: int | None = None, label: str | None = None,
               knowledge: str | Path | None = None, nodes: int | None = None, worker_job: Any = None) -> Any:
    """`psle learn`'s whole run, here or as a SLURM job: read and check the data (and the `knowledge`
    file against it), fit on a fresh executor, write the graph with its meta; a run without a complete
    answer writes nothing."""
    import sys
    import time

    from hpc.data.tabular import check_learnable, read_data
    from hpc.executors import announce_dashboard, make_executor
    from hpc.graphs.io import write_graph
    from hpc.learners.members import Member, check_runtime

    learner = build_estimator(spec, time_limit, wall_limit, checkpoint=checkpoint)
    label = label or spec.name
    check_runtime()
    x, variables = read_data(data)
    check_learnable(x, variables, str(data), warn=False)  # refusals name the file; the learner warns
    if knowledge is not None:
        from hpc.graphs.knowledge import read_knowledge

        learner.knowledge = read_knowledge(knowledge, variables)
        learner.validate()
    print(f"psle: {label} on {data} ({x.shape[0]} rows, {x.shape[1]} variables)", file=sys.stderr)
    start = time.perf_counter()
    kind = "local" if parallel and not isinstance(learner, Member) else "serial"
    if nodes:
        kind, workers = "slurm_dask", nodes
        print(f"psle: starting {nodes} SLURM worker job{'s' * (nodes != 1)} ({worker_job.cores} cores, "
              f"{worker_job.memory} each)", file=sys.stderr)
    with make_executor(kind, scheduler, workers, worker_job) as executor:
        announce_dashboard(executor)
        learner.executor = executor
        learner.fit(x, variables)
    seconds = time.perf_counter() - start
    if learner.status_ != "ok" or learner.graph_ is None:
        given = ", ".join(f"{flag} {value:g}" for flag, value in (("--time-limit", time_limit),
                                                                  ("--wall-limit", wall_limit)) if value is not None)
        raise PsleError(f"{label} {learner.status_ if learner.status_ != 'ok' else 'gave no graph'} after "
                        f"{seconds:.1f} s{f' ({given})' if given else ''}{lost_runs(learner)}; nothing written")
    write_graph(output, learner.graph_, graph_meta(learner, spec.name, seconds, data=str(data),
                                                   **({"knowledge": str(knowledge)} if knowledge else {})))
    print(f"psle: {learner.graph_.n_edges} edges in {seconds:.1f} s -> {output}", file=sys.stderr)
    return learner


def write_ensemble(path: str | Path, members: list[dict[str, Any]], rounds: list[dict[str, Any]],
                   settings: dict[str, Any]) -> None:
    """A trained ensemble as YAML, usable as `--sle` / `method.sle`; named after its file."""
    import json

    import yaml

    from hpc.atomic import write_text_atomic
    from hpc.jsontext import dumps

    doc = {"name": Path(path).stem, "members": members, "training": {"rounds": rounds, "settings": settings}}
    write_text_atomic(path, "# Learned by Auto-SLE (psle train); use with `psle learn --sle THIS_FILE`.\n"
                      + yaml.safe_dump(json.loads(dumps(doc)), sort_keys=False))


def train_ensemble(config: Any, checkpoint: str | Path, output: str | Path, executor: Any,
                   progress: bool = True) -> Any:
    """Auto-SLE from (or resuming) `checkpoint`, then the ensemble file `output`."""
    from hpc.train.autosle import train

    result = train(config, str(checkpoint), executor, progress)
    write_ensemble(output, result.members, result.rounds, config.settings())
    return result
