"""One `psle learn` spread over several SLURM worker jobs, one of them requeued mid-run, against a local run.

Starts `psle learn DATA --nodes N` (the dask scheduler in this process's child, workers as SLURM jobs),
requeues one worker job once the log shows the first member runs finished, waits for the run, then runs the
same command locally and compares the two graphs edge for edge. Prints where each step's tasks ran (from the
graph file's meta) and the lines of the log that say so.

Usage (on a machine with SLURM; the local one: bash slurm/local/start.sh):
  python scripts/bench_nodes.py --network alarm --nodes 2000 --workers 3 \
      [--pef sparse_above=0 candidates_above=0] [--worker-sbatch=--oversubscribe]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def psle(*args: str) -> list[str]:
    return [str(BIN / "psle"), *args]


def worker_jobs(before: set[str]) -> list[str]:
    """This user's running dask worker jobs not in `before`."""
    out = subprocess.run(["squeue", "-h", "-t", "R", "-n", "dask-worker", "-o", "%i"], capture_output=True,
                         text=True).stdout.split()
    return [j for j in out if j not in before]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="alarm")
    ap.add_argument("--nodes", type=int, default=2000, help="variables of the problem")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=3, help="SLURM worker jobs")
    ap.add_argument("--worker-cpus", type=int, default=1)
    ap.add_argument("--worker-sbatch", action="append", default=[])
    ap.add_argument("--pef", nargs="*", default=[], metavar="NAME=VALUE")
    ap.add_argument("--folder", type=Path, default=None, help="keep the files here (default: a temporary folder)")
    args = ap.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="psle-nodes-"))
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data.h5"
    subprocess.run(psle("generate", "--network", args.network, "--nodes", str(args.nodes), "--seed", str(args.seed),
                        "-o", str(data), "--force"), check=True, capture_output=True)
    common = [str(data), *(f"--pef={p}" for p in args.pef)]
    before = set(worker_jobs(set()))
    log = folder / "nodes.log"
    start = time.time()
    with open(log, "w") as fh:
        run = subprocess.Popen(psle("learn", *common, "-o", str(folder / "nodes.json"), "--nodes", str(args.workers),
                                    "--worker-cpus", str(args.worker_cpus),
                                    *(f"--worker-sbatch={d}" for d in args.worker_sbatch)),
                               stderr=fh, stdout=fh, cwd=folder)
        requeued = None
        while run.poll() is None:
            text = log.read_text()
            if requeued is None and "estimation: member runs" in text and (jobs := worker_jobs(before)):
                requeued = jobs[0]
                subprocess.run(["scontrol", "requeue", requeued], check=True)
                print(f"requeued worker job {requeued} at {time.time() - start:.0f} s, after: "
                      f"{[ln for ln in text.splitlines() if 'member runs' in ln][-1].strip()}", flush=True)
            time.sleep(0.5)
    seconds = time.time() - start
    if run.returncode != 0:
        raise SystemExit(f"psle learn --nodes failed; see {log}")
    local = subprocess.run(psle("learn", *common, "-o", str(folder / "local.json")), capture_output=True, text=True)
    if local.returncode != 0:
        raise SystemExit(local.stderr)
    spread, here = (json.loads((folder / f"{name}.json").read_text()) for name in ("nodes", "local"))
    print(f"\n{args.network}-{args.nodes} seed {args.seed}, {args.workers} worker jobs, {seconds:.0f} s; "
          f"worker job requeued mid-run: {requeued or 'none (the run ended first)'}")
    print(f"same graph as the local run: {spread['edges'] == here['edges']} ({len(spread['edges'])} edges)\n")
    print("| step | tasks per SLURM job |\n|---|---|")
    for step, places in spread["meta"].get("placements", {}).items():
        print(f"| {step} | " + ", ".join(f"{p.split()[2]}: {n}" for p, n in sorted(places.items())) + " |")
    print("\nthe log says:\n" + "\n".join(ln for ln in log.read_text().splitlines() if " task" in ln and " in SLURM job" in ln))


if __name__ == "__main__":
    main()
