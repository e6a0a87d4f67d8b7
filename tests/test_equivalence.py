import sys

import numpy as np
import pytest

from hpc.data.generate import replicate
from hpc.data.networks import load_network
from hpc.errors import GraphError
from hpc.graphs.equivalence import dag_to_cpdag, is_acyclic, pdag_to_dag, to_cpdag, topological_order
from tests.conftest import dag, random_small_dag, reference_cpdag


def test_collider_stays_directed_and_chain_becomes_undirected():
    assert dag_to_cpdag(dag("abc", "a>c b>c")) == dag("abc", "a>c b>c")
    assert dag_to_cpdag(dag("abc", "a>b b>c")) == dag("abc", "a-b b-c")
    assert dag_to_cpdag(dag("abc", "a>b b>c a>c")) == dag("abc", "a-b b-c a-c")


def test_meek_rule_one_compels_edge_after_collider():
    assert dag_to_cpdag(dag("abcd", "a>c b>c c>d")) == dag("abcd", "a>c b>c c>d")


def test_markov_equivalent_dags_share_one_cpdag():
    chains = [dag("abc", "a>b b>c"), dag("abc", "b>a c>b"), dag("abc", "b>a b>c")]
    assert len({dag_to_cpdag(g) for g in chains}) == 1
    assert dag_to_cpdag(dag("abc", "a>b c>b")) != dag_to_cpdag(chains[0])


@pytest.mark.parametrize("seed", range(30))
def test_chickering_matches_meek_reference_on_random_dags(seed):
    rng = np.random.default_rng(seed)
    g = random_small_dag(rng, p=int(rng.integers(3, 9)), density=float(rng.uniform(0.2, 0.7)))
    assert dag_to_cpdag(g) == reference_cpdag(g)


@pytest.mark.parametrize("seed", range(30))
def test_member_dag_of_cpdag_is_in_the_same_class(seed):
    rng = np.random.default_rng(100 + seed)
    g = random_small_dag(rng, p=int(rng.integers(3, 10)), density=float(rng.uniform(0.2, 0.7)))
    cpdag = dag_to_cpdag(g)
    member = pdag_to_dag(cpdag)
    assert member.is_directed and is_acyclic(member)
    assert dag_to_cpdag(member) == cpdag


def test_dor_tarsi_keeps_directed_edges_and_adds_no_v_structure():
    # b <- c would make a collider at b, so the only extension is the chain.
    assert pdag_to_dag(dag("abcd", "a>b b-c c-d")) == dag("abcd", "a>b b>c c>d")


def test_chordless_cycle_has_no_extension():
    square = dag("abcd", "a-b b-c c-d d-a")
    with pytest.raises(GraphError, match="no consistent DAG extension"):
        pdag_to_dag(square)
    loose = pdag_to_dag(square, strict=False)
    assert loose.is_directed and is_acyclic(loose) and loose.n_edges == 4


def test_directed_cycle_is_reported_by_name():
    with pytest.raises(GraphError, match="directed cycle"):
        topological_order(dag("abc", "a>b b>c c>a"))
    assert not is_acyclic(dag("abc", "a>b b>c c>a"))


def round_trip_calls(n_nodes: int) -> tuple[int, int]:
    """(function calls, Python's and into C, that the CPDAG -> DAG -> CPDAG round trip makes; edges) on
    replicated Alarm: the conversions' work counted, which no machine's speed changes."""
    big, _ = replicate(load_network("alarm"), n_nodes, np.random.default_rng(0))
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event in ("call", "c_call")

    sys.setprofile(count)
    try:
        cpdag = dag_to_cpdag(big)
        member = pdag_to_dag(cpdag)
        again = to_cpdag(member)
    finally:
        sys.setprofile(None)
    assert again == cpdag and member.n_edges == big.n_edges and is_acyclic(member)
    return calls, big.n_edges


def test_conversions_scale_linearly_to_30000_nodes():
    # Work counted, not timed: both conversions visit nodes and edges in Python calls, so work for every
    # node per node taken (checking each sink's violations whenever one is removed) makes the calls per edge
    # grow with the graph; at linear cost they stay put (34 per edge at both sizes).
    small, small_edges = round_trip_calls(7500)
    large, large_edges = round_trip_calls(30000)
    assert large_edges == 41037 and large_edges > 3.9 * small_edges
    assert large / large_edges < 1.25 * small / small_edges, (small, large)
