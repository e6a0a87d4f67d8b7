"""What every step after fusion shares: one small protocol and one wrapper around it.

A step (hpc.pef.steps lists them in order) has a name, its own frozen config, a reason it does not apply to
a graph (or none), and `run`, which returns the next graph and an account of what it did. The wrapper,
`run_chain`, owns everything the steps have in common: the gate (a problem learned whole has nothing to
repair), timing, putting back what prior knowledge says after a step's joins, the checkpoint (each step keeps
its results under its own name) and the account.

No clock decides which steps run or how far: a step's work is bounded by its config (rounds, variables per
search, candidate pairs, passes), so the same data and settings give the same graph on any machine, under any
load. Only the user's whole-run wall limit cuts a search; the run then ends without a graph and says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from hpc.errors import PsleError
from hpc.graphs.equivalence import pdag_to_dag, topological_order
from hpc.graphs.knowledge import Knowledge
from hpc.graphs.pdag import PDAG
from hpc.learners.ensemble import MemberRun
from hpc.pef.checkpoint import RunCheckpoint
from hpc.progress import Progress


class WallLimitHit(Exception):
    """The whole run's wall limit passed during fusion or a step after it: the run has no graph."""


@dataclass
class Chain:
    """What a step sees: the data (`x` as given, `z` standardised; columns in the data-derived order), the
    graph so far, the partition's clusters, where tasks run, the user's deadline and the prior knowledge."""

    x: np.ndarray
    z: np.ndarray
    graph: PDAG
    clusters: list[np.ndarray]
    executor: Any
    show: Progress
    deadline: float | None
    knowledge: Knowledge | None
    memory: RunCheckpoint | None
    settings: str  # fusion's settings: what every step's checkpointed results are valid under
    fused: PDAG | None = None  # fusion's graph, which the steps' own searches may start from (set by run_chain)
    seamless: bool = False  # the graph is one search's over every variable (the rival's): it has no seams
    settled: str | None = None  # why no polish pass follows: a stricter search over every pair left the graph

    @cached_property
    def fused_order(self) -> np.ndarray:
        """A topological order of a DAG of fusion's graph (ties by the data-derived index), derived once."""
        assert self.fused is not None, "run_chain sets the fused graph"
        return topological_order(pdag_to_dag(self.fused, strict=False))

    @property
    def n(self) -> int:
        return int(self.z.shape[0])

    def check_deadline(self, result: Any) -> Any:
        """`result` of a search cut only by the user's wall limit (None then): raise WallLimitHit instead."""
        if result is None:
            raise WallLimitHit
        return result

    def indexed(self, columns: np.ndarray) -> dict | None:
        """The knowledge about `columns` in a search's local indices (None without knowledge)."""
        return None if self.knowledge is None else self.knowledge.indexed([self.graph.variables[c] for c in columns])


class StepMemory:
    """One step's part of the run checkpoint: results by (step name, index), each kept with the spec of the
    search that made it, so a resumed run reuses a result only for the same search."""

    def __init__(self, memory: RunCheckpoint | None, name: str):
        self.memory, self.name = memory, name

    def get(self, index: int, spec: dict[str, Any]) -> MemberRun | None:
        stored = None if self.memory is None else self.memory.steps.get((self.name, index))
        return stored if stored is not None and stored.spec == spec else None

    def put(self, index: int, run: MemberRun, at_once: bool = True) -> None:
        """`at_once=False` for results that come many a second: they are saved in batches (RunCheckpoint)."""
        if self.memory is not None:
            self.memory.put_step(self.name, index, run, at_once)

    def part(self, name: str) -> StepMemory:
        """The memory of one of a step's own searches (each of the recut's polish passes)."""
        return StepMemory(self.memory, f"{self.name}.{name}")


class Step:
    """One step after fusion. Subclasses set `name` and `Config` (a frozen dataclass with `validate()`, whose
    fields are the step's settings, `--pef <name>.<field>=value`) and define `run`; `applies` says why the
    step is left out on a graph (None: it runs); `enabled` is False when its config turns it off."""

    name: ClassVar[str]
    Config: ClassVar[type]
    doc: ClassVar[str]  # one line for `psle learn --help`

    def __init__(self, config: Any = None):
        self.config = self.Config() if config is None else config

    def enabled(self) -> bool:
        return True

    def applies(self, chain: Chain) -> str | None:
        return None

    def run(self, chain: Chain, memory: StepMemory) -> tuple[PDAG, dict[str, Any]]:
        raise NotImplementedError

    @classmethod
    def settings(cls) -> list[tuple[str, Any]]:
        """(`name.field`, default) for each of the step's settings."""
        return [(f"{cls.name}.{f.name}", f.default) for f in fields(cls.Config)]


def changes_note(label: str, account: dict) -> str:
    """A step's progress line: the edges it added, removed and reoriented, or, where its bounds stopped it
    (`stopped` in its account) before it changed an edge, that it kept the graph."""
    moved = {k.removeprefix("edges_"): v for k, v in account.items() if k.startswith("edges_")}
    if account.get("stopped") and not any(moved.values()):
        return f"{label}: the graph is kept as it was"
    return f"{label}: " + (", ".join(f"{v} {k}" for k, v in moved.items()) if moved else "done")


def run_chain(steps: tuple[Step, ...], chain: Chain,
              timed: Callable[[str], AbstractContextManager[None]]) -> dict[str, dict[str, Any] | None]:
    """Each step in turn on `chain.graph` (which ends as the last step's graph); the accounts by step name
    (None for a step its config turns off). A problem learned whole (one cluster) has no seams: no step runs."""
    accounts: dict[str, dict[str, Any] | None] = {step.name: None for step in steps}
    if len(chain.clusters) == 1:
        return accounts
    chain.show.note("after fusion: " + (" -> ".join(s.name for s in steps if s.enabled()) or "no step (all off)"))
    chain.fused = chain.graph
    for step in steps:
        if not step.enabled():
            continue
        reason = step.applies(chain)
        if reason is not None:
            accounts[step.name] = {"skipped": reason}
            chain.show.note(f"{step.name}: not run ({reason})")
            continue
        with timed(step.name):
            begin = time.perf_counter()
            try:
                graph, account = step.run(chain, StepMemory(chain.memory, step.name))
            finally:  # what the step finished is on disk before the next step (or a wall limit's exit)
                if chain.memory is not None:
                    chain.memory.flush()
            if chain.knowledge is not None:  # a join may turn an edge round against the knowledge: put it right
                graph, account["knowledge_fixed"] = chain.knowledge.kept(graph)
            account["seconds"] = round(time.perf_counter() - begin, 3)
        chain.show.note(changes_note(step.name, account))
        chain.graph = graph
        accounts[step.name] = account
    return accounts


def configure(kinds: tuple[type[Step], ...], options: dict[str, Any]) -> tuple[Step, ...]:
    """The steps of `kinds` with `options` ({"polish.upto": 0, ...}) applied to their configs and checked."""
    by_name = {kind.name: kind for kind in kinds}
    configs = {kind.name: kind.Config() for kind in kinds}
    for key, value in options.items():
        name, _, field = key.partition(".")
        if name not in by_name or field not in {f.name for f in fields(by_name[name].Config)}:
            known = ", ".join(k for kind in kinds for k, _ in kind.settings())
            raise PsleError(f"{key}: unknown; known: {known}")
        configs[name] = replace(configs[name], **{field: value})
    for config in configs.values():
        config.validate()
    return tuple(by_name[name](configs[name]) for name in by_name)


def searches(chain: Chain, fn: Callable, tasks: list[tuple]) -> Iterator[tuple[int, Any]]:
    """`fn` over `tasks` on the chain's executor, each result checked against the user's deadline."""
    for t, result in chain.executor.run(fn, tasks):
        yield t, chain.check_deadline(result)
