"""Where an order search starts on a large cluster (hpc.learners.starts): the R² sort against regressions done
by hand, the better-by-BIC of the two cheap starts, and a BOSS member above the bounds (size, density) taking exactly
that DAG, below either the fGES start's search."""

import numpy as np
import pytest

from hpc.data.generate import benchmark_problem
from hpc.graphs.equivalence import dag_to_cpdag, topological_order
from hpc.graphs.pdag import PDAG
from hpc.learners import starts
from hpc.learners.bic import bic, paying_r2
from hpc.learners.order_search import order_search


def standardised_cov(nodes: int, seed: int, rows: int = 1000, family: str = "er") -> np.ndarray:
    x = benchmark_problem(nodes, seed, rows, graph=family).data
    return np.cov((x - x.mean(axis=0)) / x.std(axis=0), rowvar=False)


def test_r2_order_sorts_by_each_variables_regression_on_all_the_others():
    cov = standardised_cov(30, 101)
    r2 = []
    for i in range(30):  # the share of i's variance its least-squares fit on the other 29 explains
        rest = [j for j in range(30) if j != i]
        beta = np.linalg.solve(cov[np.ix_(rest, rest)], cov[rest, i])
        r2.append(cov[rest, i] @ beta / cov[i, i])
    assert starts.r2_order(cov, 1000).tolist() == np.argsort(r2, kind="stable").tolist()


def test_r2_order_of_a_chain_by_hand():
    """X0 -> X1 -> X2 with correlations 0.5 and 0.8: R² is 0.25 for X0, 0.64 for X2, (0.25 + 0.64 - 2 * 0.25 *
    0.64) / (1 - 0.25 * 0.64) = 0.679 for X1."""
    a, b = 0.5, 0.8
    cov = np.array([[1, a, a * b], [a, 1, b], [a * b, b, 1]])
    assert starts.r2_order(cov, 100).tolist() == [0, 2, 1]


def test_r2_order_is_the_column_order_without_more_rows_than_variables():
    assert starts.r2_order(standardised_cov(20, 101, rows=20), 20).tolist() == list(range(20))


def test_the_cheap_start_keeps_the_search_of_higher_bic():
    cov, n, penalty = standardised_cov(60, 102, family="sf"), 1000, 2.0
    dags = [order_search(cov, n, penalty, order, None) for order in (np.arange(60), starts.r2_order(cov, n))]
    scores = [starts.dag_bic(cov, n, penalty, d) for d in dags]
    names = tuple(f"v{i}" for i in range(60))
    assert scores[0] == pytest.approx(bic(PDAG(names, dags[0]), cov, n, penalty))
    best = starts.cheap_start_search(cov, n, penalty)
    assert starts.dag_bic(cov, n, penalty, best) == max(scores)
    assert np.array_equal(best, dags[int(np.argmax(scores))])


@pytest.mark.jvm
def test_a_boss_member_above_the_bounds_returns_the_cheap_starts_class(monkeypatch):
    from hpc.learners.tetrad import run_boss, start_order

    cov, n = standardised_cov(40, 103, family="hub"), 1000
    dag = starts.cheap_start_search(cov, n, 2.0)
    monkeypatch.setattr(starts, "FGES_START_UPTO", 39)
    monkeypatch.setattr(starts, "DENSE_EDGES", len(dag) / 40 - 0.01)  # just under its edges per variable
    names = tuple(map(str, range(40)))
    cpdag = dag_to_cpdag(PDAG(names, dag))
    directed, undirected = run_boss(cov, n, 2.0, 1, False, start="auto")
    assert PDAG(names, directed, undirected) == cpdag
    assert start_order(cov, n, 2.0, "auto").tolist() == topological_order(PDAG(names, dag)).tolist()
    fges = start_order(cov, n, 2.0, "fges").tolist()
    assert fges != topological_order(PDAG(names, dag)).tolist()
    fges_dag = order_search(cov, n, 2.0, np.array(fges), None)
    # at its edges per variable the DAG is not dense: the fGES start, as "fges" gives, and the search from it
    monkeypatch.setattr(starts, "DENSE_EDGES", len(dag) / 40)
    assert start_order(cov, n, 2.0, "auto").tolist() == fges
    directed, undirected = run_boss(cov, n, 2.0, 1, False, start="auto")
    assert PDAG(names, directed, undirected) == dag_to_cpdag(PDAG(names, fges_dag))
    monkeypatch.setattr(starts, "DENSE_EDGES", 0.0)
    monkeypatch.setattr(starts, "FGES_START_UPTO", 40)  # at the size bound: the fGES start too
    assert start_order(cov, n, 2.0, "auto").tolist() == fges


def test_pef_gives_auto_to_order_search_members_without_a_start_only_on_large_problems():
    members = [{"method": "boss", "penalty": 10.0}, {"method": "grasp", "penalty": 2.0},
               {"method": "boss", "penalty": 2.0, "start": "fges"}, {"method": "fges", "penalty": 2.0},
               {"method": "flop", "penalty": 13.0}]
    assert starts.with_cheap_starts(members, starts.CHEAP_STARTS_ABOVE) == members
    assert starts.with_cheap_starts(members, starts.CHEAP_STARTS_ABOVE + 1) == [
        {"method": "boss", "penalty": 10.0, "start": "auto"}, {"method": "grasp", "penalty": 2.0, "start": "auto"},
        *members[2:]]


def chain_cov(p: int, rows: int, coefficient: float, seed: int) -> np.ndarray:
    """The sample covariance of a linear chain X0 -> X1 -> ... with one coefficient: every pair correlates, yet
    the only partial correlations given all the other variables are the chain's own pairs."""
    rng = np.random.default_rng(seed)
    x = np.empty((rows, p))
    x[:, 0] = rng.standard_normal(rows)
    for j in range(1, p):
        x[:, j] = coefficient * x[:, j - 1] + np.sqrt(1 - coefficient**2) * rng.standard_normal(rows)
    return np.cov((x - x.mean(axis=0)) / x.std(axis=0), rowvar=False)


def test_a_dense_start_is_bounded_to_the_conditional_independence_graph():
    p, n = 240, 1000
    cov = chain_cov(p, n, 0.99, 7)
    r = cov[np.triu_indices(p, 1)]
    assert np.count_nonzero(r * r > paying_r2(n, 2.0)) > starts.DENSE_PAIRS  # every pair gains alone
    pairs = starts.start_pairs(cov, n, 2.0)
    assert pairs is not None and np.all(pairs[:, 0] < pairs[:, 1])
    chain = {(j, j + 1) for j in range(p - 1)}
    assert chain <= set(map(tuple, pairs.tolist()))
    # the others are the test's false positives at level CIG_ALPHA: about a tenth of the 28,441 null pairs
    assert len(pairs) - len(chain) < 2 * starts.CIG_ALPHA * (p * (p - 1) // 2 - len(chain))


def test_no_bound_on_a_sparse_cluster_or_with_few_rows():
    assert starts.start_pairs(standardised_cov(200, 101), 1000, 2.0) is None  # few pairs gain alone
    cov = chain_cov(240, 400, 0.99, 7)
    assert starts.start_pairs(cov, 400, 2.0) is None  # over half as many variables as rows


@pytest.mark.jvm
def test_the_fges_start_joins_only_the_bound_pairs():
    from hpc.learners.tetrad import run_fges

    cov = chain_cov(4, 1000, 0.8, 3)
    free = run_fges(cov, 1000, 2.0, 10, True)
    assert {tuple(sorted(e)) for e in np.concatenate(free).tolist()} == {(0, 1), (1, 2), (2, 3)}
    bounded = run_fges(cov, 1000, 2.0, 10, True, pairs=np.array([[0, 1], [2, 3]]))
    assert {tuple(sorted(e)) for e in np.concatenate(bounded).tolist()} == {(0, 1), (2, 3)}


def test_the_fges_start_takes_the_bound_above_dense_pairs(monkeypatch):
    from hpc.graphs.equivalence import pdag_to_dag
    from hpc.learners.ges_kernel import ges_pattern
    from hpc.learners.tetrad import START_DEGREE, start_order

    cov, n = standardised_cov(60, 104, family="sf"), 1000
    names = tuple(map(str, range(60)))
    free = ges_pattern(cov, n, 2.0, START_DEGREE)
    assert start_order(cov, n, 2.0, "fges").tolist() == \
        topological_order(pdag_to_dag(PDAG(names, *free), strict=False)).tolist()
    monkeypatch.setattr(starts, "DENSE_PAIRS", 0)
    pairs = starts.start_pairs(cov, n, 2.0)
    assert pairs is not None and len(pairs) < 60 * 59 // 2
    bounded = ges_pattern(cov, n, 2.0, START_DEGREE, pairs)
    assert start_order(cov, n, 2.0, "fges").tolist() == \
        topological_order(pdag_to_dag(PDAG(names, *bounded), strict=False)).tolist()
    assert PDAG(names, *bounded) != PDAG(names, *free)  # it changed the start


@pytest.mark.jvm
def test_a_required_edge_stays_in_the_bound_of_the_start(monkeypatch):
    from hpc.learners import tetrad

    cov = chain_cov(6, 1000, 0.8, 3)
    monkeypatch.setattr(starts, "DENSE_PAIRS", 0)
    bound = starts.start_pairs(cov, 1000, 2.0)
    assert bound is not None and [0, 5] not in bound.tolist()  # the chain's ends: no partial correlation
    seen: list = []
    fges = tetrad.run_fges
    monkeypatch.setattr(tetrad, "run_fges", lambda *args: seen.append(args[6]) or fges(*args))
    knowledge = {"tiers": [], "closed": [], "forbidden": np.empty((0, 2), dtype=np.int64),
                 "required": np.array([[5, 0]])}
    order = tetrad.start_order(cov, 1000, 2.0, "fges", knowledge).tolist()
    assert [0, 5] in seen[0].tolist() and len(seen[0]) == len(bound) + 1
    assert order.index(5) < order.index(0)  # the start keeps the required edge's direction
