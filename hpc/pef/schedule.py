"""Which member runs next on which cluster: PEF's estimation, decided one run at a time.

Each cluster starts with its planned members (every member, or the selector's top choices), largest
clusters first. Where a cluster's runs all fail or time out, its next member in the selector's
order runs there (a fallback). A member that times out anywhere in the run is evidence about the
data, not only about that cluster: with `timed_out_with` (the selector's records), it and the
members that timed out with it in the records are run last from then on, in every fallback and on
every cluster not yet started that is at least half that cluster's size (on much smaller clusters the
same search finishes in a moment, and running a worse member there costs accuracy for nothing).
Deciding as workers free up (not a wave at a time) is what lets a timeout on one cluster spare the
clusters still waiting; the executor's `run_drawn` provides that.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from hpc.learners.ensemble import MemberRun, best_run

Plan = tuple[list[int], "dict[str, Any] | None"]


class MemberSchedule:
    """The queue of (cluster, member) runs for `plans` (per cluster: the members to run first and the
    selection's account, holding the full `order`, or None when every member runs and nothing falls
    back); `first` lists the clusters in the order to start them."""

    def __init__(self, plans: list[Plan], first: list[int], members: int, sizes: list[int],
                 timed_out_with: Callable[[int], list[int]] | None = None):
        self.plans, self.sizes = plans, sizes
        self.runs: list[list[MemberRun | None]] = [[None] * members for _ in plans]
        self.queue = deque((c, k) for c in first for k in plans[c][0])
        self.started: list[set[int]] = [set() for _ in plans]
        self.outstanding = [len(members_) for members_, _ in plans]
        # Members to run last, each on clusters of at least the size given: they, or members they time
        # out with, timed out on a cluster of twice that size.
        self.avoid: dict[int, float] = {}
        self.passed_over: list[list[int]] = [[] for _ in plans]
        self.finished = 0  # clusters with nothing more to run
        self.timed_out_with = timed_out_with

    def next(self) -> tuple[int, int, bool] | None:
        """The next (cluster, member) to start, and whether every other member has already run on that
        cluster (the last one left); None when nothing is waiting to start."""
        if not self.queue:
            return None
        c, k = self.queue.popleft()
        plan = self.plans[c][1]
        if plan is not None and self._avoided(c, k):
            instead = next((j for j in plan["order"] if not self._avoided(c, j) and self._free(c, j)), None)
            if instead is not None:
                self.passed_over[c].append(k)
                k = instead
        self.started[c].add(k)
        candidates = range(len(self.runs[c])) if plan is None else plan["order"]  # the members that may run here
        return c, k, all(self.runs[c][j] is not None for j in candidates if j != k)

    def settle(self, c: int, k: int, run: MemberRun, timed_out: bool, fallback: bool = True) -> list[int]:
        """Record member k's run on cluster c; `timed_out`: it ran out of time (its limit or the runaway
        guard's, not the whole run's). Queues the cluster's fallback when all its runs failed (unless
        `fallback` is False: past the wall limit). Returns the members newly set to run last."""
        self.runs[c][k] = run
        newly: list[int] = []
        if timed_out and self.timed_out_with is not None and self.plans[c][1] is not None:
            newly = [j for j in self.timed_out_with(k) if self.avoid.get(j, np.inf) > self.sizes[c] / 2]
            self.avoid.update({j: self.sizes[c] / 2 for j in newly})
        self.outstanding[c] -= 1
        if self.outstanding[c] == 0:
            k_next = self._fallback(c) if fallback else None
            if k_next is None:
                self.finished += 1
            else:  # at the front: the cluster is waiting for it, and the largest clusters started first
                self.queue.appendleft((c, k_next))
                self.outstanding[c] += 1
        return newly

    def _avoided(self, c: int, j: int) -> bool:
        return self.sizes[c] >= self.avoid.get(j, np.inf)

    def _free(self, c: int, j: int) -> bool:
        """Member j has not run, is not running and is not queued on cluster c."""
        return self.runs[c][j] is None and j not in self.started[c] and (c, j) not in self.queue

    def _fallback(self, c: int) -> int | None:
        """The member to try next on a cluster whose runs all failed: the most probable one free there,
        those to run last behind the rest (None under "all", when one succeeded or all have run)."""
        plan = self.plans[c][1]
        if plan is None or best_run(self.runs[c]) is not None:
            return None
        free = [j for j in plan["order"] if self._free(c, j)]
        return next((j for j in free if not self._avoided(c, j)), free[0] if free else None)

    @property
    def ran(self) -> int:
        return sum(r is not None for rs in self.runs for r in rs)

    @property
    def solved(self) -> int:
        """Clusters with a graph (a member run that succeeded)."""
        return sum(best_run(rs) is not None for rs in self.runs)

    @property
    def failed(self) -> int:
        """Member runs that ended without a graph (failed or timed out)."""
        return sum(r is not None and r.status != "ok" for rs in self.runs for r in rs)

    @property
    def waiting(self) -> int:
        """Runs queued or running."""
        return sum(self.outstanding)
