"""PEF's steps on planted problems whose answers are known, plus agreement with scipy."""

import gc
import os
import sys
import time

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform
from scipy.stats import norm

from hpc.data.generate import benchmark_problem, random_sem, sample
from hpc.errors import PsleError
from hpc.learners.ensemble import remaining
from hpc.graphs.pdag import PDAG
from hpc.executors import DaskExecutor, SerialExecutor
from hpc.pef.checkpoint import RunCheckpoint
from hpc.pef.fusion import FusionConfig, ParentSets, fisher_z_pvalues, fuse, partial_correlations, screen_block
from hpc.pef.partition import (PartitionConfig, average_linkage, cluster_distances, cluster_labels, cut, distance_matrix,
                               large_cluster_counts, merge_small, partition, standardize)
from hpc.pef.pipeline import PEF, WallLimitHit, screener
from hpc.pef.steps import NONE, steps_from
from tests.endless import endless_blocks


def scipy_linkage(x):
    d = distance_matrix(x).astype(np.float64)
    np.fill_diagonal(d, 0)
    return linkage(squareform(d, checks=False), "average")


@pytest.mark.parametrize("seed", range(3))
def test_linkage_matches_scipy(seed):
    x = np.random.default_rng(seed).standard_normal((100, 40))
    ours = average_linkage(distance_matrix(x))
    theirs = scipy_linkage(x)
    assert np.array_equal(ours[:, [0, 1, 3]], theirs[:, [0, 1, 3]])
    assert np.allclose(ours[:, 2], theirs[:, 2], atol=1e-5)


def test_cut_matches_scipy_fcluster():
    x = np.random.default_rng(4).standard_normal((100, 30))
    z = average_linkage(distance_matrix(x))
    for k in (2, 5, 11):
        ours = cut(z, 30, k)
        theirs = fcluster(z, k, "maxclust")
        # same partition up to label names
        assert len(set(zip(ours, theirs))) == k == len(set(ours))


def test_large_cluster_counts_by_hand():
    # 4 points: merge (0,1) -> 4, then (2,3) -> 5, then (4,5).
    z = np.array([[0, 1, 0.1, 2], [2, 3, 0.2, 2], [4, 5, 0.5, 4]])
    assert large_cluster_counts(z, 4, 2).tolist() == [0, 1, 2, 1]  # K = 4, 3, 2, 1


def test_cluster_distances_are_mean_one_minus_abs_correlation_over_variable_pairs():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((300, 40))
    x[:, 1:] += 0.5 * x[:, :-1]
    labels = rng.integers(0, 5, 40)  # unsorted, runs cross the 7-column blocks
    d = 1 - np.abs(np.corrcoef(x, rowvar=False))
    expected = np.array([[d[np.ix_(labels == a, labels == b)].mean() for b in range(5)] for a in range(5)])
    assert np.allclose(cluster_distances(x, labels, block=7), expected, atol=1e-6)


def test_merge_small_joins_each_small_cluster_to_its_nearest():
    dist = np.array([[0, 0.9, 0.2, 0.8], [0.9, 0, 0.7, 0.3], [0.2, 0.7, 0, 0.9], [0.8, 0.3, 0.9, 0]])
    owner = merge_small(dist, np.array([10, 10, 2, 1]), m=5)
    assert owner[2] == owner[0] and owner[3] == owner[1] and owner[0] != owner[1]


def test_merge_small_under_a_cap_never_makes_a_cluster_above_it():
    # The straggler of 3 is nearest to the cluster of 9, but their union would pass the cap of 10, so it
    # joins the other small ones; a straggler whose only partner would pass the cap stays alone.
    dist = np.array([[0, 0.1, 0.5, 0.2], [0.1, 0, 0.6, 0.9], [0.5, 0.6, 0, 0.9], [0.2, 0.9, 0.9, 0]])
    owner = merge_small(dist, np.array([9, 3, 4, 2]), m=5, cap=10)
    sizes = np.bincount(owner, weights=[9, 3, 4, 2])
    assert owner[1] == owner[2] and owner[0] != owner[1] and sizes.max() <= 10
    alone = merge_small(np.array([[0, 0.1], [0.1, 0]]), np.array([9, 3]), m=5, cap=10)
    assert alone.tolist() == [0, 1]


def two_blocks(rng, size=30, n=1000, cross=(), second=None):
    """Two dense random DAGs on disjoint variables (`size` and `second` of them, default equal),
    optional cross edges, sampled as one SEM."""
    edges = []
    for offset, k in ((0, size), (size, second or size)):
        for i in range(k):
            for j in range(i + 1, min(i + 4, k)):
                edges.append((offset + i, offset + j))
    edges += list(cross)
    dag = PDAG(tuple(f"V{i}" for i in range(size + (second or size))), np.array(edges))
    sem = random_sem(dag, rng)
    return dag, sample(sem, n, rng)


def test_two_well_separated_blocks_are_found():
    rng = np.random.default_rng(0)
    _, x = two_blocks(rng)
    perm = rng.permutation(60)
    clusters = partition(x[:, perm], PartitionConfig(whole_below=0, large_fraction=0.3))
    found = sorted(sorted(perm[c].tolist()) for c in clusters)
    assert found == [list(range(30)), list(range(30, 60))]


def test_a_size_cap_splits_big_clusters_along_their_own_tree_and_keeps_every_variable():
    rng = np.random.default_rng(0)
    _, x = two_blocks(rng, size=40, second=20)  # blocks of 40 and 20 chain-like variables
    plain = partition(x, PartitionConfig(whole_below=0, large_fraction=0.3))
    assert sorted(len(c) for c in plain) == [20, 40]
    capped = partition(x, PartitionConfig(whole_below=0, large_fraction=0.3, max_size=25))
    sizes = sorted(len(c) for c in capped)
    assert max(sizes) <= 25 and min(sizes) >= 25 // 4 and sum(sizes) == 60 and len(sizes) >= 3
    assert sorted(np.concatenate(capped).tolist()) == list(range(60))
    block = {i: i >= 40 for i in range(60)}
    assert all(len({block[i] for i in c}) == 1 for c in capped)  # pieces never mix the two blocks
    assert [c.tolist() for c in partition(x, PartitionConfig(whole_below=0, large_fraction=0.3, max_size=40))] == \
        [c.tolist() for c in plain]  # nothing above the cap: the paper's partition unchanged
    with pytest.raises(PsleError, match="max_size=3"):
        PartitionConfig(max_size=3).validate()


def test_with_few_rows_no_cluster_has_more_than_half_as_many_variables_as_rows():
    from hpc.pef.partition import largest_cluster

    rng = np.random.default_rng(1)
    _, x = two_blocks(rng, size=40, second=20)
    assert largest_cluster(500, 1000) == 500 and largest_cluster(500, 200) == 100 and largest_cluster(500, 3) == 4
    few = x[:44]  # 44 rows: clusters of at most 22 variables, the 40-block in pieces
    sizes = sorted(len(c) for c in partition(few, PartitionConfig(whole_below=0, large_fraction=0.3)))
    assert max(sizes) <= 22 and sum(sizes) == 60
    paper = partition(few, PartitionConfig(whole_below=0, large_fraction=0.3, max_size=0))  # the paper's rule
    assert max(len(c) for c in paper) > 22


class RecordingExecutor(SerialExecutor):
    """Runs serially, remembers the order tasks were handed over, and offers 3 threads per task."""

    def __init__(self):
        self.order: list[tuple] = []

    def task_threads(self, n_tasks):
        return 3

    def run(self, fn, tasks):
        self.order += tasks
        return super().run(fn, tasks)

    def run_drawn(self, fn, draw):
        def recorded():
            task = draw()
            if task is not None:
                self.order.append(task[1])
            return task

        return super().run_drawn(fn, recorded)


def test_estimation_submits_the_largest_cluster_first():
    rng = np.random.default_rng(3)
    dag, x = two_blocks(rng, size=12, n=1000, second=30)
    executor = RecordingExecutor()
    pef = PEF([{"method": "fges"}, {"method": "fges", "penalty": 4}], partition=PartitionConfig(whole_below=0, large_fraction=0.2),
              executor=executor, progress=False, steps=steps_from(NONE)).fit(x, dag.variables)  # estimation's tasks only
    assert sorted(len(c) for c in pef.clusters_) == [12, 30]
    estimation = [t for t in executor.order if isinstance(t[0], dict)]
    assert [len(t[3]) for t in estimation] == [30, 30, 12, 12]
    assert {t[5] for t in estimation} == {3}  # the executor's thread offer reaches every run
    # Results land with their own cluster whatever the order: each cluster has both members' runs.
    assert all(len(runs) == 2 and all(r.status == "ok" for r in runs) for runs in pef.cluster_runs_)


def test_serial_tasks_may_use_every_allocated_cpu(monkeypatch):
    for var in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"):
        monkeypatch.delenv(var, raising=False)
    assert SerialExecutor().task_threads(7) == len(os.sched_getaffinity(0))
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "3")
    assert SerialExecutor().task_threads(7) == 3


def test_fisher_z_by_hand():
    r, n = 0.1, 100
    expected = 2 * (1 - norm.cdf(np.arctanh(0.1) * np.sqrt(n - 3)))
    assert fisher_z_pvalues(np.array([r]), n, 0)[0] == pytest.approx(expected)
    assert fisher_z_pvalues(np.array([r]), n, 2)[0] == pytest.approx(2 * (1 - norm.cdf(np.arctanh(0.1) * np.sqrt(95))))


def test_partial_correlation_equals_residual_correlation():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((500, 5))
    x[:, 1] += x[:, 2] - x[:, 3]
    x[:, 0] += 0.5 * x[:, 2]
    z = standardize(x, np.float64)
    corr = z.T @ z
    s = x[:, [2, 3]]
    res = [v - s @ np.linalg.lstsq(np.column_stack([s, np.ones(500)]), v, rcond=None)[0][:2]
           - np.mean(v - s @ np.linalg.lstsq(np.column_stack([s, np.ones(500)]), v, rcond=None)[0][:2])
           for v in (x[:, 0], x[:, 1])]
    expected = np.corrcoef(res[0], res[1])[0, 1]
    assert partial_correlations(corr, np.array([[0, 1, 2, 3]]))[0] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("conditioning", [1, 3, 6, 9])
def test_batched_elimination_equals_the_inverse_and_survives_collinear_sets(conditioning):
    rng = np.random.default_rng(conditioning)
    x = rng.standard_normal((400, 30))
    x[:, 1:] += 0.6 * x[:, :-1]
    x[:, 29] = x[:, 27] - x[:, 28]  # an exactly collinear triple
    z = standardize(x, np.float64)
    corr = z.T @ z
    index = np.stack([rng.choice(27, conditioning + 2, replace=False) for _ in range(500)])
    sub = corr[index[:, :, None], index[:, None, :]]
    prec = np.linalg.inv(sub)
    expected = -prec[:, 0, 1] / np.sqrt(prec[:, 0, 0] * prec[:, 1, 1])
    assert np.allclose(partial_correlations(corr, index), expected, atol=1e-12)
    singular = np.column_stack([index[:, :2], np.tile([27, 28, 29], (500, 1))])
    rho = partial_correlations(corr, singular)
    assert np.isfinite(rho).all() and (np.abs(rho) <= 1 + 1e-9).all()


def test_screen_block_equals_pair_by_pair_tests():
    rng = np.random.default_rng(2)
    dag, x = two_blocks(rng, size=12, n=300, cross=[(3, 15), (7, 20)])
    z = standardize(x, np.float64)
    union = dag.with_edges(dag.directed[(dag.directed < 12).all(axis=1) | (dag.directed >= 12).all(axis=1)])
    parents = ParentSets.of(union)
    rows, cols = np.arange(12), np.arange(12, 24)
    config = FusionConfig(alpha1=0.01)
    pairs, pvals, tested = screen_block(z, rows, cols, parents, 300, config)
    assert tested == 144
    expected = {}
    for i in rows:
        for j in cols:
            t = [i, j, *parents[i].tolist(), *parents[j].tolist()]
            corr = z[:, t].T @ z[:, t]
            pv = fisher_z_pvalues(partial_correlations(corr, np.arange(len(t))[None, :]), 300, len(t) - 2)[0]
            if pv < 0.01:
                expected[(i, j)] = pv
    assert {tuple(p) for p in pairs.tolist()} == set(expected)
    assert np.allclose(pvals, [expected[tuple(p)] for p in pairs.tolist()])
    # Batches bounded by matrix entries (one pair per batch here) give the same answer.
    small = screen_block(z, rows, cols, parents, 300, FusionConfig(alpha1=0.01, chunk_entries=1))
    assert {tuple(p) for p in small[0].tolist()} == set(expected) and small[2] == 144
    assert np.allclose(sorted(small[1]), sorted(pvals))


def test_fusion_adds_the_cross_edge_that_exists_and_no_other():
    rng = np.random.default_rng(3)
    dag, x = two_blocks(rng, size=20, n=2000, cross=[(5, 27)])
    within = dag.directed[(dag.directed < 20).all(axis=1) | (dag.directed >= 20).all(axis=1)]
    union = dag.with_edges(within)
    fused, stats = fuse(standardize(x, np.float64), 2000, union, [np.arange(20), np.arange(20, 40)])
    added = {tuple(e) for e in fused.directed.tolist()} - {tuple(e) for e in within.tolist()}
    assert {tuple(sorted(e)) for e in added} == {(5, 27)}
    assert stats.edges_added == 1 and stats.pairs_screened == 400


def test_f2_computed_ahead_in_batches_equals_testing_each_pair_in_turn(monkeypatch):
    import hpc.pef.fusion as fusion

    rng = np.random.default_rng(4)
    cross = [(i, 25 + (3 * i) % 25) for i in range(0, 25, 2)]  # many cross edges: F2 links pairs as it goes
    dag, x = two_blocks(rng, size=25, n=400, cross=cross)
    within = dag.directed[(dag.directed < 25).all(axis=1) | (dag.directed >= 25).all(axis=1)]
    union, clusters = dag.with_edges(within), [np.arange(25), np.arange(25, 50)]
    z, config = standardize(x, np.float64), FusionConfig(alpha1=0.05, alpha2=0.01)
    batched, stats = fuse(z, 400, union, clusters, config)

    def one_by_one(z, pairs, parents, n):
        products = fusion.CrossProducts(z)
        return np.array([fusion._pcor_pvalue(products, i, j, sorted(set(parents[i].tolist()) | set(parents[j].tolist())),
                                             n) for i, j in pairs.tolist()])

    monkeypatch.setattr(fusion, "conditioned_pvalues", one_by_one)
    monkeypatch.setattr(fusion, "F2_BATCH", 7)
    reference, ref_stats = fuse(z, 400, union, clusters, config)
    assert stats.f1_candidates > 20 and 5 < stats.f2_candidates < stats.f1_candidates
    assert stats.f2_candidates == ref_stats.f2_candidates and batched == reference
    parents = ParentSets.of(union)
    pairs = np.array([[0, 30], [3, 27], [10, 49], [24, 25]])
    assert np.allclose(fusion.conditioned_pvalues(z, pairs, parents, 400), one_by_one(z, pairs, parents, 400),
                       rtol=1e-9, atol=1e-15)


def test_f2_and_f3_from_the_gram_matrix_equal_them_from_the_rows(monkeypatch):
    import hpc.pef.fusion as fusion

    rng = np.random.default_rng(5)
    dag, x = two_blocks(rng, size=25, n=400, cross=[(i, 25 + (7 * i) % 25) for i in range(0, 25, 3)])
    within = dag.directed[(dag.directed < 25).all(axis=1) | (dag.directed >= 25).all(axis=1)]
    union, clusters = dag.with_edges(within), [np.arange(25), np.arange(25, 50)]
    z, config = standardize(x, np.float64), FusionConfig(alpha1=0.05, alpha2=0.01)
    products, t = fusion.CrossProducts(z), [3, 30, 7, 41]
    assert np.allclose(products(t), z[:, t].T @ z[:, t], rtol=1e-12) and products.gram is not None
    from_gram, stats = fuse(z, 400, union, clusters, config)
    monkeypatch.setattr(fusion, "GRAM_UPTO", 10)  # 50 variables: every product from the rows
    from_rows, row_stats = fuse(z, 400, union, clusters, config)
    assert stats.edges_added > 3 and stats.f2_candidates == row_stats.f2_candidates and from_gram == from_rows


GATE = "psle-test-order-gate"


def _start_time(k: int, data: np.ndarray) -> float:
    from dask.distributed import Event

    assert Event(GATE).wait(timeout=300), "the gate never opened"
    return time.monotonic()


@pytest.mark.slow
def test_dask_tasks_start_in_the_order_given_with_scattered_data():
    # PEF hands over its largest clusters first so none is left to run alone at the end; with data
    # scattered to the worker dask otherwise starts them last-submitted-first after the first one.
    # The first task to start waits at a gate until the scheduler holds every task, so the order is
    # dask's choice among all of them, not the order they happened to arrive in.
    import threading

    from dask.distributed import Event

    sizes = [400, 350, 300, 250, 200, 150, 100, 50]
    with DaskExecutor(n_workers=1) as executor:
        client = executor.client

        def open_gate_once_all_are_submitted() -> None:
            deadline = time.monotonic() + 300
            while len(client.run_on_scheduler(lambda dask_scheduler: [
                    k for k in dask_scheduler.tasks if str(k).startswith("located")])) < len(sizes):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            Event(GATE, client=client).set()

        data = [executor.scatter(np.zeros((s, s)), broadcast=False) for s in sizes]
        gate = threading.Thread(target=open_gate_once_all_are_submitted)
        gate.start()
        started = dict(executor.run(_start_time, [(k, data[k]) for k in range(len(sizes))]))
        gate.join()
    assert sorted(started, key=started.get) == list(range(len(sizes)))


def _slow_square(x: int) -> tuple[int, float]:
    time.sleep(0.3)
    return x * x, time.monotonic()


@pytest.mark.slow
def test_dask_draws_each_task_when_a_worker_is_free_for_it():
    # Two workers: two tasks in flight, and each later task drawn only once a result came back, so
    # the caller decides it knowing every result before it (PEF's fallbacks rely on that).
    drawn, seen = [], []
    with DaskExecutor(n_workers=2) as executor:
        def draw():
            if len(drawn) == 6:
                return None
            drawn.append(len(seen))  # results the caller had when this task was decided
            return len(drawn) - 1, (len(drawn) - 1,)

        for key, (square, _) in executor.run_drawn(_slow_square, draw):
            assert square == key * key
            seen.append(key)
    assert sorted(seen) == list(range(6))
    # Task i starts only when at most one other is in flight: i - 1 results are in (two may land at once).
    assert drawn[:2] == [0, 0] and all(d >= i - 1 for i, d in enumerate(drawn))
    with DaskExecutor(n_workers=1) as executor:
        tasks = iter([("a", (2,)), ("b", (3,))])
        assert dict(executor.run_drawn(_slow_square, lambda: next(tasks, None))).keys() == {"a", "b"}


def _short_task(k: int) -> int:
    time.sleep(0.05)  # pacing only: the draws below count tasks in flight, not time
    return k


@pytest.mark.slow
def test_dask_draws_onto_workers_that_join_during_the_run():
    # SLURM worker jobs start when the queue lets them: a run begun on one worker must use the next.
    # Tasks are drawn until the second worker has joined (however long it takes to start), then six
    # more; a task drawn while another is still in flight shows the run put the new worker to work.
    draws: list[tuple[bool, int]] = []  # (second worker there?, tasks in flight) at each draw
    seen = 0
    with DaskExecutor(n_workers=1) as executor:
        executor._cluster.scale(2)  # asked for now, up some time later, while the run goes on
        deadline = time.monotonic() + 300

        def draw():
            joined = len(executor.client.nthreads()) >= 2
            if joined and sum(j for j, _ in draws) == 6:
                return None
            assert joined or time.monotonic() < deadline, "the second worker never joined"
            draws.append((joined, len(draws) - seen))
            return len(draws) - 1, (len(draws) - 1,)

        for key, k in executor.run_drawn(_short_task, draw):
            assert key == k
            seen += 1
    assert seen == len(draws)
    assert all(flight == 0 for joined, flight in draws if not joined)  # one worker: one task at a time
    assert max(flight for joined, flight in draws if joined) == 1  # two workers: two at once, never more


@pytest.mark.slow
def test_a_dask_run_abandoned_between_results_closes_quietly_after_its_executor():
    # Ctrl-C between two results leaves the run's generator to the garbage collector, which may
    # reach it after the executor closed: that must print nothing (it printed a RuntimeError traceback).
    with DaskExecutor(n_workers=1) as executor:
        results = executor.run(pow, [(2, 3), (2, 4), (2, 5)])
        next(results)
    unraisable, hook = [], sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        del results
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert not unraisable, unraisable[0].exc_value


@pytest.mark.slow
def test_pef_serial_and_dask_agree_and_find_the_blocks(tmp_path):
    rng = np.random.default_rng(5)
    dag, x = two_blocks(rng, size=30, n=1000, cross=[(3, 40)])
    pef = PEF([{"method": "fges", "penalty": 2}], partition=PartitionConfig(whole_below=0, large_fraction=0.3), progress=False)
    serial = pef.fit(x, dag.variables)
    graph_serial = serial.graph_
    assert sorted(sorted(c.tolist()) for c in serial.clusters_) == [list(range(30)), list(range(30, 60))]
    with DaskExecutor(n_workers=2) as executor:
        parallel = PEF(pef.members, partition=pef.partition, executor=executor, progress=False).fit(x, dag.variables)
        tcp = executor.client.run(lambda: __import__("dask").config.get("distributed.comm.timeouts.tcp"))
        # Two single-threaded workers: one task may use both cores, two or more get one each.
        assert [executor.task_threads(k) for k in (1, 2, 5)] == [2, 1, 1]
    # The local cluster's workers got the long TCP timeout that keeps a busy in-process scheduler connected.
    assert set(tcp.values()) == {os.environ.get("DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP", "600s")}
    assert parallel.graph_ == graph_serial
    from hpc.graphs.metrics import evaluate
    from hpc.learners import FGES

    # With the blocks found, PEF is as accurate as fGES on the whole problem.
    whole = FGES(penalty=2).fit(x, dag.variables).graph_
    assert evaluate(graph_serial, dag).f1_adjacent >= evaluate(whole, dag).f1_adjacent - 0.05
    meta = parallel.result_meta()
    assert [c["size"] for c in meta["clusters"]] == [len(c) for c in parallel.clusters_]
    assert meta["fusion"]["pairs_screened"] == 900 and meta["seconds"]["total"] > 0


def test_a_members_limit_is_cut_to_what_is_left_of_the_runs_wall_limit(monkeypatch):
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)  # a clock that stands still: exact, however slow the machine
    assert remaining(None, None) is None and remaining(10.0, None) == 10.0
    assert remaining(10.0, now + 100) == 10.0
    assert remaining(10.0, now + 5) == 5 and remaining(None, now + 5) == 5
    assert remaining(10.0, now - 1) == -1


@pytest.mark.parametrize("limit", [0, -5])
def test_a_wall_limit_must_be_positive(limit):
    with pytest.raises(PsleError, match=f"wall limit must be positive, got {limit}"):
        PEF([{"method": "fges"}], wall_limit=limit).validate()


def test_wall_limit_cuts_the_running_cluster_and_skips_the_rest():
    # Three blocks on which Tetrad's fGES would search for years (tests/endless.py): the first cluster's run is
    # still going when the limit passes on any machine, so it is the one cut, and the others never start.
    x, variables = endless_blocks((100, 80, 60))
    pef = PEF([{"method": "fges", "penalty": 1, "engine": "tetrad"}], wall_limit=2, partition=PartitionConfig(whole_below=0),
              progress=False).fit(x, variables)
    assert pef.status_ == "timed out" and pef.graph_ is None and pef.dag_ is None
    assert sorted(len(c) for c in pef.clusters_) == [60, 80, 100]
    runs = {len(cluster): runs for cluster, runs in zip(pef.clusters_, pef.cluster_runs_)}
    (cut,) = runs.pop(100)  # serially, the largest cluster first
    assert cut.status == "timed out" and cut.error is None and cut.seconds > 0
    skipped = [r for cluster in runs.values() for r in cluster]
    assert len(skipped) == 2 and all(r.status == "timed out" and r.seconds == 0 and
                                     r.error == "the run's wall limit passed before it started" for r in skipped)
    assert pef.result_meta()["fusion"] is None


def test_fusion_screen_stops_once_the_wall_limit_has_passed():
    rng = np.random.default_rng(0)
    z = standardize(rng.normal(size=(200, 6)), np.float64)
    blocks = [(np.arange(3), np.arange(3, 6))]
    parents = ParentSets.of(PDAG(tuple("abcdef"), np.empty((0, 2), dtype=np.int64)))
    assert len(list(screener(SerialExecutor(), time.time() + 3600)((z,), screen_block, blocks, parents, 200, FusionConfig()))) == 1
    with pytest.raises(WallLimitHit):
        list(screener(SerialExecutor(), time.time() - 1)((z,), screen_block, blocks, parents, 200, FusionConfig()))


class CountingExecutor(SerialExecutor):
    """Serial, and counts the tasks it is handed: what a resumed screening recomputes."""

    tasks = 0

    def run(self, fn, tasks):
        self.tasks += len(tasks)
        return super().run(fn, tasks)


def test_fusion_resumes_from_the_cluster_pairs_a_killed_run_had_screened(tmp_path):
    problem = benchmark_problem(200, 0, 500, network="alarm")
    clusters = partition(problem.data, PartitionConfig())
    label = cluster_labels(clusters, len(problem.variables))
    true = problem.truth.directed
    union = PDAG(problem.variables, true[label[true[:, 0]] == label[true[:, 1]]])  # oracle cluster DAGs
    z, n, config = standardize(problem.data, np.float64), problem.n, FusionConfig()
    whole, _ = fuse(z, n, union, clusters, config)
    blocks = len(clusters) * (len(clusters) - 1) // 2
    assert blocks >= 6

    path, settings = tmp_path / "run.h5", {"data": "d"}
    killed = screener(SerialExecutor(), memory=RunCheckpoint(path, settings, flush_seconds=0))(
        (z,), screen_block, [(clusters[a], clusters[b]) for a in range(len(clusters)) for b in range(a + 1, len(clusters))],
        ParentSets.of(union), n, config)
    for _ in range(3):
        next(killed)  # three cluster pairs screened, then the process dies (no flush at the end)

    counting = CountingExecutor()
    memory = RunCheckpoint(path, settings)
    resumed, _ = fuse(z, n, union, clusters, config, screen=screener(counting, memory=memory))
    assert counting.tasks == blocks - 3
    assert sorted(map(tuple, resumed.directed.tolist())) == sorted(map(tuple, whole.directed.tolist()))
    assert len(RunCheckpoint(path, settings).screened) == blocks  # flushed when the screening ended

    # Other fusion settings: the kept screening does not apply, it runs afresh (and replaces it).
    counting = CountingExecutor()
    fuse(z, n, union, clusters, FusionConfig(alpha1=0.01), screen=screener(counting, memory=RunCheckpoint(path,
                                                                                                         settings)))
    assert counting.tasks == blocks


def test_context_variables_are_the_most_correlated_outside_ones():
    from hpc.pef.partition import context_variables, standardize

    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 6))
    x[:, 4] += 2 * x[:, 0]  # strongly tied to the cluster {0, 1}
    x[:, 5] += 0.5 * x[:, 1]  # weakly tied
    z = standardize(x)
    assert context_variables(z, np.array([0, 1]), 1).tolist() == [4]
    assert context_variables(z, np.array([0, 1]), 2).tolist() == [4, 5]
    assert len(context_variables(z, np.arange(6), 3)) == 0


@pytest.mark.slow
def test_context_lets_clusters_see_outside_parents_and_keeps_only_their_own_edges():
    from hpc.graphs.metrics import evaluate
    from hpc.pef.partition import PartitionConfig

    problem = benchmark_problem(300, 0, 1000, network="alarm")
    plain = PEF([{"method": "fges", "penalty": 2}], progress=False).fit(problem.data, problem.variables)
    seen = PEF([{"method": "fges", "penalty": 2}], partition=PartitionConfig(context=1.0),
               progress=False).fit(problem.data, problem.variables)
    assert [c.tolist() for c in seen.clusters_] == [c.tolist() for c in plain.clusters_]
    searched = max(int(np.vstack([r.directed, r.undirected]).max()) for runs in seen.cluster_runs_ for r in runs if r)
    assert searched >= max(len(c) for c in seen.clusters_)  # some search saw variables beyond its cluster
    f_plain, f_seen = evaluate(plain.graph_, problem.truth), evaluate(seen.graph_, problem.truth)
    assert f_seen.f1_adjacent >= f_plain.f1_adjacent - 0.005 and f_seen.shd <= f_plain.shd + 5


def test_collinear_columns_give_a_graph_not_a_traceback():
    """A column the sum of two, under strong edge weights: singular covariance blocks in the members' BIC
    (the choice among them) and in the fusion's regressions. A plain copy is refused before any work."""
    p = benchmark_problem(80, 3, 300, graph="er", weights=(1.5, 3))
    x = p.data.copy()
    x[:, 9] = x[:, 10] + x[:, 11]
    members = [{"method": "fges", "penalty": 2.0}, {"method": "pc-stable", "alpha": 0.01, "engine": "numpy"}]
    copied = x.copy()
    copied[:, 5] = 2 * x[:, 7]
    with pytest.raises(PsleError, match="are copies of each other"):
        PEF(members, executor=SerialExecutor(), progress=False).fit(copied, list(p.variables))
    model = PEF(members, executor=SerialExecutor(), progress=False).fit(x, list(p.variables))
    assert model.status_ == "ok" and len(model.graph_.directed) + len(model.graph_.undirected) > 0
    winners = [c["winner"] for c in model.result_meta()["clusters"]]
    assert winners and all(w is not None for w in winners)


@pytest.mark.parametrize("error", [KeyError("tcp://192.0.2.2:40781"), "closed"])
def test_a_worker_job_leaving_during_a_scatter_gets_the_data_sent_again(error):
    """dask's scheduler fails a scatter with a KeyError naming a worker that left while it sent (a SLURM worker job
    ending), or closes the scatter's connection; the SLURM executor sends the data again to a worker still there."""
    from distributed.comm.core import CommClosedError

    from hpc.executors import SCATTER_TRIES, SlurmDaskExecutor

    failure = CommClosedError("in <TCP (closed) ConnectionPool.scatter>: Stream is closed") if error == "closed" \
        else error

    class Client:
        def __init__(self, failures):
            self.failures, self.calls, self.waits = failures, 0, 0

        def scatter(self, obj, broadcast, hash):
            self.calls += 1
            assert not broadcast and not hash  # dask's replicate never ends if a worker leaves during it
            if self.calls <= self.failures:
                raise failure
            return f"future of {obj}"

        def wait_for_workers(self, n, timeout):
            self.waits += 1

    executor = object.__new__(SlurmDaskExecutor)  # its client only: no SLURM job is started
    executor.client = Client(failures=1)
    assert executor._copies("x", broadcast=False) == "future of x"
    assert executor.client.calls == 2 and executor.client.waits == 1
    executor.client = Client(failures=SCATTER_TRIES)  # workers that keep leaving: the error comes through
    with pytest.raises(type(failure)):
        executor._copies("x", broadcast=True)  # asked for copies everywhere, it sends one
    assert executor.client.calls == SCATTER_TRIES


def _total(parts: list[np.ndarray], scale: float) -> float:
    return sum(float(v.sum()) for v in parts) * scale


@pytest.mark.slow
@pytest.mark.parametrize("drawn", [False, True])
def test_scattered_data_lost_with_its_worker_is_scattered_again_and_its_tasks_run(drawn):
    # A worker killed for its memory, or a SLURM worker job preempted, takes the data scattered to it alone;
    # dask cannot recompute it and cancels every task reading it (a SLURM test lost a run so).
    with DaskExecutor(n_workers=2) as executor:
        client = executor.client
        data = executor.scatter(np.arange(5.0), broadcast=False)
        (holder,) = client.who_has([data])[data.key]
        client.restart_workers([holder])
        deadline = time.monotonic() + 120
        while data.status == "finished":
            assert time.monotonic() < deadline, "the restarted worker kept the data"
            time.sleep(0.1)
        tasks = [([data], 1.0), ([data, data], 1.0), ([data], 3.0)]  # futures inside lists, as dask finds them
        if drawn:
            queue = iter(enumerate(tasks))
            results = dict(executor.run_drawn(_total, lambda: next(queue, None)))
        else:
            results = dict(executor.run(_total, tasks))
            assert tasks[0][0][0] is data  # the caller's tasks are left as they were
        assert results == {0: 10.0, 1: 20.0, 2: 30.0}
        lost = client.scatter(np.ones(2), hash=False)  # lost data the executor did not scatter: the task fails
        client.cancel([lost])
        with pytest.raises(Exception, match="cancel"):
            dict(executor.run(_total, [([lost], 1.0)]))
