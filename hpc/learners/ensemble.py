"""Structure learning ensembles (SLE): run every member, keep the output with the best BIC.

`run_member` is the unit of work (module-level and picklable, so dask can ship it); `SLE`
is the scikit-learn-style estimator over it. A member that fails or times out is skipped
with a warning; the ensemble fails only when all of them do.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from hpc.data.tabular import as_learnable, warn_few_rows
from hpc.errors import PsleError
from hpc.graphs.knowledge import Knowledge
from hpc.graphs.pdag import PDAG
from hpc.learners.members import OK, TIMED_OUT, LearnerError, fit_in_canonical_order, member_from_spec


@dataclass
class MemberRun:
    """What one member produced on one (sub)problem."""

    spec: dict[str, Any]
    status: str  # "ok", "timed out" or "failed"
    directed: np.ndarray | None
    undirected: np.ndarray | None
    bic: float | None
    seconds: float
    error: str | None = None

    def summary(self) -> dict[str, Any]:
        return {"member": self.spec, "status": self.status, "bic": self.bic, "seconds": round(self.seconds, 3),
                **({"error": self.error} if self.error else {})}


def remaining(time_limit: float | None, deadline: float | None) -> float | None:
    """The member's own limit cut to what is left before the whole run's `deadline`.

    The deadline is wall-clock (`time.time()`), not a duration, so it means the same on every
    worker whenever the task happens to start.
    """
    if deadline is None:
        return time_limit
    left = deadline - time.time()
    return left if time_limit is None else min(time_limit, left)


def run_member(spec: dict[str, Any], cov: np.ndarray, n: int, variables: tuple[str, ...],
               time_limit: float | None = None, threads: int = 1, deadline: float | None = None,
               knowledge: Knowledge | None = None) -> MemberRun:
    """One member's run on a covariance matrix (a task), with the `knowledge` about `variables`."""
    limit = remaining(time_limit, deadline)
    if limit is not None and limit <= 0:
        return MemberRun(dict(spec), TIMED_OUT, None, None, None, 0.0, "the run's wall limit passed before it started")
    start = time.perf_counter()
    member = member_from_spec(spec, limit, threads)
    member.knowledge = None if knowledge is None else knowledge.restricted(variables)
    try:
        member.fit_covariance(cov, n, variables)
    except LearnerError as exc:
        return MemberRun(dict(spec), "failed", None, None, None, time.perf_counter() - start, str(exc))
    g = member.graph_
    return MemberRun(dict(spec), member.status_, None if g is None else g.directed,
                     None if g is None else g.undirected, member.bic_, member.seconds_)


def best_run(runs: Sequence[MemberRun | None]) -> int | None:
    """Index of the successful run with the highest BIC (first on ties), None if none succeeded;
    None entries are members a selector chose not to run."""
    scored = [(r.bic, -k) for k, r in enumerate(runs)
              if r is not None and r.status == OK and r.bic is not None and np.isfinite(r.bic)]
    return -max(scored)[1] if scored else None


def choose(runs: Sequence[MemberRun], variables: tuple[str, ...], where: str = "") -> tuple[PDAG, int]:
    """The winning graph and its index; warns about members skipped, raises if all failed."""
    for r in runs:
        if r.status != OK:
            warnings.warn(f"{where}member {r.spec} {r.status}{': ' + r.error if r.error else ''}; skipped",
                          stacklevel=2)
    k = best_run(runs)
    if k is None:
        raise PsleError(f"{where}every member of the ensemble failed or timed out")
    won = runs[k]
    assert won.directed is not None and won.undirected is not None  # it succeeded, so it has a graph
    return PDAG(variables, won.directed, won.undirected), k


def check_wall_limit(wall_limit: float | None, who: str) -> None:
    if wall_limit is not None and not wall_limit > 0:
        raise PsleError(f"{who}: wall limit must be positive, got {wall_limit!r}")


def check_members(members: list[dict[str, Any]], time_limit: float | None, empty: str) -> None:
    """Check every member spec before any learner starts, so a typo fails in one line, not hours in."""
    if not members:
        raise PsleError(empty)
    for spec in members:
        member_from_spec(spec, time_limit).validate()


def check_knowledge(members: list[dict[str, Any]], knowledge: Knowledge | None) -> None:
    """Refuse prior knowledge that a member would ignore."""
    if knowledge is None or knowledge.empty:
        return
    for spec in members:
        if not member_from_spec(spec).takes_knowledge:
            raise PsleError(f"member {spec} does not honour prior knowledge")


class SLE:
    """An ensemble of member specs (`{"method": "fges", "penalty": 2, ...}`) chosen between by BIC.

    `time_limit` bounds each member run; `wall_limit` the whole fit, as in PEF: members still
    running are cut at it, the rest never start, and the fit ends with `status_` "timed out" and
    no graph (the best of the members that happened to finish is not the ensemble's answer).
    """

    def __init__(self, members: list[dict[str, Any]], time_limit: float | None = None, executor=None,
                 wall_limit: float | None = None):
        self.members = members
        self.time_limit = time_limit
        self.executor = executor
        self.wall_limit = wall_limit
        self.knowledge: Knowledge | None = None  # a run setting (every member honours it): set before fit

    def ensemble(self) -> list[dict[str, Any]]:
        """The members that run (as PEF.ensemble)."""
        return list(self.members)

    def validate(self) -> None:
        check_members(self.members, self.time_limit, "an ensemble needs at least one member")
        check_wall_limit(self.wall_limit, "SLE")
        check_knowledge(self.members, self.knowledge)

    def fit(self, x: np.ndarray, variables: tuple[str, ...] | list[str] | None = None) -> SLE:
        x, variables = as_learnable(x, variables)
        warn_few_rows(x.shape[0], x.shape[1], "data")
        return fit_in_canonical_order(self, x, variables)

    def fit_covariance(self, cov: np.ndarray, n: int, variables: tuple[str, ...]) -> SLE:
        from hpc.executors import SerialExecutor

        self.validate()
        executor = self.executor or SerialExecutor()
        start = time.perf_counter()
        deadline = None if self.wall_limit is None else time.time() + self.wall_limit
        shared = executor.scatter(cov, broadcast=False)  # one copy for all members
        threads = executor.task_threads(len(self.members))
        tasks = [(spec, shared, n, tuple(variables), self.time_limit, threads, deadline, self.knowledge)
                 for spec in self.members]
        done: dict[int, MemberRun] = dict(executor.run(run_member, tasks))  # every task yields its run
        runs = [done[k] for k in range(len(tasks))]
        self.runs_ = runs
        self.graph_ = self.winner_ = self.bic_ = None
        if deadline is not None and time.time() > deadline:
            self.status_ = TIMED_OUT
        else:
            self.graph_, self.winner_ = choose(runs, tuple(variables))
            self.bic_ = runs[self.winner_].bic
            self.status_ = OK
        self.seconds_ = time.perf_counter() - start
        return self

    def result_meta(self) -> dict[str, Any]:
        return {"method": "sle", "members": self.members, "status": self.status_, "winner": self.winner_, "bic": self.bic_,
                "seconds": round(self.seconds_, 3), "runs": [r.summary() for r in self.runs_]}


def conf_dir() -> Path:
    """The project's Hydra config tree: `$PSLE_CONF_DIR`, else the one shipped inside the package
    (`hpc/conf`, also reachable as the repository's top-level `conf`), so an installed wheel has it."""
    return Path(os.environ.get("PSLE_CONF_DIR") or Path(__file__).resolve().parents[1] / "conf")


def load_sle(name_or_path: str) -> tuple[str, list[dict[str, Any]]]:
    """An ensemble by name (`conf/sle/<name>.yaml`: learned, default, random) or YAML path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = conf_dir() / "sle" / f"{name_or_path}.yaml"
        if not path.is_file():
            known = sorted(p.stem for p in (conf_dir() / "sle").glob("*.yaml"))
            raise PsleError(f"unknown ensemble {name_or_path!r}; known: {', '.join(known)} (or a .yaml path)")
    if not path.is_file():
        raise PsleError(f"{path}: no such file")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise PsleError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    members = doc.get("members") if isinstance(doc, dict) else None
    if not isinstance(members, list) or not members or not all(isinstance(m, dict) for m in members):
        raise PsleError(f"{path}: expected a 'members' list of {{method: ..., parameters...}} entries")
    for k, spec in enumerate(members):
        try:
            member_from_spec(spec).validate()
        except PsleError as exc:
            raise PsleError(f"{path}: member {k + 1}: {exc}") from None
    return str(doc.get("name", path.stem)), [dict(m) for m in members]
