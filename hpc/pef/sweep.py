"""PEF's sweep: one search over every pair of variables, started from the graph so far, at a stricter penalty.

Every earlier step is shown only some pairs: a cluster's search its own variables, the repair the fused
graph's neighbourhoods, the polish each cluster's Markov blanket. The sweep is shown every pair once, from a
start that already explains most of the data, so an edge it adds is scored against its ends' parents, not
against the empty graph as a whole-problem search first scores it; at a penalty discount above the steps'
2.0 it drops the weakest edges those steps kept.

Its engine is fGES from the graph itself (the repair's search: compiled, hpc.learners.ges_kernel, or Tetrad's
with prior knowledge), or, on data where over `dense` pairs pay an edge on their correlation alone, the order
search (BOSS, hpc.learners.order_search) from the graph's DAG order, bounded like the rival's by tree nodes per
variable. The choice was made with Tetrad's fGES, which scores each such pair again after every change near it and
re-derives the whole CPDAG after each change: on layer's tuning seeds (154,000 such pairs) it took 73-209 s and
ended 401-717 SHD, where the order search took 33-45 s and ended 190-249 (with no recut after it). On the
sparser data (Alarm, ws: 5,000-8,000 pairs) fGES and the recut after it were 24-40 SHD more accurate. The
threshold is the fGES start's (hpc.learners.starts.DENSE_PAIRS), not fitted here (BENCHMARKS.md, "A sweep over
every pair"). With prior knowledge, which the order search does not keep, the sweep is fGES.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hpc.checks import check_choice, check_number
from hpc.graphs.equivalence import pdag_to_dag, topological_order
from hpc.graphs.pdag import PDAG
from hpc.learners.ensemble import MemberRun
from hpc.learners.members import OK
from hpc.learners.starts import DENSE_PAIRS
from hpc.pef.candidates import candidate_pairs, gaining_pairs, too_many
from hpc.pef.repair import Block, changes, repair_search
from hpc.pef.rival import search_every_pair
from hpc.pef.step import Chain, Step, StepMemory, searches

ENGINES = ("auto", "order", "fges")


@dataclass(frozen=True)
class SweepConfig:
    # Up to this many variables; 0 = never. At 1,000 variables it took 2-25 s on seed 100 (tuning).
    upto: int = 2000
    # The sweep's BIC penalty discount. On seed 100 (tuning) of Alarm, Hailfinder, ws, sbm, er, hub and mosaic
    # at 1,000 variables (BENCHMARKS.md, "A sweep over every pair").
    penalty: float = 3.0
    # Runs only from a graph with at most this many candidate pairs (hpc.pef.candidates); 0 = no bound. The
    # fused graphs of seed 100 (tuning) of Alarm and the seven families at 1,000 variables have 4,509 (Alarm) to
    # 20,885 (layer); modular-2000 seed 100's 47,269, where the sweep ran over 9 minutes (BENCHMARKS.md, "Large
    # modules").
    pairs: int = 30_000
    # Runs only on data with at most this many pairs whose correlation alone pays an edge at its penalty
    # (hpc.pef.candidates.gaining_pairs); 0 = no bound. Tuning seed 100: Alarm-1000 7,974, ws 5,378, sbm 10,324, er
    # 14,367, hub 17,639, mosaic 23,114, sf 62,474 (its sweep 15-105 s), layer 154,123, er-2000 with 200 rows
    # 13,780, sf-2000 with 200 rows 135,487 (401 s); modular-2000 963,370 and modular-large-2000 1,021,555, where
    # the sweep from the rival's graph (24,747 candidate pairs, within `pairs`) ran over 10 minutes.
    gaining: int = 400_000
    # "order": the order search from the graph's DAG order; "fges": fGES from the graph (the engine
    # whenever there is prior knowledge); "auto": the order search on data with over `dense` pairs that gain alone
    # at the sweep's penalty, fGES otherwise.
    engine: str = "auto"
    # See `engine`; the fGES start's threshold (hpc.learners.starts.DENSE_PAIRS).
    dense: int = DENSE_PAIRS
    # The order search's tree nodes per variable (0 = no bound): the rival's bound, a count so that the graph is
    # the same on any machine.
    nodes: int = 1000

    def validate(self) -> None:
        check_number("sweep.upto", self.upto, 0, 10_000_000, integer=True)
        check_number("sweep.penalty", self.penalty, 1.0, 1000.0)
        check_number("sweep.pairs", self.pairs, 0, 10**12, integer=True)
        check_number("sweep.gaining", self.gaining, 0, 10**12, integer=True)
        check_choice("sweep.engine", self.engine, ENGINES)
        check_number("sweep.nodes", self.nodes, 0, 10**9, integer=True)
        check_number("sweep.dense", self.dense, 0, 10**12, integer=True)


def fingerprint(graph: PDAG) -> str:
    """Names the sweep's start graph, so a checkpointed result is reused only for the same start."""
    h = hashlib.sha256()
    for a in (graph.directed, graph.undirected):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]


class Sweep(Step):
    """One search over every pair of variables, from the graph so far; its result is kept in the checkpoint."""

    name, Config = "sweep", SweepConfig
    doc = "one search over every pair of variables (the order search, or fGES) from the graph so far, at a stricter " \
          "penalty"

    def enabled(self) -> bool:
        return self.config.upto > 0

    def applies(self, chain: Chain) -> str | None:
        if chain.graph.p > self.config.upto:
            return f"{chain.graph.p} variables, above sweep.upto {self.config.upto}"
        if self.config.gaining and (gaining := gaining_pairs(chain.z, self.config.penalty)) > self.config.gaining:
            return f"{gaining:,} pairs of the data gain alone at penalty {self.config.penalty:g}, above sweep.gaining " \
                   f"{self.config.gaining:,}"
        if not self.config.pairs:  # no bound: leave the pairs uncounted
            return None
        return too_many(len(candidate_pairs(chain.graph)), self.config.pairs, "sweep.pairs")

    def engine(self, chain: Chain) -> str:
        """The configured engine (for "auto", by the pairs that gain alone), or fGES where there is prior knowledge
        (which the order search does not keep)."""
        if chain.knowledge is not None:
            return "fges"
        if self.config.engine == "auto":
            return "order" if gaining_pairs(chain.z, self.config.penalty) > self.config.dense else "fges"
        return self.config.engine

    def spec(self, chain: Chain, engine: str) -> dict[str, Any]:
        """The sweep's search by `engine`, as its checkpoint key: the engine, penalty and start graph (and the order
        search's bound on nodes)."""
        start = {"penalty": self.config.penalty, "start": fingerprint(chain.graph)}
        if engine == "fges":
            return {"method": "fges-sweep", **start}
        return {"method": "boss-every-pair", **start, "nodes": self.config.nodes * chain.graph.p or None}

    def run(self, chain: Chain, memory: StepMemory) -> tuple[PDAG, dict[str, Any]]:
        graph, engine = chain.graph, self.engine(chain)
        spec = self.spec(chain, engine)
        pairs = len(candidate_pairs(graph))  # what fGES's search costs grows with them (hpc.pef.candidates)
        stored = memory.get(0, spec)
        if stored is not None:
            chain.show.note("resuming: the sweep's result is in the checkpoint")
            found = stored
        else:
            what = "fGES" if engine == "fges" else "BOSS (the order search from its DAG's order)"
            chain.show.note(f"sweep: one {what} over every pair of the {graph.p} variables from the graph so far "
                            f"(penalty {self.config.penalty:g}; the start has {pairs:,} candidate pairs)")
            found = fges_sweep(chain, spec) if engine == "fges" else order_sweep(chain, spec)
            memory.put(0, found)
        assert found.directed is not None and found.undirected is not None
        if engine == "order":
            chain.settled = (f"the sweep's order search over every pair at penalty {self.config.penalty:g} left the "
                             "graph; a polish at a laxer penalty would put back the weak edges it dropped")
        swept = graph.with_edges(found.directed, found.undirected)
        return swept, {**changes(graph, swept), "engine": engine, "penalty": self.config.penalty, "start_pairs": pairs,
                       **({"search": found.error} if found.error else {}),
                       **({"resumed": True} if stored is not None else {})}


def fges_sweep(chain: Chain, spec: dict[str, Any]) -> MemberRun:
    """Tetrad's fGES over every pair from the chain's graph, under the chain's knowledge."""
    graph, begin = chain.graph, time.perf_counter()
    whole = Block(np.arange(graph.p), graph.p, graph.directed, graph.undirected, None)  # no bound on pairs
    task = (chain.executor.scatter(chain.z), whole, spec["penalty"], chain.deadline, chain.indexed(np.arange(graph.p)))
    directed, undirected = next(searches(chain, repair_search, [task]))[1]
    return MemberRun(spec, OK, directed, undirected, None, time.perf_counter() - begin)


def order_sweep(chain: Chain, spec: dict[str, Any]) -> MemberRun:
    """The order search over every pair from a topological order of a DAG of the chain's graph."""
    return search_every_pair(chain, spec, topological_order(pdag_to_dag(chain.graph, strict=False)))
