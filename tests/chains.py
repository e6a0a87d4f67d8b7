"""Running one step after fusion by hand in a test: a chain over a graph and its clusters, serially."""

from __future__ import annotations

import numpy as np

from hpc.executors import SerialExecutor
from hpc.graphs.pdag import PDAG
from hpc.pef.partition import standardize
from hpc.pef.step import Chain, Step, StepMemory
from hpc.progress import Progress


def chain_of(x: np.ndarray, graph: PDAG, clusters: list[np.ndarray], deadline: float | None = None,
             executor=None) -> Chain:
    """What a step sees of `graph` (data `x`, `clusters`): served serially, no checkpoint, no knowledge."""
    return Chain(x, standardize(x, np.float64), graph, clusters, executor or SerialExecutor(), Progress(False),
                 deadline, None, None, "test")


def run_step(step: Step, x: np.ndarray, graph: PDAG, clusters: list[np.ndarray], deadline: float | None = None,
             executor=None) -> tuple[PDAG, dict]:
    """`step` on `graph` (data `x`, `clusters`), with no checkpoint: its graph and account."""
    return step.run(chain_of(x, graph, clusters, deadline, executor), StepMemory(None, step.name))
