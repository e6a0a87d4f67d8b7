"""P/SLE from Python: `hpc.learn(data, **settings)` runs `psle learn`'s run path (hpc.run) on a pandas
DataFrame, a numpy array or a data file and returns a `Result` (a networkx graph, an adjacency matrix, the
edges, the run's meta, bootstrap frequencies); `hpc.evaluate(result, truth)` scores it as `psle evaluate`
does; `hpc.PSLE` is the same in scikit-learn's habit. The settings, and their defaults, are `psle learn`'s
flags with underscores (`time_limit=` for `--time-limit`); every refusal is a one-line PsleError.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from hpc.errors import PsleError
from hpc.graphs.knowledge import Knowledge
from hpc.graphs.pdag import PDAG, UNDIRECTED
from hpc.jsontext import dumps


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and not math.isnan(v)


def _whole(least: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= least


def _path(v: Any) -> bool:
    return isinstance(v, (str, os.PathLike))


_positive = _optional(lambda v: _number(v) and 0 < v < math.inf)
_consensus = ("threshold", "majority", "highest", "preserved")

#: Each setting: its default (`psle learn`'s), what it must be, and how to say so.
SETTINGS: dict[str, tuple[Any, Callable[[Any], bool], str]] = {
    "method": ("p-sle", lambda v: isinstance(v, str), "a method name such as 'p-sle', 'sle', 'p-fges' or 'fges'"),
    "sle": (None, _optional(_path), "an ensemble name (learned, default, random, portfolio) or a .yaml path"),
    "selection": (None, lambda v: v in (None, "all", "predicted"), "'all' or 'predicted' (None: the method's default)"),
    "selector": (None, _optional(_path), "'truth', 'bic' or a selector .json path"),
    "top_k": (1, _whole(1), "a whole number >= 1"),
    "runaway": (None, _optional(lambda v: _number(v) and 0 <= v < math.inf), "a factor >= 1, or 0 (off)"),
    "param": (None, _optional(lambda v: isinstance(v, Mapping)), "a dict of learner parameters, e.g. {'penalty': 2}"),
    "pef": (None, _optional(lambda v: isinstance(v, Mapping)), "a dict of PEF settings, e.g. {'max_size': 300}"),
    "time_limit": (None, _positive, "a positive number of seconds (per member run)"),
    "wall_limit": (None, _positive, "a positive number of seconds (for the whole run)"),
    "checkpoint": (None, _optional(_path), "a path to a .h5 file"),
    "knowledge": (None, _optional(lambda v: _path(v) or isinstance(v, Knowledge)),
                  "a knowledge file's path (Tetrad's text format) or an hpc.graphs.knowledge.Knowledge"),
    "scheduler": (None, _optional(lambda v: isinstance(v, str)), "a dask scheduler's address"),
    "workers": (None, _optional(_whole(1)), "a whole number >= 1 of local dask workers"),
    "serial": (False, lambda v: isinstance(v, bool), "True or False"),
    "bootstrap": (None, _optional(_whole(1)), "a whole number >= 1 of resamples"),
    "subsample": (None, _optional(lambda v: _number(v) and 0 < v < 1), "a share of the rows in (0, 1)"),
    "bootstrap_seed": (0, _whole(0), "a whole number >= 0"),
    "consensus": ("threshold", lambda v: v in _consensus, f"one of {', '.join(map(repr, _consensus))}"),
    "threshold": (0.5, lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "output": (None, _optional(_path), "a graph file's path (.json, .csv, .txt, .graphml or .dot)"),
    "progress": (True, lambda v: isinstance(v, bool), "True or False"),
}


def settings_of(given: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting, the given ones checked (an unknown name is refused, naming the known ones)."""
    unknown = [name for name in given if name not in SETTINGS]
    if unknown:
        hint = " (submit SLURM jobs with `psle learn --slurm`)" if {"slurm", "nodes"} & set(unknown) else ""
        raise PsleError(f"unknown setting {unknown[0]!r}{hint}; known: {', '.join(SETTINGS)}")
    for name, value in given.items():
        if not SETTINGS[name][1](value):
            raise PsleError(f"{name}={value!r}: must be {SETTINGS[name][2]}")
    return {name: given.get(name, default) for name, (default, _, _) in SETTINGS.items()}


@dataclass(frozen=True)
class Result:
    """A learned graph (a CPDAG), the run's account (`meta`, what the JSON file carries) and, after a bootstrap,
    each pair's edge frequencies."""

    graph: PDAG
    meta: dict[str, Any]
    frequencies: pd.DataFrame | None = None  # a, b, share -->, <--, ---, none, adjacent; most often adjacent first

    @property
    def variables(self) -> tuple[str, ...]:
        return self.graph.variables

    @property
    def edges(self) -> list[tuple[str, str, str]]:
        """(from, to, mark): mark `-->` (from causes to) or `---` (undirected: the data cannot tell the direction)."""
        return self.graph.named_edges()

    def to_networkx(self) -> nx.DiGraph:
        """Every variable, isolated ones too; a directed edge once (mark `-->`), an undirected one both ways (each
        mark `---`); after a bootstrap each edge carries its `frequency` and `adjacency`."""
        from hpc.graphs.io import to_networkx

        return to_networkx(self.graph, self._edge_attributes())

    def adjacency(self) -> pd.DataFrame:
        """A variables x variables 0/1 matrix: [a, b] = 1 when the edge a --> b is there, and both [a, b] and
        [b, a] for a --- b (the adjacency of `to_networkx()`)."""
        p = self.graph.p
        matrix = np.zeros((p, p), dtype=np.int64)
        d, u = self.graph.directed, self.graph.undirected
        matrix[d[:, 0], d[:, 1]] = 1
        matrix[u[:, 0], u[:, 1]] = matrix[u[:, 1], u[:, 0]] = 1
        names = pd.Index(self.variables, name="from")
        return pd.DataFrame(matrix, index=names, columns=pd.Index(self.variables, name="to"))

    def save(self, path: str | os.PathLike) -> None:
        """The graph in the format `path`'s suffix names (as `psle convert` writes: .json with the meta, .csv,
        Tetrad .txt, .graphml, .dot)."""
        from hpc.atomic import check_output
        from hpc.graphs.io import GRAPH_FORMATS, write_graph

        check_output(path, GRAPH_FORMATS, "the graph file")
        write_graph(path, self.graph, self.meta, self._edge_attributes())

    def _edge_attributes(self) -> dict[tuple[str, str], dict[str, float]] | None:
        """Each edge's bootstrap frequency (of its own mark) and adjacency frequency."""
        if self.frequencies is None:
            return None
        rows = {(r[0], r[1]): r for r in self.frequencies.itertuples(index=False)}
        out = {}
        for a, b, mark in self.edges:
            # columns a, b, -->, <--, ---, none, adjacent: a --> b is the pair (b, a)'s <--
            row, column = (rows[(a, b)], 2) if (a, b) in rows else (rows[(b, a)], 3)
            out[(a, b)] = {"frequency": float(row[4 if mark == UNDIRECTED else column]), "adjacency": float(row[6])}
        return out

    def __repr__(self) -> str:
        u = len(self.graph.undirected)
        return (f"Result({self.meta.get('method', '?')}: {self.graph.p} variables, {self.graph.n_edges} edges "
                f"({self.graph.n_edges - u} directed, {u} undirected))")


def learn(data: Any, names: list[str] | None = None, **settings: Any) -> Result:
    """Learn a CPDAG from `data` (a DataFrame, whose column names are kept; a 2-D array with optional `names`;
    or a .csv/.tsv/.txt/.h5 path, read as `psle learn` reads it) with `psle learn`'s settings and defaults."""
    from hpc.run import fit_data, method_spec

    _refuse_worker_reimport()
    s = settings_of(settings)
    spec = method_spec(s["method"], _text(s["sle"]), s["selection"], _text(s["selector"]), s["top_k"], s["runaway"],
                       dict(s["param"] or {}), dict(s["pef"] or {}), flag=lambda name: name)
    _check_outputs(data, s["output"], s["checkpoint"])
    x, variables, source = _data(data, names)
    with _workers_explained():
        if s["bootstrap"] is not None:
            return _bootstrap(data if _path(data) else None, x, variables, spec, s)
        learner, meta = fit_data(x, variables, spec, s["time_limit"], s["wall_limit"], s["checkpoint"],
                                 not s["serial"], s["scheduler"], s["workers"], None, s["knowledge"], source=source,
                                 context=_context(data, s["knowledge"]), progress=s["progress"],
                                 flag=lambda name: name)
    result = Result(learner.graph_, json.loads(dumps(meta)))  # the types the JSON file holds
    if s["output"] is not None:
        result.save(s["output"])
    return result


SCRIPT_GUARD = ("dask's worker processes import the script that started them again, which ran hpc.learn at its "
                "top level: put the call under `if __name__ == \"__main__\":`, or pass serial=True")


def _refuse_worker_reimport() -> None:
    """A dask worker process starting (multiprocessing's spawn) runs the user's script again as `__mp_main__`:
    a call from its top level there must not start a run of its own, nor let the script go on."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("hpc."):
        frame = frame.f_back
    if frame.f_globals.get("__name__") == "__mp_main__":
        raise SystemExit(f"psle: error: {SCRIPT_GUARD}")


@contextlib.contextmanager
def _workers_explained() -> Iterator[None]:
    """dask's own error when its workers could not start (see `_refuse_worker_reimport`) as one line."""
    try:
        yield
    except RuntimeError as exc:
        if "failed to start" not in str(exc):
            raise
        raise PsleError(SCRIPT_GUARD) from None


def _check_outputs(data: Any, output: Any, checkpoint: Any) -> None:
    """The graph file and the checkpoint: writable, named as their writers understand, not the data file."""
    from hpc.atomic import check_output
    from hpc.graphs.io import GRAPH_FORMATS

    inputs = (data,) if _path(data) else ()
    if output is not None:
        check_output(output, GRAPH_FORMATS, "the graph file", inputs=inputs)
    if checkpoint is not None:
        check_output(checkpoint, (".h5", ".hdf5"), "the checkpoint", inputs=(*inputs, *([output] if output else [])))


def _text(value: Any) -> str | None:
    return None if value is None else os.fspath(value)


def _context(data: Any, knowledge: Any) -> dict[str, Any]:
    """What the meta says of the inputs: the data file and the knowledge file, when they are files."""
    return {**({"data": os.fspath(data)} if _path(data) else {}),
            **({"knowledge": os.fspath(knowledge)} if _path(knowledge) else {})}


def _data(data: Any, names: list[str] | None) -> tuple[np.ndarray, tuple[str, ...], str]:
    """The data matrix, its column names and how messages name it."""
    from hpc.data.tabular import array_data, frame_data, read_data

    if _path(data):
        if names is not None:
            raise PsleError(f"{os.fspath(data)}: names= applies to an array; a file's header row names its columns")
        x, variables = read_data(data)
        return x, variables, os.fspath(data)
    if isinstance(data, pd.DataFrame):
        if names is not None:
            raise PsleError("names= applies to an array; a DataFrame's columns name its variables (rename them)")
        return (*frame_data(data), "the DataFrame")
    if isinstance(data, (np.ndarray, list, tuple)):
        return (*array_data(data, names), "the array")
    raise PsleError(f"data: expected a pandas DataFrame, a 2-D numpy array or a data file's path (.csv, .tsv, .txt, "
                    f".h5), got {type(data).__name__}" + (" (convert it with .to_pandas())"
                                                          if hasattr(data, "to_pandas") else ""))


def _bootstrap(path: Any, x: np.ndarray, variables: tuple[str, ...], spec: Any, s: dict[str, Any]) -> Result:
    """`psle learn --bootstrap`'s run (hpc.bootstrap), with data held here written to a problem file first; the
    resamples are kept beside `output` when given (a rerun runs only the missing ones), else dropped."""
    from hpc.bootstrap import Bootstrap, bootstrap_file
    from hpc.data.problem import Problem, write_problem
    from hpc.graphs.io import read_json

    if s["checkpoint"] is not None:
        raise PsleError("checkpoint does not apply with bootstrap: every finished resample is kept instead "
                        "(beside output=, when given)")
    boot = Bootstrap(s["bootstrap"], s["subsample"], s["bootstrap_seed"], s["consensus"], s["threshold"])
    with tempfile.TemporaryDirectory(prefix="psle-bootstrap-") as tmp:
        held = path is None
        if held:
            path = Path(tmp) / "data.h5"
            write_problem(path, Problem(x, variables))
        knowledge = s["knowledge"]
        if isinstance(knowledge, Knowledge):
            knowledge = Path(tmp) / "knowledge.txt"
            knowledge.write_text(knowledge_text(s["knowledge"]))
        output = Path(s["output"] if s["output"] is not None else Path(tmp) / "bootstrap.json")
        graph = bootstrap_file(path, output, spec, boot, s["time_limit"], s["wall_limit"], not s["serial"],
                               s["scheduler"], s["workers"], knowledge=knowledge)
        meta = read_json(output)[1] if output.suffix.lower() == ".json" else {"method": spec.name}
        frequencies = pd.read_csv(output.with_suffix(".frequencies.csv"), keep_default_na=False)
    if held:
        meta.pop("data", None)  # a temporary file's name
    if s["output"] is None:
        meta.pop("resamples_folder", None)
    return Result(graph, meta, frequencies)


def knowledge_text(knowledge: Knowledge) -> str:
    """A Knowledge in Tetrad's text format (what `read_knowledge` reads)."""
    lines = ["/knowledge", "addtemporal"]
    lines += [f"{t + 1}{'*' * (t in knowledge.closed_tiers)} {' '.join(tier)}" for t, tier in enumerate(knowledge.tiers)]
    lines += ["forbiddirect", *(f"{a} {b}" for a, b in sorted(knowledge.forbidden))]
    lines += ["requiredirect", *(f"{a} {b}" for a, b in sorted(knowledge.required))]
    return "\n".join(lines) + "\n"


def evaluate(result: Any, truth: Any) -> dict[str, float | int]:
    """F1 of adjacencies and of arrowheads (with precision and recall) and SHD of `result` (a Result, a graph
    file, a networkx graph, an edge-list DataFrame) against `truth` (the same kinds, or a problem .h5 file
    with its true DAG), as CPDAGs, as `psle evaluate` scores them. Variables of the result that the truth
    does not list count as isolated there (one warning says so)."""
    estimate, name = as_graph(result, "the result")
    reference, truth_name = as_graph(truth, "the truth", truth=True)
    metrics, notes = score(estimate, reference, name, truth_name)
    for note in notes:
        warnings.warn(note, stacklevel=2)
    return metrics


def as_graph(value: Any, what: str, truth: bool = False) -> tuple[PDAG, str]:
    """A graph from any form the API takes, and how messages name it."""
    from hpc.graphs.io import edges_from_rows, from_networkx

    if isinstance(value, Result):
        return value.graph, what
    if isinstance(value, PDAG):
        return value, what
    if isinstance(value, nx.Graph):
        return from_networkx(value, what), what
    if isinstance(value, pd.DataFrame):
        if len(value.index) == len(value.columns) and list(map(str, value.index)) == list(map(str, value.columns)):
            return _from_adjacency(value, what), what
        cells = value.astype(object).where(value.notna(), "").astype(str)
        return edges_from_rows([list(map(str, value.columns)), *cells.values.tolist()], what), what
    if _path(value):
        return (read_truth(value) if truth else read_result(value)), os.fspath(value)
    raise PsleError(f"{what}: expected a Result, a networkx graph, an edge-list DataFrame or a graph file's path, "
                    f"got {type(value).__name__}")


def _from_adjacency(frame: pd.DataFrame, what: str) -> PDAG:
    """A square DataFrame as `Result.adjacency` writes it: [a, b] = [b, a] = 1 is a --- b."""
    try:
        m = frame.to_numpy(dtype=np.float64) != 0
    except (TypeError, ValueError):
        raise PsleError(f"{what}: an adjacency matrix holds 0 and 1 only") from None
    names = [str(v) for v in frame.columns]
    edges = [[names[i], names[j], UNDIRECTED if m[j, i] else "-->"] for i, j in zip(*np.nonzero(m))
             if not (m[j, i] and j < i)]
    return PDAG.from_named_edges(names, edges)


def read_result(path: str | os.PathLike) -> PDAG:
    from hpc.graphs.io import read_graph

    return read_graph(path)


def read_truth(path: str | os.PathLike) -> PDAG:
    """The true graph: a problem file's DAG, or a graph file (DAG or CPDAG; an edge list `from,to[,edge]`)."""
    from hpc.graphs.io import read_graph

    if Path(path).suffix.lower() in (".h5", ".hdf5"):
        from hpc.data.problem import read_problem

        return read_problem(path, need_truth=True).truth
    return read_graph(path)


def score(estimate: PDAG, truth: PDAG, estimate_name: str, truth_name: str) -> tuple[dict[str, Any], list[str]]:
    """The metrics of `estimate` against the CPDAG of `truth` over the estimate's variables, and notes for the
    user: variables the truth does not list are isolated there; a truth with cycles is compared as given.
    A truth variable missing from the estimate is refused (the graph was learned from other data)."""
    from hpc.graphs.equivalence import to_cpdag
    from hpc.graphs.metrics import compare

    learned = set(estimate.variables)
    missing = [v for v in truth.variables if v not in learned]
    if missing:
        raise PsleError(f"{truth_name}: {len(missing)} variable(s) not in {estimate_name}: {_shown(missing)}; was it "
                        "learned from other data? Remove them from the truth, or learn from data with those columns")
    notes = []
    known = set(truth.variables)
    extra = [v for v in estimate.variables if v not in known]
    if extra:
        notes.append(f"{truth_name}: {len(extra)} variable(s) of {estimate_name} are not in it ({_shown(extra)}): "
                     "counted as having no true edges")
    reference = truth.reindexed(estimate.variables)
    try:
        reference = to_cpdag(reference)
    except PsleError as exc:
        # A reference network from the literature may have cycles (Sachs et al.'s consensus does): it has no
        # equivalence class, so it is compared as written, as published comparisons do.
        notes.append(f"{truth_name}: not a DAG ({exc}); compared edge by edge as given")
    return compare(estimate, reference).as_dict(), notes


def _shown(names: list[str]) -> str:
    return ", ".join(repr(v) for v in names[:5]) + (" ..." if len(names) > 5 else "")


class PSLE:
    """`learn` as a scikit-learn style estimator: `PSLE(method="p-fges").fit(df)` sets `result_` (the Result),
    `graph_` (its networkx DiGraph), `adjacency_`, `feature_names_in_` and `n_features_in_`."""

    def __init__(self, **settings: Any):
        settings_of(settings)
        self._settings = dict(settings)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return settings_of(self._settings)

    def set_params(self, **params: Any) -> PSLE:
        settings_of({**self._settings, **params})
        self._settings.update(params)
        return self

    def fit(self, X: Any, y: Any = None, names: list[str] | None = None) -> PSLE:
        """Learn from X (rows are samples); `y` is ignored (structure learning has no target)."""
        self.result_ = learn(X, names, **self._settings)
        self.graph_ = self.result_.to_networkx()
        self.adjacency_ = self.result_.adjacency()
        self.feature_names_in_ = np.array(self.result_.variables, dtype=object)
        self.n_features_in_ = len(self.result_.variables)
        return self

    def __repr__(self) -> str:
        return f"PSLE({', '.join(f'{k}={v!r}' for k, v in self._settings.items())})"
