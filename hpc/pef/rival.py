"""PEF's step on problems without block structure: one whole-problem search as a rival to PEF's repaired
graph, and the graph with the higher BIC stands; the polish then runs once, on whichever stood.

Cutting costs most where the graph has no block structure: on er and hub at 1,000 variables one whole-problem
search is more accurate than PEF, even after the repair and the polish. The rival is BOSS over every pair
(hpc.learners.order_search, penalty discount PENALTY), started from the fused graph's order, so it depends only
on the data and fusion and may begin beside the repair. On tuning seed 100 at 1,000 variables it gave er 206,
hub 148 and sf 315 SHD, where Tetrad's whole fGES, the rival until then, had led PEF to 244 and 286 (and ran past
ten minutes on sf), in 4-80 s (BENCHMARKS.md, "A whole-problem rival"). With prior knowledge, which that search
does not keep, the rival is Tetrad's fGES with faithfulness at the same penalty.

BIC needs no truth, but at penalty discount JUDGE_PENALTY it preferred a whole-problem search also on block-
structured problems (Alarm, Hailfinder, ws) where it was less accurate than PEF. What told the two kinds apart
was the partition: on the block-structured problems 14-18 % of PEF's edges joined two clusters, on er and hub
42-43 %. So the rival runs only where that share reaches `crossing`, and up to `upto` variables.
It is judged unpolished against PEF's unpolished graph, and the polish then runs once, on the graph that stood.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hpc.checks import check_number
from hpc.graphs.equivalence import dag_to_cpdag
from hpc.graphs.knowledge import Knowledge
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import bic, covariance
from hpc.learners.ensemble import MemberRun, remaining, run_member
from hpc.learners.members import OK, TIMED_OUT
from hpc.learners.order_search import RUNNER
from hpc.learners.worker import call_within
from hpc.pef.partition import crossing_share
from hpc.pef.repair import changes
from hpc.pef.step import Chain, Step, StepMemory, WallLimitHit

#: The rival's BIC penalty discount: the learned ensemble's winning penalty (its fGES members' λ 2.54).
PENALTY = 2.53767
#: The rival where there is prior knowledge: fGES with faithfulness (at most 91 parents), which keeps it.
WITH_KNOWLEDGE: dict[str, Any] = {"method": "fges", "penalty": PENALTY, "max_parents": 91, "faithfulness": True}
#: The BIC penalty discount the two graphs are judged by (Tetrad's documented default, the repair's).
JUDGE_PENALTY = 2.0


@dataclass(frozen=True)
class RivalConfig:
    # Up to this many variables; 0 = never. Chosen (2000) when the rival was a whole fGES, which there took
    # about as long as PEF; the order search's cost grows with the square of the variables.
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
    """One whole-problem search against PEF's repaired graph; the higher BIC stands (and is polished next)."""

    name, Config = "rival", RivalConfig
    doc = "where the partition found no blocks: a whole-problem BOSS over every pair against PEF's graph by BIC"

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
        """The rival depends only on the data and the fused graph, so it begins now and runs beside the repair
        (whose fGES keeps one core; the other would idle), whether or not the fused graph passes the gate:
        on sf-1000 the repaired graph often passes where the fused one did not, and the rival then ran alone
        after the repair. Whether it runs at all is still decided on the repaired graph, so the graph is the one
        a serial run gives, and where the step does not apply its search is stopped. On one worker it would
        only queue in front of the repair, so it waits for its turn there."""
        if (chain.executor.beside and chain.executor.task_threads(1) > 1 and self.too_large(chain) is None
                and memory.get(0, spec_of(chain)) is None):
            chain.show.note(f"rival: {described(chain)}, begun beside the steps before it")
            chain.early[self.name] = chain.executor.start(whole_search, self.task(chain))

    def task(self, chain: Chain) -> tuple:
        """The rival's search, as a task of `whole_search`."""
        return (spec_of(chain), chain.executor.scatter(chain.z, broadcast=False), chain.fused_order,
                chain.graph.variables, chain.deadline, chain.knowledge)

    def run(self, chain: Chain, memory: StepMemory) -> tuple[PDAG, dict[str, Any]]:
        share = crossing_share(chain.graph, chain.clusters)
        spec = spec_of(chain)
        result = memory.get(0, spec)
        early = chain.early.pop(self.name, None)
        if result is not None:
            chain.show.note("resuming: the whole-problem rival's run is in the checkpoint")
        else:
            if early is None:
                chain.show.note(f"rival: {described(chain)}")
                result = next(iter(chain.executor.run(whole_search, [self.task(chain)])))[1]
            else:
                result = early.result()
            if result.status == TIMED_OUT:  # only the user's wall limit bounds it
                raise WallLimitHit
            memory.put(0, result)
        graph, account = judged(chain.graph, rival_graph(result, chain.graph.variables), result, covariance(chain.x),
                                chain.n)
        account.update(changes(chain.graph, graph), crossing=round(share, 3))
        chain.show.note(f"rival: {outcome(account)}")
        return graph, account


def spec_of(chain: Chain) -> dict[str, Any]:
    """What the rival searches, as its checkpoint key: with prior knowledge the fGES, else the order search over
    every pair from the fused graph's order (named by a digest of that order)."""
    if chain.knowledge is not None:
        return WITH_KNOWLEDGE
    digest = hashlib.sha256(np.ascontiguousarray(chain.fused_order, dtype=np.int64).tobytes()).hexdigest()[:16]
    return {"method": "boss-every-pair", "penalty": PENALTY, "start": digest}


def described(chain: Chain) -> str:
    if chain.knowledge is not None:
        return f"one fGES (faithful, λ {PENALTY:.2f}, with the prior knowledge) over all {chain.graph.p} variables"
    return f"one BOSS over every pair of all {chain.graph.p} variables (λ {PENALTY:.2f}, from the fused graph's order)"


def whole_search(spec: dict[str, Any], z: np.ndarray, order: np.ndarray, variables: tuple[str, ...],
                 deadline: float | None, knowledge: Knowledge | None) -> MemberRun:
    """The rival's search on the standardised data `z` (a task): its CPDAG as a member run, TIMED_OUT when the
    user's wall limit passed first."""
    if knowledge is not None:
        return run_member(spec, covariance(z), z.shape[0], variables, None, 1, deadline, knowledge)
    begin = time.perf_counter()
    dag = call_within(RUNNER, {"x": z, "penalty": PENALTY, "order": order, "pairs": None}, remaining(None, deadline))
    if dag is None:
        return MemberRun(dict(spec), TIMED_OUT, None, None, None, time.perf_counter() - begin)
    cpdag = dag_to_cpdag(PDAG(variables, dag))
    return MemberRun(dict(spec), OK, cpdag.directed, cpdag.undirected, None, time.perf_counter() - begin)
