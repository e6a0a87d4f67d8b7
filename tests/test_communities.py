"""The partition by communities of the ridge partial-correlation graph (PartitionConfig.rule = "communities")."""

import numpy as np
import pytest

from hpc.data.generate import benchmark_problem
from hpc.errors import PsleError
from hpc.graphs.order import canonical_order
from hpc.pef.communities import merge, partial_correlation_graph
from hpc.pef.partition import PartitionConfig, crossing_share, partition, standardize


def ridge_by_hand(x: np.ndarray, ridge: float) -> np.ndarray:
    z = (x - x.mean(axis=0)) / np.sqrt(((x - x.mean(axis=0)) ** 2).sum(axis=0))
    precision = np.linalg.inv(z.T @ z + ridge * np.eye(x.shape[1]))
    d = np.sqrt(np.diag(precision))
    return np.abs(precision) / d[:, None] / d[None, :]


@pytest.mark.parametrize("rows", [40, 200])  # fewer rows than variables (Woodbury) and more (the inverse)
def test_the_graph_keeps_each_variables_largest_ridge_partial_correlations(rows):
    x = np.random.default_rng(rows).standard_normal((rows, 90))
    x[:, 1] += 2 * x[:, 0]
    w = partial_correlation_graph(standardize(x, np.float64), k=5, ridge=1.0, block=32).toarray()
    pc = ridge_by_hand(x, 1.0)
    np.fill_diagonal(pc, -1)
    chosen = np.zeros_like(pc, dtype=bool)
    for i, row in enumerate(pc):
        chosen[i, np.argsort(-row)[:5]] = True
    chosen |= chosen.T
    assert np.array_equal(w > 0, chosen) and np.allclose(w[chosen], pc[chosen], atol=1e-5)
    assert w[0, 1] == w.max()


def test_merging_joins_the_most_linked_pair_that_fits_the_cap():
    import scipy.sparse as sp

    # clusters 0 (3 variables), 1 (2) and 2 (2): 0-1 linked by 3.0 in all (mean 0.5), 1-2 by 1.8 (mean 0.45),
    # 0-2 by 0.3 (mean 0.05)
    labels = np.array([0, 0, 0, 1, 1, 2, 2])
    w = np.zeros((7, 7))
    w[0, 3] = w[1, 4] = w[2, 3] = 1.0
    w[3, 5], w[4, 6] = 1.0, 0.8
    w[0, 5] = 0.3
    w = sp.csr_matrix(w + w.T)
    assert merge(w, labels, cap=5, small=None).tolist() == [0, 0, 0, 0, 0, 1, 1]  # then 0 and 2 do not fit
    assert merge(w, labels, cap=4, small=None).tolist() == [0, 0, 0, 1, 1, 1, 1]  # 0 and 1 do not fit
    assert merge(w, labels, cap=4, small=3).tolist() == [0, 0, 0, 1, 1, 1, 1]  # the two small ones; 0 is not small
    # 1 joins 0 (mean 0.5); then 2, still small, fits nowhere and joins its most linked cluster anyway
    assert merge(w, labels, cap=5, small=3).tolist() == [0] * 7



def test_communities_cut_fewer_true_edges_than_the_linkage_on_modules_and_follow_no_column_order():
    problem = benchmark_problem(800, 100, 1000, graph="modular")  # seed 100: a tuning seed, no test uses it
    order = canonical_order(problem.data)
    x = np.ascontiguousarray(problem.data[:, order])
    linkage = [order[c] for c in partition(x, PartitionConfig(max_size=200))]
    found = [order[c] for c in partition(x, PartitionConfig(max_size=200, rule="communities"))]
    assert sorted(np.concatenate(found).tolist()) == list(range(800))
    assert max(map(len, found)) <= 200 and min(map(len, found)) >= 20
    assert crossing_share(problem.truth, found) < crossing_share(problem.truth, linkage) - 0.05
    # The same data with its columns shuffled: PEF's column order first, so the same clusters.
    perm = np.random.default_rng(1).permutation(800)
    shuffled = problem.data[:, perm]
    order2 = canonical_order(shuffled)
    again = [perm[order2[c]] for c in partition(np.ascontiguousarray(shuffled[:, order2]),
                                                 PartitionConfig(max_size=200, rule="communities"))]
    assert sorted(map(sorted, map(list, again))) == sorted(map(sorted, map(list, found)))


def test_rule_settings_are_checked_and_the_default_leaves_a_checkpoints_key_as_it_was():
    with pytest.raises(PsleError, match="rule='louvain': must be one of linkage, communities"):
        PartitionConfig(rule="louvain").validate()
    with pytest.raises(PsleError, match="give max_size > 0"):
        PartitionConfig(rule="communities", max_size=0).validate()
    assert "rule" not in PartitionConfig().settings() and PartitionConfig(rule="communities").settings()["rule"]
