"""The SLE: best BIC wins, failing members are skipped, shipped ensembles are the paper's."""

import numpy as np
import pytest

from hpc.data.generate import benchmark_problem
from hpc.errors import PsleError
from hpc.learners import FGES
from hpc.learners.ensemble import SLE, load_sle
from tests.endless import endless_blocks

pytestmark = pytest.mark.jvm


@pytest.fixture(scope="module")
def child():
    return benchmark_problem(60, 3, 500, network="child")


def test_the_member_with_the_best_bic_wins(child):
    specs = [{"method": "fges", "penalty": lam} for lam in (1.0, 4.0, 50.0)] + [{"method": "pc-stable"}]
    sle = SLE(specs).fit(child.data, child.variables)
    alone = [FGES(penalty=lam).fit(child.data, child.variables) for lam in (1.0, 4.0, 50.0)]
    assert [r.bic for r in sle.runs_[:3]] == pytest.approx([m.bic_ for m in alone])
    assert sle.winner_ == int(np.argmax([r.bic for r in sle.runs_]))
    if sle.winner_ < 3:
        assert sle.graph_ == alone[sle.winner_].graph_
    meta = sle.result_meta()
    assert meta["winner"] == sle.winner_ and len(meta["runs"]) == 4 and sle.status_ == "ok"


def test_a_wall_limit_cuts_the_running_member_skips_the_rest_and_leaves_no_graph():
    # A block on which Tetrad's fGES would search for years (tests/endless.py): the first member is still
    # running when the limit passes on any machine, so it is cut and the others never start.
    x, variables = endless_blocks()
    specs = [{"method": "fges", "penalty": p, "engine": "tetrad"} for p in (1, 1.5, 2)]
    sle = SLE(specs, wall_limit=2).fit(x, variables)
    assert sle.status_ == "timed out" and sle.graph_ is None and sle.winner_ is None
    assert [r.status for r in sle.runs_] == ["timed out"] * 3
    assert sle.runs_[0].error is None and sle.runs_[0].seconds > 0  # cut while it ran
    assert [r.error for r in sle.runs_[1:]] == ["the run's wall limit passed before it started"] * 2


@pytest.mark.parametrize("limit", [0, -5])
def test_an_ensembles_wall_limit_must_be_positive(limit):
    with pytest.raises(PsleError, match=f"SLE: wall limit must be positive, got {limit}"):
        SLE([{"method": "fges"}], wall_limit=limit).validate()


def tiny_data():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(4)
    return np.column_stack([a, a + 0.1 * rng.standard_normal(4), a + 0.1 * rng.standard_normal(4),
                            rng.standard_normal(4)])


def test_a_failing_member_is_skipped_with_a_warning():
    with pytest.warns(UserWarning, match=r"pc-stable.*failed.*skipped"):
        sle = SLE([{"method": "pc-stable"}, {"method": "fges"}]).fit(tiny_data())
    assert sle.winner_ == 1 and [r.status for r in sle.runs_] == ["failed", "ok"]


def test_the_ensemble_fails_only_when_every_member_fails():
    with pytest.warns(UserWarning), pytest.raises(PsleError, match="every member"):
        SLE([{"method": "pc-stable"}, {"method": "pc-stable", "alpha": 0.1}]).fit(tiny_data())


def test_shipped_ensembles_are_the_papers():
    name, learned = load_sle("learned")
    assert name == "learned" and [m["method"] for m in learned] == ["fges"] * 4
    assert [(m["penalty"], m["max_parents"]) for m in learned] == [(5.87273, 185), (20.6045, 17), (2.53767, 91),
                                                                  (5.62460, 11)]
    _, default = load_sle("default")
    assert default[1] == {"method": "fges", "penalty": 1.0, "max_parents": 1000, "faithfulness": False}
    _, random = load_sle("random")
    assert random[3]["faithfulness"] is True and random[2] == {"method": "pc-stable", "alpha": 0.10745, "depth": 980}


@pytest.mark.parametrize("text, message", [
    ("members: []", "expected a 'members' list"),
    ("members:\n  - {method: fges, penalty: 0.1}", r"member 1: .*penalty=0.1 is outside"),
    ("members: [\n", "not valid YAML"),
])
def test_bad_ensemble_files(tmp_path, text, message):
    path = tmp_path / "e.yaml"
    path.write_text(text)
    with pytest.raises(PsleError, match=message):
        load_sle(str(path))
    with pytest.raises(PsleError, match="unknown ensemble 'nope'"):
        load_sle("nope")
