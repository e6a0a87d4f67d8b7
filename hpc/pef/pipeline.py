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

from hpc.data.tabular import as_learnable
from hpc.graphs.equivalence import dag_to_cpdag, pdag_to_dag
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import covariance
from hpc.learners.ensemble import MemberRun, best_run, check_members, check_wall_limit, run_member
from hpc.learners.members import OK, TIMED_OUT
from hpc.parallel import SerialExecutor
from hpc.pef.fusion import FusionConfig, fuse, screen_block
from hpc.pef.partition import PartitionConfig, partition, standardize
from hpc.progress import Progress


class WallLimitHit(Exception):
    """The whole run's wall limit passed; raised between fusion's screening blocks."""


def screener(executor, deadline: float | None = None) -> Callable:
    """Fusion's F1 screen on `executor`: the data and parent sets go to the workers once, then one task per cluster pair."""

    def screen(z, blocks, parents, n, config):
        zh, ph = executor.scatter(z), executor.scatter(parents)
        tasks = [(zh, rows, cols, ph, n, config) for rows, cols in blocks]
        for _, result in executor.run(screen_block, tasks):
            if deadline is not None and time.time() > deadline:
                raise WallLimitHit
            yield result

    return screen


def lost_status(lost: list[str]) -> str:
    """The fit's status from the runs of clusters that got no graph: any failure outranks timeouts."""
    if not lost:
        return OK
    return TIMED_OUT if all(s == TIMED_OUT for s in lost) else "failed"


class PEF:
    """Partition, estimate each cluster with the ensemble `members`, fuse; `graph_` is a CPDAG.

    `time_limit` bounds each member run (one cluster, one member); `wall_limit` bounds the whole
    fit: runs still going are cut at it, runs not yet started are skipped, fusion stops, and the
    fit ends with `status_` "timed out" and no graph, as the paper's tables count a run over 24 h.
    `status_` is also "timed out" (or "failed") when a cluster lost every member: the graph is then
    still fused, without that cluster's edges, but it is not the method's full answer.
    """

    def __init__(self, members: list[dict[str, Any]], time_limit: float | None = None,
                 partition: PartitionConfig = PartitionConfig(), fusion: FusionConfig = FusionConfig(),
                 executor=None, progress: bool = True, wall_limit: float | None = None):
        self.members = members
        self.time_limit = time_limit
        self.wall_limit = wall_limit
        self.partition = partition
        self.fusion = fusion
        self.executor = executor
        self.progress = progress

    def validate(self) -> None:
        check_members(self.members, self.time_limit, "PEF needs at least one member learner")
        check_wall_limit(self.wall_limit, "PEF")

    def fit(self, x: np.ndarray, variables: tuple[str, ...] | list[str] | None = None) -> PEF:
        self.validate()
        x, variables = as_learnable(x, variables)
        executor = self.executor or SerialExecutor()
        show = Progress(self.progress)
        n, p = x.shape
        seconds: dict[str, float] = {}
        deadline = None if self.wall_limit is None else time.time() + self.wall_limit

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
                tasks.append((spec, cov, n, names, self.time_limit, threads, deadline))
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
        expired = deadline is not None and time.time() > deadline  # then one note, not a warning per run
        directed = []
        winners: list[int | None] = []
        for c, idx in enumerate(clusters):
            k = best_run(runs[c])
            winners.append(k)
            for r in runs[c]:
                if r.status != OK and not expired:
                    warnings.warn(f"cluster {c}: member {r.spec} {r.status}"
                                  f"{': ' + r.error if r.error else ''}; skipped", stacklevel=2)
            if k is None:
                if not expired:
                    warnings.warn(f"cluster {c} ({len(idx)} variables): every member failed; it gets no edges",
                                  stacklevel=2)
                continue
            local = PDAG(tuple(str(i) for i in range(len(idx))),
                         runs[c][k].directed, runs[c][k].undirected)
            directed.append(idx[pdag_to_dag(local, strict=False).directed])
        union = PDAG(variables, np.concatenate(directed) if directed else np.empty((0, 2), dtype=np.int64))
        seconds["estimation"] = time.perf_counter() - start
        self.clusters_, self.cluster_runs_, self.winners_ = clusters, runs, winners
        self.status_ = lost_status([r.status for c, w in enumerate(winners) if w is None for r in runs[c]])
        self.dag_ = self.graph_ = self.fusion_stats_ = None

        start = time.perf_counter()
        if not expired:
            try:
                z = standardize(x, np.float64)
                dag, stats = fuse(z, n, union, clusters, self.fusion, screen=screener(executor, deadline),
                                  progress=show)
                self.dag_, self.graph_, self.fusion_stats_ = dag, dag_to_cpdag(dag), stats
            except WallLimitHit:
                expired = True
        if expired:
            self.status_ = TIMED_OUT
            show.note(f"wall limit of {self.wall_limit:g} s reached: no graph")
        seconds["fusion"] = time.perf_counter() - start
        self.seconds_ = {**seconds, "total": sum(seconds.values())}
        return self

    def result_meta(self) -> dict[str, Any]:
        return {
            "members": self.members,
            "clusters": [{"size": int(len(idx)), "winner": w,
                          "runs": [r.summary() for r in runs]}
                         for idx, w, runs in zip(self.clusters_, self.winners_, self.cluster_runs_)],
            "fusion": None if self.fusion_stats_ is None else self.fusion_stats_.as_dict(),
            "seconds": {k: round(v, 3) for k, v in self.seconds_.items()},
        }
