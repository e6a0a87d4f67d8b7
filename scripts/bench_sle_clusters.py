"""Ensembles compared where they act: on every cluster PEF makes of the test problems, each member run once.

    python scripts/bench_sle_clusters.py -o test-records.h5 --sle trained.yaml learned default random \
        --problems alarm asia er hub --nodes 1000 --seeds 0-2 [--time-limit 300] [--workers 2]
    python scripts/bench_sle_clusters.py -o trained-records.h5 --records test-records.h5 --sle trained.yaml \
        learned default random --problems alarm asia er hub --nodes 1000 --seeds 0-2

Every distinct member of the ensembles named (and of the shipped truth selector's portfolio) runs on
every cluster of every problem (shuffled columns, PEF's default partition), scored against the truth
restricted to the cluster, into one records file (hpc.select.records: resumable, rerun the same command).
Members the `--records` files (finished runs of this script on some of these problems, e.g. one seed each)
ran on every problem named are read from them instead, so an ensemble trained later is compared without
re-running the others, and runs of one seed at a time make one table.
Then, per problem family and ensemble, the size-weighted Q (F1-adjacency + F1-arrowhead) of:
- `rule`: the paper's rule, every member run and the best BIC kept;
- `oracle`: the best member per cluster, the paper's Q(A, D) that Auto-SLE maximises;
- and the shipped truth selector's pick from its portfolio (its first choice, the next where it fails),
with the member seconds each way costs. The restricted truth ignores what lies outside a cluster: the
figures rank ensembles; PEF's whole graphs (scripts/bench_pef.py --methods sle:PATH) confirm a ranking.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from benchlib import seeds_arg

from hpc.data.generate import GRAPH_MODELS, WEIGHTS
from hpc.executors import make_executor
from hpc.learners.ensemble import load_sle
from hpc.progress import Progress
from hpc.select.examples import Example, examples_from_rows
from hpc.select.records import RecordStore, join_records, read_records
from hpc.select.selector import load_selector
from hpc.store import canonical
from hpc.train.evaluate import play, weighted_q
from hpc.train.records import RecordProblem, run_clusters

EDGES_PER_NODE = 2  # the generator's default, as scripts/bench_pef.py's test problems have


def test_problems(names: list[str], nodes: int, seeds: list[int]) -> list[RecordProblem]:
    return [RecordProblem(name if name in GRAPH_MODELS else "bnlearn", None if name in GRAPH_MODELS else name, nodes,
                          EDGES_PER_NODE, seed) for name in names for seed in seeds]


def previous_records(path: Path, settings: dict) -> dict:
    """A `--records` file: finished, made under these settings, on some of these problems (another seed's
    run, say); refused otherwise."""
    doc = read_records(path)
    theirs = {k: doc["settings"].get(k) for k in settings if k != "problems"}
    ours = {k: v for k, v in settings.items() if k != "problems"}
    problems = doc["settings"].get("problems", [])
    if theirs != ours or not set(problems) <= set(settings["problems"]) or set(doc["done_problems"]) != set(problems):
        raise SystemExit(f"{path}: records of other problems or settings than these, or not finished "
                         "(rerun it with its own arguments)")
    return doc


def group(example: Example) -> str:
    """The column a cluster counts in: its random graph model, or the bnlearn network it replicates."""
    return example.family if example.family != "bnlearn" else json.loads(example.group)["network"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", type=Path, required=True, help="records file (resumed if it exists)")
    ap.add_argument("--sle", nargs="+", required=True, help="ensembles: names (learned, default, ...) or .yaml paths")
    ap.add_argument("--problems", nargs="+", required=True, help="bnlearn networks and random graph models")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("0-2"))
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per member run")
    ap.add_argument("--selector", default="truth", help="the selector whose portfolio is scored beside")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--records", nargs="*", type=Path, default=[],
                    help="finished records files of (some of) these problems: members they ran on all of "
                         "them are not run again")
    args = ap.parse_args()

    ensembles = {name: members for name, members in (load_sle(s) for s in args.sle)}
    selector = load_selector(args.selector)
    union: list[dict] = []
    for spec in [m for ms in ensembles.values() for m in ms] + selector.portfolio:
        if canonical(spec) not in map(canonical, union):
            union.append(spec)
    problems = test_problems(args.problems, args.nodes, args.seeds)
    settings = {"kind": "ensembles on test clusters", "problems": [p.key for p in problems],
                "samples": args.samples, "time_limit": args.time_limit}
    earlier = [(str(path), previous_records(path, settings)) for path in args.records]
    held: dict[str, set[str]] = defaultdict(set)  # member -> the problems an earlier file ran it on
    for _, doc in earlier:
        for spec in doc["settings"]["portfolio"]:
            held[canonical(spec)] |= set(doc["done_problems"])
    to_run = [spec for spec in union if not held[canonical(spec)] >= set(settings["problems"])]
    store = RecordStore(args.output, {**settings, "portfolio": to_run})
    todo = [p for p in problems if p.key not in store.done_problems]
    with make_executor("local", None, args.workers) as executor:
        run_clusters(todo, to_run, store, args.time_limit, args.samples, WEIGHTS, executor, Progress())

    joined, rows = join_records(earlier + [(str(args.output), {"settings": store.settings,
                                                                "rows": list(store.rows.values())})])
    where = {canonical(s): k for k, s in enumerate(joined)}
    examples = examples_from_rows(rows, [where[canonical(s)] for s in union])
    index = {canonical(s): k for k, s in enumerate(union)}  # the examples' member order
    by_group: dict[str, list[Example]] = defaultdict(list)
    for e in examples:
        by_group[group(e)].append(e)
    print(f"\n{len(examples)} clusters of {len(problems)} problems, {len(union)} distinct members -> {args.output}\n")
    print("| ensemble | way | " + " | ".join(f"{g} ({len(es)})" for g, es in sorted(by_group.items()))
          + " | all | member s |\n|---|---|" + "---|" * (len(by_group) + 2))
    rows = []
    for name, members in ensembles.items():
        ids = [index[canonical(m)] for m in members]
        rows.append((name, "rule", lambda e, ids=ids: play(e, ids, top_k=len(ids))))
        rows.append((name, "oracle", lambda e, ids=ids: (max(ids, key=lambda k: (e.quality[k], -k)),
                                                         float(e.seconds[ids].sum()))))
    picks = [index[canonical(m)] for m in selector.portfolio]
    orders = {id(e): [picks[k] for k in o] for e, o in zip(examples, selector.orders(np.stack([e.features for e in examples])))}
    rows.append((f"{args.selector} selector", "first pick", lambda e: play(e, orders[id(e)], top_k=1)))
    totals = []
    for name, way, policy in rows:
        cells, seconds = [], 0.0
        for _, es in sorted(by_group.items()):
            played = [policy(e) for e in es]
            cells.append(f"{weighted_q(es, [k for k, _ in played]):.3f}")
            seconds += sum(s for _, s in played)
        everything = [policy(e)[0] for e in examples]
        totals.append((name, way, everything))
        print(f"| {name} | {way} | " + " | ".join(cells) + f" | {weighted_q(examples, everything):.3f} | "
              f"{seconds:,.0f} |")
    size = np.array([e.size for e in examples], dtype=np.float64)
    print("\nAll clusters, size-weighted F1 (0 where the pick has no graph), SHD summed where it has one:\n\n"
          "| ensemble | way | F1-adj | F1-arrow | Q | SHD | clusters with no graph |\n|---|---|---|---|---|---|---|")
    for name, way, picks in totals:
        adj = np.array([np.nan_to_num(e.f1_adjacent[k]) for e, k in zip(examples, picks)])
        arrow = np.array([np.nan_to_num(e.f1_arrowhead[k]) for e, k in zip(examples, picks)])
        shd = np.array([e.shd[k] for e, k in zip(examples, picks)])
        print(f"| {name} | {way} | {adj @ size / size.sum():.3f} | {arrow @ size / size.sum():.3f} | "
              f"{weighted_q(examples, picks):.3f} | {int(shd[shd >= 0].sum()):,} | {int((shd < 0).sum())} |")
    single = [(weighted_q(examples, [k] * len(examples)), k) for k in range(len(union))]
    best_q, best = max(single)
    print(f"\nbest single member over all clusters: {canonical(union[best])} ({best_q:.3f}); every member's Q: "
          + ", ".join(f"{q:.3f}" for q, _ in single))
    print("mean seconds per cluster by member: " + ", ".join(
        f"{np.mean([e.seconds[k] for e in examples]):.1f}" for k in range(len(union))))


if __name__ == "__main__":
    main()
