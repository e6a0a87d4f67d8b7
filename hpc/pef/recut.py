"""PEF's recut: more polish passes, each over the communities of the graph so far instead of PEF's clusters.

PEF's partition cuts where the data's correlations are weak; the finished graph's own Louvain communities
(hpc.pef.polish.communities) cut where the graph is sparse, so their seams fall elsewhere and a polish over
them searches PEF's seams from inside. Only where the communities are blocks (under `crossing` of the edges
join two): a search over a small core with a large blanket fits the blanket's variables without their own
parents. On seed 100 (tuning, 1,000 variables) one pass took SHD 252 -> 235 on Alarm, 342 -> 328 on
Hailfinder, 582 -> 553 on ws, 296 -> 292 on sbm (1-5 s each) and 654 -> 512 on mosaic (74 s); a second took
mosaic to 477 and ws to 542, and cost Alarm 4. On er and hub one pass cost 16 and 26 SHD. It does not run
after a sweep by the order search (hpc.pef.sweep): after it, the recut's passes at penalty 2 took layer's tuning
seeds from 249, 190 and 221 SHD to 535, 551 and 534, and mosaic seed 100's from 144 to 165.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hpc.checks import check_number
from hpc.graphs.pdag import PDAG
from hpc.pef.partition import crossing_share
from hpc.pef.polish import PolishConfig, communities, polish_graph
from hpc.pef.repair import changes
from hpc.pef.step import Chain, Step, StepMemory


@dataclass(frozen=True)
class RecutConfig:
    # At most this many passes; 0 = none. A pass that leaves a graph the recut has already passed through (its start,
    # or one a pass before: on Alarm-10000 seed 100 one edge flipped back and forth from the sixth pass on) ends it:
    # each pass follows from its graph alone, so the passes would repeat. Each pass's communities cut elsewhere, and
    # on large block-structured problems passes kept gaining. On tuning seeds (Alarm-10000 seeds 100 and 101,
    # sbm-5000 and mosaic-5000 seed 100, Alarm-30000 seed 100; every pass's graph scored) 8, 12 and 16 passes with
    # `settle` gave 18,574, 18,492 and 18,438 SHD in all over 34, 44 and 52 passes (mosaic 2,439, 2,400, 2,370;
    # Alarm-30000 9,067, 9,032, 9,008; the others stopped by `settle` at 4-10); 12 keeps Alarm-30000's run well
    # within its 900 s (a pass there is 30-40 s). Since the polish's join keeps the pairs two searches each handed
    # the other (hpc.pef.polish.handed_both_ways), 12 passes give 18,191 there.
    passes: int = 12
    # ... each only while under this share of the graph's edges join two communities: 0.09-0.14 on the
    # block-structured families (Alarm, Hailfinder, ws, sbm, mosaic, layer), 0.41-0.44 on er, hub and sf (their
    # true graphs, seed 100).
    crossing: float = 0.3
    # ... and ends after a pass that changes (adds, removes or reorients) under this share of the graph's edges: on
    # the tuning seeds above (12 passes), 0.1 % stopped the Alarm-10000 and sbm runs after 4-10 passes, 44 passes in
    # all against 60, for the same SHD in all as none (0.2 %: 11 more, 0.5 %: 43 more).
    settle: float = 0.001
    # Each pass's searches hold at most this many variables, and make at most `nodes` tree nodes per variable of
    # the problem in all, as the polish's.
    upto: int = PolishConfig.upto
    nodes: int = PolishConfig.nodes

    def validate(self) -> None:
        check_number("recut.passes", self.passes, 0, 1000, integer=True)
        check_number("recut.crossing", self.crossing, 0.0, 1.0)
        check_number("recut.settle", self.settle, 0.0, 1.0)
        check_number("recut.upto", self.upto, 1, 10_000_000, integer=True)
        check_number("recut.nodes", self.nodes, 0, 10**9, integer=True)


class Recut(Step):
    """Polish passes over the graph's own communities, while they are blocks."""

    name, Config = "recut", RecutConfig
    doc = "polish passes over the finished graph's own communities, which cut elsewhere than the partition"

    def __init__(self, config: RecutConfig | None = None):
        super().__init__(config)
        self._last: tuple[PDAG, list[np.ndarray]] | None = None

    def communities(self, graph: PDAG) -> list[np.ndarray]:
        """`graph`'s Louvain communities, kept for the next call: `applies` and the first pass ask for the same
        graph's (29 s at 100,000 variables)."""
        if self._last is None or self._last[0] is not graph:
            self._last = (graph, communities(graph))
        return self._last[1]

    def enabled(self) -> bool:
        return self.config.passes > 0

    def applies(self, chain: Chain) -> str | None:
        if chain.settled:
            return chain.settled
        share = crossing_share(chain.graph, self.communities(chain.graph))
        if share >= self.config.crossing:
            return (f"{share:.0%} of the edges join two of the graph's communities, not under recut.crossing "
                    f"{self.config.crossing:g}: it has no blocks")
        return None

    def run(self, chain: Chain, memory: StepMemory) -> tuple[PDAG, dict[str, Any]]:
        before = graph = chain.graph
        passes: list[dict[str, Any]] = []
        seen = {graph}
        for r in range(self.config.passes):
            cut = self.communities(graph)
            share = crossing_share(graph, cut)
            if share >= self.config.crossing:
                break
            config = PolishConfig(upto=self.config.upto, nodes=self.config.nodes)
            graph, account = polish_graph(chain, graph, cut, config, memory.part(str(r + 1)), f"recut {r + 1}")
            passes.append({**account, "crossing": round(share, 3)})
            if graph in seen:  # each pass's cut and searches follow from its graph alone: the passes would repeat
                break
            seen.add(graph)
            if sum(v for k, v in account.items() if k.startswith("edges_")) < self.config.settle * graph.n_edges:
                break
        return graph, {**changes(before, graph), "passes": passes}
