"""A regular (non-editable) install works away from the repository: configs and selectors ship
inside the package, so `psle learn` finds the default ensemble from any directory."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_a_wheel_installed_into_a_fresh_venv_learns_with_the_shipped_selector_and_ensemble(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    wheel = next(dist.glob("auto_sle-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # Third-party dependencies come from the test environment (no downloads); the project itself does not:
    # that directory's .pth files, the editable install among them, are not processed from here.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PSLE_CONF_DIR")}
    where = subprocess.run([str(python), "-c", "import hpc; print(hpc.__file__)"], capture_output=True, text=True,
                           cwd=work, env=env, check=True).stdout
    assert where.startswith(str(site)), where
    psle = str(venv / "bin" / "psle")
    run = subprocess.run([psle, "generate", "--network", "asia", "--nodes", "60", "-o", "p.h5"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    run = subprocess.run([psle, "learn", "p.h5", "--serial", "-o", "g.json"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    # The shipped selector and portfolio are package data: the default run reads them from the wheel.
    assert "'truth' selector expects to do best there, of 8 learners" in run.stderr, run.stderr
    run = subprocess.run([psle, "learn", "p.h5", "--selection", "all", "--serial", "-o", "h.json"], cwd=work,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "p-sle (learned ensemble, 4 members)" in run.stderr, run.stderr
    experiment = subprocess.run([str(venv / "bin" / "psle-experiment"), "--cfg", "job", "method=p-boss"], cwd=work,
                                env=env, capture_output=True, text=True, timeout=300)
    assert experiment.returncode == 0 and "name: p-boss" in experiment.stdout, experiment.stderr


def test_the_environment_has_the_pinned_versions():
    """scripts/setup.sh installs with constraints.txt: the versions a graph was measured on are the ones a rerun
    gets (a newer release can move a graph by a near-tie)."""
    from importlib.metadata import PackageNotFoundError, version

    pins = [line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    assert len(pins) > 20 and all(len(pin) == 2 for pin in pins)
    wrong = []
    for name, pinned in pins:
        try:
            installed = version(name)
        except PackageNotFoundError:
            continue  # pinned for another platform or Python, not needed here
        if installed != pinned:
            wrong.append(f"{name} {installed} (pinned {pinned})")
    assert not wrong, "installed beside constraints.txt: " + ", ".join(wrong)
