"""Problems with known truth to learn from, drawn as in the paper (§4.1.2): Auto-SLE's training set here,
the selection records' problems in hpc.train.records, both sized and seeded by the two helpers below.

A problem is named by (network, nodes, seed, samples, edge weights) and regenerated on demand,
so the training set costs no disk and a checkpoint only has to store those values.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from hpc.data.generate import GRAPH_MODELS, WEIGHTS, check_weights, weights_setting
from hpc.data.networks import bnlearn_names, load_network
from hpc.errors import PsleError


def log_uniform_nodes(rng: np.random.Generator, low: int, high: int) -> int:
    """A problem size drawn log-uniformly in [low, high]: as many small problems as large ones per decade."""
    return int(round(np.exp(rng.uniform(np.log(low), np.log(high)))))


def problem_seed(seed: int, k: int) -> int:
    """The k-th problem's generator seed under a set's `seed`: sets with other seeds share no problem."""
    return seed * 1_000_003 + k


@dataclass(frozen=True)
class TrainingConfig:
    problems: int = 100
    min_nodes: int = 5
    max_nodes: int = 1000
    samples: int = 1000
    seed: int = 0
    # bnlearn bases and random graph models (hpc.data.generate.GRAPH_MODELS) to draw from;
    # empty = every library network small enough for max_nodes
    networks: tuple[str, ...] = ()
    weights: tuple[float, float] = WEIGHTS  # edge-weight magnitudes of the generated problems

    def as_dict(self) -> dict:
        fields = {k: v for k, v in asdict(self).items() if k != "weights"}
        return {**fields, "networks": list(self.networks), **weights_setting(self.weights)}


@dataclass(frozen=True)
class ProblemSpec:
    network: str
    nodes: int
    seed: int
    samples: int
    weights: tuple[float, float] = WEIGHTS


def training_problems(config: TrainingConfig) -> list[ProblemSpec]:
    """`config.problems` problems: a random base each (a bnlearn network or a random graph model, drawn
    uniformly), sizes log-uniform in [min, max]. A replica is at least its base network's size."""
    if config.problems < 1:
        raise PsleError(f"the training set needs at least one problem, got {config.problems}")
    if not 1 <= config.min_nodes <= config.max_nodes:
        raise PsleError(f"need 1 <= min_nodes <= max_nodes, got {config.min_nodes} and {config.max_nodes}")
    weights = check_weights(config.weights)
    names = list(config.networks) or bnlearn_names()
    pool = [n for n in names if n in GRAPH_MODELS or load_network(n).p <= config.max_nodes]
    if not pool:
        raise PsleError(f"no network in {names} has at most {config.max_nodes} variables")
    rng = np.random.default_rng(config.seed)
    specs = []
    for k in range(config.problems):
        network = pool[int(rng.integers(len(pool)))]
        nodes = log_uniform_nodes(rng, config.min_nodes, config.max_nodes)
        specs.append(ProblemSpec(network, max(nodes, 1), problem_seed(config.seed, k), config.samples, weights))
    return specs


@lru_cache(maxsize=16)
def materialise(spec: ProblemSpec):
    """(covariance, n, variables, truth CPDAG) of a training problem; cached per worker process."""
    from hpc.data.generate import benchmark_problem
    from hpc.graphs.equivalence import dag_to_cpdag
    from hpc.learners.bic import covariance

    graph = spec.network in GRAPH_MODELS
    problem = benchmark_problem(spec.nodes, spec.seed, spec.samples, network=None if graph else spec.network,
                                graph=spec.network if graph else None, weights=spec.weights)
    return covariance(problem.data), problem.n, problem.variables, dag_to_cpdag(problem.truth)
