import numpy as np
import pytest

from hpc.errors import GraphError
from hpc.graphs.pdag import PDAG
from tests.conftest import dag


def test_queries_on_a_small_pdag():
    g = dag("abcd", "a>c b>c c-d")
    a, b, c, d = range(4)
    assert g.parents(c).tolist() == [a, b]
    assert g.children(a).tolist() == [c]
    assert g.neighbors(c).tolist() == [d] and g.neighbors(d).tolist() == [c]
    assert g.adjacent(c).tolist() == [a, b, d]
    assert g.n_edges == 3 and not g.is_directed
    assert sorted(g.named_edges()) == [("a", "c", "-->"), ("b", "c", "-->"), ("c", "d", "---")]


@pytest.mark.parametrize("variables, edges, message", [
    ("ab", [("a", "b", "-->"), ("b", "a", "-->")], "more than one edge"),
    ("ab", [("a", "b", "-->"), ("a", "b", "---")], "more than one edge"),
    ("ab", [("a", "a", "-->")], "self-loop"),
    ("ab", [("a", "z", "-->")], "unknown variable 'z'"),
    ("ab", [("a", "b", "o->")], "mark must be"),
    ("aa", [], "appears twice"),
])
def test_invalid_graphs_are_rejected(variables, edges, message):
    with pytest.raises(GraphError, match=message):
        PDAG.from_named_edges(list(variables), edges)


def test_reindexed_keeps_edges_and_names_unknown_variables():
    g = dag("ab", "a>b")
    h = g.reindexed(["x", "b", "a"])
    assert h.named_edges() == [("a", "b", "-->")]
    with pytest.raises(GraphError, match="'a'"):
        g.reindexed(["b", "c"])


def test_subgraph_renumbers():
    g = dag("abcd", "a>b b>c c-d")
    s = g.subgraph([3, 2, 1])
    assert s.variables == ("d", "c", "b")
    assert sorted(s.named_edges()) == [("b", "c", "-->"), ("d", "c", "---")]


def test_equality_and_hash_follow_content():
    assert dag("ab", "a>b") == dag("ab", "a>b")
    assert dag("ab", "a>b") != dag("ab", "b>a")
    assert hash(dag("ab", "a-b")) == hash(dag("ab", "b-a"))
    assert np.array_equal(dag("ab", "b-a").undirected, [[0, 1]])
