"""Auto-SLE: the greedy loop's arithmetic, its checkpoint, and resumption after real SIGKILLs."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from hpc.train.checkpoint import Checkpoint
from hpc.train.space import configuration_space, to_spec
from hpc.train.problems import TrainingConfig, training_problems
from hpc.errors import PsleError
from tests.conftest import evaluations

pytestmark = pytest.mark.jvm

PSLE = str(Path(sys.executable).parent / "psle")
SMALL = ["--problems", "6", "--max-nodes", "40", "--k", "2", "--trials", "8"]


def test_training_problems_follow_the_settings():
    specs = training_problems(TrainingConfig(problems=50, min_nodes=5, max_nodes=200, seed=1))
    assert len(specs) == 50 and len({s.seed for s in specs}) == 50
    assert all(5 <= s.nodes <= 200 for s in specs) and len({s.network for s in specs}) > 5
    assert specs == training_problems(TrainingConfig(problems=50, min_nodes=5, max_nodes=200, seed=1))


def test_training_problems_mix_bnlearn_bases_and_random_graph_models():
    from hpc.data.generate import benchmark_problem
    from hpc.graphs.equivalence import dag_to_cpdag
    from hpc.train.problems import materialise

    specs = training_problems(TrainingConfig(problems=40, min_nodes=10, max_nodes=60, seed=3,
                                             networks=("asia", "plc", "modular")))
    assert {s.network for s in specs} == {"asia", "plc", "modular"}
    graph = next(s for s in specs if s.network == "plc")
    _, n, variables, truth = materialise(graph)
    made = benchmark_problem(graph.nodes, graph.seed, graph.samples, graph="plc")
    assert len(variables) == graph.nodes and n == graph.samples and truth == dag_to_cpdag(made.truth)
    with pytest.raises(PsleError, match="unknown network 'nope'"):
        training_problems(TrainingConfig(problems=3, networks=("plc", "nope")))


def test_training_problems_of_weaker_effects_are_the_same_problems_with_smaller_weights():
    from hpc.train.problems import materialise

    paper = TrainingConfig(problems=3, min_nodes=20, max_nodes=60, seed=2)
    weak = TrainingConfig(problems=3, min_nodes=20, max_nodes=60, seed=2, weights=(0.1, 0.3))
    assert "weights" not in paper.as_dict()  # a checkpoint from before the setting resumes
    assert weak.as_dict()["weights"] == [0.1, 0.3]
    a, b = training_problems(paper)[0], training_problems(weak)[0]
    assert (a.network, a.nodes, a.seed) == (b.network, b.nodes, b.seed) and b.weights == (0.1, 0.3)
    (cov_a, _, _, truth_a), (cov_b, _, _, truth_b) = materialise(a), materialise(b)
    assert truth_a == truth_b and np.abs(np.triu(cov_b, 1)).mean() < np.abs(np.triu(cov_a, 1)).mean()
    with pytest.raises(PsleError, match="0 < low <= high"):
        training_problems(TrainingConfig(problems=3, weights=(0.5, 0.1)))


def test_configuration_space_is_the_papers():
    cs = configuration_space(0)
    for config in cs.sample_configuration(200):
        spec = to_spec(config)
        if spec["method"] == "fges":
            assert 1 <= spec["penalty"] <= 1000 and 1 <= spec["max_parents"] <= 1000
            assert isinstance(spec["faithfulness"], bool)
        else:
            assert 0.01 <= spec["alpha"] <= 0.2 and 1 <= spec["depth"] <= 1000


def test_checkpoint_round_trip_and_refusals(tmp_path):
    path = tmp_path / "c.h5"
    ck = Checkpoint(path, {"k": 2})
    ck.put({"method": "fges", "penalty": 2.0}, 3, {"quality": 1.5, "seconds": 0.1, "status": "ok"})
    again = Checkpoint(path, {"k": 2})
    assert again.get({"penalty": 2.0, "method": "fges"}, 3)["quality"] == 1.5
    with pytest.raises(PsleError, match="other settings .*differ in: k"):
        Checkpoint(path, {"k": 3})
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = [1, 2]
    with pytest.raises(PsleError, match="not a psle train checkpoint"):
        Checkpoint(foreign, {"k": 2})
    garbage = tmp_path / "garbage.h5"
    garbage.write_bytes(b"\x00" * 100)
    with pytest.raises(PsleError, match="not an HDF5 file"):
        Checkpoint(garbage, {"k": 2})
    assert garbage.read_bytes() == b"\x00" * 100  # refused, not overwritten


def run_train(tmp: Path, name: str, kill_at: int | None = None) -> subprocess.CompletedProcess | None:
    """Train; with `kill_at`, SIGKILL the run once its checkpoint holds that many evaluations (an event,
    not a moment, so the kill lands mid-training however fast the machine is)."""
    checkpoint = tmp / f"{name}.h5"
    cmd = [PSLE, "train", *SMALL, "--workers", "2", "--checkpoint", str(checkpoint), "-o", str(tmp / f"{name}.yaml")]
    # SMAC's scratch folder lives in the temp directory; a SIGKILLed run cannot remove it, so it goes under tmp.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    if kill_at is not None:
        while proc.poll() is None and evaluations(checkpoint) < kill_at:
            time.sleep(0.05)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the trainer, its dask workers and their JVMs
            proc.wait()
            return None
    out, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.slow
def test_sigkilled_training_resumes_to_the_uninterrupted_result(tmp_path):
    reference = run_train(tmp_path, "reference")
    assert reference.returncode == 0, reference.stderr
    ref = yaml.safe_load((tmp_path / "reference.yaml").read_text())
    assert 1 <= len(ref["members"]) <= 2
    rounds = ref["training"]["rounds"]
    assert all(b["quality"] >= a["quality"] for a, b in zip(rounds, rounds[1:]))

    total = evaluations(tmp_path / "reference.h5")
    assert total >= 4, "too few evaluations to kill the run three times mid-training"
    kills = 0
    for _ in range(4):  # three kills, each once one more evaluation is in the checkpoint, then a full run
        result = run_train(tmp_path, "killed", evaluations(tmp_path / "killed.h5") + 1 if kills < 3 else None)
        if result is None:
            kills += 1
            continue
        assert result.returncode == 0, result.stderr
        break
    assert kills == 3
    resumed = yaml.safe_load((tmp_path / "killed.yaml").read_text())
    assert resumed["members"] == ref["members"]
    assert resumed["training"]["rounds"] == ref["training"]["rounds"]
    with h5py.File(tmp_path / "killed.h5") as f:
        runs, resumes = f["evaluations/runs"][()], f.attrs["resumes"]
    assert runs.max() == 1, "a finished evaluation was computed twice"
    assert "reused" in result.stderr
    assert resumes == kills and f"resumed (resume #{kills}): " in result.stderr  # each restart counted once


def test_ensemble_quality_by_objective_by_hand():
    from hpc.train.autosle import TrainConfig, ensemble_quality

    q = [np.array([1.0, 0.5, 0.9]), np.array([0.6, 1.2, 0.3])]
    bic = [np.array([-10.0, -5.0, np.nan]), np.array([-5.0, -1.0, np.nan])]  # problem 2: both runs failed
    assert ensemble_quality(q, bic, "portfolio").tolist() == [1.0, 1.2, 0.9]
    # BIC prefers member 2 on problems 0 and 1: its Q is what the SLE returns, worse on problem 0.
    assert ensemble_quality(q, bic, "bic").tolist() == [0.6, 1.2, 0.0]
    # The default objective stays out of the checkpoint's settings, so older checkpoints still resume.
    assert "objective" not in TrainConfig().settings() and TrainConfig(objective="bic").settings()["objective"] == "bic"


@pytest.mark.slow
def test_a_space_with_shared_parameter_names_keeps_them_apart(tmp_path):
    cs = configuration_space(0, ("fges", "boss", "pc-stable"))
    assert {"fges:penalty", "boss:penalty", "max_parents", "num_starts", "alpha"} <= set(cs.keys())
    specs = [to_spec(c, ("fges", "boss", "pc-stable")) for c in cs.sample_configuration(60)]
    boss = [s for s in specs if s["method"] == "boss"]
    assert boss and all(set(s) == {"method", "penalty", "num_starts", "use_bes", "start"} and 1 <= s["penalty"] <= 1000
                        for s in boss)
    with pytest.raises(PsleError, match="space: unknown method 'gies'"):
        configuration_space(0, ("fges", "gies"))
    run = subprocess.run([PSLE, "train", "--space", "boss,fges", "--problems", "2", "--max-nodes", "20", "--k", "1",
                          "--trials", "4", "--serial", "--checkpoint", str(tmp_path / "c.h5"),
                          "-o", str(tmp_path / "e.yaml")], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    with h5py.File(tmp_path / "c.h5") as f:
        assert '"space":["boss","fges"]' in f.attrs["settings"]
        assert any(k.startswith(b'{"method":"boss"') for k in f["evaluations/keys"][()])
