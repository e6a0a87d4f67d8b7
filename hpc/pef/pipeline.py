"""PEF around any ensemble: P/fGES and P/PC-Stable are one-member ensembles, P/SLE a learned one.

Estimation submits one task per (cluster, member) so an ensemble's members and the clusters
all spread over the executor's workers; each cluster then keeps its best-BIC output. With
`selection="predicted"` a selector (hpc.select) reads each cluster's features first and only its
`top_k` most likely members run there: the paper's future work, per-subproblem algorithm selection.
"""

from __future__ import annotations

import time
import warnings
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
from hpc.learners.ensemble import (MemberRun, best_run, check_knowledge, check_members, check_wall_limit, remaining,
                                   run_member)
from hpc.learners.members import OK, TIMED_OUT
from hpc.executors import SerialExecutor
from hpc.pef.fusion import FusionConfig, fuse
from hpc.pef.checkpoint import RunCheckpoint, data_hash
from hpc.pef.schedule import MemberSchedule
from hpc.pef.neighbours import Near, nearest
from hpc.pef.partition import PartitionConfig, context_variables, partition, standardize
from hpc.pef.repair import (GUARD_FACTOR, GUARD_FLOOR, POST_FACTOR, POST_FLOOR, Block, RepairConfig, block_search,
                             candidate_pairs, changes, join_blocks, repair_blocks, repair_search)
from hpc.pef.polish import CHECKPOINT_CLUSTER, RECUT_CLUSTER, communities, join_parents, polish_blocks, polish_search
from hpc.pef.sweep import CHECKPOINT_KEY as SWEEP_KEY
from hpc.pef.sweep import fingerprint
from hpc.pef.rival import (CHECKPOINT_KEY, POLISH_CLUSTER, RIVAL, crossing_share, judged, outcome, rival_graph,
                            rival_limit, run_rival)
from hpc.progress import Progress
from hpc.select.features import FEATURES, cluster_features
from hpc.select.selector import Selector, extrapolation_note, load_selector

SELECTIONS = ("all", "predicted")
#: The runaway guard never cuts a run shorter than this: it is there for searches that would go on for
#: hours, not for slow ones. On the records (held out by problem) the chosen member took at most 14 times
#: its prediction; on the yeast network BOSS runs took up to 27 times theirs (275 s), and with 300 s here
#: one of them, slowed by other work on the machine, was cut.
RUNAWAY_FLOOR = 900.0
#: Default runaway factor: on the records the chosen member took at most 14 times its prediction.
RUNAWAY = 20.0


#: Why a step after fusion was cut, for its notes.
GUARD_TEXT = (f"its guard: {GUARD_FACTOR:g}x the estimation's seconds, at least {GUARD_FLOOR:g} s, within the "
              f"steps after fusion's {POST_FACTOR:g}x, at least {POST_FLOOR:g} s")


class WallLimitHit(Exception):
    """The whole run's wall limit passed; raised between fusion's screening blocks."""


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


def changes_note(label: str, account: dict) -> str:
    """A step's progress line: the edges it added, removed and reoriented."""
    return f"{label}: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in account.items() if k.startswith("edges"))


def repair(z: np.ndarray, graph: PDAG, clusters: list[np.ndarray], config: RepairConfig, executor,
           deadline: float | None, memory: RunCheckpoint | None, show: Progress, key: str,
           until: float | None = None, knowledge: Knowledge | None = None) -> tuple[PDAG, dict]:
    """Up to `config.repair_rounds` rounds of the repair on `executor`'s workers (hpc.pef.repair), until a
    round changes nothing or the wall clock passes `until` in every block of one (then the last finished
    round's graph stands; a block cut alone keeps its start graph); each round is kept in the checkpoint under
    `key` (the fusion and repair settings). Returns the repaired CPDAG and its account (what changed,
    seconds)."""
    done = [] if memory is None else memory.repaired_under(key)
    if done:
        show.note(f"resuming the repair: {len(done)} round{'s' * (len(done) != 1)} already done")
    states = [graph, *(graph.with_edges(d, u) for d, u, _ in done)]
    rounds = [{"round": r + 1, "seconds": round(float(t), 3), "resumed": True} for r, (_, _, t) in enumerate(done)]
    data = executor.scatter(z)
    cores = repair_blocks(clusters, graph, config.repair_block)
    while len(states) <= config.repair_rounds and (len(states) < 2 or states[-1] != states[-2]):
        pairs = candidate_pairs(states[-1])
        blocks = [block_search(states[-1], pairs, core) for core in cores]
        show.note(f"repair: round {len(states)} (at most {config.repair_rounds}) over all {graph.p} variables "
                  f"in {len(blocks)} block{'s' * (len(blocks) != 1)}, {len(pairs)} candidate pairs")
        begin = time.perf_counter()
        threads = executor.task_threads(len(blocks))
        results: list = [None] * len(blocks)
        known = [None if knowledge is None else knowledge.indexed([graph.variables[c] for c in block.columns])
                 for block in blocks]
        for b, result in executor.run(repair_search, [(data, block, config.repair_penalty, threads, until, k)
                                                       for block, k in zip(blocks, known)]):
            results[b] = result
        if any(r is None for r in results) and deadline is not None and time.time() >= deadline:
            raise WallLimitHit
        cut = sum(r is None for r in results)
        if cut == len(blocks):
            spent = time.perf_counter() - begin
            show.note(f"repair: round {len(states)} cut after {spent:.0f} s ({GUARD_TEXT}); round "
                      f"{len(states) - 1}'s graph stands")
            rounds.append({"round": len(states), "cut_after_seconds": round(spent, 1)})
            break
        states.append(join_blocks(states[-1], blocks, results))
        spent = time.perf_counter() - begin
        if memory is not None:
            memory.put_repaired(key, (states[-1].directed, states[-1].undirected, spent))
        rounds.append({"round": len(states) - 1, "blocks": len(blocks), "candidate_pairs": int(len(pairs)),
                       "seconds": round(spent, 3), **({"blocks_cut": cut} if cut else {})})
        if cut:
            show.note(f"repair: {cut} of {len(blocks)} blocks cut after {spent:.0f} s ({GUARD_TEXT}); they keep "
                      "their start graph")
    account = changes(graph, states[-1])
    show.note(changes_note("repair", account))
    return states[-1], {**account, "penalty": config.repair_penalty, "rounds": rounds}


def polish(z: np.ndarray, graph: PDAG, clusters: list[np.ndarray], config: RepairConfig, executor,
           deadline: float | None, memory: RunCheckpoint | None, show: Progress, until: float | None,
           key: int = CHECKPOINT_CLUSTER, label: str = "polish",
           knowledge: Knowledge | None = None) -> tuple[PDAG, dict]:
    """BOSS over each cluster and its Markov blanket on `executor`'s workers (hpc.pef.polish), for searches of
    at most `config.polish_upto` variables, each cut when the wall clock passes `until` (it then keeps the
    repaired parents), each as `knowledge` allows. Each finished search is kept in the checkpoint under (`key`,
    search); `label` heads the progress lines. Returns the polished CPDAG and its account."""
    blocks = polish_blocks(graph, clusters, config.polish_upto)
    specs = [{"method": "boss-polish", "penalty": config.repair_penalty, "search": b.fingerprint()} for b in blocks]
    results: list[np.ndarray | None] = [None] * len(blocks)
    todo, resumed = [], 0
    for b, block in enumerate(blocks):
        stored = None if memory is None else memory.runs.get((key, b))
        if stored is not None and stored.spec == specs[b]:
            results[b], resumed = stored.directed, resumed + 1
        elif len(block.columns) <= config.polish_upto:
            todo.append(b)
    todo.sort(key=lambda b: -len(blocks[b].columns))  # the longest searches start first
    sizes = sorted(len(block.columns) for block in blocks)
    show.note(f"{label}: BOSS over {len(todo)} of {len(blocks)} parts of {len(clusters)} clusters with their Markov "
              f"blankets (searches of {sizes[0]}-{sizes[-1]} variables, at most {config.polish_upto} run)"
              + (f"; {resumed} already in the checkpoint" if resumed else ""))
    begin = time.perf_counter()
    data = executor.scatter(z)
    threads = executor.task_threads(len(todo))
    tasks = [(data, blocks[b], config.repair_penalty, threads, until,
              None if knowledge is None else knowledge.indexed([graph.variables[c] for c in blocks[b].columns]))
             for b in todo]
    for done, (t, result) in enumerate(executor.run(polish_search, tasks), 1):
        results[todo[t]] = result
        if memory is not None and result is not None:
            memory.put(key, todo[t], MemberRun(specs[todo[t]], OK, result, np.empty((0, 2), np.int64), None,
                                               time.perf_counter() - begin))
        show(f"{label}: searches", done, len(todo))
    cut = sum(results[b] is None for b in todo)
    if cut and deadline is not None and time.time() >= deadline:
        raise WallLimitHit
    polished, fixed = join_parents(graph, blocks, results), 0
    if knowledge is not None:  # a cross-cluster edge reversed to break a cycle may go against the knowledge
        polished, fixed = knowledge.kept(polished)
    seconds = time.perf_counter() - begin
    account = {**changes(graph, polished), "searches": len(todo) + resumed, "clusters": len(clusters),
               "parts": len(blocks), "largest_search": sizes[-1], "seconds": round(seconds, 3),
               **({"resumed": resumed} if resumed else {}),
               **({"cut_after_seconds": round(seconds, 1), "searches_cut": cut} if cut else {}),
               **({"knowledge_fixed": fixed} if knowledge is not None else {})}
    show.note(changes_note(label, account))
    return polished, account


def sweep(z: np.ndarray, graph: PDAG, penalty: float, executor, deadline: float | None,
          memory: RunCheckpoint | None, show: Progress, until: float | None,
          knowledge: Knowledge | None = None) -> tuple[PDAG, dict]:
    """One fGES over every pair of `graph`'s variables, started from it, on one of `executor`'s workers
    (hpc.pef.sweep), cut when the wall clock passes `until` (then `graph` stands); its result is kept in the
    checkpoint.
    Returns the swept CPDAG and its account."""
    begin = time.perf_counter()
    spec = {"method": "fges-sweep", "penalty": penalty, "start": fingerprint(graph)}
    stored = None if memory is None else memory.runs.get(SWEEP_KEY)
    resumed = stored is not None and stored.spec == spec
    if resumed:
        show.note("resuming: the sweep's result is in the checkpoint")
        result = (stored.directed, stored.undirected)
    else:
        show.note(f"sweep: one fGES over every pair of the {graph.p} variables from the graph so far "
                  f"(penalty {penalty:g}{'' if until is None else f', at most {until - time.time():.0f} s'})")
        whole = Block(np.arange(graph.p), graph.p, graph.directed, graph.undirected, None)  # no bound on pairs
        task = (executor.scatter(z), whole, penalty, executor.task_threads(1), until,
                None if knowledge is None else knowledge.indexed(list(graph.variables)))
        found = next(iter(executor.run(repair_search, [task])))[1]
        if found is None:
            if deadline is not None and time.time() >= deadline:
                raise WallLimitHit
            spent = time.perf_counter() - begin
            show.note(f"sweep: cut after {spent:.0f} s ({GUARD_TEXT}); the graph before it stands")
            return graph, {"cut_after_seconds": round(spent, 1)}
        result = found
        if memory is not None:
            memory.put(*SWEEP_KEY, MemberRun(spec, OK, result[0], result[1], None, time.perf_counter() - begin))
    swept, fixed = graph.with_edges(*result), 0
    if knowledge is not None:
        swept, fixed = knowledge.kept(swept)
    account = {**changes(graph, swept), "penalty": penalty, "seconds": round(time.perf_counter() - begin, 3),
               **({"resumed": True} if resumed else {}), **({"knowledge_fixed": fixed} if knowledge is not None else {})}
    show.note(changes_note("sweep", account))
    return swept, account


def lost_status(lost: list[str]) -> str:
    """The fit's status from the runs of clusters that got no graph: any failure outranks timeouts."""
    if not lost:
        return OK
    return TIMED_OUT if all(s == TIMED_OUT for s in lost) else "failed"


#: The steps a fit times, in order (`seconds_`; selection only with per-cluster selection).
STEPS = ("partition", "selection", "estimation", "fusion", "repair", "polish", "rival", "sweep", "recut")


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
    post_end: float | None = None  # wall clock when the steps after fusion's shared budget runs out

    def expired(self) -> bool:
        return self.deadline is not None and time.time() > self.deadline

    def step_end(self) -> float:
        """The wall clock at which a step after fusion starting now is cut (hpc.pef.repair's guards): GUARD_FACTOR
        times the estimation's seconds (at least GUARD_FLOOR) from now, within the budget all these steps share
        from the first one's start (POST_FACTOR times, at least POST_FLOOR; a resumed run starts it again), and
        before the run's deadline."""
        now, estimation = time.time(), self.seconds.get("estimation", 0.0)
        if self.post_end is None:
            self.post_end = now + max(POST_FLOOR, POST_FACTOR * estimation)
        end = min(now + max(GUARD_FLOOR, GUARD_FACTOR * estimation), self.post_end)
        return end if self.deadline is None else min(end, self.deadline)

    def spent(self, step: str) -> dict[str, str] | None:
        """The account of `step` when the steps after fusion have used their budget (it is then skipped)."""
        if self.post_end is None or self.post_end - time.time() >= 1.0:
            return None
        self.show.note(f"{step}: skipped, the steps after fusion used their budget ({POST_FACTOR:g}x the "
                       f"estimation's seconds, at least {POST_FLOOR:g} s)")
        return {"skipped": "the steps after fusion used their budget"}

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
                 runaway: float = RUNAWAY, repair: RepairConfig = RepairConfig(), knowledge: Knowledge | None = None):
        self.members, self.time_limit, self.wall_limit = members, time_limit, wall_limit
        self.knowledge = knowledge
        self.partition, self.fusion, self.repair = partition, fusion, repair
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
        self.repair.validate()

    def ensemble(self) -> list[dict[str, Any]]:
        """The members that run: `members`, or with per-cluster selection and no members the selector's portfolio."""
        if self.members is None and self.selection == "predicted" and self.selector is not None:
            return self._selector().portfolio
        return [] if self.members is None else list(self.members)

    def _memory_settings(self, x: np.ndarray, variables: tuple[str, ...]) -> dict[str, Any]:
        """What a checkpoint's partition and member runs depend on (fusion settings do not)."""
        return {"data": data_hash(x, variables), "members": [dict(m) for m in self.members_],
                "time_limit": self.time_limit, "partition": asdict(self.partition), "selection": self.selection,
                "selector": self._selector().describe() if self.selection == "predicted" else None,
                "top_k": self.top_k if self.selection == "predicted" else None,
                "runaway": self.runaway if self.selection == "predicted" else None,
                **({"knowledge": self.knowledge.describe()} if self._known() else {})}

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
        for i, (c, row, score, order) in enumerate(zip(multi, features, scored, orders)):
            plans[c] = order[:self.top_k], {"features": {k: round(float(v), 6) for k, v in zip(FEATURES, row)},
                                            "scores": [round(float(q), 4) for q in score], "order": order}
            if seconds is not None:
                plans[c][1]["predicted_seconds"] = [round(float(t), 2) for t in seconds[i]]
            if outside[i]:
                plans[c][1]["outside_training"] = outside[i]
        if any(outside):
            warnings.warn(extrapolation_note(selector, outside, n), stacklevel=3)
        return plans

    def _run_limit(self, plan: dict[str, Any] | None, k: int, last: bool) -> float | None:
        """Member k's time limit on a cluster: `time_limit`, and under the runaway guard at most
        `runaway` times its predicted seconds (at least RUNAWAY_FLOOR) unless it is the `last` one left."""
        if not self.runaway or plan is None or "predicted_seconds" not in plan or last:
            return self.time_limit
        guard = max(RUNAWAY_FLOOR, self.runaway * plan["predicted_seconds"][k])
        return guard if self.time_limit is None else min(self.time_limit, guard)

    def _why(self, run: MemberRun, plan: dict[str, Any] | None, k: int, limit: float | None) -> str:
        """A failed run's status, saying so when the runaway guard (not the user's limit) cut it."""
        if run.status == TIMED_OUT and limit is not None and limit != self.time_limit:
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
        """partition -> plan (which members run where) -> estimate -> fuse -> repair -> polish -> rival -> sweep ->
        recut; `graph_` stays None when a cluster lost every member or the wall limit passed (`status_` says which)."""
        self.validate()
        self.members_ = self.ensemble()
        x, user_variables = as_learnable(x, variables)
        # Partition, searches and fusion visit variables in index order: give them one from the data.
        x, variables, order = canonical_columns(x, user_variables)
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
        self.dag_ = self.graph_ = self.fusion_stats_ = self.repair_ = self.polish_ = self.rival_ = self.sweep_ = self.recut_ = None
        z = standardize(x, np.float64)
        try:
            if not expired:
                self._fuse_step(z, union, clusters, run)
                self._repair_step(z, clusters, run)
                self._polish_step(z, clusters, run)
                self._rival_step(x, z, variables, clusters, run)
                self._sweep_step(z, clusters, run)
                self._recut_step(z, clusters, run)
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
            run.show.note(f"selection: {sum(len(p[0]) for p in plans)} of {len(clusters) * len(self.members_)} "
                          "member runs chosen")
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
                                      self._selector().timed_out_with if self.selection == "predicted" else None)
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
            local = PDAG(tuple(str(i) for i in range(len(searched[c]))),
                         runs[c][k].directed, runs[c][k].undirected).subgraph(np.arange(len(idx)))
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
            self.dag_, self.graph_, self.fusion_stats_ = dag, dag_to_cpdag(dag), stats
            if known is not None:
                self.graph_ = known.oriented(self.graph_)

    def _repair_step(self, z: np.ndarray, clusters: list[np.ndarray], run: FitRun) -> None:
        """The repair after fusion (hpc.pef.repair), guarded by the estimation's seconds."""
        if not self.repair.repair_rounds or self.graph_ is None or len(clusters) == 1:
            return
        with run.timed("repair"):
            known = self._known()
            self.graph_, self.repair_ = repair(z, self.graph_, clusters, self.repair, run.executor, run.deadline,
                                               run.memory, run.show,
                                               canonical([asdict(self.fusion), asdict(self.repair)]), run.step_end(),
                                               known)
            if known is not None:  # blocks' joins may turn an edge round against the knowledge: put it right
                self.graph_, self.repair_["knowledge_fixed"] = known.kept(self.graph_)
            self.dag_ = pdag_to_dag(self.graph_, strict=False)

    def _polish_step(self, z: np.ndarray, clusters: list[np.ndarray], run: FitRun) -> None:
        """BOSS over each cluster and its Markov blanket after the repair (hpc.pef.polish), guarded like it."""
        if not self.repair.polish_upto or self.graph_ is None or len(clusters) == 1:
            return
        if (spent := run.spent("polish")) is not None:
            self.polish_ = spent
            return
        with run.timed("polish"):
            self.graph_, self.polish_ = polish(z, self.graph_, clusters, self.repair, run.executor, run.deadline,
                                               run.memory, run.show, run.step_end(), knowledge=self._known())
            self.dag_ = pdag_to_dag(self.graph_, strict=False)

    def _rival_step(self, x: np.ndarray, z: np.ndarray, variables: tuple[str, ...], clusters: list[np.ndarray],
                    run: FitRun) -> None:
        """Up to `repair.rival_upto` variables, one whole-problem fGES as a rival, polished over the same
        clusters as PEF's graph (so both are judged as finished graphs); the higher BIC stands
        (hpc.pef.rival). Its run and its polish's searches are kept in the checkpoint."""
        if self.graph_ is None or len(clusters) == 1 or x.shape[1] > self.repair.rival_upto:
            return
        share = crossing_share(self.graph_, clusters)
        if share < self.repair.rival_crossing:
            self.rival_ = {"kept": "pef", "crossing": round(share, 3),
                           "skipped": f"{share:.0%} of PEF's edges join two clusters, under rival_crossing "
                                      f"{self.repair.rival_crossing:g}: the partition found blocks"}
            run.show.note(f"rival: {outcome(self.rival_)}")
            return
        if (spent := run.spent("rival")) is not None:
            self.rival_ = {"kept": "pef", "crossing": round(share, 3), **spent}
            return
        with run.timed("rival"):
            cov = covariance(x)
            result = self._rival_run(cov, variables, run)
            other, polished = rival_graph(result, self.graph_.variables), None
            if other is not None and self.repair.polish_upto:
                other, polished = polish(z, other, clusters, self.repair, run.executor, run.deadline, run.memory,
                                         run.show, run.step_end(), POLISH_CLUSTER, "rival's polish", self._known())
            self.graph_, self.rival_ = judged(self.graph_, other, result, cov, run.n)
            self.rival_["crossing"] = round(share, 3)
            if polished is not None:
                self.rival_["polish"] = polished
            if self.rival_["kept"] == "rival":
                self.dag_ = pdag_to_dag(self.graph_, strict=False)
            run.show.note(f"rival: {outcome(self.rival_)}")

    def _sweep_step(self, z: np.ndarray, clusters: list[np.ndarray], run: FitRun) -> None:
        """Up to `repair.sweep_upto` variables, one fGES over every pair from the graph so far (hpc.pef.sweep)."""
        if not self.repair.sweep_upto or self.graph_ is None or len(clusters) == 1 or z.shape[1] > self.repair.sweep_upto:
            return
        if (spent := run.spent("sweep")) is not None:
            self.sweep_ = spent
            return
        with run.timed("sweep"):
            swept, self.sweep_ = sweep(z, self.graph_, self.repair.sweep_penalty, run.executor, run.deadline,
                                       run.memory, run.show, run.step_end(), self._known())
            if swept is not self.graph_:
                self.graph_, self.dag_ = swept, pdag_to_dag(swept, strict=False)

    def _recut_step(self, z: np.ndarray, clusters: list[np.ndarray], run: FitRun) -> None:
        """`repair.recut_passes` more polish passes, each over the communities of the graph so far
        (hpc.pef.polish.communities) instead of PEF's clusters, so that no seam stays a seam; only where the
        communities are blocks (under `repair.recut_crossing` of the edges join two), since a search over a
        small core with a large blanket fits the blanket's variables without their own parents."""
        if not self.repair.recut_passes or not self.repair.polish_upto or self.graph_ is None or len(clusters) == 1:
            return
        with run.timed("recut"):
            before, passes, spent = self.graph_, [], None
            for r in range(self.repair.recut_passes):
                if (spent := run.spent(f"recut {r + 1}")) is not None:
                    break
                cut = communities(self.graph_)
                share = crossing_share(self.graph_, cut)
                if share >= self.repair.recut_crossing:
                    self.recut_ = {"crossing": round(share, 3), "skipped": f"{share:.0%} of the edges join two of "
                                   f"the graph's {len(cut)} communities, not under recut_crossing "
                                   f"{self.repair.recut_crossing:g}: it has no blocks"}
                    break
                start = self.graph_
                self.graph_, account = polish(z, start, cut, self.repair, run.executor, run.deadline, run.memory,
                                              run.show, run.step_end(), RECUT_CLUSTER - r, f"recut {r + 1}",
                                              self._known())
                passes.append({**account, "crossing": round(share, 3)})
                if self.graph_ == start:
                    break  # another pass would search the same communities from the same graph
            if passes:
                self.recut_ = {**changes(before, self.graph_), "passes": passes, **(spent or {})}
                self.dag_ = pdag_to_dag(self.graph_, strict=False)
            elif spent is not None:
                self.recut_ = spent
            else:
                run.show.note(f"recut: not run ({self.recut_['skipped']})")

    def _rival_run(self, cov: np.ndarray, variables: tuple[str, ...], run: FitRun) -> MemberRun:
        """The rival's fGES run, from the checkpoint when it is there."""
        stored = None if run.memory is None else run.memory.runs.get(CHECKPOINT_KEY)
        if stored is not None and stored.spec == RIVAL:
            run.show.note("resuming: the whole-problem rival's run is in the checkpoint")
            return stored
        spent = sum(r.seconds for runs in self.cluster_runs_ for r in runs if r is not None)
        limit = remaining(rival_limit(spent + sum(r.get("seconds", 0.0) for r in (self.repair_ or {}).get("rounds", []))),
                          run.step_end())
        run.show.note(f"rival: one fGES (faithful, λ {RIVAL['penalty']:.2f}) over all {len(variables)} variables, "
                      f"at most {limit:.0f} s (rival_upto={self.repair.rival_upto})")
        result = run_rival(run.executor, cov, run.n, variables, limit, run.deadline, self._known())
        if run.memory is not None:
            run.memory.put(*CHECKPOINT_KEY, result)
        return result

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
            "repair": self.repair_,
            "polish": self.polish_,
            "rival": self.rival_,
            "sweep": self.sweep_,
            "recut": self.recut_,
            **({"placements": self.placements_} if self.placements_ else {}),  # step -> tasks per SLURM worker job
            "resumed_runs": self.resumed_runs_,  # member runs taken from a checkpoint, not computed in this run
            "seconds": {k: round(v, 3) for k, v in self.seconds_.items()},
        }
