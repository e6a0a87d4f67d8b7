"""PEF's step on problems without block structure: one whole-problem search as a rival to PEF's repaired
graph, and the graph with the higher BIC stands; the polish then runs once, on whichever stood.

Cutting costs most where the graph has no block structure: on er and hub at 1,000 variables one whole
fGES (faithfulness assumed) is more accurate than PEF, even after the repair and the polish. BOSS over
each cluster and its Markov blanket (hpc.pef.polish) improves either start: on seed 100 (tuning) the
polished whole fGES was 90-100 SHD better than PEF on er and hub. BIC needs no truth, but at penalty
discount JUDGE_PENALTY it preferred the polished rival also on ws and Hailfinder, where it was 19-43
SHD worse (at 1, 2.54, 4 and 6 too, on those two). What told the two kinds apart was the partition:
on the block-structured problems 14-18 % of PEF's edges joined two clusters, on er and hub 42-43 %.
So the rival runs only where that share reaches `crossing`, and up to `upto` variables.

It runs before the polish, and is judged unpolished against PEF's unpolished graph: polishing both and
judging after (as it first did) cost a second polish, and on seed 100 of er-1000 gave the same graph as
judging first and polishing the winner (0.941 / 0.935 / 246), in three quarters of the time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hpc.checks import check_number
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import bic, covariance
from hpc.learners.ensemble import MemberRun, run_member
from hpc.learners.members import OK, TIMED_OUT
from hpc.pef.partition import crossing_share
from hpc.pef.repair import changes
from hpc.pef.step import Chain, Step, StepMemory, WallLimitHit

#: The rival: fGES with faithfulness at the learned ensemble's winning penalty (λ 2.54, at most 91 parents),
#: the whole-problem baseline of BENCHMARKS.md.
RIVAL: dict[str, Any] = {"method": "fges", "penalty": 2.53767, "max_parents": 91, "faithfulness": True}
#: The BIC penalty discount the two graphs are judged by (Tetrad's documented default, the repair's).
JUDGE_PENALTY = 2.0


@dataclass(frozen=True)
class RivalConfig:
    # Up to this many variables; 0 = never. 2000 is about where one whole fGES still takes as long as PEF.
    upto: int = 2000
    # ... and only when at least this share of PEF's edges join two clusters. On seed 100 (tuning) the
    # block-structured problems had 0.14-0.18 (Alarm, Hailfinder, ws, sbm), where BIC preferred the polished
    # rival on two though it was less accurate, and er and hub 0.42-0.43, where the polished rival was better
    # by 90-100 SHD; 0.3 is the middle of that gap (BENCHMARKS.md, "A whole-problem rival").
    crossing: float = 0.3

    def validate(self) -> None:
        check_number("rival.upto", self.upto, 0, 10_000_000, integer=True)
        check_number("rival.crossing", self.crossing, 0.0, 1.0)


def rival_graph(run: MemberRun, variables: tuple[str, ...]) -> PDAG | None:
    """The rival's CPDAG, or None when its run gave no graph (failed)."""
    if run.status != OK or run.directed is None or run.undirected is None:
        return None
    return PDAG(variables, run.directed, run.undirected)


def judged(graph: PDAG, other: PDAG | None, run: MemberRun, cov: np.ndarray, n: int) -> tuple[PDAG, dict[str, Any]]:
    """The graph that stands (PEF's `graph` or the rival's `other`, None when `run` gave none), and the
    account: both BICs (penalty discount JUDGE_PENALTY), which was kept, the rival's seconds and status."""
    account: dict[str, Any] = {"method": dict(run.spec), "status": run.status, "seconds_rival": round(run.seconds, 3)}
    if other is None:
        return graph, {**account, "kept": "pef", **({"why": run.error} if run.error else {})}
    mine, theirs = bic(graph, cov, n, JUDGE_PENALTY), bic(other, cov, n, JUDGE_PENALTY)
    kept = "rival" if theirs > mine else "pef"
    return (other if kept == "rival" else graph), {**account, "bic_pef": round(mine, 3), "bic_rival": round(theirs, 3),
                                                   "kept": kept}


def outcome(account: dict[str, Any]) -> str:
    """What the rival step decided, in one line."""
    if account["kept"] == "rival":
        return f"its graph stands, BIC {account['bic_rival']:,.0f} against PEF's {account['bic_pef']:,.0f}"
    if "bic_rival" in account:
        return f"PEF's graph stands, BIC {account['bic_pef']:,.0f} against the rival's {account['bic_rival']:,.0f}"
    return f"PEF's graph stands (the rival {account['status']})"


class Rival(Step):
    """One whole-problem fGES against PEF's repaired graph; the higher BIC stands (and is polished next)."""

    name, Config = "rival", RivalConfig
    doc = "where the partition found no blocks: a whole-problem fGES against PEF's graph by BIC"

    def enabled(self) -> bool:
        return self.config.upto > 0

    def too_large(self, chain: Chain) -> str | None:
        """Why no whole-problem search runs on the chain's problem at all (None: one may)."""
        if chain.graph.p > self.config.upto:
            return f"{chain.graph.p} variables, above rival.upto {self.config.upto}"
        if chain.graph.p > chain.n:  # one search over them all would see a singular covariance
            return f"{chain.graph.p} variables for {chain.n} rows: a whole-problem search needs no more variables than rows"
        return None

    def applies(self, chain: Chain) -> str | None:
        reason = self.too_large(chain)
        if reason is not None:
            return reason
        share = crossing_share(chain.graph, chain.clusters)
        if share < self.config.crossing:
            return (f"a share of {share:.3f} of PEF's edges joins two clusters, under rival.crossing "
                    f"{self.config.crossing:g}: the partition found blocks")
        return None

    def ahead(self, chain: Chain, memory: StepMemory) -> None:
        """The rival depends only on the data, so where the fused graph already passes the gate it begins now and
        runs beside the repair (whose fGES keeps one core; the other would idle). Whether it runs at all is still
        decided on the repaired graph, so the graph is the one a serial run gives; on one worker it would only
        queue in front of the repair, so it waits for its turn there."""
        if (chain.executor.beside and chain.executor.task_threads(1) > 1 and self.too_large(chain) is None
                and memory.get(0, RIVAL) is None and crossing_share(chain.graph, chain.clusters) >= self.config.crossing):
            chain.show.note(f"rival: one fGES (faithful, λ {RIVAL['penalty']:.2f}) over all {chain.graph.p} "
                            "variables, begun beside the steps before it")
            chain.early[self.name] = chain.executor.start(run_member, self.task(chain, covariance(chain.x)))

    def task(self, chain: Chain, cov: np.ndarray) -> tuple:
        """The rival's member run on the data's covariance `cov`, as a task of `run_member`."""
        return (RIVAL, chain.executor.scatter(cov, broadcast=False), chain.n, chain.graph.variables, None, 1,
                chain.deadline, chain.knowledge)  # fGES takes one thread

    def run(self, chain: Chain, memory: StepMemory) -> tuple[PDAG, dict[str, Any]]:
        share = crossing_share(chain.graph, chain.clusters)
        cov = covariance(chain.x)
        result = memory.get(0, RIVAL)
        early = chain.early.pop(self.name, None)
        if result is not None:
            chain.show.note("resuming: the whole-problem rival's run is in the checkpoint")
        else:
            if early is None:
                chain.show.note(f"rival: one fGES (faithful, λ {RIVAL['penalty']:.2f}) over all {chain.graph.p} "
                                "variables")
                result = next(iter(chain.executor.run(run_member, [self.task(chain, cov)])))[1]
            else:
                result = early()
            if result.status == TIMED_OUT:  # only the user's wall limit bounds it
                raise WallLimitHit
            memory.put(0, result)
        graph, account = judged(chain.graph, rival_graph(result, chain.graph.variables), result, cov, chain.n)
        account.update(changes(chain.graph, graph), crossing=round(share, 3))
        chain.show.note(f"rival: {outcome(account)}")
        return graph, account
