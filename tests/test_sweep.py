"""The sweep: one search over every pair from the graph so far finds an edge no earlier step was shown and
drops a spurious one (a hand-built case, against the repair's candidate pairs) with either engine, is the order
search from the start's DAG order (or Tetrad's own fGES from that start), takes the order search only on dense
data and without knowledge, leaves no recut after it, runs where it should, and a resumed run takes it from the
checkpoint."""

import h5py
import numpy as np
import pytest

from hpc.data.generate import SEM, benchmark_problem, sample
from hpc.graphs.equivalence import dag_to_cpdag
from hpc.graphs.metrics import compare
from hpc.graphs.pdag import PDAG
from hpc.pef.partition import PartitionConfig, standardize
from hpc.pef.pipeline import PEF
from hpc.pef.candidates import candidate_pairs
from hpc.pef.repair import Repair
from hpc.pef.steps import steps_from
from hpc.pef.sweep import Sweep, SweepConfig
from tests.chains import run_step

SPARSE = [{"method": "fges", "penalty": 2.0, "max_parents": 100, "faithfulness": True}]


def planted() -> tuple[np.ndarray, PDAG, list[np.ndarray]]:
    """Two chains of 6 variables, three edges from the first into the second, and 0 -> 11 joining their far ends."""
    dag = PDAG(tuple(f"x{i}" for i in range(12)),
               [(i, i + 1) for i in range(5)] + [(i, i + 1) for i in range(6, 11)] + [(2, 8), (3, 9), (4, 10), (0, 11)])
    x = sample(SEM(dag, np.full(len(dag.directed), 0.8), np.ones(12)), 3000, np.random.default_rng(5))
    return x, dag, [np.arange(6), np.arange(6, 12)]


def start_graph(dag: PDAG) -> PDAG:
    """The truth without 0 -> 11 and with a spurious 1 -> 7 (1 and 7 are independent)."""
    kept = dag.directed[~((dag.directed[:, 0] == 0) & (dag.directed[:, 1] == 11))]
    return dag_to_cpdag(dag.with_edges(np.concatenate([kept, [[1, 7]]])))


@pytest.mark.jvm
@pytest.mark.parametrize("engine", ["order", "fges"])
def test_the_sweep_finds_an_edge_outside_every_candidate_pair_and_drops_a_spurious_one(engine):
    x, dag, clusters = planted()
    start = start_graph(dag)
    assert not any(set(pair) == {0, 11} for pair in candidate_pairs(start).tolist())  # no repair is shown it
    repaired, _ = run_step(Repair(), x, start, clusters)
    assert compare(repaired, dag_to_cpdag(dag)).shd > 0
    swept, account = run_step(Sweep(SweepConfig(penalty=3.0, engine=engine)), x, start, clusters)
    assert compare(swept, dag_to_cpdag(dag)).shd == 0
    assert account["edges_added"] == 1 and account["edges_removed"] == 1 and account["penalty"] == 3.0
    assert account["engine"] == engine
    # the start's pairs adjacent or two steps apart (hpc.pef.candidates, checked by hand in test_repair.py)
    assert account["start_pairs"] == len(candidate_pairs(start))


def test_the_sweep_is_the_order_search_over_every_pair_from_the_start_dag_s_order():
    from hpc.graphs.equivalence import pdag_to_dag, topological_order
    from hpc.learners.order_search import bounded_order_search

    x, dag, clusters = planted()
    start, z = start_graph(dag), standardize(x, np.float64)
    order = topological_order(pdag_to_dag(start, strict=False))
    for nodes in (0, 1):  # no bound, and a bound of 12 tree nodes that stops the search at once
        swept, account = run_step(Sweep(SweepConfig(penalty=3.0, engine="order", nodes=nodes)), x, start, clusters)
        rows, stopped = bounded_order_search(np.cov(z, rowvar=False), len(z), 3.0, order, None, nodes * 12 or None)
        assert swept == dag_to_cpdag(PDAG(start.variables, rows)) and stopped == (nodes == 1)
        assert ("search" in account) == stopped


@pytest.mark.jvm
def test_the_sweeps_fges_from_the_start_graph_ends_where_tetrads_does():
    from hpc.learners.tetrad import start_jvm

    x, dag, _ = planted()
    start, z = start_graph(dag), standardize(x, np.float64)
    swept, _ = run_step(Sweep(SweepConfig(penalty=3.0, engine="fges")), x, start, [np.arange(6), np.arange(6, 12)])
    start_jvm()
    from edu.cmu.tetrad.search import Fges
    from edu.cmu.tetrad.search.score import SemBicScore
    from hpc.learners.tetrad import _graph, data_set, graph_to_arrays

    data = data_set(z)
    score = SemBicScore(data, False)
    score.setPenaltyDiscount(3.0)
    search = Fges(score)
    search.setFaithfulnessAssumed(True)
    search.setInitialGraph(_graph(data.getVariables(), start.directed, start.undirected))
    assert swept == start.with_edges(*graph_to_arrays(search.search(), z.shape[1]))


@pytest.mark.jvm
def test_the_sweep_runs_up_to_sweep_upto_variables_and_a_resumed_run_takes_it_from_the_checkpoint(tmp_path):
    problem = benchmark_problem(200, 1, network="alarm")
    ckpt = tmp_path / "run.h5"

    def fit(**options) -> PEF:
        return PEF(SPARSE, progress=False, partition=PartitionConfig(whole_below=0),
                   steps=steps_from(options), checkpoint=str(ckpt)).fit(problem.data, problem.variables)

    first = fit()
    assert first.steps_["sweep"]["seconds"] > 0 and "resumed" not in first.steps_["sweep"]
    assert first.result_meta()["sweep"] == first.steps_["sweep"] and first.seconds_["sweep"] > 0
    with h5py.File(ckpt) as f:
        recorded = int(f.attrs["recorded"])
    again = fit()
    with h5py.File(ckpt) as f:
        assert int(f.attrs["recorded"]) == recorded  # nothing ran again, the sweep included
    assert again.steps_["sweep"]["resumed"] and again.graph_ == first.graph_
    assert {k: v for k, v in again.steps_["sweep"].items() if k not in ("seconds", "resumed")} == {
        k: v for k, v in first.steps_["sweep"].items() if k != "seconds"}
    ckpt.unlink()
    assert "above sweep.upto" in fit(**{"sweep.upto": 199}).steps_["sweep"]["skipped"]
    assert fit(**{"sweep.upto": 0}).steps_["sweep"] is None


def test_the_sweep_does_not_start_on_data_where_too_many_pairs_gain_alone():
    from hpc.pef.candidates import gaining_pairs
    from tests.chains import chain_of

    rng = np.random.default_rng(0)
    n = 1000
    a = rng.standard_normal(n)
    x = np.column_stack([a, a + 0.5 * rng.standard_normal(n), a - 0.5 * rng.standard_normal(n),
                         rng.standard_normal((n, 3))])  # three correlated columns, three independent ones
    z = standardize(x, np.float64)
    r2 = np.corrcoef(x, rowvar=False) ** 2
    by_hand = int((np.triu(r2, 1) > 1 - n ** (-3.0 / n)).sum())  # r^2 at which -n ln(1 - r^2) = 3 ln n
    assert gaining_pairs(z, 3.0) == by_hand == 3
    chain = chain_of(x, PDAG(tuple("abcdef")), [np.arange(3), np.arange(3, 6)])
    assert Sweep(SweepConfig(gaining=3)).applies(chain) is None
    assert Sweep(SweepConfig(gaining=2)).applies(chain) == \
        "3 pairs of the data gain alone at penalty 3, above sweep.gaining 2"
    assert Sweep(SweepConfig(gaining=0)).applies(chain) is None  # 0: no bound


def test_auto_takes_the_order_search_above_sweep_dense_pairs_that_gain_alone_and_fges_under_knowledge():
    from hpc.graphs.knowledge import Knowledge
    from hpc.pef.candidates import gaining_pairs
    from tests.chains import chain_of

    x, dag, clusters = planted()
    chain = chain_of(x, start_graph(dag), clusters)
    gaining = gaining_pairs(chain.z, 3.0)
    assert 0 < gaining < 66  # some of the 66 pairs, not all
    assert Sweep(SweepConfig(penalty=3.0, dense=gaining)).engine(chain) == "fges"  # at the bound: fGES
    assert Sweep(SweepConfig(penalty=3.0, dense=gaining - 1)).engine(chain) == "order"
    assert Sweep().engine(chain) == "fges"  # far below the default bound
    chain.knowledge = Knowledge(required=frozenset({("x0", "x1")}))
    assert Sweep(SweepConfig(engine="order")).engine(chain) == "fges"  # the order search does not keep knowledge


@pytest.mark.parametrize("engine", ["order", "fges"])
def test_no_recut_follows_a_sweep_by_the_order_search(engine):
    from hpc.pef.recut import Recut
    from hpc.pef.step import StepMemory
    from tests.chains import chain_of

    x, dag, clusters = planted()
    chain = chain_of(x, start_graph(dag), clusters)
    assert Recut().applies(chain) is None  # two blocks: the recut would run
    Sweep(SweepConfig(penalty=3.0, engine=engine)).run(chain, StepMemory(None, "sweep"))
    reason = Recut().applies(chain)
    assert (reason is None) if engine == "fges" else "put back the weak edges it dropped" in reason
