"""The polish step: hand-computed blankets, searches and joins; the restricted BOSS against Tetrad's own BOSS;
a polish that removes the edges a missed parent left behind; and a checkpointed polish that resumes."""

import json

import h5py
import numpy as np
import pytest

from hpc.data.generate import SEM, benchmark_problem, sample
from hpc.graphs.equivalence import dag_to_cpdag
from hpc.graphs.metrics import compare
from hpc.graphs.pdag import PDAG
from hpc.pef.pipeline import PEF
from hpc.pef.polish import (Polish, PolishConfig, blanket, blankets, communities, handed_both_ways, join_parents,
                            polish_blocks, shares)
from hpc.pef.steps import steps_from
from hpc.pef.step import StepMemory
from tests.chains import chain_of, run_step


def test_the_blanket_holds_parents_children_and_the_childrens_other_parents():
    # 1 -> 0 -> 2 <- 3 <- 4, 0 -> 6, 5 alone: 4 is a parent of a spouse, outside the blanket.
    dag = PDAG(tuple("abcdefg"), [(1, 0), (0, 2), (3, 2), (4, 3), (0, 6)])
    mb = blankets(dag)
    assert blanket(mb, np.array([0])).tolist() == [1, 2, 3, 6]
    assert blanket(mb, np.array([0, 1])).tolist() == [2, 3, 6]


def test_the_recut_cuts_where_the_graph_is_sparse_not_where_the_partition_did():
    # two 5-cliques (as CPDAG edges) joined by one edge 4 - 5: the communities are the cliques
    clique = lambda lo: [(a, b) for a in range(lo, lo + 5) for b in range(a + 1, lo + 5)]  # noqa: E731
    g = PDAG(tuple(f"v{i}" for i in range(11)), [(4, 5)], clique(0) + clique(5))
    assert [c.tolist() for c in communities(g)] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10]]
    assert [c.tolist() for c in communities(g)] == [c.tolist() for c in communities(g)]  # seeded


def test_a_search_holds_its_cluster_and_blanket_in_the_repaired_order_with_the_candidate_pairs():
    # 0 -> 2 <- 1, 2 -> 3 (all compelled); clusters {0, 1} and {2, 3}.
    g = PDAG(tuple("abcd"), [(0, 2), (1, 2), (2, 3)])
    left, right = polish_blocks(g, [np.array([0, 1]), np.array([2, 3])])
    assert left.columns.tolist() == [0, 1, 2] and left.core == 2
    assert right.columns.tolist() == [2, 3, 0, 1] and right.core == 2
    assert right.columns[right.order].tolist() == [0, 1, 2, 3]  # the repaired DAG's order
    # candidates: the edges and the two-step pairs 0-1, 0-3, 1-3, all inside the right search
    assert sorted(tuple(sorted(right.columns[r])) for r in right.pairs.tolist()) == [
        (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert left.fingerprint() != right.fingerprint()


def test_a_cluster_over_the_cap_is_split_into_connected_parts_that_fit():
    # a chain 0 -> 1 -> ... -> 9 in one cluster, with a hub 10 -> each of 0..9 outside it: a variable's blanket
    # is its chain neighbours, the hub and (as spouse) the next one's other parent
    g = PDAG(tuple(f"v{i}" for i in range(11)), [(i, i + 1) for i in range(9)] + [(10, i) for i in range(10)])
    core = np.arange(10)
    whole, = polish_blocks(g, [core], 11)
    assert whole.columns.tolist() == list(range(11))
    parts = polish_blocks(g, [core], 6)
    cores = [b.columns[:b.core].tolist() for b in parts]
    assert sorted(v for c in cores for v in c) == list(range(10))  # disjoint, and they cover the cluster
    assert all(len(b.columns) <= 6 for b in parts)
    assert all(c == list(range(c[0], c[-1] + 1)) for c in cores)  # each part a stretch of the chain
    # [0..3] and its blanket {4, 10}: 6; adding 4 brings 5 in. [4, 5, 6] with {3, 7, 10}: 6; [7, 8, 9] with {6, 10}
    assert cores == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


def test_each_cluster_sets_its_own_parents_and_a_pair_joined_both_ways_follows_the_repaired_order():
    g = PDAG(tuple("abcd"), [(0, 2), (1, 2), (2, 3)])
    blocks = polish_blocks(g, [np.array([0, 1]), np.array([2, 3])])
    # left (columns 0, 1, 2) gives 0 the parent 2; right (columns 2, 3, 0, 1) gives 2 the parents 0, 1 and 3 the
    # parent 2: the pair 0-2 is joined both ways, and 0 comes before 2 in the repaired order
    left = np.array([[2, 0]])
    right = np.array([[2, 0], [3, 0], [0, 1]])
    out = join_parents(g, blocks, [left, right])
    assert out.directed.tolist() == [[0, 2], [1, 2], [2, 3]] and len(out.undirected) == 0
    # the right search cut: its variables keep their repaired parents; the left one adds 1 -> 0
    out = join_parents(g, blocks, [np.array([[1, 0]]), None])
    assert sorted(out.skeleton_keys().tolist()) == [0 * 4 + 1, 0 * 4 + 2, 1 * 4 + 2, 2 * 4 + 3]


def test_a_pair_each_search_oriented_into_the_other_clusters_variable_stays_along_the_repaired_order():
    g = PDAG(tuple("abcd"), [(0, 2), (1, 2), (2, 3)])
    blocks = polish_blocks(g, [np.array([0, 1]), np.array([2, 3])])
    # left (columns 0, 1, 2) orients 0 -> 2, right (columns 2, 3, 0, 1) 2 -> 0: each hands the pair to the other
    # cluster's variable, whose search decides its parents; both found the adjacency, so it stays, as 0 -> 2 (the
    # repaired order). 1 -> 2 the right search dropped (2's parents are its to decide), and 2 -> 3 it kept.
    left = np.array([[0, 2]])
    right = np.array([[0, 1], [0, 2]])  # in its columns' indices: 2 -> 3 and 2 -> 0
    out = join_parents(g, blocks, [left, right])
    assert sorted(out.skeleton_keys().tolist()) == [0 * 4 + 2, 2 * 4 + 3]
    assert handed_both_ways(4, [np.array([[0, 2]]), np.array([[2, 0]])], np.arange(4)).tolist() == [[0, 2]]
    # handed one way only (the right search leaves 0 and 2 apart): 2's search decides, and the pair goes
    out = join_parents(g, blocks, [left, np.array([[0, 1]])])
    assert sorted(out.skeleton_keys().tolist()) == [2 * 4 + 3]


def planted() -> tuple[np.ndarray, PDAG, list[np.ndarray]]:
    """Two chains of 6 variables with three strong edges from the first into the second."""
    dag = PDAG(tuple(f"x{i}" for i in range(12)),
               [(i, i + 1) for i in range(5)] + [(i, i + 1) for i in range(6, 11)] + [(2, 8), (3, 9), (4, 10)])
    x = sample(SEM(dag, np.full(len(dag.directed), 0.8), np.ones(12)), 3000, np.random.default_rng(5))
    return x, dag, [np.arange(6), np.arange(6, 12)]


@pytest.mark.jvm
def test_bounded_boss_with_every_pair_allowed_is_tetrads_boss_and_keeps_to_its_pairs():
    from hpc.learners.tetrad import run_boss, run_boss_bounded

    x, _, _ = planted()
    p = x.shape[1]
    every = np.array([(i, j) for i in range(p) for j in range(i + 1, p)])
    mine = run_boss_bounded(x, 2.0, np.arange(p), every)
    theirs = run_boss(np.cov(x, rowvar=False), x.shape[0], 2.0, 1, False, start="columns")
    names = tuple(f"x{i}" for i in range(p))
    assert dag_to_cpdag(PDAG(names, mine)) == PDAG(names, *theirs)
    chains = np.array([(i, i + 1) for i in range(5)] + [(i, i + 1) for i in range(6, 11)])
    bounded = run_boss_bounded(x, 2.0, np.arange(p), chains)
    assert {tuple(sorted(e)) for e in bounded.tolist()} <= {tuple(e) for e in chains.tolist()}


@pytest.mark.jvm
def test_the_polish_removes_the_edges_a_missed_parent_left_and_keeps_the_true_graph():
    x, dag, clusters = planted()
    # The true graph plus two spurious edges inside the second cluster (what a parent the cluster's search
    # could not see leaves behind): both are candidates, and BOSS drops them.
    start = dag_to_cpdag(dag.with_edges(np.concatenate([dag.directed, [[8, 10], [9, 11]]])))
    graph, account = run_step(Polish(PolishConfig(upto=100)), x, start, clusters)
    assert compare(graph, dag_to_cpdag(dag)).shd == 0
    assert account["edges_removed"] == 2 and account["edges_added"] == 0 and account["searches"] == 2
    # a cluster whose search would be over polish.upto is searched in parts, each within it, to the same graph
    graph, account = run_step(Polish(PolishConfig(upto=8)), x, start, clusters)
    assert compare(graph, dag_to_cpdag(dag)).shd == 0
    assert account["parts"] == account["searches"] == 4 and account["largest_search"] == 8
    assert 0 < account["largest_pairs"] <= 8 * 7 // 2
    # a part whose search is still over it (here every variable's: each has a neighbour) does not run
    graph, account = run_step(Polish(PolishConfig(upto=1)), x, start, clusters)
    assert graph == start and account["searches"] == 0


def test_the_recut_cuts_the_graph_once_a_pass_its_gate_and_first_pass_sharing_one_cut(monkeypatch):
    import hpc.pef.recut as recut

    calls = []
    monkeypatch.setattr(recut, "communities", lambda g: calls.append(g) or communities(g))
    x, dag, clusters = planted()
    start = dag_to_cpdag(dag.with_edges(np.concatenate([dag.directed, [[8, 10], [9, 11]]])))
    step, chain = recut.Recut(recut.RecutConfig(crossing=1.0)), chain_of(x, start, clusters)
    assert step.applies(chain) is None and len(calls) == 1
    graph, account = step.run(chain, StepMemory(None, "recut"))
    assert compare(graph, dag_to_cpdag(dag)).shd == 0
    assert len(calls) == len(account["passes"]) == 2  # the second pass changes nothing, and ends the recut
    assert calls[0] is start and calls[1] == graph


def test_the_recut_ends_when_a_pass_returns_to_a_graph_it_passed_through(monkeypatch):
    # passes that flip one edge back and forth (as on Alarm-10000, one edge a pass from the sixth on) would repeat
    import hpc.pef.recut as recut

    x, dag, clusters = planted()
    a = dag_to_cpdag(dag)
    b = a.with_edges(np.concatenate([a.directed, [[8, 10]]]), a.undirected)
    flip = lambda chain, graph, cut, config, memory, label: (b if graph == a else a, {"edges_added": 1})  # noqa: E731
    monkeypatch.setattr(recut, "polish_graph", flip)
    graph, account = run_step(recut.Recut(recut.RecutConfig(passes=10, crossing=1.0)), x, a, clusters)
    assert len(account["passes"]) == 2 and graph == a


def test_the_recut_ends_after_a_pass_that_changes_under_its_settle_share_of_the_edges(monkeypatch):
    import hpc.pef.recut as recut

    x, dag, clusters = planted()
    start = dag_to_cpdag(dag)  # 13 edges; each pass below adds one more, 0 -> 6, 0 -> 7, ...: a new graph each time
    grow = lambda chain, graph, cut, config, memory, label: (  # noqa: E731
        graph.with_edges(np.concatenate([graph.directed, [[0, graph.n_edges - 7]]]), graph.undirected),
        {"edges_added": 1})
    monkeypatch.setattr(recut, "polish_graph", grow)
    config = lambda settle: recut.RecutConfig(passes=4, crossing=1.0, settle=settle)  # noqa: E731
    passes = lambda settle: len(run_step(recut.Recut(config(settle)), x, start, clusters)[1]["passes"])  # noqa: E731
    assert passes(0.0) == passes(0.05) == 4  # 1 edge is never under 5 % of 14-17
    assert passes(0.07) == 2  # under 7 % of the 15 edges after the second pass, not of the 14 after the first
    assert passes(0.08) == 1


def test_the_polish_shares_its_bound_on_tree_nodes_by_the_searches_variables():
    assert shares([100, 0, 300], 1000) == [250, None, 750]  # 0: a search over polish.upto, which does not run
    assert shares([3, 3, 3], 2) == [1, 1, 1]  # every search that runs may make a node
    assert shares([100, 300], 0) == [None, None]  # 0: no bound


@pytest.mark.jvm
def test_a_polish_stopped_by_its_bound_on_nodes_keeps_the_parents_its_start_order_gives():
    x, dag, clusters = planted()
    start = dag_to_cpdag(dag.with_edges(np.concatenate([dag.directed, [[8, 10], [9, 11]]])))
    free = run_step(Polish(PolishConfig(upto=100)), x, start, clusters)
    assert "stopped" not in free[1]
    # one node a variable in all: each search stops before its first move, with each variable's best parents
    # before it in the start order (a topological order of the true graph here, so the true parents)
    graph, account = run_step(Polish(PolishConfig(upto=100, nodes=1)), x, start, clusters)
    assert account["stopped"] == account["searches"] == 2
    assert compare(graph, dag_to_cpdag(dag)).shd == 0 and graph == free[0]


@pytest.mark.jvm
def test_a_checkpointed_polish_reruns_only_the_searches_it_lacks(tmp_path):
    problem = benchmark_problem(300, 3, network="alarm")
    members = [{"method": "fges", "penalty": 2.0, "max_parents": 100, "faithfulness": True}]
    ckpt = tmp_path / "run.h5"

    def fit() -> PEF:
        return PEF(members, progress=False, checkpoint=str(ckpt), steps=steps_from({"polish.upto": 1000})).fit(
            problem.data, problem.variables)

    first = fit()
    assert first.steps_["polish"]["searches"] == len(first.clusters_) > 1 and "resumed" not in first.steps_["polish"]
    with h5py.File(ckpt) as f:
        runs = json.loads(f["runs"][()].decode())
    assert sum(r.get("step") == "polish" for r in runs) == len(first.clusters_)
    # drop one polish search from the checkpoint, as a kill before it finished would have
    from hpc.pef.checkpoint import RunCheckpoint

    with h5py.File(ckpt) as f:
        settings = json.loads(f.attrs["settings"])
    memory = RunCheckpoint(ckpt, settings)
    del memory.steps["polish", 0]
    memory.save()
    again = fit()
    assert again.steps_["polish"]["resumed"] == len(first.clusters_) - 1
    assert again.graph_ == first.graph_


@pytest.mark.jvm
def test_a_polished_pef_gives_the_same_cpdag_in_any_column_order():
    from hpc.graphs.order import relabel

    problem = benchmark_problem(200, 1, network="asia")
    members = [{"method": "boss", "penalty": 2.0}]
    graphs = []
    for k in range(3):
        perm = np.random.default_rng(k).permutation(problem.p) if k else np.arange(problem.p)
        pef = PEF(members, progress=False, steps=steps_from({"polish.upto": 1000})).fit(
            problem.data[:, perm], [problem.variables[i] for i in perm])
        assert pef.steps_["polish"]["searches"] == len(pef.clusters_) > 1 and pef.steps_["recut"]["passes"]  # recut too
        graphs.append(relabel(pef.graph_, perm, problem.variables))
    assert all(compare(g, graphs[0]).shd == 0 for g in graphs[1:])


@pytest.mark.jvm
def test_the_recut_searches_the_seams_of_a_block_structured_graph_and_skips_one_without_blocks():
    # PEF's own graph (no whole-problem rival): the seams are the partition's
    members = [{"method": "fges", "penalty": 2.0, "max_parents": 100, "faithfulness": True}]
    problem = benchmark_problem(300, 3, network="alarm")
    fit = lambda recut, p: PEF(members, progress=False,  # noqa: E731
                               steps=steps_from({"recut.passes": recut, "rival.upto": 0})).fit(p.data, p.variables)
    without, recut = fit(0, problem), fit(2, problem)
    account = recut.steps_["recut"]
    assert without.steps_["recut"] is None and 1 <= len(account["passes"]) <= 2
    first = account["passes"][0]
    assert first["crossing"] < 0.3 and first["groups"] > len(recut.clusters_)  # cut elsewhere, and finer
    assert account["edges_added"] + account["edges_removed"] + account["edges_reoriented"] > 0
    assert compare(recut.graph_, problem.truth).shd < compare(without.graph_, problem.truth).shd
    er = benchmark_problem(200, 2, graph="er")
    plain = fit(2, er)
    assert "no blocks" in plain.steps_["recut"]["skipped"] and "passes" not in plain.steps_["recut"]
