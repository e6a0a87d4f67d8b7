"""Accuracy, seconds and peak memory of the PEF methods (and plain learners) on benchmark problems.

Each method runs on a local dask cluster (one worker per core) kept across runs; peak memory
is the largest resident set of this process tree (client, dask workers and their JVMs),
sampled every 0.2 s. Whole-problem learners and the paper's PEF methods run under --limit (seconds per
member run; whole-problem runs stopped there are reported as "> LIMIT s"); `psle` rows run as
`psle learn` does, without it. Problems have the generator's default (shuffled) columns.

Methods: `psle` is `psle learn`'s default (per-cluster selection, then the steps after fusion); `psle-norepair`
the same with no step after fusion (fusion's graph); `p-sle`, `p-sle-d`, `p-sle-r`, `p-fges`, `p-pc-stable` the paper's PEF
methods, `p-flop` PEF with FLOP (conf/method/p-flop.yaml); `fges`, `pc-stable` Tetrad's defaults on the whole problem;
`sle:NAME` or `sle:PATH.yaml` PEF with any ensemble, as `p-sle` (every member on every cluster, best BIC);
`fges-faithful` (λ 2.54, m 91, faithfulness), `boss` (λ 2.54, started from a faithful fGES's order) / `boss-columns`
(started from the column order) and `flop` (FLOP at its authors' λ 2, no restarts; fewer variables than rows only)
on the whole problem.

Usage:
  python scripts/bench_pef.py --network alarm --nodes 1000 --seeds 0-9 \
      --methods psle fges-faithful boss [--limit 1800] [--jsonl results.jsonl]
  python scripts/bench_pef.py --graph er --nodes 1000 --seeds 0-2 --methods psle fges-faithful
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

import yaml
from benchlib import FGES_FAITHFUL, grid, seeds_arg, summary
from hpc.cli.learn import parse_params
from hpc.learners.ensemble import load_sle
from hpc.learners.members import member_from_spec
from hpc.executors import DaskExecutor, allocated_cpus
from hpc.pef.pipeline import PEF
from hpc.pef.steps import NONE
from hpc.run import pef_configs

CONF = Path(__file__).resolve().parents[1] / "hpc" / "conf"
ENSEMBLES = {"p-sle": "learned", "p-sle-d": "default", "p-sle-r": "random"}
#: The one-learner PEF methods (the paper's and P/FLOP), with the members their experiment configs pin (P/fGES at λ 1).
SINGLE = {name: yaml.safe_load((CONF / "method" / f"{name}.yaml").read_text())["members"]
          for name in ("p-fges", "p-pc-stable", "p-flop")}
WHOLE = {"fges": {"method": "fges"}, "pc-stable": {"method": "pc-stable"},
         "fges-faithful": FGES_FAITHFUL,
         "boss": {"method": "boss", "penalty": 2.53767},
         "boss-columns": {"method": "boss", "penalty": 2.53767, "start": "columns"},
         "flop": {"method": "flop", "penalty": 2.0}}


def run(method: str, executor, limit: float | None, settings: dict, problem) -> tuple:
    """One method on one problem: (graph, status, PEF's account columns); `settings` override PEF's."""
    if method == "psle-norepair":
        settings = {**settings, **NONE}
    partition, fusion, steps = pef_configs(settings)
    if method in WHOLE:
        learner = member_from_spec(WHOLE[method], limit, allocated_cpus())  # as `psle learn` runs it
    elif method in ("psle", "psle-norepair"):
        learner = PEF(None, executor=executor, progress=False, selection="predicted",  # as psle learn: no limit
                      selector="truth", partition=partition, fusion=fusion, steps=steps)
    else:
        members = load_sle(ENSEMBLES.get(method) or method.removeprefix("sle:"))[1] \
            if method in ENSEMBLES or method.startswith("sle:") else SINGLE[method]
        learner = PEF(members, time_limit=limit, executor=executor, progress=False, partition=partition, fusion=fusion,
                      steps=steps)
    learner.fit(problem.data, problem.variables)
    extra = {}
    if isinstance(learner, PEF):
        extra = {"clusters": [int(len(c)) for c in learner.clusters_],
                 "fusion": None if learner.fusion_stats_ is None else learner.fusion_stats_.as_dict(),
                 **learner.steps_,
                 "winners": [None if w is None else learner.members_[w] for w in learner.winners_],
                 "spans": learner.spans_, "task_seconds": learner.task_seconds_}
    return learner.graph_, learner.status_, extra


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
    ap.add_argument("--pef", nargs="*", default=[], metavar="NAME=VALUE", help="PEF settings, as psle learn's --pef")
    args = ap.parse_args()
    with DaskExecutor() as executor:
        settings = parse_params(args.pef)
        methods = {m: partial(run, m, executor, args.limit, settings) for m in args.methods}
        rows = grid([args.graph or args.network or "alarm"], args.nodes, args.seeds, methods, args.jsonl)
    print("\n" + summary(rows, limit=args.limit))


if __name__ == "__main__":
    main()
