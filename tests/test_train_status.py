"""`psle train --status`: where a training stands, read from its checkpoint without touching it, and the
trials and resumes the training records for it."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from hpc.errors import PsleError
from hpc.train.autosle import TrainConfig
from hpc.train.checkpoint import Checkpoint
from hpc.train.problems import TrainingConfig
from hpc.train.status import read_status, show

PSLE = str(Path(sys.executable).parent / "psle")
SETTINGS = TrainConfig(k=3, trials=4, training=TrainingConfig(problems=5, max_nodes=30)).settings()
TINY = ["--problems", "2", "--max-nodes", "20", "--k", "2", "--trials", "4", "--serial"]


def fges(penalty: float) -> dict:
    return {"method": "fges", "penalty": penalty}


def untouched(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def test_status_mid_round_is_the_checkpoints_trials_by_hand(tmp_path):
    path = tmp_path / "c.h5"
    ck = Checkpoint(path, SETTINGS)
    for t, gain in enumerate([0.5, 0.9, 0.2, 0.9], 1):  # round 1: trial 2 is the first best
        ck.record_trial(1, t, fges(t), gain, float(t))
    ck.set_rounds([{"round": 1, "member": fges(2), "gain": 0.9, "quality": 0.9}])
    ck.record_trial(2, 1, fges(5), -0.1, 5.0)
    ck.record_trial(2, 2, fges(6), 0.05, 6.0)
    before = untouched(path)
    s = read_status(path)
    assert untouched(path) == before
    assert (s["round"], s["round_trials_done"], s["round_best_gain"]) == (2, 2, 0.05)
    assert (s["trials_done"], s["trials_total"], s["trials_recorded"]) == (6, 12, 6)
    assert s["trial_seconds"] == 21.0 and s["trials_timed"] == 6
    assert s["eta_seconds"] == 21.0 / 6 * (12 - 6)  # mean seconds per trial x trials left in the 3 rounds
    assert not s["finished"] and s["resumes"] == 0 and s["settings"]["space"] == ["fges", "pc-stable"]
    text = show(s)
    assert "round 1/3: fges(penalty=2), gain 0.9000, Q 0.9000" in text
    assert "round 2/3: 2/4 trials, best gain so far 0.0500" in text
    assert "trials: 6/12 done, 6 recorded, 0 evaluations; never resumed" in text
    assert "ETA 21 s for the 6 trials left (an estimate" in text and len(text.splitlines()) == 6


def test_status_names_the_trial_under_way_and_its_problems_done(tmp_path):
    path = tmp_path / "c.h5"
    ck = Checkpoint(path, SETTINGS)
    ck.put(fges(1), 0, {"quality": 1.0, "seconds": 1.0, "status": "ok"})
    ck.record_trial(1, 1, fges(1), 1.0, 1.0)
    assert read_status(path)["trial_under_way"] is None  # between trials
    for problem in (0, 3):
        ck.put(fges(7), problem, {"quality": 1.2, "seconds": 1.0, "status": "ok"})
    s = read_status(path)
    assert s["trial_under_way"] == {"member": fges(7), "problems_done": 2, "problems": 5}
    assert "round 1/3: 1/4 trials, best gain so far 1.0000; trial 2 under way, 2/5 problems evaluated: " \
           "fges(penalty=7)" in show(s)


def test_a_round_without_gain_is_finished_early(tmp_path):
    path = tmp_path / "c.h5"
    ck = Checkpoint(path, SETTINGS)
    for t in range(1, 5):
        ck.record_trial(1, t, fges(t), 0.25 * t, 2.0)
    ck.set_rounds([{"round": 1, "member": fges(4), "gain": 1.0, "quality": 1.0}])
    for t in range(1, 5):
        ck.record_trial(2, t, fges(10 + t), -0.01 * t if t != 3 else 0.0, 2.0)
    s = read_status(path)
    assert s["finished"] and s["stopped_early"] and s["round"] is None and s["eta_seconds"] == 0.0
    assert s["trials_done"] == 8 and s["trials_total"] == 12
    assert "finished: round 2 found no configuration that improves the ensemble; 1 member" in show(s)
    assert show(s).endswith("; finished")


def test_a_replayed_trial_keeps_its_first_record_and_resumes_are_counted(tmp_path):
    path = tmp_path / "c.h5"
    ck = Checkpoint(path, SETTINGS)
    assert not ck.existed and ck.record_trial(1, 1, fges(3), 0.5, 12.5)
    assert not ck.record_trial(1, 1, fges(3), 0.5, 0.01)  # a resumed run's replay takes no time
    again = Checkpoint(path, SETTINGS)
    assert again.existed and again.trials == {(1, 1): {"member": '{"method":"fges","penalty":3}', "gain": 0.5,
                                                       "seconds": 12.5}}
    assert again.count_resume() == 1 and Checkpoint(path, SETTINGS).count_resume() == 2
    assert read_status(path)["resumes"] == 2 and not read_status(path)["resumes_at_least"]


def test_a_checkpoint_from_before_trials_says_unknown_and_counts_from_its_first_resume(tmp_path):
    path = tmp_path / "c.h5"
    ck = Checkpoint(path, SETTINGS)
    ck.put(fges(2), 0, {"quality": 1.5, "seconds": 3.0, "status": "ok"})
    ck.set_rounds([{"round": 1, "member": fges(2), "gain": 1.5, "quality": 1.5}])
    with h5py.File(path, "r+") as f:  # as psle wrote it before it kept trials and resumes
        del f["trials"]
        for name in ("resumes", "resumes_uncounted", "progress_sha256"):
            del f.attrs[name]
    s = read_status(path)
    assert s["resumes"] is None and s["round_trials_done"] is None and s["trials_done"] is None
    assert s["evaluations"] == 1 and s["rounds"][0]["member"] == fges(2)
    text = show(s)
    assert "round 2/3: trials done unknown" in text and "resumes unknown" in text and "ETA unknown" in text
    old = Checkpoint(path, SETTINGS)  # its evaluations' checksum still holds
    assert old.predates_trials and old.get(fges(2), 0)["quality"] == 1.5
    assert old.count_resume() == 1
    s = read_status(path)
    assert s["resumes"] == 1 and s["resumes_at_least"] and "resumed at least once" in show(s)


def test_altered_trials_or_resumes_are_refused_in_one_line(tmp_path):
    path = tmp_path / "c.h5"
    Checkpoint(path, SETTINGS).record_trial(1, 1, fges(3), 0.5, 12.5)
    for change in ({"attr": ("resumes", 7)}, {"data": ("trials/seconds", 1.0)}):
        copy = tmp_path / f"{next(iter(change))}.h5"
        copy.write_bytes(path.read_bytes())
        with h5py.File(copy, "r+") as f:
            if "attr" in change:
                f.attrs[change["attr"][0]] = change["attr"][1]
            else:
                f[change["data"][0]][0] = change["data"][1]
        for read in (read_status, lambda p: Checkpoint(p, SETTINGS)):
            with pytest.raises(PsleError, match=r"^\S+: content does not match its checksum") as exc:
                read(copy)
            assert str(copy) in str(exc.value) and "\n" not in str(exc.value)


def test_what_is_not_a_checkpoint_is_named_in_one_line(tmp_path):
    (tmp_path / "garbage.h5").write_bytes(b"\x00" * 100)
    (tmp_path / "empty.h5").write_bytes(b"")
    with h5py.File(tmp_path / "foreign.h5", "w") as f:
        f["x"] = [1, 2]
    with h5py.File(tmp_path / "whole.h5", "w") as f:
        f["x"] = np.arange(10000.0)
    (tmp_path / "half.h5").write_bytes((tmp_path / "whole.h5").read_bytes()[:20000])  # a copy caught midway
    (tmp_path / "folder").mkdir()
    expected = {"missing.h5": "no such file", "folder": "is a directory", "garbage.h5": "not an HDF5 file",
                "empty.h5": "cannot be read now: it is incomplete", "half.h5": "cannot be read now: it is incomplete",
                "foreign.h5": "not a psle train checkpoint"}
    for name, says in expected.items():
        with pytest.raises(PsleError) as exc:
            read_status(tmp_path / name)
        assert str(exc.value).startswith(f"{tmp_path / name}: ") and says in str(exc.value)
        assert "\n" not in str(exc.value)


def test_the_status_reads_a_checkpoint_without_importing_configspace():
    code = "import sys, hpc.train.status; print(sorted(m for m in sys.modules if m.startswith(('ConfigSpace', 'smac'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def recorded_trials(path: Path) -> int:
    """Trials in a training's checkpoint (0 before it exists); read as the status does, without a lock."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            return len(f["trials/round"])
    except (OSError, KeyError):
        return 0


def raw(path: Path) -> dict:
    """The checkpoint's own contents, read directly."""
    with h5py.File(path, "r", locking=False) as f:
        return {"rounds": json.loads(f.attrs["rounds"]), "evaluations": len(f["evaluations/keys"]),
                "resumes": int(f.attrs["resumes"]),
                "trials": [(int(r), int(t), json.loads(m), float(g), float(s)) for r, t, m, g, s in zip(
                    *(f[f"trials/{c}"][()] for c in ("round", "trial", "member", "gain", "seconds")))]}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny training, frozen (SIGSTOP) once its first trial is recorded to take a status mid-run, then run
    to the end; its checkpoint, its log and that status."""
    d = tmp_path_factory.mktemp("status")
    checkpoint = d / "c.h5"
    cmd = [PSLE, "train", *TINY, "--checkpoint", str(checkpoint), "-o", str(d / "e.yaml")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "TMPDIR": str(d)})
    while proc.poll() is None and recorded_trials(checkpoint) < 1:
        time.sleep(0.05)
    try:
        os.killpg(proc.pid, signal.SIGSTOP)  # nothing writes the checkpoint until SIGCONT
        before = untouched(checkpoint)
        mid, mid_raw = read_status(checkpoint), raw(checkpoint)
        mid_untouched = untouched(checkpoint) == before
    finally:
        os.killpg(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return {"dir": d, "checkpoint": checkpoint, "cmd": cmd, "log": err, "mid": mid, "mid_raw": mid_raw,
            "mid_untouched": mid_untouched}


@pytest.mark.slow
@pytest.mark.jvm
def test_a_status_taken_mid_training_is_what_the_frozen_checkpoint_holds(trained):
    s, r = trained["mid"], trained["mid_raw"]
    assert trained["mid_untouched"], "the status changed the checkpoint's bytes or mtime"
    assert s["rounds"] == r["rounds"] and s["evaluations"] == r["evaluations"] and s["resumes"] == 0
    assert s["trials_recorded"] == len(r["trials"]) >= 1
    current = [g for rd, _, _, g, _ in r["trials"] if rd == len(r["rounds"]) + 1]
    assert s["trials_done"] == len(r["rounds"]) * 4 + len(current)
    assert s["trial_seconds"] == pytest.approx(sum(sec for *_, sec in r["trials"]))
    if not s["finished"]:
        assert s["round_trials_done"] == len(current) and s["round_best_gain"] == max(current, default=None)
        assert f"round {s['round']}/2: {len(current)}/4 trials" in show(s)


@pytest.mark.slow
@pytest.mark.jvm
def test_a_finished_training_s_status_and_log_agree_with_its_checkpoint(trained):
    path, r = trained["checkpoint"], raw(trained["checkpoint"])
    before = untouched(path)
    run = subprocess.run([PSLE, "train", "--status", str(path), "--json"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert untouched(path) == before, "the status changed the checkpoint's bytes or mtime"
    s = json.loads(run.stdout)
    assert s["finished"] and s["eta_seconds"] == 0 and s["trials_total"] == 8
    assert s["rounds"] == r["rounds"] == yaml.safe_load((trained["dir"] / "e.yaml").read_text())["training"]["rounds"]
    assert s["trials_recorded"] == len(r["trials"]) == s["trials_done"] == (len(r["rounds"]) + s["stopped_early"]) * 4
    assert s["trial_seconds"] == pytest.approx(sum(sec for *_, sec in r["trials"])) and s["trials_timed"] == 8
    for finished in r["rounds"]:  # each round's member is its first best trial, its gain that trial's
        trials = [(g, m) for rd, _, m, g, _ in r["trials"] if rd == finished["round"]]
        best = max(g for g, _ in trials)
        assert finished["gain"] == best and finished["member"] == next(m for g, m in trials if g == best)
    # The log: one line per trial, in order, with the best gain so far in its round.
    lines = re.findall(r"round (\d)/2, trial (\d)/4, best gain so far (-?\d+\.\d{4}), ETA (\S+ \S+) \(estimate\)",
                       trained["log"])
    assert [(int(a), int(b)) for a, b, *_ in lines] == [(rd, t) for rd, t, *_ in r["trials"]]
    for (rd, t, *_), line in zip(r["trials"], lines):
        so_far = max(g for r2, t2, _, g, _ in r["trials"] if r2 == rd and t2 <= t)
        assert float(line[2]) == pytest.approx(so_far, abs=5e-5)


@pytest.mark.slow
@pytest.mark.jvm
def test_a_resumed_training_counts_the_resume_and_keeps_its_trials(trained):
    path = trained["checkpoint"]
    first = raw(path)
    run = subprocess.run(trained["cmd"], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "TMPDIR": str(trained["dir"])})
    assert run.returncode == 0, run.stderr
    assert f"resumed (resume #1): {len(first['trials'])} trials already recorded" in run.stderr
    assert "trial 1/4" not in run.stderr  # replayed trials are not logged again
    again = raw(path)
    assert again["resumes"] == 1 and again["trials"] == first["trials"] and again["rounds"] == first["rounds"]
    assert read_status(path)["resumes"] == 1 and "resumed once" in show(read_status(path))
    for name, says in (("missing.h5", "no such file"), ("e.yaml", "not an HDF5 file")):
        bad = subprocess.run([PSLE, "train", "--status", str(trained["dir"] / name)], capture_output=True,
                             text=True, timeout=120)
        assert bad.returncode == 2 and bad.stdout == ""
        assert bad.stderr.count("\n") == 1 and str(trained["dir"] / name) in bad.stderr and says in bad.stderr


def test_the_shipped_trained_sle_is_what_the_committed_training_checkpoint_holds():
    """hpc/conf/sle/trained.yaml names its checkpoint by sha256; its members are that training's rounds, in order."""
    import hashlib

    from hpc.learners.ensemble import load_sle

    root = Path(__file__).parents[1]
    checkpoint = root / "bench" / "autosle-run" / "checkpoint.h5"
    assert hashlib.sha256(checkpoint.read_bytes()).hexdigest() in (root / "hpc/conf/sle/trained.yaml").read_text()
    status = json.loads(subprocess.run([PSLE, "train", "--status", str(checkpoint), "--json"], capture_output=True,
                                       text=True, check=True).stdout)
    assert status["finished"] and load_sle("trained")[1] == [r["member"] for r in status["rounds"]]
