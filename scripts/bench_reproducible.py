"""Does `psle learn`'s graph depend on the machine? The same problem file learned four ways: on the machine
as it is, beside processes that keep every core busy, with one dask worker (`--workers 1`), and with another
CPU's BLAS kernels (OPENBLAS_CORETYPE=Prescott, whose products round differently from a modern CPU's); the
SHD of each run's CPDAG against the first run's, its accuracy and seconds.

Usage:
  python scripts/bench_reproducible.py [--problems alarm-1000 hub-1000 er-1000 layer-1000] [--seed 0]
      [--folder /tmp/bench-reproducible] [--pef polish.upto=0 ...]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

from benchlib import named_problem
from hpc.data.problem import write_problem
from hpc.graphs.io import read_json
from hpc.graphs.metrics import compare, evaluate

PSLE = str(Path(sys.executable).parent / "psle")


def spin() -> None:
    """Keeps one core busy until killed."""
    while True:
        pass


def learn(data: Path, out: Path, extra: list[str], load: bool, env: dict[str, str]) -> float:
    """`psle learn` on `data` (with `extra` arguments and `env` added to the environment), beside a busy process
    per core when `load`; seconds."""
    busy = [multiprocessing.Process(target=spin, daemon=True) for _ in range(os.cpu_count() or 1)] if load else []
    for b in busy:
        b.start()
    start = time.perf_counter()
    try:
        subprocess.run([PSLE, "learn", str(data), "-o", str(out), *extra], check=True, capture_output=True,
                       env={**os.environ, **env})
    finally:
        for b in busy:
            b.kill()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=["alarm-1000", "hub-1000", "er-1000", "layer-1000"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folder", type=Path, default=Path("/tmp/bench-reproducible"))
    ap.add_argument("--pef", nargs="*", default=[], help="PEF settings passed to every run")
    args = ap.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    settings = [a for s in args.pef for a in ("--pef", s)]
    print("| problem | run | F1-adj | F1-arrow | SHD | SHD to the first run | seconds |\n|---|---|---|---|---|---|---|")
    for name in args.problems:
        pr = named_problem(name, args.seed)
        data = args.folder / f"{name}-s{args.seed}.h5"
        if not data.exists():
            write_problem(data, pr)
        first = None
        for label, extra, load, env in (("idle", [], False, {}), ("both cores busy beside it", [], True, {}),
                                        ("--workers 1", ["--workers", "1"], False, {}),
                                        ("another CPU's BLAS", [], False, {"OPENBLAS_CORETYPE": "Prescott"})):
            out = args.folder / f"{name}-s{args.seed}-{label.split()[0].strip('-')}.json"
            seconds = learn(data, out, [*settings, *extra], load, env)
            graph, _ = read_json(out)
            first = first or graph
            m = evaluate(graph, pr.truth)
            print(f"| {name} seed {args.seed} | {label} | {m.f1_adjacent:.3f} | {m.f1_arrowhead:.3f} | {m.shd} | "
                  f"{compare(graph, first).shd} | {seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
