"""Where the compiled kernel is cached: numba's own places while one is writable, else a per-user temporary
folder, so that a read-only install with a read-only home still imports (numba would refuse the kernel); each in a
folder named by the kernel's sources, so that no version runs another's cached code."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hpc.learners.numba_cache import KERNEL_SOURCES, cache_folder, kernels_digest, writable


def test_a_folder_under_a_file_is_not_writable_and_a_fresh_one_is(tmp_path):
    (tmp_path / "file").write_text("")
    assert not writable(tmp_path / "file" / "cache")  # not even for root: a file is in the way
    assert writable(tmp_path / "fresh" / "cache") and (tmp_path / "fresh" / "cache").is_dir()


def test_the_first_writable_place_holds_a_folder_named_by_the_kernels_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "file").write_text("")
    blocked = tmp_path / "file" / "x"
    assert cache_folder(tmp_path / "tree", blocked, "d1") == str(tmp_path / "tree" / "kernels-d1")
    assert cache_folder(blocked, tmp_path / "user", "d1") == str(tmp_path / "user" / "kernels-d1")
    temporary = Path(tempfile.gettempdir()) / f"psle-numba-{os.getuid()}"
    assert cache_folder(blocked, blocked, "d1") == str(temporary / "kernels-d1")
    assert cache_folder(blocked, None, "d1") == cache_folder(blocked, blocked, "d1")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_folder(tmp_path / "tree", None, "d2") == str(tmp_path / "mine" / "kernels-d2")  # the user's choice


def test_a_changed_kernel_source_gets_another_folder(tmp_path):
    """numba checks a cached search against the moves' source only: an edit to the trees' kernel (an upgrade) must
    still compile anew, so the folder's name changes with any kernel source."""
    import hpc

    learners = Path(hpc.__file__).parent / "learners"
    for name in KERNEL_SOURCES:
        shutil.copy(learners / name, tmp_path / name)
    before = kernels_digest(tmp_path)
    assert before == kernels_digest(learners)
    for name in KERNEL_SOURCES:
        original = (tmp_path / name).read_text()
        (tmp_path / name).write_text(original + "\n")
        assert kernels_digest(tmp_path) != before, name
        (tmp_path / name).write_text(original)


def test_a_read_only_install_with_no_home_imports_the_kernel_and_caches_it_in_the_temporary_folder(tmp_path):
    """A copy of the package whose kernel folder cannot hold `__pycache__` (a file is in the way, as a read-only
    install's is for numba), HOME and XDG_CACHE_HOME under a file: the kernel still imports, and numba is pointed
    at the per-user temporary folder."""
    import hpc

    shutil.copytree(Path(hpc.__file__).parent, tmp_path / "hpc", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "hpc" / "learners" / "__pycache__").write_text("")
    (tmp_path / "file").write_text("")
    env = {**os.environ, "HOME": str(tmp_path / "file" / "home"), "XDG_CACHE_HOME": str(tmp_path / "file" / "c"),
           "PYTHONPATH": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)
    run = subprocess.run([sys.executable, "-c", "import numba, hpc.learners.trees_kernel as k; "
                          "assert k.__file__.startswith(%r); print(numba.config.CACHE_DIR)" % str(tmp_path)],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    digest = kernels_digest(tmp_path / "hpc" / "learners")
    assert run.stdout.strip() == str(Path(tempfile.gettempdir()) / f"psle-numba-{os.getuid()}" / f"kernels-{digest}")
