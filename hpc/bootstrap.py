"""`psle learn --bootstrap B`: the method run on B resamples of the rows, each edge's frequency per type,
and a consensus graph (hpc.graphs.bootstrap).

Every finished resample is a graph file in a folder beside the output (`<output>.resamples/`), written
atomically and stamped with the settings' fingerprint, so a killed, preempted or rerun bootstrap runs only
the resamples that are missing, and SLURM array tasks (one per resample) write side by side. Files from
other data or settings are refused, not mixed in. The outputs: the consensus graph (its edges carry their
frequencies in GraphML and DOT, and the JSON's meta holds the whole table), the frequency table as CSV,
and a PNG of how the frequencies are distributed.
"""

from __future__ import annotations

import csv
import io
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hpc.atomic import atomic_path, write_text_atomic
from hpc.errors import PsleError
from hpc.graphs.knowledge import Knowledge, read_knowledge
from hpc.graphs.bootstrap import RULES, TYPES, EdgeFrequencies, consensus, edge_frequencies, resample_rows
from hpc.graphs.pdag import PDAG
from hpc.store import fingerprint


@dataclass(frozen=True)
class Bootstrap:
    """How many resamples, drawn how, and the consensus rule."""

    resamples: int
    subsample: float | None = None  # None: n rows with replacement; f: round(f n) rows without
    seed: int = 0
    rule: str = "threshold"
    threshold: float = 0.5

    def validate(self) -> None:
        if isinstance(self.resamples, bool) or not isinstance(self.resamples, int) or self.resamples < 1:
            raise PsleError(f"--bootstrap must be a whole number >= 1, got {self.resamples!r}")
        if self.subsample is not None and not 0.0 < self.subsample < 1.0:
            raise PsleError(f"--subsample must be in (0, 1), got {self.subsample!r}")
        if self.rule not in RULES:
            raise PsleError(f"--consensus must be one of {', '.join(RULES)}, got {self.rule!r}")
        if not 0.0 < self.threshold <= 1.0:
            raise PsleError(f"--threshold must be in (0, 1], got {self.threshold!r}")


def resample_folder(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(output.stem + ".resamples")


def stamp(data_hash: str, method: dict[str, Any], boot: Bootstrap) -> str:
    """What a resample's graph depends on: the data, the method, how resamples are drawn (not the rule)."""
    return fingerprint({"data": data_hash, "method": method, "subsample": boot.subsample, "seed": boot.seed})


def resample_stamp(x: np.ndarray, variables: tuple[str, ...], spec: Any, boot: Bootstrap,
                   knowledge: str | Path | None) -> tuple[str, Knowledge | None]:
    """`stamp` of `psle learn --bootstrap`'s resamples (the prior knowledge, when given, is part of the method),
    and that knowledge read and checked against the data."""
    from hpc.pef.checkpoint import data_hash

    known = None if knowledge is None else read_knowledge(knowledge, variables)
    method = {**asdict(spec), **({"knowledge": known.describe()} if known is not None and not known.empty else {})}
    return stamp(data_hash(x, variables), method, boot), known


def finished(folder: Path, resamples: int, expected: str) -> dict[int, PDAG]:
    """The resamples already in `folder` (under the same stamp); a file of other settings is refused."""
    from hpc.graphs.io import read_json

    done = {}
    for b in range(resamples):
        path = folder / f"resample-{b:05d}.json"
        if path.is_file():
            graph, meta = read_json(path)
            if meta.get("bootstrap_stamp") != expected:
                raise PsleError(f"{path}: a resample of other data or settings; delete {folder} or write elsewhere")
            done[b] = graph
    return done


def run_resample(x: np.ndarray, variables: tuple[str, ...], b: int, boot: Bootstrap, learner: Any, folder: Path,
                 expected: str) -> PDAG | None:
    """Fit `learner` on resample b and keep its graph in `folder`; None when the run gave no graph."""
    from hpc.graphs.io import write_json

    rows = resample_rows(x.shape[0], boot.seed, b, boot.subsample)
    start = time.perf_counter()
    learner.fit(x[rows], variables)
    if learner.status_ != "ok" or learner.graph_ is None:
        return None
    write_json(folder / f"resample-{b:05d}.json", learner.graph_,
               {"bootstrap_stamp": expected, "resample": b, "rows": len(rows),
                "seconds": round(time.perf_counter() - start, 3)})
    return learner.graph_


def frequency_csv(freq: EdgeFrequencies) -> str:
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(["a", "b", *TYPES, "adjacent"])
    out.writerows([*row, round(1.0 - row[-1], 6)] for row in freq.rows())
    return buf.getvalue()


def plot_frequencies(path: Path, freq: EdgeFrequencies, kept: PDAG) -> None:
    """A histogram of the pairs' adjacency frequencies, those in the consensus graph apart."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    inside = np.isin(freq.pairs[:, 0] * len(freq.variables) + freq.pairs[:, 1], kept.skeleton_keys())
    fig, ax = plt.subplots(figsize=(6, 3.5))
    bins = np.linspace(0, 1, 21)
    ax.hist([freq.adjacency[inside], freq.adjacency[~inside]], bins=bins, stacked=True,
            label=["in the consensus graph", "left out"], color=["#1f77b4", "#c7c7c7"])
    ax.set_xlabel(f"adjacency frequency over {freq.resamples} resamples")
    ax.set_ylabel("pairs")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.legend(frameon=False)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buf.getvalue())


def write_outputs(output: Path, freq: EdgeFrequencies, boot: Bootstrap, meta: dict[str, Any]) -> PDAG:
    """The consensus graph (with frequencies), the frequency CSV and the PNG; returns the graph."""
    from hpc.graphs.io import write_graph

    graph = consensus(freq, boot.rule, boot.threshold)
    share = {(freq.variables[i], freq.variables[j]): row for (i, j), row in zip(freq.pairs.tolist(), freq.shares)}
    attributes = {}
    for a, b, mark in graph.named_edges():
        row = share.get((a, b)) if (a, b) in share else share[(b, a)][[1, 0, 2, 3]]
        column = {"-->": 0, "<--": 1, "---": 2}[mark]
        attributes[(a, b)] = {"frequency": round(float(row[column]), 6), "adjacency": round(1.0 - float(row[3]), 6)}
    table = [dict(zip(("a", "b", *TYPES), row)) for row in freq.rows()]
    write_graph(output, graph, {**meta, "bootstrap": {**asdict(boot), "frequencies": table}}, attributes)
    write_text_atomic(output.with_suffix(".frequencies.csv"), frequency_csv(freq))
    plot_frequencies(output.with_suffix(".frequencies.png"), freq, graph)
    return graph


def learn_resample(x: np.ndarray, variables: tuple[str, ...], b: int, boot: Bootstrap, learner: Any, folder: Path,
                   expected: str, said: set[str]) -> PDAG:
    """run_resample, passing on each kind of warning once (not once per resample: `said` holds those given);
    a resample without a graph stops the bootstrap, the finished ones kept."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = run_resample(x, variables, b, boot, learner, folder, expected)
    for w in caught:
        if str(w.message)[:60] not in said:
            said.add(str(w.message)[:60])
            warnings.warn(str(w.message), w.category, stacklevel=3)
    if graph is None:
        raise PsleError(f"resample {b}: {learner.status_}; the finished resamples are kept in {folder}, "
                        "rerun to continue (a larger --time-limit may help)")
    return graph


def bootstrap_file(data: str | Path, output: str | Path, spec: Any, boot: Bootstrap, time_limit: float | None,
                   wall_limit: float | None, parallel: bool = True, scheduler: str | None = None,
                   workers: int | None = None, label: str | None = None, only: list[int] | None = None,
                   knowledge: str | Path | None = None) -> Any:
    """Run the missing resamples here (all, or those in `only`: an array task's share), each under the prior
    `knowledge` file when given, then, when every resample is there, write the outputs. Returns the consensus
    graph, or None when some are still missing."""
    from hpc.data.tabular import check_learnable, read_data
    from hpc.executors import announce_dashboard, make_executor
    from hpc.learners.members import Member, check_runtime
    from hpc.progress import Progress
    from hpc.run import build_estimator

    boot.validate()
    output, folder = Path(output), resample_folder(output)
    x, variables = read_data(data)
    check_learnable(x, variables, str(data), warn=False)  # refusals name the file; the learner warns
    expected, known = resample_stamp(x, variables, spec, boot, knowledge)
    folder.mkdir(parents=True, exist_ok=True)
    done = finished(folder, boot.resamples, expected)
    todo = [b for b in (only if only is not None else range(boot.resamples)) if b not in done]
    learner = build_estimator(spec, time_limit, wall_limit)
    print(f"psle: {label or spec.name} on {boot.resamples} resamples of {data} ({x.shape[0]} rows, "
          f"{x.shape[1]} variables): {len(done)} already done in {folder}", file=sys.stderr)
    check_runtime()
    show = Progress(True)
    said: set[str] = set()
    start = time.perf_counter()
    kind = "local" if parallel and not isinstance(learner, Member) else "serial"
    with make_executor(kind, scheduler, workers) as executor:
        announce_dashboard(executor)
        for b in todo:
            fresh = build_estimator(spec, time_limit, wall_limit)
            if hasattr(fresh, "progress"):
                fresh.progress = False
            fresh.executor = executor
            if known is not None:
                fresh.knowledge = known
                fresh.validate()
            done[b] = learn_resample(x, variables, b, boot, fresh, folder, expected, said)
            show("bootstrap: resamples", len(done), boot.resamples)
    if len(done) < boot.resamples:
        return None
    freq = edge_frequencies([done[b] for b in range(boot.resamples)])
    graph = write_outputs(output, freq, boot, {"method": spec.name, "data": str(data),
                                               "resamples_folder": str(folder),
                                               "seconds_this_run": round(time.perf_counter() - start, 3)})
    print(f"psle: consensus of {boot.resamples} resamples ({boot.rule}"
          f"{f' {boot.threshold:g}' if boot.rule == 'threshold' else ''}): {graph.n_edges} edges -> {output}; "
          f"frequencies -> {output.with_suffix('.frequencies.csv')}, {output.with_suffix('.frequencies.png')}",
          file=sys.stderr)
    return graph
