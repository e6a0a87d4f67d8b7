"""The whole-problem rival: the higher BIC stands (hand-built cases), the rival is BOSS over every pair from the
fused graph's order (the same search done here by hand), the polish runs after it on the graph that stood and the
repair does not, it is skipped where it should be, a resumed run takes it from the checkpoint, and a run it wins
does not depend on the column order."""

import h5py
import numpy as np
import pytest

from hpc.data.generate import SEM, benchmark_problem, sample
from hpc.graphs.equivalence import dag_to_cpdag, pdag_to_dag, topological_order
from hpc.graphs.metrics import compare
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import bic, covariance
from hpc.learners.ensemble import MemberRun
from hpc.graphs.order import canonical_columns
from hpc.learners.members import OK
from hpc.learners.order_search import order_search
from hpc.pef.partition import PartitionConfig, crossing_share, standardize
from hpc.pef.pipeline import PEF
from hpc.pef.rival import JUDGE_PENALTY, PENALTY, judged, outcome, rival_graph
from hpc.pef.steps import NONE, steps_from

SPEC = {"method": "boss-every-pair", "penalty": PENALTY}

CHAIN = PDAG(tuple("abcd"), [(0, 1), (1, 2), (2, 3)])


def chain_data() -> np.ndarray:
    return sample(SEM(CHAIN, np.full(3, 0.8), np.ones(4)), 2000, np.random.default_rng(0))


def test_the_graph_with_the_higher_bic_stands_whichever_found_it():
    x = chain_data()
    cov, n = covariance(x), len(x)
    truth, broken = dag_to_cpdag(CHAIN), PDAG(CHAIN.variables, [(0, 1)])  # broken: two of the chain's edges gone
    as_run = lambda g: MemberRun(SPEC, OK, g.directed, g.undirected, None, 1.5)  # noqa: E731
    graph, account = judged(broken, truth, as_run(truth), cov, n)
    assert graph == truth and account["kept"] == "rival"
    assert account["bic_rival"] == pytest.approx(bic(truth, cov, n, JUDGE_PENALTY), abs=1e-3)
    assert account["bic_rival"] > account["bic_pef"]
    graph, account = judged(truth, broken, as_run(broken), cov, n)
    assert graph == truth and account["kept"] == "pef" and account["bic_pef"] > account["bic_rival"]
    assert outcome(account).startswith("PEF's graph stands, BIC ")


def test_a_rival_that_failed_leaves_the_pef_graph():
    x = chain_data()
    run = MemberRun(SPEC, "failed", None, None, None, 61.0, "a Java exception")
    assert rival_graph(run, CHAIN.variables) is None
    graph, account = judged(dag_to_cpdag(CHAIN), None, run, covariance(x), len(x))
    assert graph == dag_to_cpdag(CHAIN) and account["kept"] == "pef" and "bic_rival" not in account
    assert account["why"] == "a Java exception" and outcome(account) == "PEF's graph stands (the rival failed)"


def test_the_crossing_share_is_the_share_of_edges_joining_two_clusters():
    g = PDAG(tuple("abcde"), [(0, 1), (1, 2), (3, 4)], [(2, 3)])
    assert crossing_share(g, [np.array([0, 1]), np.array([2, 3, 4])]) == pytest.approx(1 / 4)
    assert crossing_share(g, [np.array([0, 2, 4]), np.array([1, 3])]) == 1.0
    assert crossing_share(PDAG(tuple("ab")), [np.array([0]), np.array([1])]) == 0.0


SPARSE = [{"method": "fges", "penalty": 40.0}]  # a member that misses many edges


def fused(problem) -> PDAG:
    """PEF's fused graph: no step after fusion."""
    return PEF(SPARSE, progress=False, partition=PartitionConfig(whole_below=0), steps=steps_from(NONE)).fit(
        problem.data, problem.variables).graph_


def whole_boss(problem, start: PDAG) -> PDAG:
    """The rival's search by hand: BOSS over every pair from `start`'s order, on the data in PEF's column order."""
    x, names, _ = canonical_columns(problem.data, problem.variables)
    order = topological_order(pdag_to_dag(start.reindexed(names), strict=False))
    z = standardize(x, np.float64)
    rows = order_search(np.cov(z, rowvar=False), len(z), PENALTY, order, None)
    return dag_to_cpdag(PDAG(names, rows)).reindexed(problem.variables)


@pytest.mark.jvm
def test_a_better_whole_search_replaces_a_poor_pef_graph_and_is_boss_from_the_fused_order(tmp_path):
    problem = benchmark_problem(200, 2, graph="er")
    cut = PartitionConfig(whole_below=0)
    plain = {"repair.rounds": 0, "polish.upto": 0, "sweep.upto": 0, "recut.passes": 0}  # nothing but the rival
    pef = PEF(SPARSE, progress=False, partition=cut, steps=steps_from(plain)).fit(problem.data, problem.variables)
    rival = pef.steps_["rival"]
    assert len(pef.clusters_) > 1 and rival["kept"] == "rival" and "polish" not in rival
    assert compare(pef.graph_, whole_boss(problem, fused(problem))).shd == 0
    assert pef.result_meta()["rival"]["bic_rival"] > pef.result_meta()["rival"]["bic_pef"]
    off = PEF(SPARSE, progress=False, partition=cut,
              steps=steps_from({**plain, "rival.upto": 0})).fit(problem.data, problem.variables)
    assert off.steps_["rival"] is None
    assert compare(off.graph_, problem.truth).shd > compare(pef.graph_, problem.truth).shd
    # a graph the rival leaves has no seams: the repair after it does not run, and the graph is the rival's
    repaired = PEF(SPARSE, progress=False, partition=cut, steps=steps_from({**plain, "repair.rounds": 4})).fit(
        problem.data, problem.variables)
    assert repaired.graph_ == pef.graph_ and "no seams" in repaired.steps_["repair"]["skipped"]
    small = PEF(SPARSE, progress=False, partition=cut, steps=steps_from({**plain, "rival.upto": 199})).fit(
        problem.data, problem.variables)
    assert "above rival.upto 199" in small.steps_["rival"]["skipped"]  # 200 variables
    # its bound on tree nodes (here one per variable) stops it early, and the account says so
    bounded = PEF(SPARSE, progress=False, partition=cut, steps=steps_from({**plain, "rival.nodes": 1})).fit(
        problem.data, problem.variables)
    assert "stopped at its bound of 200 tree nodes" in bounded.steps_["rival"]["search"]
    assert "search" not in rival and bounded.graph_ != pef.graph_


@pytest.mark.jvm
def test_the_polish_runs_after_the_rival_once_on_the_graph_that_stood():
    problem = benchmark_problem(200, 2, graph="er")
    pef = PEF(SPARSE, progress=False, partition=PartitionConfig(whole_below=0),
              steps=steps_from({"sweep.upto": 0, "recut.passes": 0})).fit(problem.data, problem.variables)
    rival, polish = pef.steps_["rival"], pef.steps_["polish"]
    assert rival["kept"] == "rival" and "polish" not in rival and polish["searches"] > 0
    assert list(pef.steps_)[:3] == ["rival", "repair", "polish"] and "skipped" in pef.steps_["repair"]
    # judged unpolished: the rival's BIC is that of the whole BOSS; the polish then left it no further from the truth
    whole = whole_boss(problem, fused(problem))
    cov, n = covariance(problem.data), problem.data.shape[0]
    assert rival["bic_rival"] == pytest.approx(bic(whole, cov, n, JUDGE_PENALTY), abs=1e-3)
    assert compare(pef.graph_, problem.truth).shd <= compare(whole, problem.truth).shd


@pytest.mark.jvm
def test_a_resumed_run_takes_the_rival_from_the_checkpoint(tmp_path):
    problem = benchmark_problem(200, 2, graph="er")
    ckpt = tmp_path / "run.h5"

    def fit() -> PEF:
        return PEF(SPARSE, progress=False, partition=PartitionConfig(whole_below=0),
                   steps=steps_from({}), checkpoint=str(ckpt)).fit(
            problem.data, problem.variables)

    first = fit()
    with h5py.File(ckpt) as f:
        recorded = int(f.attrs["recorded"])
    again = fit()
    with h5py.File(ckpt) as f:
        assert int(f.attrs["recorded"]) == recorded  # nothing ran again, the rival included
    assert again.graph_ == first.graph_
    mine, theirs = again.steps_["rival"], first.steps_["rival"]
    assert {k: v for k, v in mine.items() if k != "seconds"} == {k: v for k, v in theirs.items() if k != "seconds"}
    assert again.steps_["polish"]["resumed"] == first.steps_["polish"]["searches"] > 0  # the polish after it, too
    assert again.resumed_runs_ == len(first.clusters_)  # member runs only; the rival is not one of them


@pytest.mark.jvm
def test_a_run_the_rival_wins_gives_the_same_cpdag_in_any_column_order():
    from hpc.graphs.order import relabel

    problem = benchmark_problem(200, 2, graph="er")
    graphs = []
    for k in range(3):
        perm = np.random.default_rng(k).permutation(problem.p) if k else np.arange(problem.p)
        pef = PEF(SPARSE, progress=False, partition=PartitionConfig(whole_below=0),
                  steps=steps_from({})).fit(
            problem.data[:, perm], [problem.variables[i] for i in perm])
        assert pef.steps_["rival"]["kept"] == "rival"
        graphs.append(relabel(pef.graph_, perm, problem.variables))
    assert all(compare(g, graphs[0]).shd == 0 for g in graphs[1:])


@pytest.mark.jvm
@pytest.mark.filterwarnings("ignore:.*200 variables for 150 rows")
def test_the_rival_runs_with_fewer_rows_than_variables_and_fits_each_variable_on_its_parents():
    problem = benchmark_problem(200, 2, graph="er")
    x = problem.data[:150]  # the whole covariance is singular; each variable's regression on its parents is not
    plain = {"repair.rounds": 0, "polish.upto": 0, "sweep.upto": 0, "recut.passes": 0}

    def fit(options: dict) -> PEF:
        return PEF(SPARSE, progress=False, partition=PartitionConfig(whole_below=0),
                   steps=steps_from({**plain, **options})).fit(x, problem.variables)

    pef, off = fit({}), fit({"rival.upto": 0})
    assert pef.steps_["rival"]["kept"] == "rival" and off.steps_["rival"] is None
    assert compare(pef.graph_, problem.truth).shd < compare(off.graph_, problem.truth).shd


def test_a_rival_graph_with_a_variable_of_half_as_many_parents_as_rows_cannot_stand():
    from hpc.pef.rival import overfitted

    star = PDAG(tuple(f"x{i}" for i in range(9)), [(i, 8) for i in range(8)])  # x8 has 8 parents
    assert overfitted(star, 17) is None
    assert overfitted(star, 16) == "graph gives a variable 8 parents for 16 rows (at least half): its fits are unreliable"
    assert overfitted(PDAG(tuple("ab")), 3) is None


@pytest.mark.jvm
@pytest.mark.filterwarnings("ignore:.*200 variables for 24 rows")
def test_on_very_few_rows_the_rivals_overfitted_graph_leaves_pefs_standing():
    problem = benchmark_problem(200, 2, graph="er")
    plain = {"repair.rounds": 0, "polish.upto": 0, "sweep.upto": 0, "recut.passes": 0}
    pef = PEF(SPARSE, progress=False, partition=PartitionConfig(whole_below=0), steps=steps_from(plain)).fit(
        problem.data[:24], problem.variables)
    rival = pef.steps_["rival"]
    assert rival["kept"] == "pef" and "parents for 24 rows (at least half)" in rival["why"]
    assert outcome(rival).startswith("PEF's graph stands (the rival's graph gives a variable ")
