import pytest

from hpc.graphs.equivalence import dag_to_cpdag
from hpc.graphs.metrics import compare, evaluate
from tests.conftest import dag

# True DAG a -> c <- b, c -> d: its CPDAG is the same graph (collider, then Meek rule 1).
TRUTH = dag("abcd", "a>c b>c c>d")


def test_truth_is_its_own_cpdag():
    assert dag_to_cpdag(TRUTH) == TRUTH


@pytest.mark.parametrize("edges, f1_adj, f1_arr, shd", [
    ("a>c b>c c>d", 1.0, 1.0, 0),            # identical
    ("a>c b>c d>c", 1.0, 4 / 6, 1),          # one edge reversed: arrow TP 2, FP 1, FN 1
    ("a>c b>c c-d", 1.0, 4 / 5, 1),          # one edge undirected: arrow TP 2, FN 1
    ("a>c b>c", 4 / 5, 4 / 5, 1),            # one edge missing
    ("a>c b>c c>d a>b", 6 / 7, 6 / 7, 1),    # one extra edge
    ("c>a b-c a>d", 4 / 6, 0.0, 4),          # reversed + undirected + missing + extra
])
def test_hand_computed_metrics(edges, f1_adj, f1_arr, shd):
    m = compare(dag("abcd", edges), TRUTH)
    assert m.f1_adjacent == pytest.approx(f1_adj)
    assert m.f1_arrowhead == pytest.approx(f1_arr)
    assert m.shd == shd


def test_precision_and_recall_of_a_missing_edge():
    m = compare(dag("abcd", "a>c b>c"), TRUTH)
    assert (m.precision_adjacent, m.recall_adjacent) == (1.0, pytest.approx(2 / 3))
    assert (m.precision_arrowhead, m.recall_arrowhead) == (1.0, pytest.approx(2 / 3))


def test_evaluate_compares_with_the_cpdag_of_the_true_dag():
    m = evaluate(dag("xyz", "x-y y-z"), dag("xyz", "x>y y>z"))
    assert (m.f1_adjacent, m.f1_arrowhead, m.shd) == (1.0, 1.0, 0)
    m = evaluate(dag("xyz", "x>y y>z"), dag("xyz", "x>y y>z"))
    assert m.f1_arrowhead == 0.0 and m.shd == 2


def test_empty_graphs_agree_perfectly():
    m = compare(dag("ab", ""), dag("ab", ""))
    assert (m.f1_adjacent, m.f1_arrowhead, m.shd) == (1.0, 1.0, 0)


def test_as_dict_has_the_cli_keys():
    keys = set(compare(TRUTH, TRUTH).as_dict())
    assert {"f1_adjacent", "f1_arrowhead", "shd", "precision_adjacent", "recall_adjacent"} <= keys


def test_every_metric_is_declared_once_and_reaches_the_results_table():
    from dataclasses import fields

    from hpc.graphs.metrics import METRIC_INFO, Metrics
    from hpc.report.summary import HIGHER_IS_BETTER, LABELS, METRICS
    from hpc.results import COLUMNS

    assert {f.name for f in fields(Metrics)} <= set(METRIC_INFO)  # a new metric without metadata fails here
    assert set(METRIC_INFO) <= set(COLUMNS)  # ... and none is dropped by psle aggregate / report
    assert METRICS == ("f1_adjacent", "f1_arrowhead", "shd")
    assert HIGHER_IS_BETTER["shd"] is False and LABELS["precision_arrowhead"] == "Prec-arrow"
