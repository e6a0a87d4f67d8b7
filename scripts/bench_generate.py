"""Time and peak memory of `psle generate` at the paper's largest sizes.

Each run is a fresh `psle` process, so peak RSS is that process's own (ru_maxrss of children).
Usage: python scripts/bench_generate.py [--networks alarm asia] [--nodes 10000 20000 30000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def run_once(network: str, nodes: int, out: Path) -> tuple[float, float]:
    """(seconds, peak MB) of one generation in a child process."""
    psle = Path(sys.executable).parent / "psle"
    pid = os.fork()
    if pid == 0:  # child: exec psle so ru_maxrss is its own
        os.execv(psle, [str(psle), "generate", "--network", network, "--nodes", str(nodes), "--seed", "0",
                        "-o", str(out)])
    start = time.perf_counter()
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"psle generate {network} {nodes} failed with status {status}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+", default=["alarm", "asia"])
    ap.add_argument("--nodes", nargs="+", type=int, default=[10000, 20000, 30000])
    args = ap.parse_args()
    print("| problem | variables requested | seconds (wall) | peak RSS (MB) | file (MB) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for network in args.networks:
            for nodes in args.nodes:
                out = Path(tmp) / f"{network}-{nodes}.h5"
                seconds, peak = run_once(network, nodes, out)
                size = out.stat().st_size / 2**20
                print(f"| {network}-{nodes} | {nodes} | {seconds:.1f} | {peak:.0f} | {size:.0f} |", flush=True)


if __name__ == "__main__":
    main()
