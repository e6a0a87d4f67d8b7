"""Check a refit selector end to end without rerunning every test problem.

A selector's run is deterministic given its first choice per cluster (the fallbacks matter only after a
timeout), and every row's graph `meta` holds each cluster's features and what ran. So:

    python scripts/bench_refit.py changed NEW.json DIR... [--commands]
        lists the rows (p-sle-truth, any selector) where NEW would run another member first: rerun those
        (--commands: one psle-experiment line per dataset instead, to run under a fresh PSLE_RESULTS);
    python scripts/bench_refit.py compare NEW.json RERUN_DIR DIR...
        prints each rerun minus the row it replaces (the first DIR holding that dataset and seed), and NEW
        against each dataset's best single member (p-fges-sparse, p-boss-sparse, p-boss-sle; any row under
        bench/selection-results), taking for NEW the rerun or else a row whose choices it repeats exactly;
    python scripts/bench_refit.py replay NEW.json DIR... [--pool DIR ...]
        predicts, before any rerun, what NEW changes: for each cluster whose first choice changes, the
        within-cluster Q (F1-adjacency + F1-arrowhead against the true subgraph) of the member run now and of
        the member NEW would run, both read from committed graphs of that problem (any row under
        bench/selection-results or --pool where that member's output became that cluster's subgraph; all of
        them made with PEF's default settings).
        Fusion and fallbacks are left out, so it screens candidates; reruns confirm the one to ship.
    python scripts/bench_refit.py problems NEW.json --problems alarm-1000 er-1000 --seeds 0-2 [--against truth]
        for generated problems (shuffled columns) and no member run: PEF's clusters, and those where NEW's
        first choice differs from the shipped selector's. Where none differs, a run with NEW is the same run
        (the runaway guard's limits aside, which matter only when a run is cut).

Rows of a run where a member was demoted after a timeout (`run_last`) count as not repeatable.

The rows it reads (bench/selection-results) are learned graphs that no shipped artefact needs, so they
left the working tree; `git checkout 16711c2 -- bench/selection-results` brings them back. They were made
with replicas in the generator's column order and BOSS started from the column order.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchlib import named_problem, seeds_arg
from hpc.executors import SerialExecutor
from hpc.graphs.order import canonical_columns
from hpc.learners.bic import covariance
from hpc.pef.fusion import FusionConfig
from hpc.pef.neighbours import nearest
from hpc.pef.partition import PartitionConfig, partition, standardize
from hpc.select.features import FEATURES, cluster_features
from hpc.select.selector import Selector, load_selector

SINGLES = ("p-fges-sparse", "p-boss-sparse", "p-boss-sle")


def rows(dirs: list[str], methods: tuple[str, ...]) -> dict[tuple[str, str, int], tuple[dict, Path]]:
    """Finished rows by (dataset, method, seed); the first directory given wins."""
    out: dict[tuple[str, str, int], tuple[dict, Path]] = {}
    for d in dirs:
        for path in sorted(Path(d).rglob("seed*.json")):
            if path.name.count(".") != 1 or ".hydra" in path.parts:
                continue
            row = json.loads(path.read_text())
            if row["method"] in methods and row.get("status") == "ok":
                out.setdefault((path.parent.name, row["method"], row["seed"]), (row, path))
    return out


def differing(selector: Selector, row_path: Path) -> list[tuple[int, int, int]] | None:
    """(size, member run first, member `selector` would run first) per cluster where they differ;
    None for a run whose choices cannot be replayed (a member demoted after a timeout)."""
    meta = json.loads(row_path.with_suffix(".graph.json").read_text())["meta"]
    if meta.get("selection") != "predicted" or meta.get("run_last"):
        return None
    chosen = [c for c in meta["clusters"] if "selection" in c]
    x = np.array([[c["selection"]["features"][f] for f in FEATURES] for c in chosen])
    orders = selector.orders(x)
    return [(c["size"], c["selection"]["ran"][0], o[0]) for c, o in zip(chosen, orders)
            if c["selection"]["ran"][0] != o[0]]


def rerun_command(row: dict, selector_path: str, seeds: list[int]) -> str:
    """The psle-experiment line that reruns `row`'s dataset at `seeds` with the selector at `selector_path`."""
    # The row's `dataset` holds every setting that is not part of the experiment's own name and size.
    dataset = ([f"dataset.network={row['network']}"] if row["experiment"] == "paper_table_1000"
               else [f"dataset={row['network']}", f"dataset.nodes={row['nodes']}"])
    for key, value in row["dataset"].items():
        dataset.append(f"'dataset.{key}=[{','.join(map(str, value))}]'" if isinstance(value, list)
                       else f"dataset.{key}={value}")
    return " ".join(["psle-experiment -m progress=false", f"experiment={row['experiment']}", "method=p-sle-truth",
                     f"method.selector={Path(selector_path).resolve()}", *dataset,
                     f"seed={','.join(map(str, seeds))}", "executor.workers=1"])


def changed(selector: Selector, selector_path: str, dirs: list[str], commands: bool) -> None:
    todo: dict[str, tuple[dict, list[int]]] = {}
    for (dataset, _, seed), (row, path) in sorted(rows(dirs, ("p-sle-truth",)).items()):
        diff = differing(selector, path)
        if diff is None or diff:
            todo.setdefault(dataset, (row, []))[1].append(seed)
            if not commands:
                print(f"{dataset} seed {seed} ({row.get('selector', '?')[:7]}): "
                      + ("run_last, rerun" if diff is None else f"{len(diff)} clusters (size, ran, new): {diff}"))
    if commands:
        for row, seeds in todo.values():
            print(rerun_command(row, selector_path, seeds))


def _se(x: np.ndarray) -> float:
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def _cell(rs: list[dict]) -> str:
    return (f"{np.mean([r['f1_adjacent'] for r in rs]):.3f} / {np.mean([r['f1_arrowhead'] for r in rs]):.3f} / "
            f"{np.mean([r['shd'] for r in rs]):,.0f}")


def compare(selector: Selector, rerun_dir: str, dirs: list[str]) -> None:
    reran = {(d, s): r for (d, _, s), (r, _) in rows([rerun_dir], ("p-sle-truth",)).items()}
    older = {(d, s): found for (d, _, s), found in rows(dirs, ("p-sle-truth",)).items()}
    print("| dataset | seeds rerun | replaced | F1-adj | F1-arrow | SHD |\n|---|---|---|---|---|---|")
    by: dict[str, list[tuple[int, dict, dict]]] = defaultdict(list)
    for (d, s), r in sorted(reran.items()):
        if (d, s) in older:
            by[d].append((s, r, older[(d, s)][0]))
    for d, xs in by.items():
        diff = {k: np.array([a[k] - b[k] for _, a, b in xs], dtype=float) for k in ("f1_adjacent", "f1_arrowhead", "shd")}
        print(f"| {d} | {', '.join(str(s) for s, _, _ in xs)} | {', '.join(sorted({b['selector'][:7] for _, _, b in xs}))} | "
              f"{diff['f1_adjacent'].mean():+.3f} ± {_se(diff['f1_adjacent']):.3f} | {diff['f1_arrowhead'].mean():+.3f} | "
              f"{diff['shd'].mean():+.0f} ± {_se(diff['shd']):.0f} |")

    chosen: dict[str, dict[int, dict]] = defaultdict(dict)
    missing: dict[str, list[int]] = defaultdict(list)
    for d, s in sorted(set(reran) | set(older)):
        if (d, s) in reran:
            chosen[d][s] = reran[(d, s)]
        elif differing(selector, older[(d, s)][1]) == []:
            chosen[d][s] = older[(d, s)][0]
        else:
            missing[d].append(s)
    singles = rows(["bench/selection-results"], SINGLES)
    print("\n| dataset | seeds | refit | best single member | it minus the refit, F1-adj / SHD | not rerun |")
    print("|---|---|---|---|---|---|")
    for d, by_seed in sorted(chosen.items()):
        seeds = sorted(by_seed)
        best = max(([singles[(d, m, s)][0] for s in seeds] for m in SINGLES if all((d, m, s) in singles for s in seeds)),
                   key=lambda rs: np.mean([r["f1_adjacent"] for r in rs]), default=None)
        versus = ""
        if best:
            fa = np.array([b["f1_adjacent"] - by_seed[s]["f1_adjacent"] for b, s in zip(best, seeds)])
            shd = np.array([b["shd"] - by_seed[s]["shd"] for b, s in zip(best, seeds)], dtype=float)
            versus = f"{best[0]['method']}: {fa.mean():+.3f} ± {_se(fa):.3f} / {shd.mean():+.0f} ± {_se(shd):.0f}"
        print(f"| {d} | {len(seeds)} | {_cell([by_seed[s] for s in seeds])} | {_cell(best) if best else ''} | {versus} | "
              f"{', '.join(map(str, missing[d]))} |")


def cluster_outputs(pool: list[str]) -> dict[tuple[str, int], list[tuple[Path, dict[int, str]]]]:
    """(dataset, seed) -> graphs of that problem, each with the member whose output became each cluster's
    subgraph, by cluster size (sizes shared by two clusters of one problem are left out)."""
    out: dict[tuple[str, int], list] = defaultdict(list)
    for d in pool:
        for path in sorted(Path(d).rglob("seed*.graph.json")):
            if ".hydra" in path.parts:
                continue
            meta = json.loads(path.read_text())["meta"]
            sizes = [c["size"] for c in meta.get("clusters", [])]
            members = {c["size"]: json.dumps(c["runs"][c["winner"]]["member"], sort_keys=True)
                       for c in meta.get("clusters", []) if c.get("winner") is not None and sizes.count(c["size"]) == 1}
            out[(path.parent.name, int(path.name[4:].split(".")[0]))].append((path, members))
    return out


def replay(selector: Selector, dirs: list[str], pool: list[str]) -> None:
    from bench_cluster_scores import cluster_q, problem_of
    from hpc.graphs.io import read_json
    from hpc.pef.partition import partition

    graphs = cluster_outputs(["bench/selection-results", *pool])
    label = [json.dumps(m, sort_keys=True) for m in selector.portfolio]
    by: dict[str, list[tuple[int, float, int, int]]] = defaultdict(list)
    demoted = []
    for (dataset, _, seed), (row, path) in sorted(rows(dirs, ("p-sle-truth",)).items()):
        diff = differing(selector, path)
        if diff is None:
            demoted.append(f"{dataset} seed {seed}")
        if not diff:
            continue
        problem = problem_of(row)
        clusters = {len(c): c for c in partition(np.asarray(problem.data))}
        truth, cache = problem.truth, {}

        def q(graph_path: Path, size: int) -> float:
            if graph_path not in cache:
                cache[graph_path] = read_json(graph_path)[0].reindexed(list(problem.variables))
            return cluster_q(cache[graph_path], truth, clusters[size])

        gain, unknown = 0.0, 0
        for size, ran, new in diff:
            source = next((g for g, members in graphs[(dataset, seed)] if members.get(size) == label[new]), None)
            if source is None or size not in clusters:
                unknown += 1
                continue
            gain += size / row["p"] * (q(source, size) - q(path.with_suffix(".graph.json"), size))
        by[dataset].append((seed, gain, len(diff), unknown))
    print("| dataset | seeds changed | clusters changed | of them unknown | size-weighted Q change, mean over the "
          "seeds changed |\n|---|---|---|---|---|")
    for dataset, xs in by.items():
        print(f"| {dataset} | {', '.join(str(s) for s, *_ in xs)} | {sum(x[2] for x in xs)} | {sum(x[3] for x in xs)} | "
              f"{np.mean([x[1] for x in xs]):+.4f} |")
    if demoted:
        print(f"\nNot replayable (a member was demoted after a timeout; rerun them): {', '.join(demoted)}")


def problems(selector: Selector, against: Selector, names: list[str], seeds: list[int]) -> None:
    """A Markdown table: per problem, PEF's clusters and those where the two selectors' first choices differ."""
    config, fusion = PartitionConfig(), FusionConfig()
    print("| problem | seed | clusters | first choice differs on | their variables | choices (against -> new) |")
    print("|---|---|---|---|---|---|")
    for name in names:
        for seed in seeds:
            prob = named_problem(name, seed)
            x, _, _ = canonical_columns(prob.data, prob.variables)
            p = x.shape[1]
            k = max(config.neighbours, fusion.candidates if p > fusion.candidates_above else 0)  # as PEF
            near = nearest(standardize(x), p, k, SerialExecutor().run) if p > config.sparse_above else None
            clusters = [c for c in partition(x, config, near) if len(c) >= 2]
            features = np.stack([cluster_features(covariance(x[:, c]), x.shape[0]) for c in clusters])
            old, new = against.orders(features), selector.orders(features)
            diff = [(len(c), o[0], n[0]) for c, o, n in zip(clusters, old, new) if o[0] != n[0]]
            moves = ", ".join(f"{a}->{b} ({size})" for size, a, b in diff)
            print(f"| {name} | {seed} | {len(clusters)} | {len(diff)} | {sum(d[0] for d in diff)} | {moves} |",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("changed", help="rows whose first choices the new selector would change")
    c.add_argument("selector")
    c.add_argument("dirs", nargs="+")
    c.add_argument("--commands", action="store_true", help="print the psle-experiment lines that rerun them")
    m = sub.add_parser("compare", help="reruns against the rows they replace and the best single member")
    m.add_argument("selector")
    m.add_argument("rerun_dir")
    m.add_argument("dirs", nargs="+")
    r = sub.add_parser("replay", help="predict the changes from committed graphs, before rerunning")
    r.add_argument("selector")
    r.add_argument("dirs", nargs="+")
    r.add_argument("--pool", nargs="*", default=[], help="more result folders to read members' outputs from")
    pr = sub.add_parser("problems", help="first choices on PEF's clusters of generated problems, no member run")
    pr.add_argument("selector")
    pr.add_argument("--problems", nargs="+", required=True, help="family-nodes, e.g. alarm-1000 er-1000")
    pr.add_argument("--seeds", type=seeds_arg, default=[0])
    pr.add_argument("--against", default="truth", help="the selector to compare with (default: the shipped truth)")
    args = parser.parse_args()
    selector = load_selector(args.selector)
    if args.command == "problems":
        problems(selector, load_selector(args.against), args.problems, args.seeds)
    elif args.command == "changed":
        changed(selector, args.selector, args.dirs, args.commands)
    elif args.command == "replay":
        replay(selector, args.dirs, args.pool)
    else:
        compare(selector, args.rerun_dir, args.dirs)


if __name__ == "__main__":
    main()
