"""The compiled greedy equivalence search (hpc.learners.ges_kernel): the true pattern from exact covariances
(where GES is exact), hand-built colliders and chains, its bounds, and the order search's start it gives."""

import numpy as np
import pytest

from hpc.graphs.equivalence import pdag_to_dag, topological_order
from hpc.graphs.pdag import PDAG
from hpc.learners.ges_kernel import ges_pattern
from tests.conftest import dag, random_small_dag, reference_cpdag
from tests.test_pc import population_covariance

#: Rows the exact covariances stand for: every true edge gains by far, every other pair loses its penalty.
ROWS = 10**6


def found(cov: np.ndarray, variables: tuple[str, ...], max_degree: int = 10, pairs: np.ndarray | None = None,
          faithful: bool = True) -> PDAG:
    return PDAG(variables, *ges_pattern(cov, ROWS, 2.0, max_degree, pairs, faithful))


@pytest.mark.parametrize("faithful", [False, True])
@pytest.mark.parametrize("seed", range(10))
def test_an_exact_covariance_gives_the_true_pattern(seed, faithful):
    """With exact scores GES ends at the true equivalence class (Chickering 2002), under faithfulness, which
    random weights give; so the forward and backward phases, the inserts' validity and the rebuilt patterns all
    have to be right. Assuming faithfulness it reaches it too, through the phase that covers non-colliders (the
    pairs two steps apart that no single correlation joins)."""
    rng = np.random.default_rng(seed)
    g = random_small_dag(rng, 9 if seed < 5 else 25, 0.3 if seed < 5 else 0.12)
    assert found(population_covariance(g, rng), g.variables, max_degree=g.p, faithful=faithful) == reference_cpdag(g)


def test_a_collider_is_directed_and_a_chain_is_not():
    rng = np.random.default_rng(0)
    g = dag("abcde", "a>c b>c c>d d>e")  # a collider at c, then Meek's rule 1 down the chain
    assert found(population_covariance(g, rng), g.variables) == g
    chain = dag("abc", "a>b b>c")
    assert found(population_covariance(chain, rng), chain.variables) == dag("abc", "a-b b-c")


def test_no_variable_gets_more_neighbours_than_the_bound():
    rng = np.random.default_rng(3)
    star = dag("abcdefg", "b>a c>a d>a e>a f>a g>a")  # a has six parents
    out = found(population_covariance(star, rng), star.variables, max_degree=3)
    degree = np.bincount(np.concatenate([out.directed, out.undirected]).ravel(), minlength=7)
    assert degree.max() <= 3 and degree[0] == 3


def test_only_the_given_pairs_are_joined():
    rng = np.random.default_rng(1)
    chain = dag("abcd", "a>b b>c c>d")
    out = found(population_covariance(chain, rng), chain.variables, pairs=np.array([[0, 1], [2, 3]]))
    assert out == dag("abcd", "a-b c-d")


def test_the_start_order_is_a_topological_order_of_the_pattern():
    from hpc.learners.tetrad import START_DEGREE, start_order

    rng = np.random.default_rng(7)
    g = random_small_dag(rng, 25, 0.12)
    cov = population_covariance(g, rng)
    pattern = PDAG(g.variables, *ges_pattern(cov, ROWS, 2.0, START_DEGREE))
    assert start_order(cov, ROWS, 2.0, "fges").tolist() == \
        topological_order(pdag_to_dag(pattern, strict=False)).tolist()


@pytest.mark.jvm
@pytest.mark.parametrize("seed", [1, 2])
def test_it_finds_tetrads_faithful_fges_pattern_on_sample_data(seed):
    """Tetrad's fGES with faithfulness assumed, the same penalty and degree bound, on a scale-free graph's data:
    the same pattern (on other seeds the two break near-ties apart, and this one's BIC was mostly the higher)."""
    from hpc.data.generate import benchmark_problem
    from hpc.learners.bic import covariance
    from hpc.learners.tetrad import run_fges

    x = benchmark_problem(60, seed, 1000, graph="sf").data
    cov = covariance((x - x.mean(axis=0)) / x.std(axis=0))
    names = tuple(map(str, range(60)))
    assert PDAG(names, *ges_pattern(cov, 1000, 2.0, 10)) == PDAG(names, *run_fges(cov, 1000, 2.0, 10, True))


@pytest.mark.parametrize("seed", range(4))
def test_from_a_wrong_start_it_still_ends_at_the_true_pattern(seed):
    """The repair's use: GES from a given graph. From the true DAG with extra edges (along its order, so the start
    is a DAG whose pattern must be derived first) it must drop the extras and end at the true pattern."""
    rng = np.random.default_rng(100 + seed)
    g = random_small_dag(rng, 25, 0.12)
    rank = np.argsort(topological_order(g))
    extra = [(a, b) if rank[a] < rank[b] else (b, a) for a in range(25) for b in range(a + 1, 25)
             if rng.random() < 0.03]
    start = (np.concatenate([g.directed, np.array(extra, dtype=np.int64).reshape(-1, 2)]),
             np.empty((0, 2), dtype=np.int64))
    out = PDAG(g.variables, *ges_pattern(population_covariance(g, rng), ROWS, 2.0, None, start=start))
    assert len(extra) >= 3 and out == reference_cpdag(g)


def test_from_a_start_new_edges_come_only_from_the_pairs():
    rng = np.random.default_rng(5)
    chain = dag("abcd", "a>b b>c c>d")
    cov = population_covariance(chain, rng)
    start = (np.empty((0, 2), dtype=np.int64), np.array([[0, 1], [0, 3]]))
    out = PDAG(chain.variables, *ges_pattern(cov, ROWS, 2.0, None, pairs=np.array([[1, 2], [2, 3]]), start=start))
    assert out == dag("abcd", "a-b b-c c-d")  # a - d, which the start had, is dropped; b - c and c - d come in
    out = PDAG(chain.variables, *ges_pattern(cov, ROWS, 2.0, None, pairs=np.array([[2, 3]]), start=start))
    assert out == dag("abcd", "a-b a-d c-d")  # without b - c, a - d is what carries a's effect on d


@pytest.mark.jvm
def test_the_repairs_compiled_search_ends_near_tetrads_from_the_same_start():
    """The repair's runner against Tetrad's Fges with the same start graph (a sparser fit), faithfulness assumed
    and no degree bound, on Alarm-100's data: a pattern a few edges apart, at about the same BIC."""
    from hpc.data.generate import benchmark_problem
    from hpc.graphs.metrics import compare
    from hpc.learners.bic import bic, covariance
    from hpc.learners.ges_kernel import run_ges_bounded
    from hpc.learners.tetrad import run_fges_bounded

    x = benchmark_problem(100, 0, 1000, network="alarm").data
    cov, names = covariance(x), tuple(map(str, range(x.shape[1])))
    start = ges_pattern(cov, 1000, 20.0, 10)
    ours = PDAG(names, *run_ges_bounded(x, 2.0, *start, None))
    theirs = PDAG(names, *run_fges_bounded(x, 2.0, *start, None))
    assert ours != PDAG(names, *start) and compare(ours, theirs).shd <= 6
    assert abs(bic(ours, cov, 1000, 2.0) - bic(theirs, cov, 1000, 2.0)) < 1e-4 * abs(bic(theirs, cov, 1000, 2.0))
