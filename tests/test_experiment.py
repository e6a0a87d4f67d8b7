"""psle-experiment run locally: what one task writes when it finishes, when it hits its limit, and when a setting is wrong."""

import json
from pathlib import Path

import pytest

from hpc.data.networks import network_names
from hpc.errors import PsleError
from tests.conftest import psle_experiment, takes_ctrl_c

pytestmark = pytest.mark.e2e


@pytest.mark.slow
def test_a_pef_run_over_its_wall_limit_is_recorded_as_timed_out_without_a_graph(tmp_path):
    # Three blocks on which Tetrad's fGES (penalty 1) would search for years (tests/endless.py): 2 s of wall limit
    # cuts the first cluster's run on any machine. Each run's own limit is an hour, so a run that ended
    # well within it was cut by the wall limit; the bound below is that hour's half, not a speed.
    from hpc.data.problem import Problem, write_problem
    from tests.endless import endless_blocks

    write_problem(tmp_path / "endless.h5", Problem(*endless_blocks((100, 80, 60), seed=1)))
    run = psle_experiment(tmp_path, "progress=false", "executor.workers=1", "method=p-fges",
                          "+method.members.0.engine=tetrad", "dataset=file",
                          f"dataset.path={tmp_path / 'endless.h5'}", "+pef_options.whole_below=0", "seed=1",
                          "time_limit=3600", "wall_limit=2", timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    folder = tmp_path / "default" / "p-fges" / "endless"
    row = json.loads((folder / "seed1.json").read_text())
    assert row["status"] == "timed out" and row["time_limit"] == 3600 and row["wall_limit"] == 2
    assert 2 <= row["seconds"] < 1800
    assert row["clusters_finished"] < row["clusters"] and "f1_adjacent" not in row
    # No graph for a run that did not finish, but an account of how far each cluster's runs got.
    assert sorted(p.name for p in folder.iterdir()) == ["seed1.json", "seed1.runs.json"]
    assert row["runs"] == "seed1.runs.json"
    account = json.loads((folder / "seed1.runs.json").read_text())
    assert account["status"] == "timed out" and account["fusion"] is None and account["seed"] == 1
    clusters = account["clusters"]
    assert len(clusters) == row["clusters"] and max(c["size"] for c in clusters) == row["largest_cluster"]
    assert sum(c["winner"] is not None for c in clusters) == row["clusters_finished"]
    assert row["clusters"] == 3 and row["clusters_finished"] == 0
    runs = [(r["status"], r.get("error")) for c in clusters for r in c["runs"]]
    # The run going when the limit passed was cut; the others never started.
    assert len(runs) == 3 and all(status == "timed out" for status, _ in runs)
    assert [error for _, error in runs].count("the run's wall limit passed before it started") >= 2


def test_a_plain_learners_run_is_its_whole_run_so_the_smaller_limit_applies():
    from hpc.run import MethodSpec, build_estimator

    method = MethodSpec("fges", pef=False, members=({"method": "fges"},))
    assert build_estimator(method, 60, wall_limit=10).time_limit == 10
    assert build_estimator(method, 60, wall_limit=None).time_limit == 60
    assert build_estimator(method, None, wall_limit=None).time_limit is None
    pef = build_estimator(MethodSpec("p-fges", pef=True, members=({"method": "fges"},)), 60, wall_limit=10)
    assert (pef.time_limit, pef.wall_limit) == (60, 10)
    sle = build_estimator(MethodSpec("sle", pef=False, members=({"method": "fges"},) * 2), 60, wall_limit=10)
    assert (sle.time_limit, sle.wall_limit) == (60, 10)


@pytest.mark.slow
def test_psle_learn_and_psle_experiment_give_the_same_graph_and_meta(tmp_path):
    import subprocess
    import sys

    psle = str(Path(sys.executable).parent / "psle")
    gen = subprocess.run([psle, "generate", "--network", "child", "--nodes", "60", "--seed", "4", "-o", "p.h5"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert gen.returncode == 0, gen.stderr
    learn = subprocess.run([psle, "learn", "p.h5", "--method", "p-fges", "--param", "penalty=2", "--pef",
                            "alpha1=0.01", "--time-limit", "60", "--workers", "2", "-o", "cli.json"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert learn.returncode == 0, learn.stderr
    run = psle_experiment(tmp_path, "method=p-fges", "method.members.0.penalty=2", "dataset=file",
                          f"dataset.path={tmp_path / 'p.h5'}", "+pef_options.alpha1=0.01", "time_limit=60",
                          "wall_limit=null", "executor.workers=2")
    assert run.returncode == 0, run.stderr
    cli = json.loads((tmp_path / "cli.json").read_text())
    hydra = json.loads(next(tmp_path.glob("default/p-fges/p/seed0.graph.json")).read_text())
    assert cli["variables"] == hydra["variables"] and sorted(cli["edges"]) == sorted(hydra["edges"])
    varying = {"total_seconds", "seconds", "data", "seed", "fusion", "clusters"}
    assert {k: v for k, v in cli["meta"].items() if k not in varying} == \
        {k: v for k, v in hydra["meta"].items() if k not in varying}
    assert set(cli["meta"]) - {"data"} == set(hydra["meta"]) - {"seed"}
    strip = lambda cs: [{**c, "runs": [{k: v for k, v in r.items() if k != "seconds"} for r in c["runs"]]}  # noqa: E731
                        for c in cs]
    assert strip(cli["meta"]["clusters"]) == strip(hydra["meta"]["clusters"])


@pytest.mark.slow
def test_a_finished_run_writes_its_row_and_graph_and_the_terminal_shows_progress_not_dask_chatter(tmp_path):
    run = psle_experiment(tmp_path, "executor.workers=1", "method=p-fges", "dataset.network=asia",
                          "dataset.nodes=100", "seed=2", timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    folder = tmp_path / "default" / "p-fges" / "asia-100"
    row = json.loads((folder / "seed2.json").read_text())
    assert row["status"] == "ok" and row["clusters_finished"] == row["clusters"] and 0 < row["f1_adjacent"] <= 1
    meta = json.loads((folder / row["graph"]).read_text())["meta"]
    assert meta["seed"] == 2 and row["selection"] == "all" and row["selector"] is None
    assert row["member_seconds"] == pytest.approx(sum(r["seconds"] for c in meta["clusters"] for r in c["runs"]),
                                                  abs=1e-2) and row["member_seconds"] > 0
    assert sorted(p.name for p in folder.iterdir()) == ["seed2.graph.json", "seed2.json"]  # the task checkpoint went
    lines = (run.stdout + run.stderr).splitlines()
    assert not any("dask dashboard" in line for line in lines)  # said only when asked (PSLE_DASHBOARD=1)
    assert any(line.startswith("psle: estimation: member runs ") for line in lines)
    assert any(line.startswith("psle: ok in ") and str(folder / "seed2.json") in line for line in lines)
    log = next(tmp_path.glob("default/.hydra/run/*/experiment.log")).read_text()  # the task's log has them too
    assert "psle: estimation: member runs" in log and f"-> {folder / 'seed2.json'}" in log
    # Importing distributed resets its logger to INFO; scheduler chatter would bury the lines above.
    assert not [line for line in lines if "][distributed." in line and "][INFO]" in line]


@pytest.mark.slow
def test_a_selecting_runs_row_names_the_selector_file_that_chose_its_members(tmp_path):
    from hpc.select.selector import shipped_dir

    run = psle_experiment(tmp_path, "progress=false", "executor.workers=1", "method=p-sle-truth",
                          "dataset.network=asia", "dataset.nodes=40", "seed=1", timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    folder = tmp_path / "default" / "p-sle-truth" / "asia-40"
    row = json.loads((folder / "seed1.json").read_text())
    shipped = json.loads((shipped_dir() / "truth.json").read_text())
    assert row["selection"] == "predicted" and row["selector"] == shipped["sha256"][:12]
    meta = json.loads((folder / row["graph"]).read_text())["meta"]
    assert meta["selector"]["sha256"] == shipped["sha256"]
    ran = [r for c in meta["clusters"] for r in c["runs"] if r["status"] != "not run"]
    assert row["member_seconds"] == pytest.approx(sum(r["seconds"] for r in ran), abs=1e-2)
    assert len(ran) == len(meta["clusters"])  # one predicted member per cluster, nothing else paid for


@pytest.mark.parametrize("overrides, message", [
    (["dataset.network=nope"], "dataset.network=nope: unknown network; known: alarm, andes"),
    (["dataset.nodes=0"], "dataset.nodes=0: must be a whole number of at least 1"),
    (["dataset.samples=1.5"], "dataset.samples=1.5: must be a whole number of at least 2"),
    (["dataset=er", "dataset.weights=[0.9,0.2]"], "dataset.weights must satisfy 0 < low <= high, got 0.9 and 0.2"),
    (["dataset.weights=0.5"], "dataset.weights must be two numbers, the low and high magnitude, got 0.5"),
    (["seed=abc"], "seed=abc: must be a whole number of at least 0"),
    (["time_limit=-1"], "time_limit=-1: must be a positive number of seconds"),
    (["time_limit=60", "wall_limit=0"], "wall_limit=0: must be a positive number of seconds"),
    (["dataset=file"], "dataset=file needs dataset.path=FILE"),
    (["dataset=file", "dataset.path=/no/such.csv"], "dataset.path=/no/such.csv: no such file"),
    (["method=fges", "+method.members.0.alpha=0.1"], "method=fges: fges: unknown parameter(s) alpha"),
    (["method=p-pc-stable", "+method.members.0.alpha=2"], "method=p-pc-stable: pc-stable(alpha=2"),
    (["task=tune"], "task=tune: must be learn or train"),
    (["method=p-fges", "selection=predicted"], "method=p-fges: selection=predicted applies to PEF around an ensemble"),
    (["selection=predicted", "selector=truth"], "method=p-sle: the selector was trained for portfolio 'portfolio'"),
    (["method=p-sle-bic", "method.top_k=9"], "method=p-sle-bic: top_k must be a whole number in [1, 4]"),
    (["selection=maybe"], "method=p-sle: selection must be one of all, predicted"),
    (["executor.kind=kubernetes"], "executor.kind=kubernetes: unknown; choose one of local, serial, slurm_dask"),
    (["task=train", "train.space=[fges,gies]"], "train.space: unknown method 'gies'"),
    (["task=train", "train.weights=[0.9,0.2]"], "train.weights must satisfy 0 < low <= high, got 0.9 and 0.2"),
    (["method=p-pc-stable", "method.members.0.engine=java"],
     "method=p-pc-stable: pc-stable(alpha=0.05, depth=1000, engine='java'): engine must be one of numpy, tetrad"),
])
def test_a_tasks_settings_are_checked_before_it_runs(overrides, message):
    from hydra import compose, initialize_config_dir

    import hpc.launch.experiment  # noqa: F401  (registers the config's resolver)
    from hpc.launch.preflight import check_task
    from hpc.learners.ensemble import conf_dir

    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        check_task(compose("config", overrides=["experiment=paper_table_1000"]))  # the real settings pass
        with pytest.raises(PsleError) as caught:
            check_task(compose("config", overrides=overrides))
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (Path(__file__).parents[1] / "conf" / "experiment").glob("*.yaml")))
def test_every_setting_a_shipped_experiment_sweeps_passes_the_checks(experiment):
    from hydra import compose, initialize_config_dir

    import hpc.launch.experiment  # noqa: F401  (registers the config's resolver)
    from hpc.launch.preflight import check_task
    from hpc.learners.ensemble import conf_dir

    def values(text: str) -> list[str]:
        if text.startswith("range("):
            return [str(v) for v in range(*map(int, text[6:-1].split(",")))]
        return text.split(",")

    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        sweep = compose("config", overrides=[f"experiment={experiment}"], return_hydra_config=True)
        params = {k: values(str(v)) for k, v in (sweep.hydra.sweeper.params or {}).items()}
        first = {k: v[0] for k, v in params.items()}
        # Each swept value once, with the other keys at their first value (the full product repeats checks).
        tasks = [first] + [{**first, k: v} for k, vs in params.items() for v in vs[1:]]
        for task in tasks:
            check_task(compose("config", overrides=[f"experiment={experiment}", *(f"{k}={v}" for k, v in task.items())]))


def test_a_bad_setting_is_one_line_and_nothing_is_written(tmp_path):
    run = psle_experiment(tmp_path, "dataset.network=nope", timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"psle-experiment: error: dataset.network=nope: unknown network; known: {', '.join(network_names())}"]
    assert [p.name for p in (tmp_path / "default").iterdir()] == [".hydra"]  # Hydra's own log of the attempt


def test_selection_names_the_results_apart_from_the_papers_p_sle():
    from omegaconf import OmegaConf

    from hpc.launch.tasks import method_label, selection_settings

    p_sle = {"name": "p-sle", "pef": True, "sle": "learned"}
    paper = OmegaConf.create({"method": p_sle, "selection": "all", "selector": "truth", "top_k": 1})
    assert method_label(paper) == "p-sle" and selection_settings(paper)["selection"] == "all"
    top2 = OmegaConf.create({"method": p_sle, "selection": "predicted", "selector": "/x/bic.json", "top_k": 2})
    assert method_label(top2) == "p-sle-bic-top2"
    own = OmegaConf.create({"method": {**p_sle, "name": "p-sle-bic", "selection": "predicted", "selector": "bic"},
                            "selection": "all", "selector": "truth", "top_k": 1})
    assert method_label(own) == "p-sle-bic" and selection_settings(own) == {
        "selection": "predicted", "selector": "bic", "top_k": 1, "runaway": None}


def test_a_data_setting_off_the_familys_config_gets_its_own_results_folder():
    from omegaconf import OmegaConf

    from hpc.launch.tasks import dataset_tag

    def tag(**ds):
        return dataset_tag(OmegaConf.create(ds))

    assert tag(kind="er", network="er", nodes=1000, samples=1000, edges_per_node=2) == "er-1000"
    assert tag(kind="er", network="er", nodes=1000, samples=300, edges_per_node=2) == "er-1000-n300"
    assert tag(kind="hub", network="hub", nodes=500, samples=1000, edges_per_node=2) == "hub-500-epn2"
    assert tag(kind="hub", network="hub", nodes=500, samples=1000, edges_per_node=1) == "hub-500"
    assert tag(kind="ws", network="ws", nodes=800, samples=5000, edges_per_node=2, rewire=0.3) == \
        "ws-800-n5000-rewire0.3"
    assert tag(kind="sf", network="sf", nodes=800, samples=1000) == "sf-800"  # the generator's default density
    # Replicas take no density: a stray edges_per_node neither changes their data nor their folder.
    assert tag(kind="bnlearn", network="asia", nodes=40, samples=1000, edges_per_node=3) == "asia-40"
    assert tag(kind="bnlearn", network="asia", nodes=40, samples=1000, weights=[0.1, 0.5]) == "asia-40-w0.1-0.5"
    assert tag(kind="er", network="er", nodes=1000, samples=1000, weights=[0.5, 1]) == "er-1000"


def test_a_sweep_over_the_sample_size_runs_every_size_and_a_stale_row_is_refused(tmp_path):
    run = psle_experiment(tmp_path, "-m", "executor.workers=1", "progress=false", "method=p-fges",
                          "dataset.network=asia", "dataset.nodes=40", "dataset.samples=60,1000", "seed=0")
    assert run.returncode == 0, run.stderr[-3000:]
    small, default = (json.loads((tmp_path / "default" / "p-fges" / tag / "seed0.json").read_text())
                      for tag in ("asia-40-n60", "asia-40"))
    assert small["dataset"] == {"samples": 60, "weights": [0.5, 1.0], "order": "shuffled"}
    assert default["dataset"] == {"samples": 1000, "weights": [0.5, 1.0], "order": "shuffled"}
    assert small["f1_adjacent"] != default["f1_adjacent"] and "skipped" not in run.stderr
    row = tmp_path / "default" / "p-fges" / "asia-40" / "seed0.json"
    same = ("executor.workers=1", "method=p-fges", "dataset.network=asia", "dataset.nodes=40", "seed=0")
    # Rows from before the weights setting existed were made with the paper's weights: still this result.
    row.write_text(json.dumps({**default, "dataset": {"samples": 1000, "order": "shuffled"}}))
    legacy = psle_experiment(tmp_path, *same)
    assert legacy.returncode == 0 and f"{row} exists; task skipped" in legacy.stderr
    # Rows from before the order setting existed had the generator's column order: not the shuffled one asked.
    row.write_text(json.dumps({**default, "dataset": {"samples": 1000, "weights": [0.5, 1.0]}}))
    assert psle_experiment(tmp_path, *same).returncode != 0
    # A row written under other settings (here: edited) is not passed off as the one asked for.
    row.write_text(json.dumps({**default, "dataset": {"samples": 1000, "weights": [0.1, 0.3]}}))
    again = psle_experiment(tmp_path, *same)
    assert again.returncode != 0
    assert (f"psle-experiment: error: {row} holds a result for dataset settings "
            "{'samples': 1000, 'weights': [0.1, 0.3]}") in again.stderr


@pytest.mark.slow
def test_ctrl_c_on_a_local_sweep_is_one_line_and_the_same_command_resumes(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    overrides = ["method=p-sle", "dataset.network=alarm", "dataset.nodes=600", "executor.workers=2", "seed=0"]
    proc = subprocess.Popen([str(Path(sys.executable).parent / "psle-experiment"), *overrides], cwd=tmp_path,
                            env={**os.environ, "PSLE_RESULTS": str(tmp_path)}, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=takes_ctrl_c)
    seen = []
    while not any(ln.startswith("psle: estimation: member runs") for ln in seen):  # a first member run is done
        line = proc.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
    os.killpg(proc.pid, signal.SIGINT)
    err = "".join(seen) + proc.communicate(timeout=120)[1]
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("psle-experiment: interrupted;"), err
    experiment_dir = next(tmp_path.glob("*/p-sle/alarm-600"))
    assert not (experiment_dir / "seed0.json").exists() and (experiment_dir / "seed0.checkpoint.h5").exists()
    rerun = psle_experiment(tmp_path, *overrides)
    assert rerun.returncode == 0, rerun.stderr
    graph = json.loads((experiment_dir / "seed0.graph.json").read_text())
    assert graph["meta"]["resumed_runs"] >= 1 and not (experiment_dir / "seed0.checkpoint.h5").exists()


@pytest.mark.slow
def test_warnings_of_a_task_are_one_line_each(tmp_path):
    # Every member run cut at a microsecond, on any machine (a run's worker is a fresh process that must
    # start a JVM before it answers): each cluster warns, and the run records its timeout.
    run = psle_experiment(tmp_path, "method=p-sle", "dataset.network=asia", "dataset.nodes=40", "time_limit=0.000001",
                          "wall_limit=null", "executor.workers=1", "progress=false", timeout=300)
    assert run.returncode == 0, run.stderr
    warned = [ln for ln in run.stderr.splitlines() if "warning:" in ln.lower()]
    assert warned and all(ln.startswith("psle: warning: cluster ") for ln in warned), run.stderr
    assert "UserWarning" not in run.stderr and "learner.fit(" not in run.stderr, run.stderr
