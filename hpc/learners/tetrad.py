"""Calls into Tetrad; runs inside a JVM-hosting worker process (see worker.py).

Data cross as one covariance matrix (computed by numpy, which is ~40x faster than Tetrad's
own at p = 1000) with its sample size; graphs come back as integer edge arrays. Variables
get synthetic names that hash well: names like X0..X999 make Tetrad's Edge hashes collide
and fGES about 3x slower.
"""

from __future__ import annotations

import re
from typing import Any

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


def tetrad_knowledge(spec: dict[str, Any] | None):
    """Tetrad's Knowledge from hpc.graphs.knowledge's indexed form (None: no knowledge)."""
    from edu.cmu.tetrad.data import Knowledge

    knowledge = Knowledge()
    if spec is None:
        return knowledge
    for t, tier in enumerate(spec["tiers"]):
        for i in tier:
            knowledge.addToTier(t, tetrad_name(int(i)))
    for t in spec["closed"]:
        knowledge.setTierForbiddenWithin(int(t), True)
    for a, b in np.asarray(spec["forbidden"]).tolist():
        knowledge.setForbidden(tetrad_name(a), tetrad_name(b))
    for a, b in np.asarray(spec["required"]).tolist():
        knowledge.setRequired(tetrad_name(a), tetrad_name(b))
    return knowledge


def reorder_knowledge(spec: dict[str, Any] | None, order: np.ndarray) -> dict[str, Any] | None:
    """`spec` for the variables taken in `order` (variable order[k] becomes k)."""
    if spec is None:
        return None
    new = np.argsort(order)
    return {"tiers": [[int(new[i]) for i in tier] for tier in spec["tiers"]], "closed": spec["closed"],
            "forbidden": new[np.asarray(spec["forbidden"], dtype=np.int64)].reshape(-1, 2),
            "required": new[np.asarray(spec["required"], dtype=np.int64)].reshape(-1, 2)}


def run_fges(cov: np.ndarray, n: int, penalty: float, max_degree: int, faithfulness: bool,
             threads: int = 1, knowledge: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
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
    if knowledge is not None:
        search.setKnowledge(tetrad_knowledge(knowledge))
    return graph_to_arrays(search.search(), cov.shape[0])


def data_set(x: np.ndarray):
    """A Tetrad DataSet over synthetic variables: scores then compute covariances of the few
    variables each evaluation needs, so memory grows with n * p, not p^2."""
    from edu.cmu.tetrad.data import BoxDataSet, ContinuousVariable, DoubleDataBox
    from java.util import ArrayList
    from jpype import JArray, JDouble

    nodes = ArrayList()
    for i in range(x.shape[1]):
        nodes.add(ContinuousVariable(tetrad_name(i)))
    return BoxDataSet(DoubleDataBox(JArray(JDouble, 2)(np.ascontiguousarray(x, dtype=np.float64))), nodes)


def _graph(nodes, directed: np.ndarray, undirected: np.ndarray):
    from edu.cmu.tetrad.graph import EdgeListGraph

    graph = EdgeListGraph(nodes)
    for a, b in np.asarray(directed).tolist():
        graph.addDirectedEdge(nodes.get(a), nodes.get(b))
    for a, b in np.asarray(undirected).tolist():
        graph.addUndirectedEdge(nodes.get(a), nodes.get(b))
    return graph


def run_fges_bounded(x: np.ndarray, penalty: float, directed: np.ndarray, undirected: np.ndarray,
                     pairs: np.ndarray | None, threads: int = 1,
                     knowledge: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """fGES (faithfulness assumed) over all columns of `x`, started from the PDAG (`directed`,
    `undirected`) and adding edges only between `pairs` (Fges's bound graph; None: any pair), as
    `knowledge` allows; it may remove any edge."""
    start_jvm()
    from edu.cmu.tetrad.search import Fges
    from edu.cmu.tetrad.search.score import SemBicScore

    data = data_set(x)
    score = SemBicScore(data, False)  # this constructor leaves the penalty unset: set it
    score.setPenaltyDiscount(float(penalty))
    nodes = data.getVariables()
    search = Fges(score)
    search.setFaithfulnessAssumed(True)
    search.setMaxDegree(-1)
    search.setNumThreads(int(threads))
    search.setVerbose(False)
    if pairs is not None:
        search.setBoundGraph(_graph(nodes, np.empty((0, 2), dtype=np.int64), pairs))
    search.setInitialGraph(_graph(nodes, directed, undirected))
    if knowledge is not None:
        search.setKnowledge(tetrad_knowledge(knowledge))
    return graph_to_arrays(search.search(), x.shape[1])


def run_boss_bounded(x: np.ndarray, penalty: float, order: np.ndarray, pairs: np.ndarray,
                     threads: int = 1, knowledge: dict[str, Any] | None = None) -> np.ndarray:
    """BOSS over the columns of `x`, started from `order`, where a variable's parents may come only from its
    partners in `pairs` (and its required parents), as `knowledge` allows; the DAG it ends at, as parent ->
    child rows. The restriction goes into each variable's grow-shrink tree (its forbidden parents), which is
    where BOSS scores parent sets; BOSS itself keeps the knowledge's tiers and required edges in its moves."""
    start_jvm()
    from edu.cmu.tetrad.search import Boss, PermutationSearch
    from java.util import ArrayList

    p = x.shape[1]
    score = _sem_bic(np.atleast_2d(np.cov(x, rowvar=False)), x.shape[0], penalty)
    nodes = score.getVariables()
    boss = Boss(score)
    boss.setUseBes(False)
    boss.setNumStarts(1)
    boss.setNumThreads(int(threads))
    boss.setVerbose(False)
    search = PermutationSearch(boss)
    search.setSeed(0)
    if knowledge is not None:  # each tree gets the knowledge's required and forbidden parents first
        search.setKnowledge(tetrad_knowledge(knowledge))
    partners: list[list[int]] = [[v] for v in range(p)]
    for a, b in np.asarray(pairs).tolist():
        partners[a].append(b)
        partners[b].append(a)
    for v in range(p):
        tree = search.getGST(nodes.get(v))
        required, forbidden, allowed = ArrayList(tree.getRequired()), ArrayList(nodes), ArrayList(tree.getRequired())
        for u in partners[v]:
            allowed.add(nodes.get(u))
        forbidden.removeAll(allowed)
        forbidden.addAll(tree.getForbidden())
        tree.setKnowledge(required, forbidden)
    start = ArrayList()
    for i in np.asarray(order).tolist():
        start.add(nodes.get(i))
    search.setOrder(start)
    search.search(False)
    index = {str(nodes.get(i).getName()): i for i in range(p)}
    parents = boss.getParents()
    return np.array([(index[str(u.getName())], v) for v in range(p) for u in parents.get(nodes.get(v))],
                    dtype=np.int64).reshape(-1, 2)


def run_pc(cov: np.ndarray, n: int, alpha: float, depth: int,
           knowledge: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
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
    if knowledge is not None:
        search.setKnowledge(tetrad_knowledge(knowledge))
    return graph_to_arrays(search.search(), cov.shape[0])



def _sem_bic(cov: np.ndarray, n: int, penalty: float):
    from edu.cmu.tetrad.search.score import SemBicScore

    score = SemBicScore(covariance_matrix(cov, n))
    score.setPenaltyDiscount(float(penalty))
    return score


#: Degree limit of the fGES that gives an order search its start: a start needs an order, not every edge.
#: Uncapped, it took 3-6x BOSS's own time on scale-free clusters with hubs (sf-1000: 286 variables, 56 s
#: against 26 s); capped at 10 it took 5 s there, and Alarm's variables have fewer neighbours than that.
START_DEGREE = 10


def start_order(cov: np.ndarray, n: int, penalty: float, start: str, threads: int = 1,
                knowledge: dict[str, Any] | None = None) -> np.ndarray:
    """Where an order search starts. "fges": a topological order of a DAG in the equivalence class a
    faithful fGES (same penalty, degree at most START_DEGREE) finds, so the search starts near a good
    order whatever the column order; "columns": the order of `cov`'s columns (the learners' data-derived
    canonical order, in effect a random one)."""
    from hpc.graphs.equivalence import pdag_to_dag, topological_order
    from hpc.graphs.pdag import PDAG

    if start == "columns":
        return np.arange(cov.shape[0])
    directed, undirected = run_fges(cov, n, penalty, START_DEGREE, True, threads, knowledge)
    names = tuple(str(i) for i in range(cov.shape[0]))
    return topological_order(pdag_to_dag(PDAG(names, directed, undirected), strict=False))


def _in_order(search, cov: np.ndarray, order: np.ndarray,
              knowledge: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run `search(cov reordered, its knowledge)` and give its edges back in `cov`'s indices."""
    directed, undirected = search(np.ascontiguousarray(cov[np.ix_(order, order)]),
                                  tetrad_knowledge(reorder_knowledge(knowledge, order)))
    return order[directed], order[undirected]


def run_boss(cov: np.ndarray, n: int, penalty: float, num_starts: int, use_bes: bool, start: str = "fges",
             threads: int = 1, knowledge: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """BOSS (Andrews et al. 2023) inside Tetrad's PermutationSearch, called directly so the thread
    count is ours (Tetrad's algcomparison wrapper fixes 4); seeded, so a run is repeatable. Its first
    start is the given order (see start_order)."""
    start_jvm()
    from edu.cmu.tetrad.search import Boss, PermutationSearch

    def search(c: np.ndarray, known) -> tuple[np.ndarray, np.ndarray]:
        boss = Boss(_sem_bic(c, n, penalty))
        boss.setUseBes(bool(use_bes))
        boss.setNumStarts(int(num_starts))
        boss.setNumThreads(int(threads))
        boss.setVerbose(False)
        permutation = PermutationSearch(boss)
        permutation.setSeed(0)
        permutation.setKnowledge(known)
        return graph_to_arrays(permutation.search(True), c.shape[0])

    return _in_order(search, cov, start_order(cov, n, penalty, start, threads, knowledge), knowledge)


def run_grasp(cov: np.ndarray, n: int, penalty: float, depth: int, num_starts: int,
              start: str = "fges", knowledge: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """GRaSP (greedy relaxations of the sparsest permutation) with Tetrad's SemBicScore; seeded; its
    first start is the given order (see start_order)."""
    start_jvm()
    from edu.cmu.tetrad.search import Grasp

    def search(c: np.ndarray, known) -> tuple[np.ndarray, np.ndarray]:
        score = _sem_bic(c, n, penalty)
        grasp = Grasp(score)
        grasp.setKnowledge(known)
        grasp.setDepth(int(depth))
        grasp.setNumStarts(int(num_starts))
        grasp.setSeed(0)
        grasp.setVerbose(False)
        grasp.bestOrder(score.getVariables())
        return graph_to_arrays(grasp.getGraph(True), c.shape[0])

    return _in_order(search, cov, start_order(cov, n, penalty, start, knowledge=knowledge), knowledge)
