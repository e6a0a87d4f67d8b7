"""PEF's repair step: one score-based search over all variables, started from the fused graph.

A cluster's search never sees a variable's parents in other clusters, so their effect shows up as
extra edges inside the cluster, and fusion's strict cross-edge tests miss true cross edges. The repair
runs fGES (faithfulness assumed) over every variable, started from the fused CPDAG and allowed to add
an edge only between candidate pairs: pairs adjacent in the fused graph or two steps apart in it
(spouses and grandparents, where a hidden parent's effect lands). Its backward phase may remove any
edge. Each round takes its candidates from the previous round's graph, so an edge can be found two
steps at a time. Adding the cross-cluster pairs fusion's first screen kept, or each variable's most
correlated ones, made it worse on the tuning problems (more false edges).

Above MAX_BLOCK variables the search runs in blocks: Tetrad's Fges re-derives the CPDAG of the whole
graph (Meek's rules over every edge) after each edge it adds or removes, so one search over 10,000
variables ran past 300 s where a block of 1,000 takes a few seconds. A block is a group of the partition's
clusters (those joined by the most fused edges first, so most seams fall inside a block) plus a halo:
the variables outside it in a candidate pair with it, so that a cross-block pair is scored with the
neighbours it has. A block decides the pairs whose smaller (data-derived) index lies in it; the blocks'
DAGs are joined, and a cross-block edge that would close a cycle is reversed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpc.checks import check_number
from hpc.graphs.equivalence import dag_to_cpdag, is_acyclic, pdag_to_dag, reaches
from hpc.graphs.metrics import marks
from hpc.graphs.pdag import PDAG, pair_keys

#: The repair's runner in the JVM worker (hpc.learners.tetrad).
RUNNER = "hpc.learners.tetrad:run_fges_bounded"
#: A repair round may take GUARD_FACTOR times the estimation's seconds, and at least GUARD_FLOOR seconds;
#: past that it is cut and the last finished round's graph is kept (the meta says so). On layered
#: cascades (near-deterministic data, layer-1000) the first round ran over 10 minutes where the whole
#: estimation took under one; on Alarm, er and sf a round took at most half the estimation's time.
GUARD_FACTOR = 2.0
GUARD_FLOOR = 300.0
#: All steps after fusion (repair, polish, rival, sweep, recut) share one budget as well: POST_FACTOR times
#: the estimation's seconds, at least POST_FLOOR seconds. With a guard per step alone, layer-1000 seed 0 ran
#: past 27 minutes (each step, each of the rival's and the recut's passes, spent its own 300 s); on the
#: families, Alarm up to 30,000 variables and Table VI's networks the steps took at most 1.9x the
#: estimation's seconds, or under 520 s (sf-1000 seed 0, the closest), so the budget does not bind there.
POST_FACTOR = 4.0
POST_FLOOR = 600.0
#: Largest block one repair search covers; problems up to this size are repaired in one search. On
#: Alarm-10000 seed 100 (tuning; no test seed) blocks of 500, 1,000 and 2,000 gave SHD 3,853, 3,847 and
#: 3,850 with 49, 101 and 256 s of repair; on Alarm-1000 seed 100 blocks of 500 gave SHD 296 against 295
#: for one search.
MAX_BLOCK = 1000


@dataclass(frozen=True)
class RepairConfig:
    # At most this many rounds; the repair stops earlier once a round changes nothing. 0 = no repair (the
    # paper's PEF, kept by the paper_* experiments). Tuned on Alarm-1000 and er-1000 seed 100 (no test
    # seed): Alarm stopped changing after 2 rounds (SHD 438 -> 295), er after 4 (735 -> 443 -> 416 -> 393
    # -> 391).
    repair_rounds: int = 4
    # The repair's BIC penalty discount (Tetrad's documented default); 2.0, 2.54 and 4.0 were within 20
    # SHD of each other on the same problems.
    repair_penalty: float = 2.0
    # Variables per repair search (the core of a block; its halo comes on top).
    repair_block: int = MAX_BLOCK
    # Up to this many variables, one whole-problem fGES runs after the polish as a rival, polished over the same
    # clusters, and the graph with the higher BIC stands (hpc.pef.rival); 0 = never. 2000 is about where one
    # whole fGES still takes as long as PEF.
    rival_upto: int = 2000
    # ... and only when at least this share of PEF's edges join two clusters. On seed 100 (tuning) the
    # block-structured problems had 0.14-0.18 (Alarm, Hailfinder, ws, sbm), where BIC preferred the polished
    # rival on two though it was less accurate, and er and hub 0.42-0.43, where the polished rival was better
    # by 90-100 SHD; 0.3 is the middle of that gap (BENCHMARKS.md, "A whole-problem rival").
    rival_crossing: float = 0.3
    # After the repair, BOSS over each cluster and its Markov blanket (hpc.pef.polish), in searches of at most
    # this many variables (a cluster whose search would be larger is searched in parts); 0 = never. A search's
    # time grows about with the cube of its variables: on seed 100 of Alarm, er and hub at 1,000 variables, 250
    # was as accurate as 500 (er, Alarm) or more (hub) at half the seconds, and 150 less accurate. On the test
    # seeds it gained on every family but Alarm-1000 (1 SHD behind 500), and it costs Asia-200 seed 0 five
    # SHD (BENCHMARKS.md, "A BOSS polish per cluster" and "Column order").
    polish_upto: int = 250
    # After the polish (and the rival), this many more polish passes, each over the Louvain communities of the
    # graph so far rather than PEF's clusters (hpc.pef.polish.communities), so the seams are searched from
    # inside; 0 = none. On seed 100 (tuning, 1,000 variables) one pass took SHD 252 -> 235 on Alarm, 342 -> 328
    # on Hailfinder, 582 -> 553 on ws, 296 -> 292 on sbm (1-5 s each) and 654 -> 512 on mosaic (74 s); a second
    # took mosaic to 477 and ws to 542, and cost Alarm 4. On er and hub one pass cost 16 and 26 SHD.
    recut_passes: int = 2
    # ... and only while under this share of the graph's edges join two communities: 0.09-0.14 on the
    # block-structured families (Alarm, Hailfinder, ws, sbm, mosaic, layer), 0.41-0.44 on er, hub and sf (their
    # true graphs, seed 100).
    recut_crossing: float = 0.3
    # Up to this many variables, the sweep (hpc.pef.sweep): one fGES over every pair, started from the graph
    # after the rival, before the recut; 0 = never. At 1,000 variables it took 2-25 s on seed 100 (tuning).
    sweep_upto: int = 2000
    # The sweep's BIC penalty discount. On seed 100 (tuning) of Alarm, Hailfinder, ws, sbm, er, hub and mosaic
    # at 1,000 variables (BENCHMARKS.md, "A sweep over every pair").
    sweep_penalty: float = 3.0

    def validate(self) -> None:
        check_number("repair_rounds", self.repair_rounds, 0, 20, integer=True)
        check_number("repair_penalty", self.repair_penalty, 1.0, 1000.0)
        check_number("repair_block", self.repair_block, 10, 10_000_000, integer=True)
        check_number("rival_upto", self.rival_upto, 0, 10_000_000, integer=True)
        check_number("rival_crossing", self.rival_crossing, 0.0, 1.0)
        check_number("polish_upto", self.polish_upto, 0, 10_000_000, integer=True)
        check_number("recut_passes", self.recut_passes, 0, 10, integer=True)
        check_number("recut_crossing", self.recut_crossing, 0.0, 1.0)
        check_number("sweep_upto", self.sweep_upto, 0, 10_000_000, integer=True)
        check_number("sweep_penalty", self.sweep_penalty, 1.0, 1000.0)


def _pairs(rows: np.ndarray, p: int) -> np.ndarray:
    """Unique unordered pairs (i < j) of `rows`."""
    keys = np.unique(pair_keys(rows, p))
    return np.stack([keys // p, keys % p], axis=1) if len(keys) else np.empty((0, 2), dtype=np.int64)


def candidate_pairs(graph: PDAG) -> np.ndarray:
    """Pairs the repair may join: adjacent in `graph`, or two steps apart in it."""
    p = graph.p
    edges = np.concatenate([graph.directed, graph.undirected])
    both = np.concatenate([edges, edges[:, ::-1]])  # (v, neighbour) both ways
    by_node = both[np.argsort(both[:, 0], kind="stable")]
    starts = np.searchsorted(by_node[:, 0], np.arange(p + 1))
    two_steps = []
    for v in range(p):
        nb = by_node[starts[v]:starts[v + 1], 1]
        if len(nb) > 1:
            a, b = np.triu_indices(len(nb), 1)
            two_steps.append(np.stack([nb[a], nb[b]], axis=1))
    return _pairs(np.concatenate([edges, *two_steps]), p)


def changes(before: PDAG, after: PDAG) -> dict[str, int]:
    """Edges the repair added, removed and reoriented (same adjacency, other marks), as CPDAGs: the three
    parts of the SHD between `before` and `after`."""
    bk, bc = marks(before)
    ak, ac = marks(after)
    _, ib, ia = np.intersect1d(bk, ak, assume_unique=True, return_indices=True)
    return {"edges_added": len(ak) - len(ia), "edges_removed": len(bk) - len(ib),
            "edges_reoriented": int(np.count_nonzero(bc[ib] != ac[ia]))}


def repair_blocks(clusters: list[np.ndarray], graph: PDAG, size: int) -> list[np.ndarray]:
    """The partition's clusters grouped into blocks of at most `size` variables (a larger cluster stays
    alone): repeatedly merge the two blocks joined by the most edges of `graph`, then, once no joined
    pair fits, the two smallest that fit. Deterministic: ties go to the smaller block indices."""
    if sum(len(c) for c in clusters) <= size:
        return [np.sort(np.concatenate(clusters))]
    label = np.empty(graph.p, dtype=np.int64)
    for b, c in enumerate(clusters):
        label[c] = b
    edges = np.concatenate([graph.directed, graph.undirected])
    a, b = label[edges[:, 0]], label[edges[:, 1]]
    k = len(clusters)
    links = np.zeros((k, k))
    np.add.at(links, (a[a != b], b[a != b]), 1)
    links += links.T
    members = [[i] for i in range(k)]
    sizes = np.array([len(c) for c in clusters], dtype=float)
    alive = np.ones(k, dtype=bool)
    while True:
        fits = (sizes[:, None] + sizes[None, :] <= size) & np.outer(alive, alive) & ~np.eye(k, dtype=bool)
        if not fits.any():
            break
        joined = fits & (links > 0)
        # most edges first; among unjoined blocks the smallest combined size (negated, so argmax finds it)
        score = np.where(joined, links, np.where(fits, -(sizes[:, None] + sizes[None, :]) - 1e9, -np.inf))
        i, j = np.unravel_index(int(np.argmax(score)), score.shape)
        i, j = min(i, j), max(i, j)
        members[i] += members[j]
        sizes[i] += sizes[j]
        links[i] += links[j]
        links[:, i] += links[:, j]
        links[i, i] = 0
        alive[j] = False
    return [np.sort(np.concatenate([clusters[c] for c in members[i]])) for i in range(k) if alive[i]]


@dataclass(frozen=True)
class Block:
    """One repair search: `columns` (core first, then halo) and, in their local indices, the start graph and
    the pairs it may join (those with an end in the core; None: any pair, as the sweep searches)."""

    columns: np.ndarray
    core: int
    directed: np.ndarray
    undirected: np.ndarray
    pairs: np.ndarray | None


def block_search(graph: PDAG, pairs: np.ndarray, core: np.ndarray) -> Block:
    """The search over `core` and its halo (the variables in a candidate pair with it)."""
    inside = np.zeros(graph.p, dtype=bool)
    inside[core] = True
    mine = pairs[inside[pairs[:, 0]] | inside[pairs[:, 1]]]
    halo = np.setdiff1d(mine.ravel(), core)
    columns = np.concatenate([core, halo])
    local = np.full(graph.p, -1, dtype=np.int64)
    local[columns] = np.arange(len(columns))
    sub = graph.subgraph(columns)
    return Block(columns, len(core), sub.directed, sub.undirected, local[mine])


def join_blocks(graph: PDAG, blocks: list[Block], results: list[tuple[np.ndarray, np.ndarray] | None]) -> PDAG:
    """The repaired CPDAG from the blocks' CPDAGs (a block cut by its guard keeps its start graph); one block's
    result is taken as it is."""
    if len(blocks) == 1 and results[0] is not None:
        return graph.with_edges(*results[0])
    owner = np.empty(graph.p, dtype=np.int64)
    for b, block in enumerate(blocks):
        owner[block.columns[:block.core]] = b
    kept = []
    for b, (block, result) in enumerate(zip(blocks, results)):
        names = tuple(str(i) for i in range(len(block.columns)))
        found = PDAG(names, *(result if result is not None else (block.directed, block.undirected)))
        edges = block.columns[pdag_to_dag(found, strict=False).directed]
        kept.append(edges[owner[edges.min(axis=1)] == b])
    edges = np.concatenate(kept)
    same = owner[edges[:, 0]] == owner[edges[:, 1]]
    dag = graph.with_edges(edges, np.empty((0, 2), dtype=np.int64))
    if not is_acyclic(dag):
        dag = graph.with_edges(acyclic_union(graph.p, edges[same], edges[~same]), np.empty((0, 2), dtype=np.int64))
    return dag_to_cpdag(dag)


def acyclic_union(p: int, base: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """`base` (acyclic) plus each edge of `extra` in turn, reversed where it would close a cycle (in a DAG
    an edge and its reverse cannot both close one)."""
    children: list[set[int]] = [set() for _ in range(p)]
    for a, b in base.tolist():
        children[a].add(b)
    out = [base]
    for a, b in sorted(map(tuple, extra.tolist())):
        if reaches(children, b, a):
            a, b = b, a
        children[a].add(b)
        out.append(np.array([[a, b]], dtype=np.int64))
    return np.concatenate(out)


def repair_search(x: np.ndarray, block: Block, penalty: float, threads: int, until: float | None,
                  knowledge: dict | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """One block's search in this process's JVM worker (a dask task), with the `knowledge` about its columns
    (hpc.graphs.knowledge's indexed form); None when the wall clock passed `until` (`time.time()`, the same
    on every worker whenever the task starts) first."""
    from hpc.learners.ensemble import remaining
    from hpc.learners.worker import call_within

    return call_within(RUNNER, {"x": np.ascontiguousarray(x[:, block.columns]), "penalty": penalty,
                                "directed": block.directed, "undirected": block.undirected, "pairs": block.pairs,
                                "threads": threads, **({"knowledge": knowledge} if knowledge else {})},
                       remaining(None, until))
