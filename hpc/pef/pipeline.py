"""PEF around any ensemble: P/fGES and P/PC-Stable are one-member ensembles, P/SLE a learned one.

Estimation submits one task per (cluster, member) so an ensemble's members and the clusters
all spread over the executor's workers; each cluster then keeps its best-BIC output.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from hpc.graphs.equivalence import dag_to_cpdag, pdag_to_dag
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import covariance
from hpc.data.tabular import as_learnable
from hpc.learners.ensemble import MemberRun, best_run, check_members, run_member
from hpc.parallel import SerialExecutor
from hpc.pef.fusion import FusionConfig, fuse, screen_block
from hpc.pef.partition import PartitionConfig, partition, standardize
from hpc.progress import Progress


def screener(executor) -> Callable:
    """Fusion's F1 screen on `executor`: the data and parent sets go to the workers once, then one task per cluster pair."""

    def screen(z, blocks, parents, n, config):
        zh, ph = executor.scatter(z), executor.scatter(parents)
        tasks = [(zh, rows, cols, ph, n, config) for rows, cols in blocks]
        return (result for _, result in executor.run(screen_block, tasks))

    return screen


class PEF:
    """Partition, estimate each cluster with the ensemble `members`, fuse; `graph_` is a CPDAG."""

    def __init__(self, members: list[dict[str, Any]], time_limit: float | None = None,
                 partition: PartitionConfig = PartitionConfig(), fusion: FusionConfig = FusionConfig(),
                 executor=None, progress: bool = True):
        self.members = members
        self.time_limit = time_limit
        self.partition = partition
        self.fusion = fusion
        self.executor = executor
        self.progress = progress

    def validate(self) -> None:
        check_members(self.members, self.time_limit, "PEF needs at least one member learner")

    def fit(self, x: np.ndarray, variables: tuple[str, ...] | list[str] | None = None) -> PEF:
        self.validate()
        x, variables = as_learnable(x, variables)
        executor = self.executor or SerialExecutor()
        show = Progress(self.progress)
        n, p = x.shape
        seconds: dict[str, float] = {}

        start = time.perf_counter()
        clusters = partition(x, self.partition)
        seconds["partition"] = time.perf_counter() - start
        show.note(f"partition: {len(clusters)} clusters, sizes {sorted(len(c) for c in clusters)}")

        start = time.perf_counter()
        tasks, where = [], []
        threads = executor.task_threads(len(clusters) * len(self.members))
        # Largest clusters first: a big cluster started last would run alone while the other workers idle.
        for c in sorted(range(len(clusters)), key=lambda c: -len(clusters[c])):
            idx = clusters[c]
            cov = executor.scatter(covariance(x[:, idx]), broadcast=False)  # shared by the cluster's members
            names = tuple(variables[i] for i in idx)
            for k, spec in enumerate(self.members):
                tasks.append((spec, cov, n, names, self.time_limit, threads))
                where.append((c, k))
        runs: list[list[MemberRun | None]] = [[None] * len(self.members) for _ in clusters]
        per_cluster_left = [len(self.members)] * len(clusters)
        done = 0
        for t, run in executor.run(run_member, tasks):
            c, k = where[t]
            runs[c][k] = run
            per_cluster_left[c] -= 1
            done += per_cluster_left[c] == 0
            show("estimation (clusters)", done, len(clusters))
        directed = []
        winners: list[int | None] = []
        for c, idx in enumerate(clusters):
            k = best_run(runs[c])
            winners.append(k)
            for r in runs[c]:
                if r.status != "ok":
                    warnings.warn(f"cluster {c}: member {r.spec} {r.status}"
                                  f"{': ' + r.error if r.error else ''}; skipped", stacklevel=2)
            if k is None:
                warnings.warn(f"cluster {c} ({len(idx)} variables): every member failed; it gets no edges",
                              stacklevel=2)
                continue
            local = PDAG(tuple(str(i) for i in range(len(idx))),
                         runs[c][k].directed, runs[c][k].undirected)
            directed.append(idx[pdag_to_dag(local, strict=False).directed])
        union = PDAG(variables, np.concatenate(directed) if directed else np.empty((0, 2), dtype=np.int64))
        seconds["estimation"] = time.perf_counter() - start

        start = time.perf_counter()
        z = standardize(x, np.float64)

        dag, stats = fuse(z, n, union, clusters, self.fusion, screen=screener(executor), progress=show)
        seconds["fusion"] = time.perf_counter() - start
        self.dag_ = dag
        self.graph_ = dag_to_cpdag(dag)
        self.clusters_ = clusters
        self.cluster_runs_ = runs
        self.winners_ = winners
        self.fusion_stats_ = stats
        self.seconds_ = {**seconds, "total": sum(seconds.values())}
        return self

    def result_meta(self) -> dict[str, Any]:
        return {
            "members": self.members,
            "clusters": [{"size": int(len(idx)), "winner": w,
                          "runs": [r.summary() for r in runs]}
                         for idx, w, runs in zip(self.clusters_, self.winners_, self.cluster_runs_)],
            "fusion": self.fusion_stats_.as_dict(),
            "seconds": {k: round(v, 3) for k, v in self.seconds_.items()},
        }
