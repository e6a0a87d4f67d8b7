"""PEF's first step after fusion: one whole-problem search as a rival to PEF's fused graph; the graph with the
higher BIC stands, and the steps after it (the repair only where PEF's graph stood) start from it.

Wherever one search over every variable is affordable (up to `upto` variables), PEF's fused graph is a better
start for it than for the repair: the rival is BOSS over every pair (hpc.learners.order_search, penalty discount
PENALTY) from the fused graph's order, which a cut problem gives cheaply and well. At 1,000 variables it stood on
every problem tried, and the polish, sweep and recut after it finished ahead of the repair's chain on every tuning
seed (100-102) of ws, sbm and mosaic, by 21, 52 and 118 SHD on the mean, and on layer where that chain gave no
graph in practice (BENCHMARKS.md, "A whole-problem rival"). A graph it leaves has no seams, so the repair does not
run after it. With prior knowledge, which that search does not keep, there is no rival: the one whole search that
keeps it, Tetrad's fGES, has no bound on its cost (sf-1000: 880 s) and was less accurate than PEF's chain on
block-structured problems (ws-1000: 1,033 SHD against 504), where its BIC would still beat the fused graph's.

It runs with as many variables as rows or more, too: the order search regresses each variable on its few
parents, never on the whole covariance, which is singular there (as the sweep's fGES does). It was once kept to
fewer variables than rows, and on the tuning seeds that rule cost most where rows are few: Alarm-1000 (1,036
variables for 1,000 rows) 227-329 SHD without it against 204-274 with it, er-2000 with 200 rows 1,574 against 1,124
(BENCHMARKS.md, "A whole-problem rival").

It was once gated by the share of PEF's edges that join two clusters (block-structured problems 0.13-0.18, er
and hub 0.42): that gate kept it from a repaired-and-polished PEF graph it then lost to on Alarm and ws. Judged
against the fused graph and followed by the same steps, it needs no gate. The share stays in its account.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hpc.checks import check_number
from hpc.graphs.equivalence import dag_to_cpdag, pdag_to_dag
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import bic, covariance
from hpc.learners.ensemble import MemberRun, remaining
from hpc.learners.members import OK, TIMED_OUT
from hpc.learners.order_search import BOUNDED_RUNNER
from hpc.learners.worker import call_within
from hpc.pef.partition import crossing_share
from hpc.pef.repair import changes
from hpc.pef.step import Chain, Step, StepMemory, WallLimitHit

#: The rival's BIC penalty discount: the learned ensemble's winning penalty (its fGES members' λ 2.54).
PENALTY = 2.53767
#: The BIC penalty discount the two graphs are judged by (Tetrad's documented default, the repair's).
JUDGE_PENALTY = 2.0


@dataclass(frozen=True)
class RivalConfig:
    # Up to this many variables; 0 = never. Chosen (2000) when the rival was a whole fGES, which there took
    # about as long as PEF; the order search's cost grows with the square of the variables.
    upto: int = 2000
    # Tree nodes per variable its search may make; past them it stops at the order it reached (0 = no bound).
    # A count, not seconds, so the graph is the same on any machine; a node costs about 25 us compiled (9 s for
    # sf-1000's 381,000). Over every pair of tuning seed 100 at 1,000 variables the searches made 20,000 (ws),
    # 163,000 (mosaic) and 376,000 (sf) nodes, and on layer (seed 101) 1.2 million: 1,000 per variable leaves the
    # others 2.6x room and bounds a dense problem's search at about half a minute (BENCHMARKS.md, "A whole-problem
    # rival").
    nodes: int = 1000

    def validate(self) -> None:
        check_number("rival.upto", self.upto, 0, 10_000_000, integer=True)
        check_number("rival.nodes", self.nodes, 0, 10**9, integer=True)


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
                                                   "kept": kept, **({"search": run.error} if run.error else {})}


def outcome(account: dict[str, Any]) -> str:
    """What the rival step decided, in one line."""
    bounded = f" (its search {account['search']})" if "search" in account else ""
    if account["kept"] == "rival":
        return f"its graph stands, BIC {account['bic_rival']:,.0f} against PEF's {account['bic_pef']:,.0f}{bounded}"
    if "bic_rival" in account:
        return (f"PEF's graph stands, BIC {account['bic_pef']:,.0f} against the rival's {account['bic_rival']:,.0f}"
                + bounded)
    if account["status"] == OK and "why" in account:
        return f"PEF's graph stands (the rival's {account['why']})"
    return f"PEF's graph stands (the rival {account['status']})"


def overfitted(graph: PDAG, n: int) -> str | None:
    """Why the rival's graph cannot stand on `n` rows (None: it may): a variable with at least half as many parents
    as rows, the bound every cut search keeps to. On few rows a search over every pair meets chance correlations
    it takes for parents, each fit's residual shrinks towards nothing and its BIC rises without end (er-300 with 30
    rows: 28 parents, 3,082 edges for 600)."""
    most = max(map(len, pdag_to_dag(graph, strict=False).parent_lists()), default=0)
    if 2 * most >= n:
        return f"graph gives a variable {most} parents for {n} rows (at least half): its fits are unreliable"
    return None


class Rival(Step):
    """One whole-problem search against PEF's fused graph; the higher BIC stands (and the next steps start from it)."""

    name, Config = "rival", RivalConfig
    doc = "a whole-problem BOSS over every pair from the fused graph's order against PEF's graph by BIC"

    def enabled(self) -> bool:
        return self.config.upto > 0

    def applies(self, chain: Chain) -> str | None:
        if chain.graph.p > self.config.upto:
            return f"{chain.graph.p} variables, above rival.upto {self.config.upto}"
        if chain.knowledge is not None:
            return "prior knowledge, which the whole-problem search does not keep"
        return None

    def run(self, chain: Chain, memory: StepMemory) -> tuple[PDAG, dict[str, Any]]:
        share = crossing_share(chain.graph, chain.clusters)
        spec = self.spec(chain)
        result = memory.get(0, spec)
        if result is not None:
            chain.show.note("resuming: the whole-problem rival's run is in the checkpoint")
        else:
            chain.show.note(f"rival: {described(chain)}")
            result = search_every_pair(chain, spec, chain.fused_order)
            memory.put(0, result)
        other = rival_graph(result, chain.graph.variables)
        unfit = None if other is None else overfitted(other, chain.n)
        graph, account = judged(chain.graph, None if unfit else other, result, covariance(chain.x), chain.n)
        if unfit:
            account["why"] = unfit
        account.update(changes(chain.graph, graph), crossing=round(share, 3))
        chain.seamless = account["kept"] == "rival"
        chain.show.note(f"rival: {outcome(account)}")
        return graph, account

    def spec(self, chain: Chain) -> dict[str, Any]:
        """What the rival searches, as its checkpoint key: the order search over every pair from the fused graph's
        order (named by a digest of that order) and its bound on nodes."""
        digest = hashlib.sha256(np.ascontiguousarray(chain.fused_order, dtype=np.int64).tobytes()).hexdigest()[:16]
        return {"method": "boss-every-pair", "penalty": PENALTY, "start": digest,
                "nodes": self.config.nodes * chain.graph.p or None}


def described(chain: Chain) -> str:
    return f"one BOSS over every pair of all {chain.graph.p} variables (λ {PENALTY:.2f}, from the fused graph's order)"


def search_every_pair(chain: Chain, spec: dict[str, Any], order: np.ndarray) -> MemberRun:
    """`whole_search` from `order` on one of the chain's workers (the rival's and the sweep's); WallLimitHit when
    the user's wall limit, the only thing that bounds it by time, passed first."""
    task = (spec, chain.executor.scatter(chain.z, broadcast=False), order, chain.graph.variables, chain.deadline)
    found = next(iter(chain.executor.run(whole_search, [task])))[1]
    if found.status == TIMED_OUT:
        raise WallLimitHit
    return found


def whole_search(spec: dict[str, Any], z: np.ndarray, order: np.ndarray, variables: tuple[str, ...],
                 deadline: float | None) -> MemberRun:
    """The order search over every pair that `spec` names (its penalty and bound on nodes) on the standardised data
    `z`, from `order` (a task of the rival and the sweep): its CPDAG as a member run, TIMED_OUT when the user's wall
    limit passed first; a search its bound on nodes stopped says so in the run's note (`error`)."""
    begin = time.perf_counter()
    found = call_within(BOUNDED_RUNNER, {"x": z, "penalty": spec["penalty"], "order": order, "pairs": None,
                                         "nodes": spec["nodes"]}, remaining(None, deadline))
    if found is None:
        return MemberRun(dict(spec), TIMED_OUT, None, None, None, time.perf_counter() - begin)
    dag, stopped = found
    cpdag = dag_to_cpdag(PDAG(variables, dag))
    note = f"stopped at its bound of {spec['nodes']:,} tree nodes" if stopped else None
    return MemberRun(dict(spec), OK, cpdag.directed, cpdag.undirected, None, time.perf_counter() - begin, note)
