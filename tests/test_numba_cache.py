"""Where the compiled kernel is cached: numba's own places while one is writable, else a per-user temporary
folder, so that a read-only install with a read-only home still imports (numba would refuse the kernel)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hpc.learners.numba_cache import cache_folder, writable


def test_a_folder_under_a_file_is_not_writable_and_a_fresh_one_is(tmp_path):
    (tmp_path / "file").write_text("")
    assert not writable(tmp_path / "file" / "cache")  # not even for root: a file is in the way
    assert writable(tmp_path / "fresh" / "cache") and (tmp_path / "fresh" / "cache").is_dir()


def test_numbas_own_places_are_kept_while_one_is_writable(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "file").write_text("")
    blocked = tmp_path / "file" / "x"
    assert cache_folder(tmp_path / "tree", blocked) is None
    assert cache_folder(blocked, tmp_path / "user") is None
    assert cache_folder(blocked, blocked) == str(Path(tempfile.gettempdir()) / f"psle-numba-{os.getuid()}")
    assert cache_folder(blocked, None) == cache_folder(blocked, blocked)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_folder(blocked, blocked) is None  # the user's own choice stands


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
    assert run.stdout.strip() == str(Path(tempfile.gettempdir()) / f"psle-numba-{os.getuid()}")
