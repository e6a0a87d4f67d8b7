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


def flat_options(options: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"polish": {"upto": 0}}` (a Hydra config's nesting) as `{"polish.upto": 0}`."""
    flat: dict[str, Any] = {}
    for name, value in options.items():
        if isinstance(value, dict) or hasattr(value, "items"):
            flat.update(flat_options(dict(value.items()), f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def methods() -> tuple[str, ...]:
    """p-sle and sle, then every registered learner inside PEF (p-<name>) and alone."""
    from hpc.learners.members import MEMBERS

    return ("p-sle", "sle", *(f"p-{m}" for m, cls in MEMBERS.items() if cls.pef), *MEMBERS)


def default_selection(method: str, sle: str | None, selector: str | None) -> str:
    """The selection when none is given: p-sle runs the shipped truth selector's choice (more accurate than
    the paper's rule on every held-out family measured, at a fraction of the member runs; bench/HISTORY.md),
    except for an ensemble of the user's own (`sle`) with no selector for it, where the paper's rule is the
    only one that applies."""
    if method != "p-sle" or (sle is not None and selector is None):
        return "all"
    return "predicted"


def method_spec(method: str = "p-sle", sle: str | None = None, selection: str | None = None,
                selector: str | None = None, top_k: int = 1, runaway: float | None = None,
                params: dict[str, Any] | None = None, pef: dict[str, Any] | None = None,
                flag: Any = str) -> MethodSpec:
    """`psle learn`'s (and `hpc.learn`'s) method settings as a MethodSpec; `flag` names a setting in a
    refusal as its front end spells it (`--top-k`, `top_k`)."""
    from hpc.learners.members import MEMBERS

    if method not in methods():
        raise PsleError(f"{flag('method')} {method!r}: unknown; known: {', '.join(methods())}")
    if params and method in ("sle", "p-sle"):
        raise PsleError(f"{flag('param')} does not apply to {method}; put members in a {flag('sle')} YAML file")
    if selection is not None and selection != "all" and method != "p-sle":
        raise PsleError(f"{flag('selection')} {selection} applies to p-sle only, not {method}")
    selection = selection or default_selection(method, sle, selector)
    is_pef = method.startswith("p-")
    options: dict[str, Any] = {"pef_options": dict(pef)} if pef else {}
    if runaway is not None:
        if selection != "predicted":
            raise PsleError(f"{flag('runaway')} applies to {flag('selection')} predicted (it cuts a run that "
                            f"outlasts its prediction), not to this run's selection {selection}")
        options["runaway"] = runaway
    if method in ("sle", "p-sle"):
        predicted = selection == "predicted"
        return MethodSpec(method, is_pef, sle=sle or (None if predicted else "learned"), selection=selection,
                          selector=(selector or "truth") if predicted else None, top_k=top_k, **options)
    base = method[2:] if is_pef else method
    assert base in MEMBERS  # methods() comes from the registry
    return MethodSpec(method, is_pef, members=({"method": base, **(params or {})},), **options)


def pef_configs(options: dict[str, Any]):
    """PartitionConfig, FusionConfig and the steps after fusion with `options` applied and checked: the
    partition's and fusion's settings by their names, a step's as `<step>.<setting>` (hpc.pef.steps)."""
    from hpc.pef.fusion import FusionConfig
    from hpc.pef.partition import PartitionConfig
    from hpc.pef.steps import KINDS, steps_from

    configs = [PartitionConfig(), FusionConfig()]
    known = [{f.name for f in fields(c)} for c in configs]
    chained: dict[str, Any] = {}
    try:
        for name, value in flat_options(options).items():
            where = [k for k, names in enumerate(known) if name in names]
            if "." in name:
                chained[name] = value
            elif where:
                configs[where[0]] = replace(configs[where[0]], **{name: value})
            else:
                steps = [setting for kind in KINDS for setting, _ in kind.settings()]
                raise PsleError(f"{name}: unknown; known: {', '.join(sorted(set().union(*known)) + steps)}")
        for config in configs:
            config.validate()
        steps = steps_from(chained)
    except PsleError as exc:
        raise PsleError(f"PEF setting {exc}") from None
    return configs[0], configs[1], steps


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
        partition, fusion, steps = pef_configs(spec.pef_options)
        estimator = PEF(members, time_limit, partition, fusion, executor=executor, progress=progress, steps=steps,
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
    """`psle learn`'s whole run, here or as a SLURM job: read the data file, `fit_data`, write the graph with
    its meta; a run without a complete answer writes nothing."""
    import sys

    from hpc.data.tabular import read_data
    from hpc.graphs.io import write_graph

    x, variables = read_data(data)
    learner, meta = fit_data(x, variables, spec, time_limit, wall_limit, checkpoint, parallel, scheduler, workers,
                             label, knowledge, nodes, worker_job, source=str(data),
                             context={"data": str(data), **({"knowledge": str(knowledge)} if knowledge else {})})
    write_graph(output, learner.graph_, meta)
    print(f"psle: {learner.graph_.n_edges} edges in {meta['total_seconds']:.1f} s -> {output}", file=sys.stderr)
    return learner


def fit_data(x: Any, variables: tuple[str, ...], spec: MethodSpec, time_limit: float | None = None,
             wall_limit: float | None = None, checkpoint: str | Path | None = None, parallel: bool = True,
             scheduler: str | None = None, workers: int | None = None, label: str | None = None,
             knowledge: Any = None, nodes: int | None = None, worker_job: Any = None, source: str = "data",
             context: dict[str, Any] | None = None, progress: bool = True,
             flag: Any = lambda name: "--" + name.replace("_", "-")) -> tuple[Any, dict[str, Any]]:
    """Check the data (and the `knowledge`, a file or a Knowledge, against it), fit on a fresh executor and
    return the fitted learner with its graph's meta (`context` added to it); a run without a complete answer
    is a PsleError, naming the limits as `flag` spells them. Quiet without `progress`."""
    import sys
    import time

    from hpc.data.tabular import check_learnable
    from hpc.executors import announce_dashboard, make_executor
    from hpc.learners.members import Member, check_runtime

    learner = build_estimator(spec, time_limit, wall_limit, checkpoint=checkpoint, progress=progress)
    label = label or spec.name
    check_runtime()
    check_learnable(x, variables, source, warn=False)  # refusals name the source; the learner warns
    if isinstance(learner, Member):  # a learner that cannot take this shape (FLOP, p >= n) says so first
        learner.check_size(*x.shape)
    if knowledge is not None:
        learner.knowledge = checked_knowledge(knowledge, variables)
        learner.validate()
    say = (lambda text: print(text, file=sys.stderr)) if progress else (lambda text: None)
    say(f"psle: {label} on {source} ({x.shape[0]} rows, {x.shape[1]} variables)")
    start = time.perf_counter()
    kind = "local" if parallel and not isinstance(learner, Member) else "serial"
    if nodes:
        kind, workers = "slurm_dask", nodes
        say(f"psle: starting {nodes} SLURM worker job{'s' * (nodes != 1)} ({worker_job.cores} cores, "
            f"{worker_job.memory} each)")
    with make_executor(kind, scheduler, workers, worker_job) as executor:
        if progress:
            announce_dashboard(executor)
        learner.executor = executor
        learner.fit(x, variables)
    seconds = time.perf_counter() - start
    if learner.status_ != "ok" or learner.graph_ is None:
        given = ", ".join(f"{flag(name)} {value:g}" for name, value in (("time_limit", time_limit),
                                                                        ("wall_limit", wall_limit)) if value is not None)
        raise PsleError(f"{label} {learner.status_ if learner.status_ != 'ok' else 'gave no graph'} after "
                        f"{seconds:.1f} s{f' ({given})' if given else ''}{lost_runs(learner)}; nothing written")
    return learner, graph_meta(learner, spec.name, seconds, **(context or {}))


def checked_knowledge(knowledge: Any, variables: tuple[str, ...]) -> Any:
    """Prior knowledge from a file (checked as it is read) or a Knowledge (every name it uses must be a column)."""
    from hpc.graphs.knowledge import Knowledge, read_knowledge

    if isinstance(knowledge, Knowledge):
        names = {v for tier in knowledge.tiers for v in tier} | {v for e in knowledge.forbidden | knowledge.required
                                                                  for v in e}
        unknown = sorted(names - set(variables))
        if unknown:
            raise PsleError(f"knowledge: unknown variable {unknown[0]!r} (not a column of the data)")
        return knowledge
    return read_knowledge(knowledge, variables)


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
