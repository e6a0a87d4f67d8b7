"""`psle learn --checkpoint`: a PEF run killed part-way resumes without recomputing finished member runs."""

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import h5py
import pytest

pytestmark = pytest.mark.e2e

PSLE = str(Path(sys.executable).parent / "psle")


def checkpoint_counts(path: Path) -> tuple[int, int, int]:
    """(runs the checkpoint holds, runs it was ever handed, member runs among those it holds), where runs are
    member runs and the steps after fusion's results (repair rounds, searches, the rival's run); (0, 0, 0) before it
    exists."""
    try:
        with h5py.File(path, "r") as f:
            runs = json.loads(f["runs"][()].decode())
            return len(runs), int(f.attrs["recorded"]), sum("cluster" in r for r in runs)
    except (OSError, KeyError):
        return 0, 0, 0


@pytest.fixture(scope="module")
def problem(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("resume")
    run = subprocess.run([PSLE, "generate", "--network", "alarm", "--nodes", "400", "--seed", "2", "-o", "a.h5"],
                         cwd=folder, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return folder / "a.h5"


def learn(problem: Path, out: Path, *extra: str) -> subprocess.Popen:
    """Every member on every cluster (the paper's rule): dozens of member runs and steps after fusion to kill at."""
    return subprocess.Popen([PSLE, "learn", str(problem), "--selection", "all", "--workers", "2", "-o", str(out),
                             *extra],
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def partition_line(run: subprocess.Popen) -> tuple[threading.Event, list[str]]:
    """Set once `run` has printed its partition (made, or taken from the checkpoint), with its stderr so far;
    read on a thread, so the run never waits on a full pipe."""
    seen, lines = threading.Event(), []

    def read() -> None:
        for line in run.stderr:
            lines.append(line)
            if line.startswith("psle: partition:"):
                seen.set()

    threading.Thread(target=read, daemon=True).start()
    return seen, lines


@pytest.mark.slow
def test_a_run_killed_three_times_resumes_to_the_uninterrupted_graph_without_rerunning_a_finished_run(problem,
                                                                                                      tmp_path):
    reference = learn(problem, tmp_path / "ref.json")
    assert reference.wait(timeout=600) == 0, reference.stderr.read()
    meta = json.loads((tmp_path / "ref.json").read_text())["meta"]
    members = sum(len(c["runs"]) for c in meta["clusters"])
    rival = meta["rival"] or {}  # the repair's rounds, the rival's run (unless skipped), the polish, the sweep,
    total = (members + len((meta["repair"] or {}).get("rounds", [])) + ("status" in rival)  # the recut's passes
             + (meta["polish"] or {}).get("searches", 0) + ("penalty" in (meta["sweep"] or {}))
             + sum(p["searches"] for p in (meta["recut"] or {}).get("passes", [])))
    ckpt = tmp_path / "run.h5"
    rng = random.Random(os.getpid())  # other events on every run of the suite
    # Three kills, each once the run has printed its partition and the checkpoint holds a random number of
    # results (member runs and steps after fusion; at or below those held already: right after the
    # partition). At most half of all results: the output is written only after the last, so every kill
    # lands in a run with at least half its work left, whatever the machine's speed.
    for target in sorted(rng.randint(0, total // 2) for _ in range(3)):
        killed = learn(problem, tmp_path / "g.json", "--checkpoint", str(ckpt))
        partitioned, lines = partition_line(killed)
        end = time.monotonic() + 900  # a hang guard only
        while not (partitioned.is_set() and checkpoint_counts(ckpt)[1] >= target):
            assert killed.poll() is None and time.monotonic() < end, "".join(lines)
            time.sleep(0.05)
        os.killpg(killed.pid, signal.SIGKILL)  # the driver, its dask workers and their JVMs
        killed.wait()
        assert not (tmp_path / "g.json").exists()
    held = checkpoint_counts(ckpt)[2]
    resumed = learn(problem, tmp_path / "g.json", "--checkpoint", str(ckpt))
    err = resumed.communicate(timeout=600)[1]
    assert resumed.returncode == 0, err
    if held:
        assert f"resuming from {ckpt}: {held} member runs already finished" in err
    ours, ref = (json.loads((tmp_path / name).read_text()) for name in ("g.json", "ref.json"))
    assert sorted(ours["edges"]) == sorted(ref["edges"])
    assert [c["winner"] for c in ours["meta"]["clusters"]] == [c["winner"] for c in ref["meta"]["clusters"]]
    assert ours["meta"]["resumed_runs"] == held
    # Every finished run was recorded once over the four processes: none was computed twice.
    assert checkpoint_counts(ckpt) == (total, total, members)


@pytest.mark.slow
def test_a_checkpoint_of_other_data_or_settings_is_refused_in_one_line(problem, tmp_path):
    ckpt = tmp_path / "run.h5"
    first = subprocess.run([PSLE, "learn", str(problem), "--method", "p-fges", "--param", "penalty=4", "--workers",
                            "2", "--checkpoint", str(ckpt), "-o", str(tmp_path / "g.json")],
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    saved = ckpt.read_bytes()
    other = tmp_path / "b.h5"
    assert subprocess.run([PSLE, "generate", "--network", "alarm", "--nodes", "400", "--seed", "3", "-o", str(other)],
                          capture_output=True).returncode == 0
    for argv, fragment in [([str(other), "--param", "penalty=4"], "checkpoint was made with other data"),
                           ([str(problem), "--param", "penalty=5"], "differ in: members")]:
        run = subprocess.run([PSLE, "learn", *argv, "--method", "p-fges", "--serial", "--checkpoint", str(ckpt),
                              "-o", str(tmp_path / "h.json")], capture_output=True, text=True, timeout=600)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 2 and lines[-1].startswith("psle: error:") and fragment in lines[-1], run.stderr
        assert "Traceback" not in run.stderr and not (tmp_path / "h.json").exists()
    assert ckpt.read_bytes() == saved
    plain = subprocess.run([PSLE, "learn", str(problem), "--method", "fges", "--checkpoint", str(ckpt), "-o",
                            str(tmp_path / "h.json")], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 2 and "applies to PEF methods (p-*), not fges" in plain.stderr
