"""Records to learn member selection from: every portfolio member run on every cluster PEF makes
of generated problems with known truth, scored against the truth restricted to the cluster (the file
format is hpc.select.records).

That restricted truth ignores confounding from outside the cluster: good enough to rank members, not a
metric to report. Problems are named by (family, network, nodes, edges per node, seed) and regenerated
on demand.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from hpc.data.generate import FAMILIES, WEIGHTS, check_weights, weights_setting
from hpc.errors import PsleError
from hpc.graphs.equivalence import dag_to_cpdag
from hpc.graphs.metrics import compare
from hpc.graphs.order import canonical_order
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import covariance
from hpc.learners.ensemble import MemberRun, run_member
from hpc.select.features import FEATURE_VERSION, FEATURES, cluster_features
from hpc.select.records import RecordStore, read_records
from hpc.store import canonical
from hpc.train.problems import log_uniform_nodes, problem_seed

@dataclass(frozen=True)
class RecordsConfig:
    families: tuple[str, ...] = FAMILIES
    problems_per_family: int = 6
    min_nodes: int = 500
    max_nodes: int = 2000
    samples: int = 1000
    seed: int = 1
    networks: tuple[str, ...] = ()  # bnlearn pool; empty = default_pool()
    time_limit: float | None = 300.0
    weights: tuple[float, float] = WEIGHTS

    def settings(self, portfolio: list[dict[str, Any]]) -> dict[str, Any]:
        fields = {k: v for k, v in asdict(self).items() if k != "weights"}
        return {**fields, "families": list(self.families), "networks": list(self.networks),
                **weights_setting(self.weights), "portfolio": portfolio, "feature_version": FEATURE_VERSION}


@dataclass(frozen=True)
class RecordProblem:
    family: str
    network: str | None
    nodes: int
    edges_per_node: int
    seed: int

    @property
    def key(self) -> str:
        return canonical(asdict(self))


def default_pool() -> list[str]:
    """Library networks of at most 250 nodes, minus the paper's ten test networks (never trained on)."""
    from hpc.data.networks import PAPER_TEST_NETWORKS, bnlearn_names, load_network

    return [n for n in bnlearn_names() if n not in PAPER_TEST_NETWORKS and load_network(n).p <= 250]


def record_problems(config: RecordsConfig) -> list[RecordProblem]:
    """`problems_per_family` problems per family, sizes log-uniform in [min_nodes, max_nodes].

    Random graphs cycle through 1, 2 and 3 edges per node rather than drawing it: which member is
    best turns on density (BOSS with a high penalty wins on dense Erdos-Renyi and scale-free clusters,
    a low penalty on sparse ones), and four random draws once left a family without its middle density."""
    unknown = sorted(set(config.families) - set(FAMILIES))
    if unknown:
        raise PsleError(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                        f"choose from {', '.join(FAMILIES)}")
    if config.problems_per_family < 1:
        raise PsleError(f"problems per family must be at least 1, got {config.problems_per_family}")
    if not 50 <= config.min_nodes <= config.max_nodes:
        raise PsleError(f"need 50 <= min_nodes <= max_nodes, got {config.min_nodes} and {config.max_nodes}")
    if config.seed < 0:
        raise PsleError(f"seed must be >= 0, got {config.seed}")
    check_weights(config.weights)
    pool = list(config.networks) or default_pool()
    rng = np.random.default_rng(config.seed)
    problems = []
    for family in config.families:
        for k in range(config.problems_per_family):
            nodes = log_uniform_nodes(rng, config.min_nodes, config.max_nodes)
            network = pool[int(rng.integers(len(pool)))] if family == "bnlearn" else None
            epn = 1 if family == "hub" else 1 + k % 3
            problems.append(RecordProblem(family, network, nodes, epn, problem_seed(config.seed, len(problems))))
    return problems


@dataclass
class Cluster:
    """One cluster of one problem, ready to run members on."""

    problem: RecordProblem
    index: int
    idx: np.ndarray
    cov: np.ndarray
    n: int
    names: tuple[str, ...]
    truth: PDAG  # CPDAG of the true DAG restricted to the cluster
    features: np.ndarray = field(repr=False)


def restricted_truth(dag: PDAG, idx: np.ndarray) -> PDAG:
    """The CPDAG of the true DAG's subgraph on the variables `idx` (in that order)."""
    return dag_to_cpdag(dag.subgraph(idx))


def problem_clusters(rp: RecordProblem, samples: int, weights: tuple[float, float] = WEIGHTS) -> list[Cluster]:
    """Generate the problem and partition it exactly as PEF does: on the columns in their data-derived order
    (hpc.graphs.order), each cluster's columns in that order, so members see what they see in PEF."""
    from hpc.data.generate import benchmark_problem
    from hpc.pef.partition import PartitionConfig, partition

    problem = benchmark_problem(rp.nodes, rp.seed, samples, network=rp.network,
                                graph=None if rp.family == "bnlearn" else rp.family, edges_per_node=rp.edges_per_node,
                                weights=weights)
    order = canonical_order(problem.data)
    out = []
    for c, local in enumerate(partition(np.ascontiguousarray(problem.data[:, order]), PartitionConfig())):
        if len(local) < 2:
            continue
        idx = order[local]
        cov = covariance(problem.data[:, idx])
        names = tuple(str(i) for i in range(len(idx)))
        truth = restricted_truth(problem.truth, idx)
        out.append(Cluster(rp, c, idx, cov, problem.n, names, PDAG(names, truth.directed, truth.undirected),
                           cluster_features(cov, problem.n)))
    return out


def score(run: MemberRun, cluster: Cluster) -> dict[str, Any]:
    """One record's outcome: the run's status, seconds and BIC, and its accuracy (NaN when it has no graph)."""
    row = {"status": run.status, "seconds": float(run.seconds), "bic": np.nan if run.bic is None else float(run.bic),
           "f1_adjacent": np.nan, "f1_arrowhead": np.nan, "shd": -1}
    if run.status == "ok":
        m = compare(PDAG(cluster.names, run.directed, run.undirected), cluster.truth)
        row |= {"f1_adjacent": m.f1_adjacent, "f1_arrowhead": m.f1_arrowhead, "shd": m.shd}
    return row


def upgrade_records(source: str | os.PathLike, path: str | os.PathLike, progress=None) -> tuple[RecordStore, int]:
    """Records of an older feature set, with this version's features and no member rerun.

    Each problem is regenerated and partitioned again; a cluster keeps its member runs only where
    the features both versions compute agree with one of the regenerated clusters' (the same data),
    so a generator change since the records were made drops its clusters instead of pairing old
    runs with new data. Written once, at the end. Returns the store and the number of clusters dropped.
    """
    if Path(path).exists():  # RecordStore would resume it: old runs would mix with the upgraded ones
        raise PsleError(f"{path} exists; --upgrade writes a new records file")
    doc = read_records(source, any_features=True)
    settings = {**{k: v for k, v in doc["settings"].items() if k != "shard"}, "feature_version": FEATURE_VERSION}
    store = RecordStore(path, settings, doc["settings"].get("shard", "0/1"))
    shared = [(doc["features"].index(f), FEATURES.index(f)) for f in doc["features"] if f in FEATURES]
    by_problem: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for r in doc["rows"]:
        problem, c, _ = r["key"].rsplit("#", 2)
        by_problem.setdefault(problem, {}).setdefault(int(c), []).append(r)
    dropped = 0
    for i, (key, clusters) in enumerate(sorted(by_problem.items())):
        fresh = problem_clusters(RecordProblem(**json.loads(key)), settings["samples"],
                                 tuple(settings.get("weights", WEIGHTS)))
        for rows in clusters.values():
            old = np.array([rows[0]["features"][a] for a, _ in shared])
            c = next((c for c in fresh if np.allclose(old, [c.features[b] for _, b in shared], rtol=1e-6, atol=1e-9)),
                     None)  # the same data, wherever the partition now lists it
            if c is None:
                dropped += 1
                continue
            for r in rows:  # keyed by where today's partition lists it, as a fresh run of it would be
                moved = store.key(key, c.index, int(r["key"].rsplit("#", 1)[1]))
                store.rows[moved] = {**r, "key": moved, "features": c.features}
        if key in doc["done_problems"]:
            store.done_problems.add(key)
        if progress:
            progress("records: problems regenerated", i + 1, len(by_problem))
    store.save()
    return store, dropped


def rerun_records(source: str | os.PathLike, path: str | os.PathLike, families: tuple[str, ...], executor,
                  progress=None, methods: tuple[str, ...] = (), min_size: int = 0) -> RecordStore:
    """Records of `source` with the member runs on the problems of `families` made again, on the problems as
    this psle generates them and with its learners (say, after the generator began to shuffle the columns, or a
    learner changed on large clusters): every run, or only those of members whose method is in `methods` on
    clusters of at least `min_size` variables. The other rows are copied. The problems and portfolio are
    `source`'s. Resumes from `path`."""
    doc = read_records(source)
    portfolio = doc["settings"]["portfolio"]
    settings = {**{k: v for k, v in doc["settings"].items() if k != "shard"}, "rerun": sorted(families)}
    if methods:
        settings["rerun_methods"] = sorted(methods)
    if min_size:
        settings["rerun_min_size"] = min_size
    if unknown := sorted(set(methods) - {m["method"] for m in portfolio}):
        raise PsleError(f"{source}: no member of its portfolio is {', '.join(unknown)}")
    fresh = not Path(path).exists()
    store = RecordStore(path, settings, doc["settings"].get("shard", "0/1"))

    def stale(row: dict[str, Any]) -> bool:
        problem, _, member = row["key"].rsplit("#", 2)
        return json.loads(problem)["family"] in families and row["size"] >= min_size and \
            (not methods or portfolio[int(member)]["method"] in methods)

    problems = {r["key"].rsplit("#", 2)[0] for r in doc["rows"] if stale(r)}
    if not (methods or min_size):  # every run again: a problem without rows (no cluster of two variables) too
        problems |= {p for p in doc["done_problems"] if json.loads(p)["family"] in families}
    again = sorted(problems)
    if not again:
        raise PsleError(f"{source}: no runs of {', '.join(families)} to make again")
    if fresh:
        store.rows = {r["key"]: r for r in doc["rows"] if not stale(r)}
        store.done_problems = set(doc["done_problems"]) - set(again)
        store.save()
    todo = [RecordProblem(**json.loads(p)) for p in again if p not in store.done_problems]
    run_clusters(todo, portfolio, store, settings.get("time_limit"), settings["samples"],
                 tuple(settings.get("weights", WEIGHTS)), executor, progress)
    return store


def parse_shard(text: str) -> tuple[int, int]:
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        raise PsleError(f"--shard {text!r}: expected K/N with 0 <= K < N (e.g. $SLURM_ARRAY_TASK_ID/8)")
    return int(k), int(n)


def build_records(config: RecordsConfig, portfolio: list[dict[str, Any]], path: str | os.PathLike, executor,
                  shard: str = "0/1", progress=None) -> RecordStore:
    """Run every portfolio member on every cluster of this shard's problems; resumes from `path`."""
    k, n_shards = parse_shard(shard)
    store = RecordStore(path, config.settings(portfolio), shard)
    problems = [p for i, p in enumerate(record_problems(config)) if i % n_shards == k]
    todo = [p for p in problems if p.key not in store.done_problems]
    run_clusters(todo, portfolio, store, config.time_limit, config.samples, config.weights, executor, progress)
    return store


def run_clusters(todo: list[RecordProblem], portfolio: list[dict[str, Any]], store: RecordStore,
                 time_limit: float | None, samples: int, weights: tuple[float, float], executor, progress) -> None:
    """Every member not yet in `store` on every cluster of the problems `todo`; each problem is marked done
    when its last run is in."""
    clusters: list[Cluster] = []
    for i, rp in enumerate(todo):
        clusters += problem_clusters(rp, samples, weights)
        if progress:
            progress("records: problems generated and partitioned", i + 1, len(todo))
    tasks, where = [], []
    for c in sorted(clusters, key=lambda c: -len(c.idx)):  # largest first, as PEF does
        cov = executor.scatter(c.cov, broadcast=False)
        for m, spec in enumerate(portfolio):
            if store.key(c.problem.key, c.index, m) not in store.rows:
                tasks.append([spec, cov, c.n, c.names, time_limit])
                where.append((c, m))
    threads = executor.task_threads(len(tasks))
    left = {rp.key: sum(1 for c, _ in where if c.problem.key == rp.key) for rp in todo}
    for rp in todo:
        if left[rp.key] == 0:
            store.finish_problem(rp.key)
    for done, (t, run) in enumerate(executor.run(run_member, [(*a, threads) for a in tasks]), 1):
        c, m = where[t]
        store.put(store.key(c.problem.key, c.index, m), {"size": len(c.idx), "features": c.features, **score(run, c)})
        left[c.problem.key] -= 1
        if left[c.problem.key] == 0:
            store.finish_problem(c.problem.key)
        if progress:
            progress("records: member runs", done, len(tasks))
