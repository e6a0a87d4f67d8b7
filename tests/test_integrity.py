"""Damaged files are refused, never half-read; the same inputs give the same answer."""

import json
import random
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from hpc.train.checkpoint import Checkpoint
from hpc.data.generate import benchmark_problem
from hpc.data.problem import read_problem, write_problem
from hpc.errors import PsleError
from hpc.graphs.io import write_json
from hpc.learners.members import PCStable
from tests.conftest import dag

PSLE = str(Path(sys.executable).parent / "psle")


def flipped_copies(src: Path, dst: Path, count: int, seed: int):
    """`count` copies of `src` at `dst`, each with one random bit flipped (yielded after writing)."""
    raw = src.read_bytes()
    rng = random.Random(seed)
    for _ in range(count):
        damaged = bytearray(raw)
        bit = rng.randrange(len(damaged) * 8)
        damaged[bit // 8] ^= 1 << (bit % 8)
        dst.write_bytes(damaged)
        yield bit // 8


def assert_refused_in_one_line(exc: PsleError, path: Path) -> None:
    text = str(exc)
    assert "\n" not in text and text.startswith(str(path)), text


def test_bit_flips_in_a_problem_file_load_identically_or_are_refused(tmp_path):
    original = benchmark_problem(60, 3, 200, network="asia")
    write_problem(tmp_path / "p.h5", original)
    outcome = {"identical": 0, "refused": 0}
    for offset in flipped_copies(tmp_path / "p.h5", tmp_path / "d.h5", 100, seed=1):
        try:
            back = read_problem(tmp_path / "d.h5", need_truth=True)
        except PsleError as exc:
            assert_refused_in_one_line(exc, tmp_path / "d.h5")
            outcome["refused"] += 1
            continue
        assert np.array_equal(back.data, original.data), f"altered data loaded (byte {offset})"
        assert back.variables == original.variables and back.truth == original.truth
        assert np.array_equal(back.weights, original.weights) and back.attrs == original.attrs
        outcome["identical"] += 1
    assert outcome["refused"] > 50, outcome  # most bytes are data: a flip there must be caught


def test_bit_flips_in_a_training_checkpoint_load_identically_or_are_refused(tmp_path):
    settings = {"k": 2, "seed": 0}
    ck = Checkpoint(tmp_path / "c.h5", settings)
    for i in range(40):
        spec = {"method": "fges", "penalty": 1.0 + i}
        ck.evaluations[Checkpoint.key(spec, i % 4)] = {"quality": i / 7, "seconds": 0.25 * i, "status": "ok",
                                                       "runs": 1, "bic": None if i % 5 == 0 else -10.0 * i}
    ck.set_rounds([{"member": {"method": "fges", "penalty": 3.0}, "quality": 1.25}])
    original = Checkpoint(tmp_path / "c.h5", settings)
    outcome = {"identical": 0, "refused": 0}
    for offset in flipped_copies(tmp_path / "c.h5", tmp_path / "d.h5", 100, seed=2):
        try:
            back = Checkpoint(tmp_path / "d.h5", settings)
        except PsleError as exc:
            assert_refused_in_one_line(exc, tmp_path / "d.h5")
            outcome["refused"] += 1
            continue
        assert back.evaluations == original.evaluations, f"altered evaluations loaded (byte {offset})"
        assert back.rounds == original.rounds
        outcome["identical"] += 1
    assert outcome["refused"] > 20, outcome


def test_a_checkpoint_damaged_in_place_is_refused_and_left_alone(tmp_path):
    ck = Checkpoint(tmp_path / "c.h5", {"k": 1})
    ck.put({"method": "fges", "penalty": 2.0}, 0, {"quality": 1.5, "seconds": 0.1, "status": "ok"})
    with h5py.File(tmp_path / "c.h5", "r+") as f:  # a valid HDF5 file whose numbers changed
        f["evaluations/quality"][0] = 1.75
    damaged = (tmp_path / "c.h5").read_bytes()
    with pytest.raises(PsleError, match="does not match its checksum"):
        Checkpoint(tmp_path / "c.h5", {"k": 1})
    assert (tmp_path / "c.h5").read_bytes() == damaged


@pytest.mark.slow
def test_pc_stable_gives_the_same_graph_every_time_in_one_process():
    problem = benchmark_problem(300, 0, 1000, network="alarm")
    graphs = [PCStable().fit(problem.data, problem.variables).graph_ for _ in range(4)]
    assert all(g == graphs[0] for g in graphs[1:])


def train(tmp: Path, name: str) -> dict[str, tuple]:
    cmd = [PSLE, "train", "--problems", "3", "--max-nodes", "30", "--k", "1", "--trials", "8", "--serial",
           "--checkpoint", str(tmp / f"{name}.h5"), "-o", str(tmp / f"{name}.yaml")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    with h5py.File(tmp / f"{name}.h5") as f:
        keys = [k.decode() for k in f["evaluations/keys"][()]]
        columns = [f[f"evaluations/{c}"][()] for c in ("quality", "status", "bic")]
    return {k: tuple(col[i] for col in columns) for i, k in enumerate(keys)}


@pytest.mark.slow
def test_two_trainings_with_pc_stable_candidates_give_identical_checkpoints(tmp_path):
    first, second = train(tmp_path, "a"), train(tmp_path, "b")
    assert any('"pc-stable"' in k for k in first), "no PC-Stable candidate was evaluated"
    assert first.keys() == second.keys()
    for key in first:  # seconds differ run to run; everything the training decides on must not
        (q1, s1, b1), (q2, s2, b2) = first[key], second[key]
        assert q1 == q2 and s1 == s2 and (b1 == b2 or (np.isnan(b1) and np.isnan(b2))), key


def test_graph_files_are_strict_json(tmp_path):
    write_json(tmp_path / "g.json", dag("ab", "a>b"), {"bic": float("inf"), "runs": [{"bic": np.float64("nan")}]})
    meta = json.loads((tmp_path / "g.json").read_text(), parse_constant=lambda c: pytest.fail(f"non-standard {c}"))
    assert meta["meta"] == {"bic": None, "runs": [{"bic": None}]}
