"""Are bootstrap edge frequencies calibrated? `psle learn --bootstrap B` on simulated problems, then, per
frequency bin, the share of pairs adjacent in the truth (adjacency precision).

Each problem is generated with shuffled columns (the generator's default) into `--work`, and learned by
the `psle learn` a user runs (resumable: rerunning reuses every finished resample). The reliability
curve (bin -> precision, one line per problem) is written as a PNG; the table goes to stdout and one JSON
line per problem to `--jsonl`.

Usage:
  python scripts/bench_calibration.py --problems er hub alarm --nodes 1000 --seed 0 --resamples 50 \
      --work /tmp/calibration --png calibration.png
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from hpc.data.networks import network_names
from hpc.data.problem import read_problem

BINS = np.round(np.linspace(0.0, 1.0, 11), 2)


def learned(name: str, nodes: int, seed: int, resamples: int, work: Path) -> tuple[Path, Path, float]:
    """Generate the problem and run the bootstrap (both skipped when already done); (problem, graph, seconds)."""
    problem, graph = work / f"{name}-{nodes}-{seed}.h5", work / f"{name}-{nodes}-{seed}-b{resamples}.json"
    psle = str(Path(sys.executable).with_name("psle"))
    if not problem.exists():
        kind = "--network" if name in network_names() else "--graph"
        subprocess.run([psle, "generate", kind, name, "--nodes", str(nodes), "--seed", str(seed), "-o", str(problem)],
                       check=True, capture_output=True)
    start = time.perf_counter()
    if not graph.exists():
        subprocess.run([psle, "learn", str(problem), "--bootstrap", str(resamples), "-o", str(graph)], check=True)
    return problem, graph, time.perf_counter() - start


def reliability(problem: Path, graph: Path) -> dict:
    """Per frequency bin: pairs, and how many of them are adjacent in the truth; and the ≥ 0.9 summary."""
    truth = read_problem(problem).truth
    index = {v: i for i, v in enumerate(truth.variables)}
    true_keys = set(truth.skeleton_keys().tolist())
    p = truth.p
    freq, hit = [], []
    with open(graph.with_suffix(".frequencies.csv"), newline="") as f:
        for row in csv.DictReader(f):
            i, j = sorted((index[row["a"]], index[row["b"]]))
            freq.append(float(row["adjacent"]))
            hit.append(i * p + j in true_keys)
    freq_a, hit_a = np.array(freq), np.array(hit)
    which = np.clip(np.digitize(freq_a, BINS[1:-1]), 0, len(BINS) - 2)
    bins = [{"low": float(BINS[b]), "high": float(BINS[b + 1]), "pairs": int((which == b).sum()),
             "adjacent": int(hit_a[which == b].sum())} for b in range(len(BINS) - 1)]
    high = freq_a >= 0.9
    return {"bins": bins, "kept_at_0.9": int(high.sum()), "precision_at_0.9": float(hit_a[high].mean()),
            "recall_at_0.9": float(hit_a[high].sum() / len(true_keys)), "true_edges": len(true_keys)}


def plot(path: Path, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4.5))
    ax.plot([0, 1], [0, 1], color="#bbbbbb", lw=1, ls="--", label="calibrated")
    for row in rows:
        mids = [(b["low"] + b["high"]) / 2 for b in row["bins"] if b["pairs"]]
        precision = [b["adjacent"] / b["pairs"] for b in row["bins"] if b["pairs"]]
        ax.plot(mids, precision, marker="o", label=f"{row['problem']} (B = {row['resamples']})")
    ax.set_xlabel("adjacency frequency over the resamples (bin)")
    ax.set_ylabel("share of the bin's pairs adjacent in the truth")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.legend(frameon=False, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=["er", "hub", "alarm"],
                    help="graph families or bnlearn networks")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resamples", type=int, default=50)
    ap.add_argument("--work", type=Path, required=True, help="folder for the problems and the bootstrap outputs")
    ap.add_argument("--png", type=Path, required=True, help="the reliability curve")
    ap.add_argument("--jsonl", type=Path, default=None)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.problems:
        problem, graph, seconds = learned(name, args.nodes, args.seed, args.resamples, args.work)
        row = {"problem": f"{name}-{args.nodes}", "seed": args.seed, "resamples": args.resamples,
               "seconds": round(seconds, 1), **reliability(problem, graph)}
        rows.append(row)
        if args.jsonl:
            with open(args.jsonl, "a") as f:
                f.write(json.dumps(row) + "\n")
    plot(args.png, rows)
    print("| problem | " + " | ".join(f"{b['low']:.1f}–{b['high']:.1f}" for b in rows[0]["bins"])
          + " | kept at ≥ 0.9 | precision there | recall there |")
    print("|---" * (len(BINS) + 3) + "|")
    for row in rows:
        cells = [f"{b['adjacent'] / b['pairs']:.2f} ({b['pairs']})" if b["pairs"] else "–" for b in row["bins"]]
        print(f"| {row['problem']} | " + " | ".join(cells) + f" | {row['kept_at_0.9']} | "
              f"{row['precision_at_0.9']:.3f} | {row['recall_at_0.9']:.3f} |")


if __name__ == "__main__":
    main()
