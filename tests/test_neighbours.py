"""The sparse path above `sparse_above` / `candidates_above` variables: with every neighbour kept it must
give what the dense path gives; with few kept, memory follows p * k."""

from __future__ import annotations

import numpy as np
import pytest

from hpc.data.generate import benchmark_problem
from hpc.graphs.pdag import PDAG
from hpc.pef.fusion import FusionConfig, ParentSets, f1_candidates, FusionStats, fuse, screen_serial
from hpc.pef.neighbours import nearest, row_blocks, similarity_graph, strongest
from hpc.pef.partition import (PartitionConfig, average_linkage, cluster_distances, cluster_labels, cut, distance_matrix,
                               partition, sparse_average_linkage, sparse_cluster_distances, standardize)


def correlated(p: int, n: int = 300, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mix = np.eye(p) + (rng.random((p, p)) < 0.02) * rng.normal(size=(p, p))
    return rng.normal(size=(n, p)) @ mix


def test_strongest_are_the_largest_absolute_correlations_by_hand():
    x = correlated(40)
    z = standardize(x)
    r = np.abs(np.corrcoef(x, rowvar=False))
    np.fill_diagonal(r, -1)
    top, value = strongest(z, 5, 12, 4)
    for row, v in enumerate(range(5, 12)):
        assert list(top[row]) == list(np.argsort(-r[v], kind="stable")[:4])
        assert np.allclose(value[row], r[v, top[row]], atol=1e-5)


def test_row_blocks_cover_every_row_once_within_the_budget():
    blocks = row_blocks(1000, entries=30_000)
    assert blocks[0] == (0, 30) and blocks[-1][1] == 1000
    assert all(b[0] == a[1] for a, b in zip(blocks, blocks[1:]))


def test_sparse_linkage_with_every_neighbour_is_average_linkage():
    x = correlated(120)
    dense = average_linkage(distance_matrix(x))
    sparse = sparse_average_linkage(similarity_graph(*nearest(standardize(x), 120, 119)))
    assert np.array_equal(dense[:, [0, 1, 3]], sparse[:, [0, 1, 3]])
    assert np.allclose(dense[:, 2], sparse[:, 2], atol=1e-6)
    labels = cut(dense, 120, 7)
    a, b = cluster_distances(x, labels), sparse_cluster_distances(similarity_graph(*nearest(standardize(x), 120, 119)),
                                                                  labels)
    off = ~np.eye(7, dtype=bool)
    assert np.allclose(a[off], b[off], atol=1e-6)


def test_sparse_linkage_by_hand_with_two_components():
    # |r|: 0-1 0.9, 1-2 0.6, 0-2 absent (0), 3-4 0.5; {0,1,2} and {3,4} share nothing.
    from scipy.sparse import csr_matrix

    s = csr_matrix(np.array([[0, .9, 0, 0, 0], [.9, 0, .6, 0, 0], [0, .6, 0, 0, 0], [0, 0, 0, 0, .5],
                             [0, 0, 0, .5, 0]]))
    z = sparse_average_linkage(s)
    assert np.allclose(z[:, 2], [0.1, 0.5, 0.7, 1.0])  # {0,1}; {3,4}; {0,1}+2 at 1 - 0.6/2; the components
    assert list(z[:, 3]) == [2, 2, 3, 5]


def test_sparse_partition_with_every_neighbour_matches_the_dense_one():
    x = correlated(300)
    dense = partition(x, PartitionConfig(whole_below=0, max_size=40))
    sparse = partition(x, PartitionConfig(whole_below=0, max_size=40, sparse_above=0, neighbours=299))
    assert len(dense) >= 5
    assert [list(c) for c in dense] == [list(c) for c in sparse]


def test_sparse_partition_keeps_alarm_replicas_together():
    problem = benchmark_problem(600, 0, 500, network="alarm")
    clusters = partition(problem.data, PartitionConfig(whole_below=0, sparse_above=0, neighbours=10, max_size=200))
    assert sorted(np.concatenate(clusters).tolist()) == list(range(problem.p))
    assert max(len(c) for c in clusters) <= 200 + 50
    label = cluster_labels(clusters, problem.p)
    true = problem.truth.directed
    assert (label[true[:, 0]] == label[true[:, 1]]).mean() > 0.8  # most true edges inside a cluster


@pytest.fixture(scope="module")
def fused_alarm():
    problem = benchmark_problem(200, 0, 500, network="alarm")
    clusters = partition(problem.data, PartitionConfig())
    label = cluster_labels(clusters, problem.p)
    true = problem.truth.directed
    union = PDAG(problem.variables, true[label[true[:, 0]] == label[true[:, 1]]])  # oracle cluster DAGs
    return problem, clusters, union, standardize(problem.data, np.float64)


def test_candidate_screening_with_every_neighbour_finds_the_dense_screenings_pairs(fused_alarm):
    problem, clusters, union, z = fused_alarm
    parents = ParentSets.of(union)

    def found(config: FusionConfig) -> set:
        cand = f1_candidates(z, problem.n, clusters, parents, config, screen_serial, FusionStats(), None)
        return {tuple(sorted(pair)) for pair in cand.tolist()}

    dense = found(FusionConfig())
    assert len(dense) > 20
    assert found(FusionConfig(candidates_above=0, candidates=problem.p - 1)) == dense
    few = found(FusionConfig(candidates_above=0, candidates=5))
    assert few < dense and len(few) > 0.3 * len(dense)


def test_fusion_on_candidates_finds_the_missing_cross_edges(fused_alarm):
    problem, clusters, union, z = fused_alarm
    dag, stats = fuse(z, problem.n, union, clusters, FusionConfig(candidates_above=0, candidates=20))
    true = {tuple(e) for e in problem.truth.directed.tolist()}
    added = {tuple(e) for e in dag.directed.tolist()} - {tuple(e) for e in union.directed.tolist()}
    cross = true - {tuple(e) for e in union.directed.tolist()}
    assert stats.pairs_screened == stats.pairs_tested < problem.p * 20
    skeleton = {frozenset(e) for e in added}
    assert len(skeleton & {frozenset(e) for e in cross}) >= 0.6 * len(cross)


def test_candidate_screening_reuses_the_partitions_neighbours(fused_alarm):
    problem, clusters, union, z = fused_alarm
    parents = ParentSets.of(union)
    config = FusionConfig(candidates_above=0, candidates=8)
    near, _ = nearest(standardize(problem.data), problem.p, 12)
    found = f1_candidates(z, problem.n, clusters, parents, config, screen_serial, FusionStats(), None)
    reused = f1_candidates(z, problem.n, clusters, parents, config, screen_serial, FusionStats(), None, near)
    assert len(found) > 10 and np.array_equal(found, reused)
