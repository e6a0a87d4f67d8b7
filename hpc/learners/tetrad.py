"""Calls into Tetrad; runs inside a JVM-hosting worker process (see worker.py).

Data cross as one covariance matrix (computed by numpy, which is ~40x faster than Tetrad's
own at p = 1000) with its sample size; graphs come back as integer edge arrays. Variables
get synthetic names that hash well: names like X0..X999 make Tetrad's Edge hashes collide
and fGES about 3x slower.
"""

from __future__ import annotations

import re

import numpy as np

from hpc.learners.jvm import start_jvm


def tetrad_name(i: int) -> str:
    return f"v{i}q{(i * 2654435761) % 4294967296:08x}"


_NAME = re.compile(r"\bv(\d+)q[0-9a-f]{8}\b")


def user_names(text: str, variables: tuple[str, ...]) -> str:
    """Put the user's variable names back into a Tetrad message."""
    return _NAME.sub(lambda m: variables[int(m.group(1))] if int(m.group(1)) < len(variables) else m.group(0), text)


def covariance_matrix(cov: np.ndarray, n: int):
    """A Tetrad CovarianceMatrix over synthetic variables, from a numpy covariance (ddof=1)."""
    from edu.cmu.tetrad.data import ContinuousVariable, CovarianceMatrix
    from java.util import ArrayList
    from jpype import JArray, JDouble

    nodes = ArrayList()
    for i in range(cov.shape[0]):
        nodes.add(ContinuousVariable(tetrad_name(i)))
    return CovarianceMatrix(nodes, JArray(JDouble, 2)(np.ascontiguousarray(cov, dtype=np.float64)), int(n))


def graph_to_arrays(graph, p: int) -> tuple[np.ndarray, np.ndarray]:
    """(directed, undirected) index arrays; bidirected or circle edges count as undirected."""
    index = {tetrad_name(i): i for i in range(p)}
    directed, undirected = [], []
    for edge in graph.getEdges():
        a, b = index[str(edge.getNode1().getName())], index[str(edge.getNode2().getName())]
        e1, e2 = str(edge.getEndpoint1().name()), str(edge.getEndpoint2().name())
        if e1 == "TAIL" and e2 == "ARROW":
            directed.append((a, b))
        elif e1 == "ARROW" and e2 == "TAIL":
            directed.append((b, a))
        else:
            undirected.append((a, b))
    return (np.array(directed, dtype=np.int64).reshape(-1, 2), np.array(undirected, dtype=np.int64).reshape(-1, 2))


def run_fges(cov: np.ndarray, n: int, penalty: float, max_degree: int, faithfulness: bool,
             threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    start_jvm()
    from edu.cmu.tetrad.search import Fges
    from edu.cmu.tetrad.search.score import SemBicScore

    score = SemBicScore(covariance_matrix(cov, n))
    score.setPenaltyDiscount(float(penalty))
    search = Fges(score)
    search.setMaxDegree(int(max_degree))  # Fges copies ceil(ln n) from the score otherwise
    search.setFaithfulnessAssumed(bool(faithfulness))
    search.setNumThreads(int(threads))
    search.setVerbose(False)
    return graph_to_arrays(search.search(), cov.shape[0])


def run_pc(cov: np.ndarray, n: int, alpha: float, depth: int) -> tuple[np.ndarray, np.ndarray]:
    start_jvm()
    from edu.cmu.tetrad.search import Pc
    from edu.cmu.tetrad.search.test import IndTestFisherZ
    from edu.cmu.tetrad.util import RandomUtil

    # Pc breaks some ties with Tetrad's global random generator: fix it, so that only thread
    # timing in the adjacency search remains between two runs (the numpy engine has neither).
    RandomUtil.getInstance().setSeed(0)

    search = Pc(IndTestFisherZ(covariance_matrix(cov, n), float(alpha)))
    search.setStable(True)
    search.setDepth(int(depth))
    search.setVerbose(False)
    return graph_to_arrays(search.search(), cov.shape[0])



def _sem_bic(cov: np.ndarray, n: int, penalty: float):
    from edu.cmu.tetrad.search.score import SemBicScore

    score = SemBicScore(covariance_matrix(cov, n))
    score.setPenaltyDiscount(float(penalty))
    return score


def run_boss(cov: np.ndarray, n: int, penalty: float, num_starts: int, use_bes: bool,
             threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """BOSS (Andrews et al. 2023) inside Tetrad's PermutationSearch, called directly so the thread
    count is ours (Tetrad's algcomparison wrapper fixes 4); seeded, so a run is repeatable."""
    start_jvm()
    from edu.cmu.tetrad.search import Boss, PermutationSearch

    boss = Boss(_sem_bic(cov, n, penalty))
    boss.setUseBes(bool(use_bes))
    boss.setNumStarts(int(num_starts))
    boss.setNumThreads(int(threads))
    boss.setVerbose(False)
    search = PermutationSearch(boss)
    search.setSeed(0)
    return graph_to_arrays(search.search(True), cov.shape[0])


def run_grasp(cov: np.ndarray, n: int, penalty: float, depth: int, num_starts: int) -> tuple[np.ndarray, np.ndarray]:
    """GRaSP (greedy relaxations of the sparsest permutation) with Tetrad's SemBicScore; seeded."""
    start_jvm()
    from edu.cmu.tetrad.search import Grasp

    score = _sem_bic(cov, n, penalty)
    grasp = Grasp(score)
    grasp.setDepth(int(depth))
    grasp.setNumStarts(int(num_starts))
    grasp.setSeed(0)
    grasp.setVerbose(False)
    grasp.bestOrder(score.getVariables())
    return graph_to_arrays(grasp.getGraph(True), cov.shape[0])
