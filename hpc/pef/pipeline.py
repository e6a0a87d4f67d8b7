"""PEF around any ensemble: P/fGES and P/PC-Stable are one-member ensembles, P/SLE a learned one.

Estimation submits one task per (cluster, member) so an ensemble's members and the clusters
all spread over the executor's workers; each cluster then keeps its best-BIC output. With
`selection="predicted"` a selector (hpc.select) reads each cluster's features first and only its
`top_k` most likely members run there: the paper's future work, per-subproblem algorithm selection.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from hpc.store import canonical
from hpc.checks import check_number
from hpc.data.tabular import as_learnable, warn_few_rows
from hpc.errors import PsleError
from hpc.graphs.equivalence import dag_to_cpdag, pdag_to_dag
from hpc.graphs.order import canonical_columns, relabel
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import covariance
from hpc.graphs.knowledge import Knowledge
from hpc.learners.ensemble import MemberRun, best_run, check_knowledge, check_members, check_wall_limit, run_member
from hpc.learners.members import OK, TIMED_OUT, member_from_spec
from hpc.learners.starts import with_cheap_starts
from hpc.executors import SerialExecutor
from hpc.pef.fusion import FusionConfig, FusionStats, fuse
from hpc.pef.checkpoint import RunCheckpoint, data_hash
from hpc.pef.schedule import MemberSchedule
from hpc.pef.neighbours import Near, nearest
from hpc.pef.partition import PartitionConfig, context_variables, partition, standardize
from hpc.pef.step import Chain, Step, WallLimitHit, run_chain
from hpc.pef.steps import NAMES, default_steps
from hpc.progress import Progress
from hpc.select.features import FEATURES, cluster_features
from hpc.select.selector import TRIVIAL_SIZE, Selector, extrapolation_note, load_selector

SELECTIONS = ("all", "predicted")
#: The runaway guard never cuts a run shorter than this: it is there for searches that would go on for
#: hours, not for slow ones. On the records (held out by problem) the chosen member took at most 14 times
#: its prediction; on the yeast network BOSS runs took up to 27 times theirs (275 s), and with 300 s here
#: one of them, slowed by other work on the machine, was cut.
RUNAWAY_FLOOR = 900.0
#: A cluster's pick predicted to cost over this many times the selector's fallback member there ...
COST_GATE = 10.0
#: ... and over this many seconds is not started: the fallback runs first.
GATE_FLOOR = 60.0
#: Default runaway factor: on the records the chosen member took at most 14 times its prediction.
RUNAWAY = 20.0


def outside_member() -> dict[str, Any]:
    """The member a cluster outside the selector's training data runs (when it has fewer variables than rows):
    the first member of the SLE Auto-SLE trained here (hpc/conf/sle/trained.yaml), the best single
    configuration it found over its training problems (8-327 variables, 16 bases and models). On the four
    modular-2000 (seed 100, tuning) clusters of 211-250 variables it took 0.3-0.8 s, as accurate as BOSS
    λ 10 there (24-35 s) and more than the selector's own fallback, fGES λ 5.62 (32-89 s; BENCHMARKS.md,
    "Large modules"). FLOP needs fewer variables than rows and knows no prior knowledge."""
    from hpc.learners.ensemble import load_sle

    return dict(load_sle("trained")[1][0])


def fallback_reason(outside: list[str], size: int, order: list[int], seconds: np.ndarray | None, i: int,
                    fallback: int) -> str | None:
    """Why a cluster runs the selector's fallback member first instead of its pick (None: it does not).
    Outside the selector's training data (above TRIVIAL_SIZE variables) its pick is an extrapolation; inside
    it, a pick predicted to cost over COST_GATE times the fallback's there (and over GATE_FLOOR seconds) is
    not started. Both are decided from the cluster's features before any run, so no machine's speed
    enters the choice."""
    if order[0] == fallback:
        return None
    if outside and size > TRIVIAL_SIZE:
        return "outside the selector's training data"
    if seconds is not None:
        mine, safe = float(seconds[i][order[0]]), float(seconds[i][fallback])
        if mine > max(GATE_FLOOR, COST_GATE * safe):
            return f"its pick's predicted {mine:.0f} s is over {COST_GATE:g}x the fallback's {safe:.0f} s"
    return None


def screener(executor, deadline: float | None = None, memory: RunCheckpoint | None = None) -> Callable:
    """Fusion's F1 screen on `executor`: the data and parent sets go to the workers once, then one task per block
    (a cluster pair, or a block of variables and their candidates).

    With a checkpoint, cluster pairs screened by an earlier (killed) process under the same fusion
    settings are taken from it, and each newly screened pair is recorded there.
    """

    def screen(data, fn, blocks, parents, n, config):
        known = {} if memory is None else memory.screened_under(canonical(asdict(config)))
        yield from (known[b] for b in sorted(known))
        todo = [b for b in range(len(blocks)) if b not in known]
        handles, ph = [executor.scatter(d) for d in data], executor.scatter(parents)
        tasks = [(*handles, *blocks[b], ph, n, config) for b in todo]
        try:
            for t, result in executor.run(fn, tasks):
                if memory is not None:
                    memory.put_screened(todo[t], result)
                if deadline is not None and time.time() > deadline:
                    raise WallLimitHit
                yield result
        finally:
            if memory is not None:
                memory.flush()

    return screen


def lost_status(lost: list[str]) -> str:
    """The fit's status from the runs of clusters that got no graph: any failure outranks timeouts."""
    if not lost:
        return OK
    return TIMED_OUT if all(s == TIMED_OUT for s in lost) else "failed"


#: The steps a fit times, in order (`seconds_`; selection only with per-cluster selection).
STEPS = ("partition", "selection", "estimation", "fusion", *NAMES)


@dataclass
class FitRun:
    """What the steps of one fit share: where tasks run, progress, the deadline and the checkpoint."""

    executor: Any
    show: Progress
    n: int
    deadline: float | None
    memory: RunCheckpoint | None
    seconds: dict[str, float] = field(default_factory=dict)
    places: dict[str, dict[str, int]] = field(default_factory=dict)  # step -> tasks per place (SLURM worker jobs)
    spans: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # step -> (start, end) wall clock
    task_seconds: dict[str, float] = field(default_factory=dict)  # step -> seconds its tasks took on the workers

    def expired(self) -> bool:
        return self.deadline is not None and time.time() > self.deadline

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Adds the block's seconds to `step`'s; says where its tasks ran when the executor tells places apart."""
        start, wall = time.perf_counter(), time.time()
        try:
            yield
        finally:
            self.seconds[step] = self.seconds.get(step, 0.0) + time.perf_counter() - start
            self.spans.setdefault(step, []).append((wall, time.time()))
            self.task_seconds[step] = self.task_seconds.get(step, 0.0) + self.executor.task_seconds()
            where = self.executor.placements()
            if where:
                mine = self.places.setdefault(step, {})
                for place, count in where.items():
                    mine[place] = mine.get(place, 0) + count
                self.show.note(f"{step}: " + ", ".join(f"{count} task{'s' * (count != 1)} in {place}"
                                                       for place, count in sorted(where.items())))


class Estimation:
    """One fit's member runs: `draw` gives the next run to start, `settle` keeps each finished one (in the
    checkpoint too) and tells the schedule, which decides the fallbacks."""

    def __init__(self, pef: PEF, run: FitRun, schedule: MemberSchedule, plans: list, data: dict, sizes: list[int],
                 threads: int):
        self.pef, self.run, self.schedule, self.plans = pef, run, schedule, plans
        self.data, self.sizes, self.threads = data, sizes, threads
        self.limits: dict[tuple[int, int], float | None] = {}

    def settle(self, c: int, k: int, result: MemberRun, fresh: bool) -> None:
        run = self.run
        late = fresh and run.expired()
        # A run cut by the whole run's deadline is not this member's answer: run it again on resume.
        if run.memory is not None and fresh and not (result.status == TIMED_OUT and late):
            run.memory.put(c, k, result)
        newly = self.schedule.settle(c, k, result, timed_out=result.status == TIMED_OUT and not late,
                                     fallback=not late)
        if newly:
            run.show.note(self.pef._run_last_note(c, self.sizes[c], k, newly))
        failed = self.schedule.failed
        run.show(f"estimation: member runs {self.schedule.ran}/{self.schedule.ran + self.schedule.waiting}"
                 f"{f' ({failed} without a graph)' if failed else ''}, clusters with a graph", self.schedule.solved,
                 len(self.sizes))

    def draw(self) -> tuple[tuple[int, int], tuple] | None:
        """The next run to start; runs an earlier (killed) process finished are taken from the checkpoint."""
        memory = self.run.memory
        while (step := self.schedule.next()) is not None:
            c, k, last = step
            self.limits[c, k] = self.pef._run_limit(self.plans[c][1], k, last)
            if memory is not None and (c, k) in memory.runs:
                self.settle(c, k, memory.runs[c, k], fresh=False)
                continue
            return (c, k), (self.pef.members_[k], self.data[c][0], self.run.n, self.data[c][1], self.limits[c, k],
                            self.threads, self.run.deadline, self.pef._known())
        return None


class PEF:
    """Partition, estimate each cluster with the ensemble `members`, fuse; `graph_` is a CPDAG.

    `time_limit` bounds each member run (one cluster, one member); `wall_limit` bounds the whole
    fit: runs still going are cut at it, runs not yet started are skipped, fusion stops, and the
    fit ends with `status_` "timed out" and no graph, as the paper's tables count a run over 24 h.
    `status_` is also "timed out" (or "failed") when a cluster lost every member: the fit then stops
    before fusion, since no graph it could fuse would be the method's answer.

    `selection` "all" runs every member on every cluster (the paper); "predicted" runs the `top_k`
    members `selector` (a Selector, or a shipped name / file for load_selector) ranks highest and
    keeps the best BIC among them; where they all fail or time out, the next most probable member runs
    (until one succeeds, all have run, or the wall limit passes). `members` must then be the
    selector's portfolio (None: take it). With a selector that predicts seconds, a run that takes
    `runaway` times its prediction (and at least RUNAWAY_FLOOR seconds) is cut so the next member
    runs, unless it is the last one left: on data unlike the selector's records the prediction can be
    far off (an fGES on a yeast cluster with a 129-neighbour hub, predicted 26 s, ran for 40 minutes).
    0 turns that off. A member that times out (guard or `time_limit`) runs last from then on, in
    fallbacks and on the clusters not yet started that are at least half as large, with the members
    the selector's records saw time out with it (`run_last_`: member -> smallest cluster size it runs
    last on; see MemberSchedule): on hub-heavy data, fGES at one low penalty ran away on a cluster,
    then fGES at another on the same cluster and on the next one.
    """

    def __init__(self, members: list[dict[str, Any]] | None, time_limit: float | None = None,
                 partition: PartitionConfig = PartitionConfig(), fusion: FusionConfig = FusionConfig(),
                 executor=None, progress: bool = True, wall_limit: float | None = None, selection: str = "all",
                 selector: Selector | str | None = None, top_k: int = 1, checkpoint: str | None = None,
                 runaway: float = RUNAWAY, steps: tuple[Step, ...] | None = None, knowledge: Knowledge | None = None):
        self.members, self.time_limit, self.wall_limit = members, time_limit, wall_limit
        self.knowledge = knowledge
        self.partition, self.fusion = partition, fusion
        self.steps = default_steps() if steps is None else steps
        self.executor, self.progress, self.checkpoint = executor, progress, checkpoint
        self.selection, self.selector, self.top_k, self.runaway = selection, selector, top_k, runaway

    def validate(self) -> None:
        if self.selection not in SELECTIONS:
            raise PsleError(f"selection must be one of {', '.join(SELECTIONS)}, got {self.selection!r}")
        members = self.ensemble()
        if self.selection == "predicted":
            selector = self._selector()
            if [dict(m) for m in members] != selector.portfolio:
                raise PsleError(f"the selector was trained for portfolio '{selector.portfolio_name}' "
                                f"({len(selector.portfolio)} members), not for this ensemble of {len(members)}: "
                                "give its portfolio (--sle) or a selector trained for this ensemble")
            if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) \
                    or not 1 <= self.top_k <= len(members):
                raise PsleError(f"top_k must be a whole number in [1, {len(members)}] (the portfolio's size), "
                                f"got {self.top_k!r}")
        check_number("runaway", self.runaway, 0)
        if not (self.runaway == 0 or 1 <= self.runaway < np.inf):
            raise PsleError(f"runaway={self.runaway!r}: must be 0 (off) or a factor of at least 1")
        check_members(members, self.time_limit, "PEF needs at least one member learner")
        check_knowledge(members, self.knowledge)
        check_wall_limit(self.wall_limit, "PEF")
        self.partition.validate()
        self.fusion.validate()
        for step in self.steps:
            step.config.validate()

    def ensemble(self) -> list[dict[str, Any]]:
        """The members that run: `members`, or with per-cluster selection and no members the selector's portfolio."""
        if self.members is None and self.selection == "predicted" and self.selector is not None:
            return self._selector().portfolio
        return [] if self.members is None else list(self.members)

    def _with_outside(self, members: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int | None]:
        """The members that may run and the index of the one for clusters outside the selector's training data
        (None: they get the selector's fallback): under per-cluster selection without prior knowledge, the
        portfolio and, after it unless it is one of them, outside_member()."""
        if self.selection != "predicted" or self._known() is not None:
            return members, None
        extra = outside_member()
        if extra in members:
            return members, members.index(extra)
        return members + [extra], len(members)

    def _memory_settings(self, x: np.ndarray, variables: tuple[str, ...]) -> dict[str, Any]:
        """What a checkpoint's partition and member runs depend on (fusion settings do not)."""
        return {"data": data_hash(x, variables), "members": [dict(m) for m in self.members_],
                "time_limit": self.time_limit, "partition": self.partition.settings(), "selection": self.selection,
                "selector": self._selector().describe() if self.selection == "predicted" else None,
                "top_k": self.top_k if self.selection == "predicted" else None,
                "runaway": self.runaway if self.selection == "predicted" else None,
                **({"knowledge": known.describe()} if (known := self._known()) is not None else {})}

    def _known(self) -> Knowledge | None:
        """The prior knowledge, when there is any."""
        return None if self.knowledge is None or self.knowledge.empty else self.knowledge

    def _selector(self) -> Selector:
        if self.selector is None:
            raise PsleError("selection 'predicted' needs a selector")
        return self.selector if isinstance(self.selector, Selector) else load_selector(self.selector)

    def _plans(self, covs: list[np.ndarray], n: int) -> list[tuple[list[int], dict[str, Any] | None]]:
        """Which members run on each cluster (given its own covariance), and the selection's account
        (None when all run). The selector scores all clusters at once: one prediction per forest."""
        if self.selection == "all":
            return [(list(range(len(self.members_))), None)] * len(covs)
        # A single variable has no edge to find: any one member gives the answer.
        plans: list[tuple[list[int], dict[str, Any] | None]] = [([0], {"order": [0], "reason": "single variable"})
                                                                 for _ in covs]
        multi = [c for c, cov in enumerate(covs) if cov.shape[0] >= 2]
        if not multi:
            return plans
        features = np.stack([cluster_features(covs[c], n) for c in multi])
        selector = self._selector()
        scored, seconds, orders = selector.choose(features)
        outside = selector.outside(features)
        given: set[int] = set()  # the members the clusters outside (over TRIVIAL_SIZE) run first
        for i, (c, row, score, order) in enumerate(zip(multi, features, scored, orders)):
            account: dict[str, Any] = {"features": {k: round(float(v), 6) for k, v in zip(FEATURES, row)},
                                       "scores": [round(float(q), 4) for q in score], "order": order}
            if seconds is not None:
                account["predicted_seconds"] = [round(float(t), 2) for t in seconds[i]]
            if outside[i]:
                account["outside_training"] = outside[i]
            size = covs[c].shape[0]
            if why := fallback_reason(outside[i], size, order, seconds, i, selector.fallback):
                # FLOP, the outside member, needs fewer variables than rows
                first = self.outside_ if outside[i] and self.outside_ is not None and size < n else selector.fallback
                order = [first] + [k for k in order if k != first]
                account.update(order=order, fallback=why)
            if outside[i] and size > TRIVIAL_SIZE:
                given.add(order[0])
            plans[c] = order[:self.top_k], account
        # the note names the outside member when every cluster outside got it
        member = self.members_[self.outside_] if self.outside_ is not None and given <= {self.outside_} else None
        if any(outside) and (note := extrapolation_note(selector, outside, n, features, member)):
            warnings.warn(note, stacklevel=3)
        return plans

    def _timed_out_with(self) -> Callable[[int], list[int]]:
        """The selector's records say which members time out together; of the outside member they know nothing."""
        selector = self._selector()
        return lambda k: selector.timed_out_with(k) if k < len(selector.portfolio) else [k]

    def _run_limit(self, plan: dict[str, Any] | None, k: int, last: bool) -> float | None:
        """Member k's time limit on a cluster: `time_limit`, and under the runaway guard at most
        `runaway` times its predicted seconds (at least RUNAWAY_FLOOR) unless it is the `last` one left."""
        if not self.runaway or plan is None or "predicted_seconds" not in plan or last \
                or k >= len(plan["predicted_seconds"]):  # the outside member: the selector predicts no time for it
            return self.time_limit
        guard = max(RUNAWAY_FLOOR, self.runaway * plan["predicted_seconds"][k])
        return guard if self.time_limit is None else min(self.time_limit, guard)

    def _why(self, run: MemberRun, plan: dict[str, Any] | None, k: int, limit: float | None) -> str:
        """A failed run's status, saying so when the runaway guard (not the user's limit) cut it."""
        if run.status == TIMED_OUT and limit is not None and limit != self.time_limit and plan is not None:
            return (f"cut by the runaway guard after {limit:.0f} s ({self.runaway:g}x its predicted "
                    f"{plan['predicted_seconds'][k]:g} s; runaway=0 turns the guard off)")
        return run.status + (f": {run.error}" if run.error else "")

    def _run_last_note(self, c: int, size: int, k: int, newly: list[int]) -> str:
        others = [str(self.members_[j]) for j in newly if j != k]
        return (f"member {self.members_[k]} timed out on cluster {c} ({size} variables): from now on it runs last "
                f"on clusters of {int(np.ceil(size / 2))}+ variables"
                + (f", with {', '.join(others)}, which timed out on two in three of its clusters in the selector's "
                   "records" if others else ""))

    def fit(self, x: np.ndarray, variables: tuple[str, ...] | list[str] | None = None) -> PEF:
        """partition -> plan (which members run where) -> estimate -> fuse -> each step after fusion
        (hpc.pef.steps); `graph_` stays None when a cluster lost every member or the wall limit passed (`status_`
        says which)."""
        self.validate()
        self.members_, self.outside_ = self._with_outside(self.ensemble())
        x, user_variables = as_learnable(x, variables)
        # Partition, searches and fusion visit variables in index order: give them one from the data.
        x, variables, order = canonical_columns(x, user_variables)
        self.members_ = with_cheap_starts(self.members_, x.shape[1])
        run = FitRun(self.executor or SerialExecutor(), Progress(self.progress), x.shape[0],
                     None if self.wall_limit is None else time.time() + self.wall_limit,
                     None if self.checkpoint is None else RunCheckpoint(self.checkpoint,
                                                                        self._memory_settings(x, variables)))
        self._near: Near | None = None  # neighbours the partition found, which fusion's screening reuses
        clusters = self._partition_step(x, run)
        searched, jobs, plans = self._plan_step(x, clusters, run)
        estimation = self._estimate_step(variables, clusters, searched, jobs, plans, run)
        expired = run.expired()  # then one note, not a warning per run
        union = self._union(variables, clusters, searched, estimation, expired)
        self.dag_: PDAG | None = None
        self.graph_: PDAG | None = None
        self.fusion_stats_: FusionStats | None = None
        self.steps_: dict[str, dict[str, Any] | None] = {step.name: None for step in self.steps}
        z = standardize(x, np.float64)
        try:
            if not expired:
                self._fuse_step(z, union, clusters, run)
                if self.graph_ is not None:
                    chain = Chain(x, z, self.graph_, clusters, run.executor, run.show, run.deadline, self._known(),
                                  run.memory, canonical(asdict(self.fusion)))
                    self.steps_ = run_chain(self.steps, chain, run.timed)
                    if chain.graph is not self.graph_:
                        self.graph_, self.dag_ = chain.graph, pdag_to_dag(chain.graph, strict=False)
        except WallLimitHit:
            expired = True
        if expired:
            self.status_ = TIMED_OUT
            run.show.note(f"wall limit of {self.wall_limit:g} s reached: no graph")
        self.clusters_ = [order[idx] for idx in clusters]  # user indices; runs keep their cluster-local ones
        self.variables_ = user_variables
        if self.graph_ is not None:
            self.dag_, self.graph_ = relabel(self.dag_, order, user_variables), relabel(self.graph_, order, user_variables)
        self.seconds_ = {k: run.seconds.get(k, 0.0) for k in STEPS if k in run.seconds or k != "selection"}
        self.seconds_["total"] = sum(self.seconds_.values())
        self.placements_, self.spans_, self.task_seconds_ = run.places, run.spans, run.task_seconds
        return self

    def _partition_step(self, x: np.ndarray, run: FitRun) -> list[np.ndarray]:
        """The clusters (from the checkpoint when an earlier process made them)."""
        with run.timed("partition"):
            if run.memory is not None and run.memory.clusters is not None:
                clusters = run.memory.clusters
            else:
                p = x.shape[1]
                if p > self.partition.sparse_above:  # the neighbour search's blocks on the workers, once for both
                    k = max(self.partition.neighbours, self.fusion.candidates if p > self.fusion.candidates_above else 0)
                    run.show.note(f"partition: {p} variables, above sparse_above={self.partition.sparse_above}: each "
                                  f"variable's {k} strongest |r| on the workers, linkage on the "
                                  f"{self.partition.neighbours} strongest")
                    self._near = nearest(run.executor.scatter(standardize(x)), p, k, run.executor.run)
                clusters = partition(x, self.partition, self._near)
                if run.memory is not None:
                    run.memory.set_clusters(clusters)
        p = x.shape[1]
        if len(clusters) == 1:
            run.show.note(f"{p} variables: learned whole, without cutting"
                          + (f" (below whole_below={self.partition.whole_below})"
                             if p < self.partition.whole_below else ""))
        else:
            run.show.note(f"partition: {len(clusters)} clusters, sizes {sorted(len(c) for c in clusters)}")
        self.resumed_runs_ = 0 if run.memory is None else sum(c >= 0 for c, _ in run.memory.runs)
        if self.resumed_runs_:
            run.show.note(f"resuming from {self.checkpoint}: {self.resumed_runs_} member runs already finished")
        return clusters

    def _plan_step(self, x: np.ndarray, clusters: list[np.ndarray], run: FitRun) -> tuple[list, list, list]:
        """What each cluster's search sees (its variables, then any context), the searches' covariances
        (largest first), and which members run on each cluster."""
        with run.timed("selection" if self.selection == "predicted" else "estimation"):
            # Each cluster's search runs on its variables, then (with context) the outside ones it sees.
            z = standardize(x) if self.partition.context > 0 else None
            searched = [idx if z is None else np.concatenate(
                [idx, context_variables(z, idx, int(np.ceil(self.partition.context * len(idx))))])
                for idx in clusters]
            # Largest clusters first: a big cluster started last would run alone while the other workers idle.
            jobs = [(c, covariance(x[:, searched[c]]))
                    for c in sorted(range(len(clusters)), key=lambda c: -len(searched[c]))]
            by_cluster = dict(jobs)
            plans = self._plans([by_cluster[c][:len(idx), :len(idx)] for c, idx in enumerate(clusters)], run.n)
        if self.selection == "predicted":
            fell = Counter(account["order"][0] for _, account in plans if account and "fallback" in account)
            run.show.note(f"selection: {sum(len(p[0]) for p in plans)} of {len(clusters) * len(self.members_)} "
                          "member runs chosen" + "".join(f", {count} of {len(clusters)} clusters on the fallback "
                                                         f"{member_from_spec(self.members_[k])!r}"
                                                         for k, count in sorted(fell.items())))
        warn_few_rows(run.n, max(len(s) for s in searched), "the largest cluster's search")
        return searched, jobs, plans

    def _estimate_step(self, variables: tuple[str, ...], clusters: list[np.ndarray], searched: list[np.ndarray],
                       jobs: list, plans: list, run: FitRun) -> Estimation:
        """Every planned member run (and fallbacks) on the executor's workers."""
        with run.timed("estimation"):
            data = {c: (run.executor.scatter(cov, broadcast=False), tuple(variables[i] for i in searched[c]))
                    for c, cov in jobs}  # a cluster's covariance is shared by its members' runs
            schedule = MemberSchedule(plans, [c for c, _ in jobs], len(self.members_),
                                      [len(idx) for idx in clusters],
                                      self._timed_out_with() if self.selection == "predicted" else None)
            estimation = Estimation(self, run, schedule, plans, data, [len(idx) for idx in clusters],
                                    run.executor.task_threads(len(schedule.queue)))
            for (c, k), result in run.executor.run_drawn(run_member, estimation.draw):
                estimation.settle(c, k, result, fresh=True)
        return estimation

    def _union(self, variables: tuple[str, ...], clusters: list[np.ndarray], searched: list[np.ndarray],
               estimation: Estimation, expired: bool) -> PDAG:
        """The union of each cluster's best-BIC DAG; the fit's account of runs, winners and selections."""
        runs, plans, limits = estimation.schedule.runs, estimation.plans, estimation.limits
        directed = []
        winners: list[int | None] = []
        for c, idx in enumerate(clusters):
            k = best_run(runs[c])
            winners.append(k)
            for j, r in enumerate(runs[c]):
                if r is not None and r.status != OK and not expired:
                    warnings.warn(f"cluster {c}: member {r.spec} {self._why(r, plans[c][1], j, limits[c, j])}; skipped",
                                  stacklevel=3)
            if k is None:
                if not expired:
                    warnings.warn(f"cluster {c} ({len(idx)} variables): every member failed", stacklevel=3)
                continue
            won = runs[c][k]
            assert won is not None and won.directed is not None and won.undirected is not None  # best_run's choice
            local = PDAG(tuple(str(i) for i in range(len(searched[c]))),
                         won.directed, won.undirected).subgraph(np.arange(len(idx)))
            directed.append(idx[pdag_to_dag(local, strict=False).directed])
        self.cluster_runs_, self.winners_ = runs, winners
        self.selections_ = [None if plan is None else {**{k: v for k, v in plan.items() if k != "order"},
                                                       "ran": [k for k in plan["order"] if r[k] is not None],
                                                       **({"passed_over": over} if over else {})}
                            for (_, plan), r, over in zip(plans, runs, estimation.schedule.passed_over)]
        self.run_last_ = {k: estimation.schedule.avoid[k] for k in sorted(estimation.schedule.avoid)}
        self.status_ = lost_status([r.status for c, w in enumerate(winners) if w is None for r in runs[c]
                                    if r is not None])
        return PDAG(variables, np.concatenate(directed) if directed else np.empty((0, 2), dtype=np.int64))

    def _fuse_step(self, z: np.ndarray, union: PDAG, clusters: list[np.ndarray], run: FitRun) -> None:
        """Fusion's cross-cluster edges (none when a cluster has no graph: there is no complete answer)."""
        if self.status_ != OK:
            run.show.note("no fusion: a cluster has no graph, so there is no complete answer to fuse")
            return
        with run.timed("fusion"):
            if run.memory is not None and run.memory.screened_under(canonical(asdict(self.fusion))):
                run.show.note(f"resuming fusion: {len(run.memory.screened)} cluster pairs already screened")
            known = self._known()
            dag, stats = fuse(z, run.n, union, clusters, self.fusion,
                              screen=screener(run.executor, run.deadline, run.memory), progress=run.show,
                              near=None if self._near is None else self._near[0],
                              allows=None if known is None else known.allowed_on(union.variables),
                              required=None if known is None else known.required_on(union.variables))
            cpdag = dag_to_cpdag(dag)
            self.dag_, self.graph_, self.fusion_stats_ = dag, cpdag if known is None else known.oriented(cpdag), stats

    def result_meta(self) -> dict[str, Any]:
        return {
            "members": self.members_,
            "selection": self.selection,
            **({"selector": self._selector().describe(), "top_k": self.top_k} if self.selection == "predicted" else {}),
            "status": self.status_,
            **({"run_last": [{"member": self.members_[k], "on_clusters_from": int(np.ceil(size))}
                             for k, size in self.run_last_.items()]} if self.run_last_ else {}),
            "clusters": [{"size": int(len(idx)), "variables": [self.variables_[i] for i in idx], "winner": w,
                          "runs": [{"member": self.members_[k], "status": "not run"} if r is None else r.summary()
                                   for k, r in enumerate(runs)],
                          **({"selection": sel} if sel is not None else {})}
                         for idx, w, runs, sel in zip(self.clusters_, self.winners_, self.cluster_runs_,
                                                      self.selections_)],
            "fusion": None if self.fusion_stats_ is None else self.fusion_stats_.as_dict(),
            **self.steps_,
            **({"placements": self.placements_} if self.placements_ else {}),  # step -> tasks per SLURM worker job
            "resumed_runs": self.resumed_runs_,  # member runs taken from a checkpoint, not computed in this run
            "seconds": {k: round(v, 3) for k, v in self.seconds_.items()},
        }
