"""psle-experiment run locally: what one task writes when it finishes and when it hits its limit."""

import json

from tests.conftest import psle_experiment


def test_a_pef_run_over_its_wall_limit_is_recorded_as_timed_out_without_a_graph(tmp_path):
    # P/fGES (penalty 1) on Alarm-500 needs ~10 s of cluster runs; 2 s of wall limit cuts it.
    run = psle_experiment(tmp_path, "progress=false", "executor.workers=1", "method=p-fges", "dataset.network=alarm",
                          "dataset.nodes=500", "seed=1", "time_limit=60", "wall_limit=2", timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    folder = tmp_path / "default" / "p-fges" / "alarm-500"
    row = json.loads((folder / "seed1.json").read_text())
    assert row["status"] == "timed out" and row["time_limit"] == 60 and row["wall_limit"] == 2
    assert 2 <= row["seconds"] < 2 + 5
    assert row["clusters_finished"] < row["clusters"] and "f1_adjacent" not in row
    assert sorted(p.name for p in folder.iterdir()) == ["seed1.json"]  # no graph for a run that did not finish


def test_a_plain_learners_run_is_its_whole_run_so_the_smaller_limit_applies():
    from omegaconf import OmegaConf

    from hpc.launch.tasks import build_learner

    method = OmegaConf.create({"name": "fges", "pef": False, "members": [{"method": "fges"}]})
    assert build_learner(method, 60, None, wall_limit=10).time_limit == 10
    assert build_learner(method, 60, None, wall_limit=None).time_limit == 60
    assert build_learner(method, None, None, wall_limit=None).time_limit is None
    pef = build_learner(OmegaConf.create({"name": "p-fges", "pef": True, "members": [{"method": "fges"}]}),
                        60, None, wall_limit=10)
    assert (pef.time_limit, pef.wall_limit) == (60, 10)
    sle = build_learner(OmegaConf.create({"name": "sle", "pef": False, "members": [{"method": "fges"}] * 2}),
                        60, None, wall_limit=10)
    assert (sle.time_limit, sle.wall_limit) == (60, 10)


def test_a_finished_run_writes_its_row_and_graph_and_the_terminal_shows_progress_not_dask_chatter(tmp_path):
    run = psle_experiment(tmp_path, "executor.workers=1", "method=p-fges", "dataset.network=asia",
                          "dataset.nodes=100", "seed=2", timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    folder = tmp_path / "default" / "p-fges" / "asia-100"
    row = json.loads((folder / "seed2.json").read_text())
    assert row["status"] == "ok" and row["clusters_finished"] == row["clusters"] and 0 < row["f1_adjacent"] <= 1
    assert json.loads((folder / row["graph"]).read_text())["meta"]["seed"] == 2
    lines = (run.stdout + run.stderr).splitlines()
    assert any(line.startswith("psle: dask dashboard at http") for line in lines)
    assert any(line.startswith("psle: estimation (clusters): ") for line in lines)
    # Importing distributed resets its logger to INFO; scheduler chatter would bury the lines above.
    assert not [line for line in lines if "][distributed." in line and "][INFO]" in line]
