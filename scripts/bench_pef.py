"""Accuracy, seconds and peak memory of the PEF methods (and plain learners) on benchmark problems.

Each method runs on a local dask cluster (one worker per core) kept across runs; peak memory
is the largest resident set of this process tree (client, dask workers and their JVMs),
sampled every 0.2 s. Whole-problem learners and the paper's PEF methods run under --limit (seconds per
member run; whole-problem runs stopped there are reported as "> LIMIT s"); `psle` rows run as
`psle learn` does, without it. Problems have the generator's default (shuffled) columns.

Methods: `psle` is `psle learn`'s default (per-cluster selection, repair); `psle-norepair` the same
without the repair pass; `p-sle`, `p-sle-d`, `p-sle-r`, `p-fges`, `p-pc-stable` the paper's PEF
methods; `fges`, `pc-stable` Tetrad's defaults on the whole problem; `fges-faithful` (λ 2.54, m 91,
faithfulness) and `boss` (λ 2.54, started from a faithful fGES's order) / `boss-columns` (started
from the column order) on the whole problem.

Usage:
  python scripts/bench_pef.py --network alarm --nodes 1000 --seeds 0-9 \
      --methods psle fges-faithful boss [--limit 1800] [--jsonl results.jsonl]
  python scripts/bench_pef.py --graph er --nodes 1000 --seeds 0-2 --methods psle fges-faithful
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from hpc.data.generate import benchmark_problem
from hpc.graphs.metrics import evaluate
from hpc.learners.ensemble import load_sle
from hpc.learners.members import member_from_spec
from hpc.executors import DaskExecutor, allocated_cpus
from hpc.pef.pipeline import PEF
from hpc.pef.repair import RepairConfig
from hpc.resources import PeakMemory

ENSEMBLES = {"p-sle": "learned", "p-sle-d": "default", "p-sle-r": "random"}
SINGLE = {"p-fges": {"method": "fges"}, "p-pc-stable": {"method": "pc-stable"}}
WHOLE = {"fges": {"method": "fges"}, "pc-stable": {"method": "pc-stable"},
         "fges-faithful": {"method": "fges", "penalty": 2.53767, "max_parents": 91, "faithfulness": True},
         "boss": {"method": "boss", "penalty": 2.53767},
         "boss-columns": {"method": "boss", "penalty": 2.53767, "start": "columns"}}


def run(method: str, problem, executor, limit: float | None) -> dict:
    start = time.perf_counter()
    with PeakMemory() as mem:
        if method in WHOLE:
            learner = member_from_spec(WHOLE[method], limit, allocated_cpus())  # as `psle learn` runs it
            learner.fit(problem.data, problem.variables)
            status = learner.status_
        elif method in ("psle", "psle-norepair"):
            learner = PEF(None, executor=executor, progress=False, selection="predicted",  # as psle learn: no limit
                          selector="truth", repair=RepairConfig(**({"repair_rounds": 0} if "no" in method else {})))
            learner.fit(problem.data, problem.variables)
            status = learner.status_
        else:
            members = load_sle(ENSEMBLES[method])[1] if method in ENSEMBLES else [SINGLE[method]]
            learner = PEF(members, time_limit=limit, executor=executor, progress=False)
            learner.fit(problem.data, problem.variables)
            status = "ok"
    row = {"method": method, "seconds": time.perf_counter() - start, "peak_mb": mem.peak / 2**20, "status": status}
    if status == "ok":
        row.update(evaluate(learner.graph_, problem.truth).as_dict())
    if isinstance(learner, PEF):
        row["clusters"] = [int(len(c)) for c in learner.clusters_]
        row["fusion"] = learner.fusion_stats_.as_dict()
        row["repair"] = learner.repair_
        row["winners"] = [None if w is None else learner.members[w] for w in learner.winners_]
    return row


def seeds_arg(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    family = ap.add_mutually_exclusive_group()
    family.add_argument("--network", help="bnlearn network to replicate (default alarm)")
    family.add_argument("--graph", help="random graph model instead (er, sf, ws, hub, sbm, mosaic, layer, ...)")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("0-9"))
    ap.add_argument("--methods", nargs="+", default=["p-fges", "p-pc-stable", "p-sle", "p-sle-d", "p-sle-r"])
    ap.add_argument("--limit", type=float, default=None, help="seconds per member run")
    ap.add_argument("--jsonl", type=Path, default=None, help="append one JSON line per run here")
    args = ap.parse_args()
    kind = {"graph": args.graph} if args.graph else {"network": args.network or "alarm"}
    rows: dict[str, list[dict]] = {m: [] for m in args.methods}
    with DaskExecutor() as executor:
        for seed in args.seeds:
            problem = benchmark_problem(args.nodes, seed, 1000, **kind)
            for method in args.methods:
                row = {"network": args.graph or args.network or "alarm", "nodes": args.nodes, "p": problem.p, "seed": seed,
                       **run(method, problem, executor, args.limit)}
                rows[method].append(row)
                print(json.dumps(row), flush=True)
                if args.jsonl:
                    with open(args.jsonl, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
    print("\n| method | F1-adj | F1-arrow | SHD | seconds | peak MB | runs |\n|---|---|---|---|---|---|---|")
    for method, rs in rows.items():
        ok = [r for r in rs if r["status"] == "ok"]

        def cell(key: str, fmt: str) -> str:
            vals = [r[key] for r in ok]
            if not vals:
                return "-"
            sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
            return f"{statistics.mean(vals):{fmt}} ± {sd:{fmt}}"

        secs = cell("seconds", ".1f") if len(ok) == len(rs) else f"> {args.limit:g} ({len(rs) - len(ok)} stopped)"
        print(f"| {method} | {cell('f1_adjacent', '.3f')} | {cell('f1_arrowhead', '.3f')} | {cell('shd', '.1f')} | "
              f"{secs} | {max(r['peak_mb'] for r in rs):.0f} | {len(rs)} |")


if __name__ == "__main__":
    main()
