"""Calls into Tetrad; runs inside a JVM-hosting worker process (see worker.py).

Data cross as one covariance matrix (hpc.learners.bic.covariance: faster than Tetrad's own at p = 1000, and
the same bits on every machine) with its sample size; graphs come back as integer edge arrays. Variables get
synthetic names that hash well: names like X0..X999 make Tetrad's Edge hashes collide and fGES about 3x slower.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from hpc.learners.bic import covariance
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


def tetrad_knowledge(spec: dict[str, Any] | None, tiers: bool = True):
    """Tetrad's Knowledge from hpc.graphs.knowledge's indexed form (None: no knowledge). With `tiers` false the
    tiers become the forbidden edges they imply, as rules over sets of variables (each later tier's variables to
    each earlier tier's, a closed tier's to its own: the rule Tetrad itself keeps for a closed tier), which forbid
    the same edges and leave every variable outside all tiers as far as an order search's start is concerned
    (see the note on required edges)."""
    from edu.cmu.tetrad.data import Knowledge

    knowledge = Knowledge()
    if spec is None:
        return knowledge
    groups = [[tetrad_name(int(i)) for i in tier] for tier in spec["tiers"]]
    if tiers:
        for t, names in enumerate(groups):
            for name in names:
                knowledge.addToTier(t, name)
        for t in spec["closed"]:
            knowledge.setTierForbiddenWithin(int(t), True)
    else:
        # Tetrad reads a spec with a '*' in it as comma-separated patterns over the names it knows ('*' for any
        # characters): our names with one pattern that matches none of them ("zz*": every name starts with v)
        # is a set of exactly those variables.
        for names in groups:
            for name in names:
                knowledge.addVariable(name)
        closed = {int(t) for t in spec["closed"]}
        for later, names in enumerate(groups):
            for earlier in range(later + 1 if later in closed else later):
                if names and groups[earlier]:
                    knowledge.setForbidden(",".join(names + ["zz*"]), ",".join(groups[earlier] + ["zz*"]))
    for a, b in np.asarray(spec["forbidden"]).tolist():
        knowledge.setForbidden(tetrad_name(a), tetrad_name(b))
    for a, b in np.asarray(spec["required"]).tolist():
        knowledge.setRequired(tetrad_name(a), tetrad_name(b))
    return knowledge


def has_required(spec: dict[str, Any] | None) -> bool:
    return spec is not None and len(spec["required"]) > 0


# Required edges in Tetrad 7.6.8's order searches. BOSS and GRaSP keep a required edge a --> b by never moving
# b before a: a variable's grow-shrink tree takes a required parent only when it precedes it in the order. Three
# places in Tetrad get this wrong, and our runners work around each:
# - Boss.betterMutationAsync (BOSS on more than one thread) stops scanning x's places at x's first required
#   child, but then picks x's best place among all of them, the unscanned ones scored from zeros. It moves x
#   past that child; from then on its idea of where x is is wrong, every pass "improves" the order again, and
#   the search never ends (a single requiredirect line hung BOSS on Sachs). The sequential betterMutation stops
#   at the child as it should: BOSS runs on one thread where a required edge lies inside a suborder it searches
#   (boss_threads).
# - makeValidKnowledgeOrder, which BOSS and GRaSP apply to every start, fixes required edges in one pass, moving
#   a variable before its first required child: a chain of required edges can come out of it still reversed
#   (c --> a, b --> c from a b c gives c a b), and the search need not repair that (GRaSP refuses every order
#   that keeps it; BOSS need not move the variable), so the required edge is lost. We start every search from
#   an order that already honours the knowledge (consistent_order), which that pass leaves as it is, and run the
#   restarts ourselves from such orders instead of Tetrad's shuffles (start_orders, best_of_starts).
# - The same function first moves the variables outside all tiers to the front. When tiers leave some variables
#   out and a required edge goes from a tiered variable to one of those, no start survives that move and the
#   pass after it (b --> a --> u, b and a tiered, u not: u goes first, a before u, b stays after a). There the
#   search gets the tiers as forbidden-edge rules instead (order_knowledge): the same edges are forbidden, and
#   the searches' moves never read the tiers anyway (their parent sets do, through the forbidden edges).
def _tier_of(spec: dict[str, Any], p: int) -> np.ndarray:
    tier_of = np.full(p, -1, dtype=np.int64)
    for t, tier in enumerate(spec["tiers"]):
        tier_of[np.asarray(tier, dtype=np.int64)] = t
    return tier_of


def boss_threads(spec: dict[str, Any] | None, p: int, threads: int) -> int:
    """BOSS's threads: one where a required edge joins two variables of one suborder that BOSS orders (one
    tier when tiers cover every variable, else all of them), see the note above."""
    if not has_required(spec) or threads <= 1:
        return threads
    assert spec is not None
    tier_of = _tier_of(spec, p)
    required = np.asarray(spec["required"], dtype=np.int64).reshape(-1, 2)
    if (tier_of >= 0).all() and (tier_of[required[:, 0]] != tier_of[required[:, 1]]).all():
        return threads  # PermutationSearch orders tier by tier, and each required edge joins two tiers
    return 1


def order_knowledge(spec: dict[str, Any] | None, p: int):
    """The Tetrad Knowledge an order search (BOSS, GRaSP) gets: with its tiers, unless a required edge goes from a
    variable in a tier to one outside all tiers; then with the tiers as forbidden-edge rules (see the note)."""
    if not has_required(spec):
        return tetrad_knowledge(spec)
    assert spec is not None
    tier_of = _tier_of(spec, p)
    required = np.asarray(spec["required"], dtype=np.int64).reshape(-1, 2)
    if not ((tier_of[required[:, 0]] >= 0) & (tier_of[required[:, 1]] < 0)).any():
        return tetrad_knowledge(spec)
    knowledge = tetrad_knowledge(spec, tiers=False)
    for i in range(p):  # every variable known, and none in a tier: the start's layout keeps the order as it is
        knowledge.addVariable(tetrad_name(i))
    return knowledge


def _dag_score(score, nodes, parents) -> float:
    """The score of the DAG whose parent sets Tetrad's `parents` (a Map of Node to a collection of Nodes) give."""
    from jpype import JArray, JInt

    index = {str(nodes.get(i).getName()): i for i in range(nodes.size())}
    return float(sum(score.localScore(i, JArray(JInt)([index[str(u.getName())] for u in parents(nodes.get(i))]))
                     for i in range(nodes.size())))


def allowed_start(order: np.ndarray, spec: dict[str, Any] | None) -> np.ndarray:
    """`order` made one the knowledge allows where it has required edges (consistent_order; see the note).
    Tiers alone Tetrad's own start layout keeps."""
    from hpc.graphs.knowledge import consistent_order

    return consistent_order(order, spec) if has_required(spec) else np.asarray(order, dtype=np.int64)


def start_orders(first: np.ndarray, num_starts: int, spec: dict[str, Any] | None) -> list[np.ndarray]:
    """The starts of an order search with required edges: `first`, then seeded random orders, each made one the
    knowledge allows (consistent_order)."""
    from hpc.graphs.knowledge import consistent_order

    rng = np.random.default_rng(0)
    orders = [np.asarray(first, dtype=np.int64)] + [rng.permutation(len(first)) for _ in range(num_starts - 1)]
    return [consistent_order(order, spec) for order in orders]


def best_of_starts(run, starts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """`run(order)` -> (score, (directed, undirected)) from each start; the edges of the best score (the first
    of equals)."""
    best = None
    for order in starts:
        score, edges = run(order)
        if best is None or score > best[0]:
            best = (score, edges)
    assert best is not None
    return best[1]


def reorder_knowledge(spec: dict[str, Any] | None, order: np.ndarray) -> dict[str, Any] | None:
    """`spec` for the variables taken in `order` (variable order[k] becomes k)."""
    if spec is None:
        return None
    new = np.argsort(order)
    return {"tiers": [[int(new[i]) for i in tier] for tier in spec["tiers"]], "closed": spec["closed"],
            "forbidden": new[np.asarray(spec["forbidden"], dtype=np.int64)].reshape(-1, 2),
            "required": new[np.asarray(spec["required"], dtype=np.int64)].reshape(-1, 2)}


#: Every fGES runs on one thread: Tetrad's parallel fGES breaks an exact score tie by thread timing, so its
#: graph would depend on the machine's load and on the cores a run is given (seen on a 200-variable problem).
FGES_THREADS = 1


def run_fges(cov: np.ndarray, n: int, penalty: float, max_degree: int, faithfulness: bool,
             knowledge: dict[str, Any] | None = None, pairs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """fGES over the columns of `cov`; with `pairs`, it may join only those (Fges's bound graph)."""
    start_jvm()
    from edu.cmu.tetrad.search import Fges
    from edu.cmu.tetrad.search.score import SemBicScore

    score = SemBicScore(covariance_matrix(cov, n))
    score.setPenaltyDiscount(float(penalty))
    search = Fges(score)
    search.setMaxDegree(int(max_degree))  # Fges copies ceil(ln n) from the score otherwise
    search.setFaithfulnessAssumed(bool(faithfulness))
    search.setNumThreads(FGES_THREADS)
    search.setVerbose(False)
    if knowledge is not None:
        search.setKnowledge(tetrad_knowledge(knowledge))
    if pairs is not None:
        search.setBoundGraph(_graph(score.getVariables(), np.empty((0, 2), dtype=np.int64), pairs))
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
                     pairs: np.ndarray | None,
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
    search.setNumThreads(FGES_THREADS)
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
    where BOSS scores parent sets; BOSS itself keeps the knowledge's tiers and required edges in its moves, from
    `order` made one the knowledge allows (see the note on required edges)."""
    start_jvm()
    from edu.cmu.tetrad.search import Boss, PermutationSearch
    from java.util import ArrayList

    p = x.shape[1]
    score = _sem_bic(covariance(x), x.shape[0], penalty)
    nodes = score.getVariables()
    boss = Boss(score)
    boss.setUseBes(False)
    boss.setNumStarts(1)
    boss.setNumThreads(boss_threads(knowledge, p, int(threads)))  # see the note on required edges
    boss.setVerbose(False)
    search = PermutationSearch(boss)
    search.setSeed(0)
    if knowledge is not None:  # each tree gets the knowledge's required and forbidden parents first
        search.setKnowledge(order_knowledge(knowledge, p))
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
    search.setOrder(_nodes(nodes, allowed_start(order, knowledge)))
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


#: Degree limit of the GES that gives an order search its start: a start needs an order, not every edge. Uncapped,
#: Tetrad's fGES took 3-6x BOSS's own time on scale-free clusters with hubs (sf-1000: 286 variables, 56 s against
#: 26 s); capped at 10 it took 5 s there, and Alarm's variables have fewer neighbours than that.
START_DEGREE = 10


def _nodes(nodes, order: np.ndarray):
    """A Java list of `nodes` (a Java list) taken in `order`."""
    from java.util import ArrayList

    out = ArrayList()
    for i in np.asarray(order).tolist():
        out.add(nodes.get(i))
    return out


def start_order(cov: np.ndarray, n: int, penalty: float, start: str,
                knowledge: dict[str, Any] | None = None) -> np.ndarray:
    """Where an order search starts. "fges": a topological order of a DAG in the equivalence class GES assuming
    faithfulness finds (same penalty, degree at most START_DEGREE: hpc.learners.ges_kernel, compiled; with prior
    knowledge Tetrad's fGES, which keeps it), so the search starts near a good order whatever the column order;
    "columns": the order of `cov`'s columns (the learners' data-derived canonical order, in effect a random one);
    "auto": the order of the DAG hpc.learners.starts's cheap starts lead to where it is large and dense
    (dense_start), else "fges". Either made one that `knowledge` allows (allowed_start)."""
    from hpc.errors import GraphError
    from hpc.graphs.equivalence import pdag_to_dag, topological_order
    from hpc.graphs.pdag import PDAG
    from hpc.learners.ges_kernel import ges_pattern
    from hpc.learners.starts import dense_start, start_pairs

    names = tuple(str(i) for i in range(cov.shape[0]))
    if start == "columns":
        return allowed_start(np.arange(cov.shape[0]), knowledge)
    if start == "auto" and (dag := dense_start(cov, n, penalty)) is not None:
        return allowed_start(topological_order(PDAG(names, dag)), knowledge)
    pairs = start_pairs(cov, n, penalty)
    if pairs is not None and knowledge is not None and has_required(knowledge):  # the start may join a required edge
        required = np.sort(np.asarray(knowledge["required"], dtype=np.int64).reshape(-1, 2), axis=1)
        pairs = np.unique(np.concatenate([pairs, required]), axis=0)
    if knowledge is None:
        graph = PDAG(names, *ges_pattern(cov, n, penalty, START_DEGREE, pairs))
        return topological_order(pdag_to_dag(graph, strict=False))
    try:
        graph = PDAG(names, *run_fges(cov, n, penalty, START_DEGREE, True, knowledge, pairs))
        order = topological_order(pdag_to_dag(graph, strict=False))
    except GraphError:  # Tetrad's fGES can close a directed cycle through a required edge: start without them
        assert knowledge is not None
        free = {**knowledge, "required": np.empty((0, 2), dtype=np.int64)}
        graph = PDAG(names, *run_fges(cov, n, penalty, START_DEGREE, True, free, pairs))
        order = topological_order(pdag_to_dag(graph, strict=False))
    return allowed_start(order, knowledge)


def _in_order(search, cov: np.ndarray, order: np.ndarray,
              knowledge: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run `search(cov reordered, its knowledge)` (hpc.graphs.knowledge's indexed form) and give its edges back
    in `cov`'s indices."""
    directed, undirected = search(np.ascontiguousarray(cov[np.ix_(order, order)]), reorder_knowledge(knowledge, order))
    return order[directed], order[undirected]


def run_boss(cov: np.ndarray, n: int, penalty: float, num_starts: int, use_bes: bool, start: str = "fges",
             threads: int = 1, knowledge: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """BOSS (Andrews et al. 2023) inside Tetrad's PermutationSearch, called directly so the thread
    count is ours (Tetrad's algcomparison wrapper fixes 4); seeded, so a run is repeatable. Its first
    start is the given order (see start_order); with required edges we run the restarts (see the note on
    required edges). One start without a backward search and without knowledge is the same search compiled
    (hpc.learners.order_search), 5-13x faster than Tetrad's over every pair of 300-500 variables in numpy and
    faster again compiled (BENCHMARKS.md)."""
    start_jvm()
    from edu.cmu.tetrad.search import Boss, PermutationSearch

    p = cov.shape[0]
    if knowledge is None and not use_bes and int(num_starts) == 1:
        from hpc.graphs.equivalence import dag_to_cpdag
        from hpc.graphs.pdag import PDAG
        from hpc.learners.order_search import order_search
        from hpc.learners.starts import dense_start

        dag = dense_start(cov, n, penalty) if start == "auto" else None  # the cheap starts' search is the result
        if dag is None:  # the search from the start order ("auto" on a small or sparse cluster: the fGES start)
            dag = order_search(cov, n, penalty, start_order(cov, n, penalty, "fges" if start == "auto" else start),
                               None)
        cpdag = dag_to_cpdag(PDAG(tuple(map(str, range(p))), dag))
        return cpdag.directed, cpdag.undirected

    def search(c: np.ndarray, known: dict[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        score = _sem_bic(c, n, penalty)
        boss = Boss(score)
        boss.setUseBes(bool(use_bes))
        boss.setNumStarts(1 if has_required(known) else int(num_starts))
        boss.setNumThreads(boss_threads(known, p, int(threads)))
        boss.setVerbose(False)
        permutation = PermutationSearch(boss)
        permutation.setSeed(0)
        permutation.setKnowledge(order_knowledge(known, p))
        if not has_required(known):
            return graph_to_arrays(permutation.search(True), p)
        nodes = score.getVariables()

        def run(order: np.ndarray) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
            for v in range(p):  # as Tetrad's own restarts do (Boss.resetAfterRS): the trees' caches start anew
                permutation.getGST(nodes.get(v)).reset()
            permutation.setOrder(_nodes(nodes, order))
            graph = permutation.search(True)
            return _dag_score(score, nodes, boss.getParents().get), graph_to_arrays(graph, p)

        return best_of_starts(run, start_orders(np.arange(p), int(num_starts), known))

    return _in_order(search, cov, start_order(cov, n, penalty, start, knowledge), knowledge)


def run_grasp(cov: np.ndarray, n: int, penalty: float, depth: int, num_starts: int,
              start: str = "fges", knowledge: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """GRaSP (greedy relaxations of the sparsest permutation) with Tetrad's SemBicScore; seeded; its
    first start is the given order (see start_order); with required edges we run the restarts (see the note
    on required edges)."""
    start_jvm()
    from edu.cmu.tetrad.search import Grasp

    p = cov.shape[0]

    def search(c: np.ndarray, known: dict[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        score = _sem_bic(c, n, penalty)
        grasp = Grasp(score)
        grasp.setKnowledge(order_knowledge(known, p))
        grasp.setDepth(int(depth))
        grasp.setNumStarts(1 if has_required(known) else int(num_starts))
        grasp.setSeed(0)
        grasp.setVerbose(False)
        nodes = score.getVariables()
        if not has_required(known):
            grasp.bestOrder(nodes)
            return graph_to_arrays(grasp.getGraph(True), p)

        def run(order: np.ndarray) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
            grasp.bestOrder(_nodes(nodes, order))
            dag = grasp.getGraph(False)
            return _dag_score(score, nodes, dag.getParents), graph_to_arrays(grasp.getGraph(True), p)

        return best_of_starts(run, start_orders(np.arange(p), int(num_starts), known))

    return _in_order(search, cov, start_order(cov, n, penalty, start, knowledge), knowledge)
