"""The Apptainer image (Apptainer.def, scripts/build_container.sh) and its use by SLURM sweeps.

Building the image takes minutes and needs apptainer (or root on Debian), so the tests that build
and run it are opt-in: PSLE_TEST_CONTAINER=1. PSLE_CONTAINER_IMAGE=path.sif reuses a built image.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "scripts" / "build_container.sh"
BIN = Path(sys.executable).parent
opt_in = pytest.mark.skipif(os.environ.get("PSLE_TEST_CONTAINER") != "1",
                            reason="builds an Apptainer image: set PSLE_TEST_CONTAINER=1 to run")


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Path:
    if os.environ.get("PSLE_CONTAINER_IMAGE"):
        return Path(os.environ["PSLE_CONTAINER_IMAGE"]).resolve()
    out = tmp_path_factory.mktemp("image") / "psle.sif"
    out.parent.chmod(0o755)  # readable by the unprivileged user the sid-root apptainer runs as
    run = subprocess.run(["bash", str(BUILD), str(out)], capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    return out


@pytest.fixture
def work(tmp_path) -> Path:
    """A directory the container can write: the sid-root apptainer runs as an unprivileged user."""
    tmp_path.chmod(0o777)
    return tmp_path


def in_image(image: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(BUILD), "--exec", str(image), *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow
@opt_in
def test_image_has_java_and_the_jar(image, work):
    run = in_image(image, work, "psle", "doctor")
    assert run.returncode == 0, run.stderr[-3000:]
    lines = dict(line.split(None, 1) for line in run.stdout.splitlines())
    assert int(lines["java"].split(".")[0]) >= 21
    assert lines["jar"].startswith("/opt/psle/cache/") and "sha256 ok" in lines["jar"]
    assert lines["libjvm"].startswith("/opt/psle/")


@pytest.mark.slow
@opt_in
def test_learn_in_image_equals_learn_here(image, work):
    """p-fges is deterministic: the image's graph is the host's, so results do not depend on where tasks run."""
    problem = work / "asia.h5"
    subprocess.run([str(BIN / "psle"), "generate", "--network", "asia", "--nodes", "40", "--seed", "0",
                    "-o", str(problem)], check=True, capture_output=True)
    inside = in_image(image, work, "psle", "learn", str(problem), "--method", "p-fges", "--workers", "1",
                      "-o", str(work / "inside.json"))
    assert inside.returncode == 0, inside.stderr[-3000:]
    subprocess.run([str(BIN / "psle"), "learn", str(problem), "--method", "p-fges", "--workers", "1",
                    "-o", str(work / "here.json")], check=True, capture_output=True)
    a, b = (json.loads((work / f"{name}.json").read_text()) for name in ("inside", "here"))
    assert a["edges"] and sorted(a["edges"]) == sorted(b["edges"]) and a["variables"] == b["variables"]


def test_sweep_with_container_starts_tasks_with_the_image_python(tmp_path, monkeypatch):
    """executor.container=IMAGE.sif: submitit starts every SLURM task with the image's venv python."""
    import submitit

    from hydra_plugins import psle_launcher

    built: dict = {}

    class Built(Exception):
        pass

    def executor(**kwargs):
        built.update(kwargs)
        raise Built

    monkeypatch.setattr(submitit, "AutoExecutor", executor)
    monkeypatch.setattr(psle_launcher, "check_slurm_launcher", lambda params, wall_limit=None: None)
    monkeypatch.setattr(psle_launcher.CheckedSlurmLauncher, "_check_tasks", lambda self, job_overrides: None)
    image = tmp_path / "psle.sif"
    image.touch()
    launcher = psle_launcher.CheckedSlurmLauncher(submitit_folder=str(tmp_path), max_num_timeout=3)
    launcher.config = OmegaConf.create({"executor": {"container": str(image)}})
    with pytest.raises(Built):
        launcher.launch([["seed=0"]], 0)
    conf = REPO / "hpc" / "conf"
    assert built["slurm_python"] == f"apptainer exec --bind {conf}:{conf}:ro {image} /opt/psle/bin/python"
    assert built["slurm_max_num_timeout"] == 3
    assert submitit.AutoExecutor is executor  # only that launch saw the extra argument

    launcher.config = OmegaConf.create({"executor": {"container": str(tmp_path / "missing.sif")}})
    with pytest.raises(SystemExit):
        launcher.launch([["seed=0"]], 0)
