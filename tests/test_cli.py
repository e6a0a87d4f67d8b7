"""The `psle` console script, run as a user runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

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


def test_generate_random_graph(tmp_path):
    out = tmp_path / "ws.h5"
    run = psle("generate", "--graph", "ws", "--nodes", "300", "--seed", "2", "-o", str(out))
    assert run.returncode == 0, run.stderr
    with h5py.File(out) as f:
        assert f["data"].shape == (1000, 300) and f["truth/edges"].shape == (600, 2)
        assert f.attrs["network"] == "ws"


def assert_one_line_failure(run: subprocess.CompletedProcess, *fragments: str) -> None:
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("args, fragment", [
    (["--network", "nonesuch", "--nodes", "100"], "unknown network 'nonesuch'"),
    (["--network", "asia", "--nodes", "0"], "must be positive, got 0"),
    (["--network", "asia", "--nodes", "-5"], "must be positive, got -5"),
    (["--network", "asia", "--nodes", "100", "--samples", "1"], "at least 2, got 1"),
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


def test_evaluate_rejects_truth_file_without_truth(tmp_path, alarm):
    bare = tmp_path / "bare.h5"
    with h5py.File(bare, "w") as f:
        f["data"] = np.zeros((3, 2))
        f["variables"] = np.array([b"a", b"b"])
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"variables": ["a", "b"], "edges": [["a", "b", "-->"]]}))
    assert_one_line_failure(psle("evaluate", str(result), "--truth", str(bare)), "missing dataset /truth/edges")


def test_evaluate_rejects_unknown_variables(tmp_path, alarm):
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"variables": ["HR_1", "ghost"], "edges": [["HR_1", "ghost", "-->"]]}))
    assert_one_line_failure(psle("evaluate", str(result), "--truth", str(alarm)), "'ghost'", str(result))


def test_evaluate_rejects_malformed_result(tmp_path, alarm):
    result = tmp_path / "r.json"
    result.write_text("{not json")
    assert_one_line_failure(psle("evaluate", str(result), "--truth", str(alarm)), "not valid JSON")
    csv = tmp_path / "r.csv"
    csv.write_text("from,to,edge\nHR_1,HREKG_1\n")
    assert_one_line_failure(psle("evaluate", str(csv), "--truth", str(alarm)), "line 2 has 2 fields")
