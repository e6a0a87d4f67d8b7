"""Where numba keeps the order search's compiled kernel.

numba writes a cached function's machine code beside its source (`__pycache__`) or, where that is read-only
(a site-wide install, an Apptainer image), in the user's cache folder; with neither writable it refuses the
function at import, and `import hpc` would fail on a cluster whose home is read-only. Then the kernel is cached
in a per-user folder of the temporary directory, compiled once per machine (about 15 s).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def writable(folder: Path) -> bool:
    """Whether files can be made in `folder` (made if missing), tried as numba tries it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def user_cache() -> Path | None:
    """numba's own user-wide cache folder on Linux (XDG_CACHE_HOME, else ~/.cache); None without a home."""
    base = os.environ.get("XDG_CACHE_HOME") or (os.environ.get("HOME") and os.path.join(os.environ["HOME"], ".cache"))
    return Path(base) / "numba" if base else None


def cache_folder(in_tree: Path, user: Path | None) -> str | None:
    """None where numba finds a writable place itself (`in_tree` or `user`); else a folder for NUMBA_CACHE_DIR."""
    if os.environ.get("NUMBA_CACHE_DIR") or writable(in_tree) or (user is not None and writable(user)):
        return None
    return str(Path(tempfile.gettempdir()) / f"psle-numba-{os.getuid()}")


def ensure_cache_folder() -> None:
    """Point numba at a writable cache folder before the kernel's functions are decorated, where it has none."""
    import numba

    folder = cache_folder(Path(__file__).parent / "__pycache__", user_cache())
    if folder is not None:
        numba.config.CACHE_DIR = folder  # type: ignore[attr-defined]  # numba reads it when a function is decorated
