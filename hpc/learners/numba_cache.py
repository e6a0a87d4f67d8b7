"""Where numba keeps the order search's compiled kernel.

numba writes a cached function's machine code beside its source (`__pycache__`) or, where that is read-only
(a site-wide install, an Apptainer image), in the user's cache folder; with neither writable it refuses the
function at import, and `import hpc` would fail on a cluster whose home is read-only. Then the kernel is cached
in a per-user folder of the temporary directory, compiled once per machine (about 15 s).

numba checks a cached function against its own source file only, not against those of the functions it calls:
after an upgrade that changed the trees' kernel but not the moves', the cached search would still run the old
trees. So the kernel is cached in a folder named by a digest of every kernel source (and of `bic`, whose
constants are compiled in), and another version of them compiles into another folder.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

#: The sources compiled into the kernel: the modules with numba functions, and bic (its constants).
KERNEL_SOURCES = ("bic.py", "ges_kernel.py", "gram_kernel.py", "moves_kernel.py", "trees_kernel.py")


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


def kernels_digest(folder: Path) -> str:
    """A digest of the kernel's sources in `folder`: it changes whenever one of them does."""
    h = hashlib.sha256()
    for name in KERNEL_SOURCES:
        h.update(name.encode() + b"\0" + (folder / name).read_bytes())
    return h.hexdigest()[:16]


def cache_folder(in_tree: Path, user: Path | None, digest: str) -> str:
    """The folder for this version of the kernel (`digest`) in the first writable of: the user's NUMBA_CACHE_DIR
    if set, else `in_tree`, else `user`; else in a per-user folder of the temporary directory."""
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    bases = [Path(chosen)] if chosen else [in_tree, *([user] if user is not None else [])]
    for base in bases:
        if writable(base / f"kernels-{digest}"):
            return str(base / f"kernels-{digest}")
    return str(Path(tempfile.gettempdir()) / f"psle-numba-{os.getuid()}" / f"kernels-{digest}")


@functools.cache
def ensure_cache_folder() -> str:
    """Point numba at this kernel version's cache folder before the kernel's functions are decorated (once: each
    kernel module asks), and name it."""
    import numba

    here = Path(__file__).parent
    folder = cache_folder(here / "__pycache__", user_cache(), kernels_digest(here))
    numba.config.CACHE_DIR = folder  # type: ignore[attr-defined]  # numba reads it when a function is decorated
    return folder
