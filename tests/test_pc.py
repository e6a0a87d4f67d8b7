"""The numpy PC-Stable: exact CPDAGs from population covariances, Tetrad's skeleton on data."""

import numpy as np
import pytest

from hpc.data.generate import benchmark_problem
from hpc.errors import PsleError
from hpc.graphs.metrics import evaluate
from hpc.graphs.order import canonical_order, relabel
from hpc.graphs.pdag import PDAG
from hpc.learners import PCStable
from hpc.learners.bic import covariance
from hpc.learners.pc import pc_stable, skeleton, correlation
from tests.conftest import dag, random_small_dag, reference_cpdag


def population_covariance(g: PDAG, rng: np.random.Generator) -> np.ndarray:
    """Σ = (I − B)⁻¹ D (I − B)⁻ᵀ of a linear SEM on `g` with weights ±[0.5, 1]: what infinite data shows."""
    b = np.zeros((g.p, g.p))
    for a, c in g.directed.tolist():
        b[c, a] = rng.choice([-1, 1]) * rng.uniform(0.5, 1.0)
    inv = np.linalg.inv(np.eye(g.p) - b)
    return inv @ np.diag(rng.uniform(0.5, 1.0, g.p)) @ inv.T


def learned(cov: np.ndarray, variables: tuple[str, ...], alpha: float = 0.01, depth: int = 1000) -> PDAG:
    directed, undirected = pc_stable(cov, 10**6, alpha, depth)
    return PDAG(variables, directed, undirected)


@pytest.mark.parametrize("seed", range(8))
def test_population_covariance_gives_the_true_cpdag(seed):
    """With exact covariances every test is answered correctly, so PC must return the CPDAG."""
    rng = np.random.default_rng(seed)
    g = random_small_dag(rng, 9, 0.3)
    assert learned(population_covariance(g, rng), g.variables) == reference_cpdag(g)


def test_hand_built_collider_chain_and_meek_rule_one():
    rng = np.random.default_rng(0)
    g = dag("abcde", "a>c b>c c>d d>e")  # collider at c; Meek rule 1 orients c → d → e
    out = learned(population_covariance(g, rng), g.variables)
    assert out == dag("abcde", "a>c b>c c>d d>e")
    chain = dag("abc", "a>b b>c")  # no collider: nothing can be oriented
    assert learned(population_covariance(chain, rng), chain.variables) == dag("abc", "a-b b-c")


def test_depth_limits_the_conditioning_sets():
    """a ⫫ d only given {b, c}: depth 1 must keep the edge, depth 2 removes it."""
    rng = np.random.default_rng(1)
    g = dag("abcd", "a>b a>c b>d c>d")
    cov = population_covariance(g, rng)
    adj1, _ = skeleton(correlation(cov), 10**6, 0.01, 1)
    adj2, sepsets = skeleton(correlation(cov), 10**6, 0.01, 2)
    assert adj1[0, 3] and not adj2[0, 3] and sepsets[(0, 3)] == (1, 2)


@pytest.fixture(scope="module")
def tetrad_pc():
    from hpc.learners.tetrad import run_pc

    return run_pc


@pytest.mark.parametrize("network,nodes,seed,alpha", [("alarm", 74, 0, 0.05), ("child", 100, 2, 0.05),
                                                      ("hailfinder", 112, 0, 0.1)])
def test_skeleton_equals_tetrads_and_orientation_is_as_good(tetrad_pc, network, nodes, seed, alpha):
    """PC-Stable's skeleton does not depend on test order, so it must equal Tetrad's exactly;
    orientations may differ where Tetrad's separating set depends on thread timing."""
    problem = benchmark_problem(nodes, seed, 1000, network=network)
    cov, n = covariance(problem.data), problem.n
    ours = PDAG(problem.variables, *pc_stable(cov, n, alpha, 1000))
    theirs = PDAG(problem.variables, *tetrad_pc(cov, n, alpha, 1000))
    pairs = lambda g: {tuple(sorted(e)) for e in np.vstack([g.directed, g.undirected]).tolist()}  # noqa: E731
    assert pairs(ours) == pairs(theirs)
    f1_ours, f1_theirs = evaluate(ours, problem.truth).f1_arrowhead, evaluate(theirs, problem.truth).f1_arrowhead
    assert f1_ours > f1_theirs - 0.05


@pytest.mark.parametrize("graph", ["er", "sf", "hub", "ws"])
def test_depth_one_in_whole_rows_matches_the_general_search(graph):
    """The same edges and separating sets as the general search at depth 1 (batched inverses,
    whose tests Tetrad's skeleton checks above)."""
    from hpc.learners.pc import _depth_one, _search_depth

    problem = benchmark_problem(200, 1, 1000, graph=graph, edges_per_node=2)
    r, n = correlation(covariance(problem.data)), problem.n
    for alpha in (0.01, 0.2):
        adj, _ = skeleton(r, n, alpha, 0)
        expected = _search_depth(r, n, alpha, adj, 1)
        assert expected and _depth_one(r, n, alpha, adj) == expected


def test_depth_one_on_collinear_data_keeps_what_it_cannot_test():
    """Two identical columns: a partial correlation given one of them is undefined, which counts as
    dependent (the general search's inverse fails there); a test that is defined still separates."""
    from hpc.learners.pc import _depth_one

    x = np.random.default_rng(0).standard_normal((50, 30))
    x[:, 1] = x[:, 0]
    r = correlation(covariance(x))
    adj, _ = skeleton(r, 50, 0.2, 0)
    removed = _depth_one(r, 50, 0.2, adj)
    assert removed and (0, 1) not in removed and adj[0, 1]
    for (a, b), (c,) in removed.items():
        assert c not in (0, 1) or {a, b} & {0, 1} == set()
        rab_c = (r[a, b] - r[a, c] * r[b, c]) / np.sqrt((1 - r[a, c] ** 2) * (1 - r[b, c] ** 2))
        assert np.isfinite(rab_c) and abs(np.arctanh(rab_c)) * np.sqrt(50 - 4) < 1.29  # z(0.9): p > 0.2


def test_collinear_variables_at_any_depth_stay_dependent_instead_of_failing():
    """A singular conditioning block (x1 = x0, x2 = x0 + x1) raised LinAlgError at depth 2."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 10))
    x[:, 1] = x[:, 0]
    x[:, 2] = x[:, 0] + x[:, 1]
    x[:, 3] = x[:, 2] + 0.3 * rng.standard_normal(500)
    x[:, 4] = x[:, 3] + x[:, 5]
    directed, undirected = pc_stable(covariance(x), 500, 0.05, 1000)
    adjacent = {tuple(sorted(e)) for e in np.concatenate([directed, undirected]).tolist()}
    assert {(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (4, 5)} <= adjacent


def test_member_runs_the_numpy_engine_in_its_worker():
    problem = benchmark_problem(40, 3, 1000, network="alarm")
    member = PCStable(engine="numpy").fit(problem.data, problem.variables)
    assert member.status_ == "ok" and member.spec()["engine"] == "numpy"
    canon = canonical_order(problem.data)  # the order every learner sees the columns in
    direct = PDAG(problem.variables, *pc_stable(covariance(problem.data[:, canon]), problem.n, 0.05, 1000))
    assert member.graph_ == relabel(direct, canon, problem.variables)
    with pytest.raises(PsleError, match=r"engine must be one of numpy, tetrad, got 'java'"):
        PCStable(engine="java").fit(problem.data, problem.variables)
