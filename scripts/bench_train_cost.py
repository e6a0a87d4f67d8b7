"""What an Auto-SLE training costs, read from its checkpoint (BENCHMARKS.md, "Auto-SLE trained here").

    python scripts/bench_train_cost.py CHECKPOINT [--cores 2]

Prints the rounds (member, gain, Q on the training set), the trials and their seconds, core-seconds of
the evaluations (each member run on one training problem, as the workers timed it), trials per
core-hour, seconds per evaluation by problem size and method (with the share cut by the per-run time
limit), and what the paper's run (100 problems, k = 4, 12 h per round on 96 cores) buys with this code:
trials per round on 96 cores; and how long this training takes on --cores. Read-only: safe while it runs.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from hpc.data.generate import GRAPH_MODELS
from hpc.data.networks import load_network
from hpc.train.checkpoint import split_key
from hpc.train.problems import ProblemSpec, TrainingConfig, training_problems
from hpc.train.status import member_text, read_checkpoint

SIZES = [(1, 50), (51, 200), (201, 500), (501, 1200)]
PAPER = {"problems": 100, "k": 4, "hours_per_round": 12.0, "cores": 96}


def variables(spec: ProblemSpec) -> int:
    """A problem's variable count: a bnlearn replica is whole copies of its base network."""
    if spec.network in GRAPH_MODELS:
        return spec.nodes
    p = load_network(spec.network).p
    return math.ceil(spec.nodes / p) * p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("--cores", type=int, default=2, help="cores the training ran on")
    args = ap.parse_args()
    c = read_checkpoint(args.checkpoint)
    t = c.settings["training"]
    problems = training_problems(TrainingConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in t.items()}))
    sizes = [variables(s) for s in problems]
    print(f"{len(sizes)} training problems, {min(sizes)}-{max(sizes)} variables ({sum(sizes):,} in all), "
          f"bases: {', '.join(sorted({s.network for s in problems}))}")
    for r in c.rounds:
        print(f"round {r['round']}: {member_text(r['member'])}, gain {r['gain']:.4f}, Q(A, T) {r['quality']:.4f}")

    trial_s = [v["seconds"] for v in c.trials.values() if math.isfinite(v["seconds"])]
    core_s = sum(e["seconds"] for e in c.evaluations.values())
    evaluated = {split_key(k)[0] for k in c.evaluations}
    trials = len(c.trials)
    print(f"trials {trials} ({len(evaluated)} distinct members evaluated), trial wall seconds {sum(trial_s):,.0f} "
          f"(mean {np.mean(trial_s) if trial_s else float('nan'):.0f}, max {max(trial_s, default=float('nan')):.0f}), "
          f"evaluations {len(c.evaluations)}, core-seconds {core_s:,.0f} ({core_s / 3600:.2f} core-hours), "
          f"resumes {c.resumes}")
    per_member = core_s / max(len(evaluated), 1)
    print(f"trials per core-hour: {3600 / per_member:.2f} (a trial: one member on every problem, {per_member:,.0f} core-seconds)")

    table: dict[tuple[int, str], list[tuple[float, bool]]] = defaultdict(list)
    for key, e in c.evaluations.items():
        spec, problem = split_key(key)
        size = sizes[problem]
        band = next(i for i, (lo, hi) in enumerate(SIZES) if lo <= size <= hi)
        table[band, json.loads(spec)["method"]].append((e["seconds"], e["status"] != "ok"))
    methods = sorted({m for _, m in table})
    print("\n| variables | " + " | ".join(methods) + " |\n|---|" + "---|" * len(methods))
    for band, (lo, hi) in enumerate(SIZES):
        cells = []
        for m in methods:
            runs = table.get((band, m), [])
            cells.append("·" if not runs else f"{np.mean([s for s, _ in runs]):.1f} s ({len(runs)} runs"
                         + (f", {sum(cut for _, cut in runs) / len(runs):.0%} cut)" if any(c for _, c in runs) else ")"))
        print(f"| {lo}-{hi} | " + " | ".join(cells) + " |")

    per_trial_paper = per_member * PAPER["problems"] / len(sizes)  # core-seconds of one trial on 100 problems
    budget = PAPER["k"] * PAPER["hours_per_round"] * PAPER["cores"]  # core-hours
    per_round = PAPER["hours_per_round"] * 3600 * PAPER["cores"] / per_trial_paper
    planned = int(c.settings["k"]) * int(c.settings["trials"])
    print(f"\nThe paper's run ({PAPER['k']} rounds x {PAPER['hours_per_round']:.0f} h x {PAPER['cores']} cores = "
          f"{budget:,.0f} core-hours, {PAPER['problems']} problems) buys {per_round:,.0f} trials per round with this "
          f"code ({per_trial_paper:,.0f} core-seconds a trial). {args.cores} cores run "
          f"{86400 * args.cores / per_member:,.0f} trials a day of this training, so its {planned} take "
          f"{planned * per_member / args.cores / 3600:,.1f} h.")


if __name__ == "__main__":
    main()
