"""Start the JVM once per process with the options driving Tetrad from Python needs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hpc.learners.runtime import check_jar, libjvm_path

DEFAULT_HEAP = os.environ.get("PSLE_JAVA_HEAP", "2g")


def jvm_options(heap: str = DEFAULT_HEAP) -> list[str]:
    prefs = Path(tempfile.gettempdir()) / f"psle-java-prefs-{os.getuid()}"
    return [
        f"-Xmx{heap}",
        "-Xss16m",  # multithreaded OpenBLAS in numpy.linalg segfaults beside a JVM with the default stack
        f"-Djava.util.prefs.userRoot={prefs}",  # keep java.util.prefs out of the home directory
        "-Djava.util.Arrays.useLegacyMergeSort=true",  # Tetrad's CPDAG->DAG comparator breaks TimSort's contract
        "--enable-native-access=ALL-UNNAMED",
        "-Djava.awt.headless=true",
        # Tetrad iterates hash sets of objects hashed by identity; HotSpot's default identity hash is
        # random per run, which made PC-Stable's orientations differ between runs on the same data.
        # A sequential identity hash makes every search reproducible.
        "-XX:+UnlockExperimentalVMOptions",
        "-XX:hashCode=3",
        # fGES's backward phase forks large steps onto the common pool whatever its thread setting, and
        # both halves bump one unsynchronised counter that breaks ties between equal scores: the graph
        # could then follow thread timing and the core count. With no pool threads the caller runs them.
        "-Djava.util.concurrent.ForkJoinPool.common.parallelism=0",
    ]


def start_jvm(heap: str = DEFAULT_HEAP) -> None:
    """Start the JVM (idempotent); the heap cannot change once it runs."""
    import jpype
    import jpype.imports  # noqa: F401  (enables `from edu.cmu... import ...`)

    if jpype.isJVMStarted():
        return
    jpype.startJVM(*jvm_options(heap), jvmpath=str(libjvm_path()), classpath=[str(check_jar())],
                   convertStrings=False)
