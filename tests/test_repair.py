"""The repair step and the column order: hand-computed candidates and changes, a repair that finds the
cross-cluster edges fusion missed, answers that do not depend on the file's column order, and a run
killed during the repair that resumes to the uninterrupted graph."""

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hpc.data.generate import SEM, benchmark_problem, sample
from hpc.executors import SerialExecutor
from hpc.graphs.equivalence import dag_to_cpdag
from hpc.graphs.metrics import compare
from hpc.graphs.order import canonical_order, relabel
from hpc.graphs.pdag import PDAG
from hpc.pef.pipeline import PEF
from hpc.pef.candidates import PairIndex, candidate_pairs, too_many
from hpc.pef.repair import (Repair, RepairConfig, block_search, changes, join_blocks, partner_lists, repair_blocks,
                             split_by_halo, wide)
from hpc.pef.step import Chain, WallLimitHit, changes_note, run_chain
from hpc.pef.steps import NONE, steps_from
from hpc.progress import Progress
from tests.chains import run_step

PSLE = str(Path(sys.executable).parent / "psle")


def test_candidates_are_adjacent_and_two_step_pairs():
    # 0 -> 1 <- 2, 2 --- 3, 4 alone.
    g = PDAG(tuple("abcde"), [(0, 1), (2, 1)], [(2, 3)])
    assert sorted(map(tuple, candidate_pairs(g).tolist())) == [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]


def test_a_searchs_pairs_are_those_with_both_ends_in_it_in_the_pairs_order_and_local_indices():
    index = PairIndex(6, np.array([(0, 1), (1, 2), (2, 3), (0, 3), (1, 3), (4, 5)]))
    assert index.within(np.array([3, 1])).tolist() == [[1, 0]]  # (1, 3): 3 is column 0, 1 column 1
    assert index.within(np.array([0, 1, 2])).tolist() == [[0, 1], [1, 2]]
    assert index.within(np.array([3, 1])).tolist() == [[1, 0]]  # no trace of the call before
    assert index.within(np.array([5])).tolist() == [] and PairIndex(3, np.empty((0, 2), np.int64)).within(
        np.array([0, 2])).shape == (0, 2)


def test_changes_count_added_removed_and_reoriented_edges():
    before = PDAG(tuple("abcd"), [(0, 1), (1, 2)], [(2, 3)])
    after = PDAG(tuple("abcd"), [(1, 0), (0, 3)], [(1, 2)])
    assert changes(before, after) == {"edges_added": 1, "edges_removed": 1, "edges_reoriented": 2}


def test_blocks_group_the_clusters_joined_by_the_most_edges_up_to_the_size():
    clusters = [np.arange(0, 3), np.arange(3, 6), np.arange(6, 9), np.arange(9, 12), np.arange(12, 14)]
    # clusters 0-2 share two edges, 0-1 one, 1-3 three; cluster 4 is joined to nothing.
    g = PDAG(tuple(f"v{i}" for i in range(14)), [(0, 6), (1, 7), (2, 3), (4, 9), (5, 10), (3, 11)])
    blocks = repair_blocks(clusters, g, 6)
    assert [b.tolist() for b in blocks] == [[0, 1, 2, 6, 7, 8], [3, 4, 5, 9, 10, 11], [12, 13]]
    assert [b.tolist() for b in repair_blocks(clusters, g, 14)] == [list(range(14))]
    # at 8: 1-3 (three edges), then 0-2 (two), then the unjoined 4 with the only block it fits beside
    assert [b.tolist() for b in repair_blocks(clusters, g, 8)] == [[0, 1, 2, 6, 7, 8, 12, 13], [3, 4, 5, 9, 10, 11]]


def test_a_block_sees_its_halo_and_decides_the_pairs_with_the_smaller_end_in_it():
    # 0 -> 1 -> 2 -> 3; blocks {0, 1} and {2, 3}.
    g = PDAG(tuple("abcd"), [(0, 1), (1, 2), (2, 3)])
    pairs = candidate_pairs(g)
    left, right = block_search(g, pairs, np.array([0, 1])), block_search(g, pairs, np.array([2, 3]))
    assert left.columns.tolist() == [0, 1, 2, 3] and left.core == 2  # 2 adjacent to 1, 3 two steps from 1
    assert sorted(map(tuple, left.pairs.tolist())) == [(0, 1), (0, 2), (1, 2), (1, 3)]
    # right's halo holds 1 (adjacent to 2) and 0 (two steps from 2); its pairs are global 2-3, 1-2, 1-3, 0-2
    assert right.columns.tolist() == [2, 3, 0, 1]
    assert sorted(tuple(sorted(r)) for r in right.pairs.tolist()) == [(0, 1), (0, 2), (0, 3), (1, 3)]
    # left says 0 -> 1, 1 -> 2 and adds 0 -> 3; right says 2 -> 3 and 3 -> 1 (a pair left decides: ignored)
    out = join_blocks(g, [left, right], [(np.array([[0, 1], [1, 2], [0, 3]]), np.empty((0, 2), dtype=np.int64)),
                                         (np.array([[0, 1], [1, 3]]), np.empty((0, 2), dtype=np.int64))])
    assert sorted(out.skeleton_keys().tolist()) == [0 * 4 + 1, 0 * 4 + 3, 1 * 4 + 2, 2 * 4 + 3]


def test_a_block_is_cut_into_parts_whose_search_with_its_halo_fits():
    # The chain 0 - 1 - 2 - 3 - 4 - 5: a variable's partners are the ones one and two steps along it.
    g = PDAG(tuple("abcdef"), [(i, i + 1) for i in range(5)])
    pairs = candidate_pairs(g)
    parts = split_by_halo(np.arange(6), partner_lists(pairs, 6), 4)
    assert [part.tolist() for part in parts] == [[0, 1], [2], [3], [4, 5]]
    sizes = [len(block_search(g, pairs, part).columns) for part in parts]
    assert sizes == [4, 5, 5, 4]  # 2 and 3 reach five variables on their own: parts alone
    assert [part.tolist() for part in split_by_halo(np.arange(6), partner_lists(pairs, 6), 6)] == [list(range(6))]


def test_joined_blocks_reverse_a_cross_edge_that_would_close_a_cycle():
    # blocks {0, 1} and {2, 3}: left keeps 0 -> 1 and 1 -> 2; right keeps 2 -> 3; the cross pair 0-3, decided by
    # left as 3 -> 0, would close 0 -> 1 -> 2 -> 3 -> 0.
    g = PDAG(tuple("abcd"), [(0, 1), (1, 2), (2, 3)], [(0, 3)])
    pairs = candidate_pairs(g)
    blocks = [block_search(g, pairs, np.array([0, 1])), block_search(g, pairs, np.array([2, 3]))]
    none = np.empty((0, 2), dtype=np.int64)
    left = {int(c): i for i, c in enumerate(blocks[0].columns)}
    right = {int(c): i for i, c in enumerate(blocks[1].columns)}
    out = join_blocks(g, blocks, [(np.array([[left[0], left[1]], [left[1], left[2]], [left[3], left[0]]]), none),
                                  (np.array([[right[2], right[3]]]), none)])
    # 3 -> 0 reversed: the DAG 0 -> 1 -> 2 -> 3 <- 0, whose CPDAG keeps the collider at 3
    assert out.directed.tolist() == [[0, 3], [2, 3]] and out.undirected.tolist() == [[0, 1], [1, 2]]


def test_canonical_order_follows_the_data_not_the_columns():
    x = np.random.default_rng(0).standard_normal((50, 30))
    perm = np.random.default_rng(1).permutation(30)
    assert np.array_equal(x[:, perm][:, canonical_order(x[:, perm])], x[:, canonical_order(x)])
    g = PDAG(tuple("abc"), [(0, 1)], [(1, 2)])
    back = relabel(g, np.array([2, 0, 1]), ("x", "y", "z"))
    assert back.directed.tolist() == [[2, 0]] and back.undirected.tolist() == [[0, 1]]


def planted_cross_edges() -> tuple[np.ndarray, PDAG, list[np.ndarray]]:
    """Two clusters of 6 variables, each a chain, and three strong edges from cluster A into cluster B."""
    within = [(i, i + 1) for i in range(5)] + [(i, i + 1) for i in range(6, 11)]
    cross = [(2, 8), (3, 9), (4, 10)]
    dag = PDAG(tuple(f"x{i}" for i in range(12)), within + cross)
    weights = np.full(len(dag.directed), 0.8)
    x = sample(SEM(dag, weights, np.ones(12)), 3000, np.random.default_rng(5))
    return x, dag, [np.arange(6), np.arange(6, 12)]


@pytest.mark.jvm
def test_the_repair_adds_the_cross_cluster_edges_fusion_missed_and_no_other():
    x, dag, clusters = planted_cross_edges()
    # Fusion found one cross edge (2 -> 8) but not 3 -> 9 or 4 -> 10; those are two steps apart after it.
    fused = dag.with_edges(dag.directed[((dag.directed[:, 0] < 6) == (dag.directed[:, 1] < 6))
                                        | (dag.directed[:, 0] == 2)])
    assert len(fused.directed) == 11
    graph, account = run_step(Repair(), x, dag_to_cpdag(fused), clusters)
    assert compare(graph, dag_to_cpdag(dag)).shd == 0
    assert account["edges_added"] == 2 and account["edges_removed"] == 0
    first = account["rounds"][0]  # one search over all 12 variables, so over every candidate pair
    assert first["largest_search"] == 12 and first["largest_pairs"] == first["candidate_pairs"]
    # the same with each cluster a block of its own: the halo lets a block join pairs across the cut
    graph, account = run_step(Repair(RepairConfig(block=6, block_pairs=0)), x, dag_to_cpdag(fused), clusters)
    assert compare(graph, dag_to_cpdag(dag)).shd == 0 and account["rounds"][0]["blocks"] == 2
    # with each search, halo counted, cut to at most 8 variables the missing edges are still found (the cut
    # searches, blind to their halo's own neighbours, also add false ones here: what a smaller search costs)
    graph, account = run_step(Repair(RepairConfig(block=6, upto=8)), x, dag_to_cpdag(fused), clusters)
    assert compare(graph, dag_to_cpdag(dag)).recall_adjacent == 1.0 and account["rounds"][0]["blocks"] > 2


@pytest.mark.jvm
def test_pef_gives_the_same_cpdag_in_any_column_order():
    problem = benchmark_problem(200, 1, network="asia")
    members = [{"method": "boss", "penalty": 2.0}, {"method": "fges", "penalty": 2.0, "max_parents": 100,
                                                   "faithfulness": True}]
    graphs = []
    for k in range(3):
        perm = np.random.default_rng(k).permutation(problem.p) if k else np.arange(problem.p)
        pef = PEF(members, progress=False).fit(problem.data[:, perm], [problem.variables[i] for i in perm])
        graphs.append(relabel(pef.graph_, perm, problem.variables))
    assert all(compare(g, graphs[0]).shd == 0 for g in graphs[1:])


@pytest.mark.slow
@pytest.mark.e2e
def test_a_run_killed_during_the_repair_resumes_to_the_uninterrupted_graph(tmp_path):
    data = tmp_path / "a.h5"
    subprocess.run([PSLE, "generate", "--network", "alarm", "--nodes", "300", "--seed", "3", "-o", str(data)],
                   check=True, capture_output=True, timeout=300)
    base = [PSLE, "learn", str(data), "--method", "p-boss", "--param", "penalty=2", "--workers", "1",
            "--pef", "rival.upto=0"]  # else the rival's graph stands, and the repair has no seams to mend
    assert subprocess.run([*base, "-o", str(tmp_path / "ref.json")], capture_output=True, timeout=600).returncode == 0
    ckpt = tmp_path / "run.h5"
    killed = subprocess.Popen([*base, "--checkpoint", str(ckpt), "-o", str(tmp_path / "g.json")],
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    for line in killed.stderr:  # the kill lands at a logged event: the first round is in the checkpoint
        if "repair: round 2 " in line:
            killed.kill()
            break
    assert killed.wait(timeout=60) != 0 and not (tmp_path / "g.json").exists()
    resumed = subprocess.run([*base, "--checkpoint", str(ckpt), "-o", str(tmp_path / "g.json")],
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the repair: 1 round already done" in resumed.stderr
    ref, got = (json.loads((tmp_path / f).read_text()) for f in ("ref.json", "g.json"))
    assert got["edges"] == ref["edges"]
    assert got["meta"]["repair"]["rounds"][0]["resumed"] is True


def test_the_checkpoint_keeps_step_results_by_name_and_refuses_older_formats(tmp_path):
    import h5py

    from hpc.errors import PsleError
    from hpc.learners.ensemble import MemberRun
    from hpc.pef.checkpoint import STORE, RunCheckpoint
    from hpc.pef.step import StepMemory

    path = tmp_path / "run.h5"
    memory = StepMemory(RunCheckpoint(path, {"data": "x"}), "repair")
    spec = {"method": "fges-repair", "settings": "A", "round": 1}
    memory.put(1, MemberRun(spec, "ok", np.array([[0, 1]]), np.empty((0, 2), dtype=np.int64), None, 1.5))
    again = StepMemory(RunCheckpoint(path, {"data": "x"}), "repair")
    run = again.get(1, spec)
    assert run.directed.tolist() == [[0, 1]] and run.undirected.shape == (0, 2) and run.seconds == 1.5
    assert again.get(1, {**spec, "settings": "B"}) is None  # other settings: the step runs afresh
    assert again.part("polish").get(1, spec) is None  # another step's results are its own
    # results that come many a second are saved in batches: on disk at the next save, not before
    batched = StepMemory(RunCheckpoint(path, {"data": "x"}, flush_seconds=3600), "polish")
    batched.memory.save()
    batched.put(0, MemberRun(spec, "ok", np.array([[1, 2]]), np.empty((0, 2), dtype=np.int64), None, 0.1),
                at_once=False)
    assert StepMemory(RunCheckpoint(path, {"data": "x"}), "polish").get(0, spec) is None
    batched.memory.flush()
    assert StepMemory(RunCheckpoint(path, {"data": "x"}), "polish").get(0, spec).directed.tolist() == [[1, 2]]
    assert RunCheckpoint(path, {"data": "x"}).runs == {}  # and not member runs
    for version in (1, 2, 3, 4):  # column order, clocks: refused, not resumed into another graph
        old = tmp_path / f"v{version}.h5"
        with h5py.File(old, "w") as f:
            f.attrs["format"], f.attrs["version"] = STORE.tag, version
        with pytest.raises(PsleError, match=rf"earlier psle \(format version {version}\).*delete it"):
            RunCheckpoint(old, {"data": "x"})


class SlowExecutor(SerialExecutor):
    """Serial, with every task's result held back: a machine many times slower, or under load."""

    def run(self, fn, tasks):
        for t, result in super().run(fn, tasks):
            time.sleep(0.05)
            yield t, result


@pytest.mark.jvm
@pytest.mark.slow
def test_a_slowed_executor_gives_the_same_graph():
    """No clock decides which steps after fusion run or how far: the same data on a slow machine gives the
    same graph, step by step."""
    problem = benchmark_problem(200, 1, network="asia")
    members = [{"method": "fges", "penalty": 2.0, "max_parents": 100, "faithfulness": True}]
    # the rival stands (so the repair is left out), or is off: between them every step runs
    for settings, ran in (({}, ("rival", "polish", "sweep", "recut")), ({"rival.upto": 0}, ("repair", "polish", "sweep"))):
        fast = PEF(members, progress=False, steps=steps_from(settings)).fit(problem.data)
        slow = PEF(members, progress=False, steps=steps_from(settings), executor=SlowExecutor()).fit(problem.data)
        assert len(fast.clusters_) > 1 and all(fast.steps_[name] and "skipped" not in fast.steps_[name] for name in ran)
        assert slow.graph_ == fast.graph_
        assert unclocked(slow.steps_) == unclocked(fast.steps_)


def unclocked(account):
    """A step account without its seconds, at any depth."""
    if isinstance(account, dict):
        return {k: unclocked(v) for k, v in account.items() if "seconds" not in k}
    return [unclocked(v) for v in account] if isinstance(account, list) else account


@pytest.mark.jvm
def test_a_search_cut_by_the_users_wall_limit_ends_the_run_without_a_graph():
    x, dag, clusters = planted_cross_edges()
    fused = dag_to_cpdag(dag.with_edges(dag.directed[(dag.directed[:, 0] < 6) == (dag.directed[:, 1] < 6)]))
    with pytest.raises(WallLimitHit):  # the deadline has passed before the round's search starts
        run_step(Repair(), x, fused, clusters, deadline=time.time() - 1)


@pytest.mark.jvm
def test_steps_turned_off_leave_fusions_graph_and_no_account():
    problem = benchmark_problem(200, 1, network="asia")
    members = [{"method": "fges", "penalty": 2.0, "max_parents": 100, "faithfulness": True}]
    pef = PEF(members, progress=False, steps=steps_from(NONE)).fit(problem.data)
    assert len(pef.clusters_) > 1 and all(account is None for account in pef.steps_.values())
    assert set(pef.result_meta()) >= set(pef.steps_) and pef.seconds_["repair"] == pef.seconds_["recut"] == 0


def star() -> PDAG:
    """A hub (0) with four children: 4 adjacent pairs and 6 two steps apart, 10 candidate pairs."""
    return PDAG(tuple("abcde"), [(0, 1), (0, 2), (0, 3), (0, 4)])


def test_a_step_bounded_by_candidate_pairs_does_not_start_from_more_and_says_why():
    g = star()
    assert len(candidate_pairs(g)) == 10
    assert too_many(10, 9, "sweep.pairs") == "10 candidate pairs, above sweep.pairs 9"
    assert too_many(10, 10, "sweep.pairs") is None and too_many(10, 0, "sweep.pairs") is None
    x = np.random.default_rng(0).standard_normal((50, 5))
    chain = Chain(x, x, g, [np.arange(3), np.arange(3, 5)], SerialExecutor(), Progress(False), None, None, None, "test")
    steps = steps_from({**NONE, "sweep.upto": 10, "sweep.pairs": 9})
    accounts = run_chain(steps, chain, lambda name: contextlib.nullcontext())
    assert accounts["sweep"] == {"skipped": "10 candidate pairs, above sweep.pairs 9"} and chain.graph == g


def test_a_block_is_too_wide_above_the_block_size_and_its_pairs_bound():
    # core {0}, the hub, sees all five variables; its pairs are those with an end in it: its 4 edges
    g = star()
    hub = block_search(g, candidate_pairs(g), np.array([0]))
    assert len(hub.columns) == 5 and len(hub.pairs) == 4
    assert wide(hub, RepairConfig(block=4, block_pairs=3))
    assert not wide(hub, RepairConfig(block=5, block_pairs=3)) and not wide(hub, RepairConfig(block=4, block_pairs=4))
    assert not wide(hub, RepairConfig(block=4, block_pairs=0)) and not wide(hub, RepairConfig(block=4, block_pairs=3,
                                                                                               upto=5))


def test_a_search_over_more_pairs_than_its_bound_is_too_wide_whatever_its_size():
    g = star()
    hub = block_search(g, candidate_pairs(g), np.array([0]))  # 5 variables, 4 pairs
    assert wide(hub, RepairConfig(block=1000, pairs=3)) and wide(hub, RepairConfig(block=1000, pairs=3, upto=5))
    assert not wide(hub, RepairConfig(block=1000, pairs=4)) and not wide(hub, RepairConfig(block=1000, pairs=0))


@pytest.mark.jvm
def test_the_repair_starts_no_round_whose_every_block_is_too_wide():
    x, dag, clusters = planted_cross_edges()
    fused = dag_to_cpdag(dag.with_edges(dag.directed[((dag.directed[:, 0] < 6) == (dag.directed[:, 1] < 6))
                                                     | (dag.directed[:, 0] == 2)]))
    pairs = candidate_pairs(fused)
    # 2 -> 8 joins the chains: each 6-variable core sees 3 of the other's (8 and its neighbours 7, 9; 2 and 1, 3)
    assert [len(block_search(fused, pairs, c).columns) for c in clusters] == [9, 9]
    assert [len(block_search(fused, pairs, c).pairs) for c in clusters] == [14, 14]  # 6 edges, 8 two steps apart
    graph, account = run_step(Repair(RepairConfig(block=6, block_pairs=100)), x, fused, clusters)
    assert compare(graph, dag_to_cpdag(dag)).shd == 0 and account["rounds"][0]["blocks"] == 2
    graph, account = run_step(Repair(RepairConfig(block=6, block_pairs=13)), x, fused, clusters)
    assert graph == fused and account["rounds"] == [] and account["stopped"].startswith("every block's search")
    graph, account = run_step(Repair(RepairConfig(pairs=13)), x, fused, clusters)  # 9 variables: small, not sparse
    assert graph == fused and account["rounds"] == [] and "repair.pairs 13 candidate pairs" in account["stopped"]
    assert changes_note("repair", account) == "repair: the graph is kept as it was"


def test_the_boss_engine_is_the_order_search_over_the_candidate_pairs_from_the_fused_order():
    from hpc.graphs.equivalence import pdag_to_dag, topological_order
    from hpc.learners.order_search import order_search
    from hpc.pef.partition import standardize

    x, dag, clusters = planted_cross_edges()
    fused = dag_to_cpdag(dag.with_edges(dag.directed[((dag.directed[:, 0] < 6) == (dag.directed[:, 1] < 6))
                                                     | (dag.directed[:, 0] == 2)]))
    graph, account = run_step(Repair(RepairConfig(rounds=1, engine="boss")), x, fused, clusters)
    z = standardize(x, np.float64)  # what the chain's searches see
    by_hand = order_search(np.cov(z, rowvar=False), len(z), 2.0, topological_order(pdag_to_dag(fused, strict=False)),
                           candidate_pairs(fused))
    assert graph == dag_to_cpdag(fused.with_edges(by_hand, np.empty((0, 2), dtype=np.int64)))
    assert account["engine"] == "boss" and graph != fused
