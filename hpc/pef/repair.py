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

Where the fused graph is dense the halo is what a block costs: on a modular 2,000-variable problem with 27
candidate pairs per variable, 155 core variables reached 800 others, and one block's search took minutes.
With `upto`, each block is cut into parts whose search, halo counted, holds at most that many variables
(split_by_halo), as the polish cuts its searches.

The fGES is fGES's phases compiled (hpc.learners.ges_kernel; Tetrad's Fges with prior knowledge, which that does not
keep). `engine` "boss" runs each block's search as hpc.learners.order_search instead: BOSS over every candidate pair
among the block's columns, started from the graph's order. It takes 35-65 % of the fGES repair's seconds and was as
accurate on mosaic, sbm and Alarm-1000, but less on ws and Alarm-10000 (BENCHMARKS.md, "The repair's engine"), so
fGES stays the default. fGES's bounds on a search's size (`wide`) do not apply to it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from hpc.checks import check_choice, check_number
from hpc.learners.ensemble import MemberRun
from hpc.pef.candidates import candidate_pairs
from hpc.pef.parts import pack_walk
from hpc.pef.step import Chain, Step, StepMemory, searches
from hpc.store import canonical
from hpc.graphs.equivalence import dag_to_cpdag, is_acyclic, pdag_to_dag, reaches, topological_order
from hpc.graphs.metrics import marks
from hpc.graphs.pdag import PDAG

#: The repair's runner in the worker: fGES's phases compiled (hpc.learners.ges_kernel); with prior knowledge, which
#: that does not keep, Tetrad's Fges.
RUNNER = "hpc.learners.ges_kernel:run_ges_bounded"
KNOWING_RUNNER = "hpc.learners.tetrad:run_fges_bounded"
#: The searches a repair may run (RepairConfig.engine).
ENGINES = ("fges", "boss")
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
    rounds: int = 4
    # The repair's BIC penalty discount (Tetrad's documented default); 2.0, 2.54 and 4.0 were within 20
    # SHD of each other on the same problems.
    penalty: float = 2.0
    # Variables per repair search (the core of a block; its halo comes on top).
    block: int = MAX_BLOCK
    # Variables per repair search with its halo counted: blocks whose search would hold more are cut into parts
    # (split_by_halo). 0 = the whole halo on top of each block.
    upto: int = 0
    # A block whose search holds over `block` variables, halo counted, and over this many candidate pairs keeps
    # its start graph (wide). 0 = no bound; not used with `upto`.
    block_pairs: int = 10_000
    # A search over more than this many candidate pairs keeps its start graph, whatever its size (wide). 0 = no
    # bound. The fused graphs of seed 100 (tuning) at 1,000 variables have 4,509 (Alarm) to 13,827 (sf) pairs,
    # and 20,885 on layer, whose one search ran past 40 minutes (BENCHMARKS.md, "Large modules").
    pairs: int = 20_000
    # The search: "fges" (Tetrad's, from the graph so far) or "boss" (hpc.learners.order_search over the candidate
    # pairs, from the graph's order). On seeds 100-102 (tuning) at 1,000 variables "boss" gave SHD 4,400 against
    # 4,345 summed over ws, mosaic, sbm and Alarm, in 35-65 % of the repair's seconds; on Alarm-10000 seed 100
    # 2,963 against 2,829 (45 s of repair against 132).
    engine: str = "fges"

    def validate(self) -> None:
        check_choice("repair.engine", self.engine, ENGINES)
        check_number("repair.rounds", self.rounds, 0, 20, integer=True)
        check_number("repair.penalty", self.penalty, 1.0, 1000.0)
        check_number("repair.block", self.block, 10, 10_000_000, integer=True)
        if self.upto:
            check_number("repair.upto", self.upto, 10, 10_000_000, integer=True)
        check_number("repair.block_pairs", self.block_pairs, 0, 10**12, integer=True)
        check_number("repair.pairs", self.pairs, 0, 10**12, integer=True)


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


def partner_lists(pairs: np.ndarray, p: int) -> list[list[int]]:
    """Each variable's partners in `pairs`, in increasing order."""
    partners: list[list[int]] = [[] for _ in range(p)]
    for a, b in pairs.tolist():
        partners[a].append(b)
        partners[b].append(a)
    return [sorted(ws) for ws in partners]


def split_by_halo(core: np.ndarray, partners: list[list[int]], upto: int) -> list[np.ndarray]:
    """`core` in parts whose search (the part and every partner of it, `partner_lists`) holds at most `upto`
    variables; a variable whose own search is larger is a part alone. The core is walked breadth-first along
    its pairs, from its smallest index, so a part holds variables near each other and shares their halo."""
    inside = np.zeros(len(partners), dtype=bool)
    inside[core] = True
    return pack_walk(core.tolist(), lambda v: [w for w in partners[v] if inside[w]], lambda v: {v, *partners[v]},
                     upto)


@dataclass(frozen=True)
class Block:
    """One repair search: `columns` (core first, then halo) and, in their local indices, the start graph and
    the pairs it may join (those with an end in the core; None: any pair, as the sweep searches)."""

    columns: np.ndarray
    core: int
    directed: np.ndarray
    undirected: np.ndarray
    pairs: np.ndarray | None
    order: np.ndarray | None = None  # an order search's start (local indices); None: fGES from the start graph


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


def order_block(graph: PDAG, rank: np.ndarray, pairs: np.ndarray, core: np.ndarray) -> Block:
    """The order search over `core` and its halo, from `graph`'s order (`rank`: each variable's place in it): every
    candidate pair among its columns, so a halo variable is scored with its own parents there."""
    block = block_search(graph, pairs, core)
    local = np.full(graph.p, -1, dtype=np.int64)
    local[block.columns] = np.arange(len(block.columns))
    mine = local[pairs]
    return replace(block, pairs=mine[(mine >= 0).all(axis=1)],
                   order=np.argsort(rank[block.columns], kind="stable"))


def join_blocks(graph: PDAG, blocks: list[Block], results: list[tuple[np.ndarray, np.ndarray] | None]) -> PDAG:
    """The repaired CPDAG from the blocks' CPDAGs (a block without a result keeps its start graph); one block's
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


def block_pairs(block: Block) -> int:
    """The candidate pairs `block`'s search may join (0 where it may join any)."""
    return 0 if block.pairs is None else len(block.pairs)


def wide(block: Block, config: RepairConfig) -> bool:
    """Whether `block`'s search is too wide to run. Tetrad's fGES re-derives the CPDAG of its whole graph after
    each edge it adds or removes, so a search costs about its variables times the edges it tries: over
    `config.pairs` candidate pairs at any size (the fused layer-1000 of seed 100 is one search of 1,000 variables
    over 20,885 pairs, which ran past 40 minutes; seed 0's 26,772 took 13 minutes for its first round, after which
    its graph had 41,872), or over `config.block` variables, halo counted, and `config.block_pairs` pairs (the
    blocks of Alarm-10000 seed 0 reach 1,626-1,908 variables over 3,744-4,708 pairs; those of modular data at
    2,000-5,000 variables 1,151-3,678 over 5,908-39,129, and one search there ran past 7 minutes). With `upto`,
    the searches are cut to that size instead, and only the bound on pairs applies."""
    pairs = block_pairs(block)
    if config.pairs and pairs > config.pairs:
        return True
    return bool(config.block_pairs) and not config.upto and len(block.columns) > config.block \
        and pairs > config.block_pairs


def repair_search(x: np.ndarray, block: Block, penalty: float, until: float | None,
                  knowledge: dict | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """One block's search (fGES, or the order search where the block has a start order) in this process's worker
    (a dask task), with the `knowledge` about its columns (hpc.graphs.knowledge's indexed form); None when the user's
    wall limit `until` (`time.time()`, the same on every worker whenever the task starts) passed first."""
    from hpc.learners.ensemble import remaining
    from hpc.learners.order_search import RUNNER as ORDER_RUNNER
    from hpc.learners.worker import call_within

    if block.order is not None:
        dag = call_within(ORDER_RUNNER, {"x": np.ascontiguousarray(x[:, block.columns]), "penalty": penalty,
                                         "order": block.order, "pairs": block.pairs,
                                         **({"knowledge": knowledge} if knowledge else {})}, remaining(None, until))
        if dag is None:
            return None
        found = dag_to_cpdag(PDAG(tuple(map(str, range(len(block.columns)))), dag))
        return found.directed, found.undirected
    return call_within(KNOWING_RUNNER if knowledge else RUNNER,
                       {"x": np.ascontiguousarray(x[:, block.columns]), "penalty": penalty,
                        "directed": block.directed, "undirected": block.undirected, "pairs": block.pairs,
                        **({"knowledge": knowledge} if knowledge else {})},
                       remaining(None, until))


def round_blocks(graph: PDAG, pairs: np.ndarray, parts: list[np.ndarray],
                 config: RepairConfig) -> tuple[list[Block], list[int]]:
    """A round's searches over `parts` from `graph`, and which of them run (fGES leaves out the wide ones)."""
    if config.engine == "boss":
        rank = np.empty(graph.p, dtype=np.int64)
        rank[topological_order(pdag_to_dag(graph, strict=False))] = np.arange(graph.p)
        blocks = [order_block(graph, rank, pairs, core) for core in parts]
        return blocks, list(range(len(blocks)))
    blocks = [block_search(graph, pairs, core) for core in parts]
    return blocks, [b for b, block in enumerate(blocks) if not wide(block, config)]


class Repair(Step):
    """Up to `rounds` rounds of bounded fGES (or BOSS) over all variables (in blocks of the partition's clusters),
    until a round changes nothing; each finished round is kept in the checkpoint."""

    name, Config = "repair", RepairConfig
    doc = ("fGES (or BOSS, with engine=boss) over all variables from the fused graph, new edges only between pairs "
           "at most two steps apart")

    def enabled(self) -> bool:
        return self.config.rounds > 0

    def applies(self, chain: Chain) -> str | None:
        return "the whole-problem rival's graph stands: it has no seams" if chain.seamless else None

    def run(self, chain: Chain, memory: StepMemory) -> tuple[PDAG, dict[str, Any]]:
        graph, config = chain.graph, self.config
        settings = canonical([chain.settings, asdict(config)])
        states, rounds = [graph], []
        stopped = None
        method = f"{config.engine}-repair"
        while (stored := memory.get(len(states), {"method": method, "settings": settings,
                                                  "round": len(states)})) is not None:
            states.append(graph.with_edges(stored.directed, stored.undirected))
            rounds.append({"round": len(states) - 1, "seconds": round(stored.seconds, 3), "resumed": True})
        if rounds:
            chain.show.note(f"resuming the repair: {len(rounds)} round{'s' * (len(rounds) != 1)} already done")
        data = chain.executor.scatter(chain.z)
        cores = repair_blocks(chain.clusters, graph, config.block)
        while len(states) <= config.rounds and (len(states) < 2 or states[-1] != states[-2]):
            pairs = candidate_pairs(states[-1])
            if config.upto:
                partners = partner_lists(pairs, graph.p)
                parts = [part for core in cores for part in split_by_halo(core, partners, config.upto)]
            else:
                parts = cores
            blocks, run = round_blocks(states[-1], pairs, parts, config)
            if not run:
                stopped = (f"every block's search holds over repair.pairs {config.pairs:,} candidate pairs, or over "
                           f"repair.block {config.block} variables, halo counted, and repair.block_pairs "
                           f"{config.block_pairs:,}")
                chain.show.note(f"repair: no round {len(states)}: {stopped}")
                break
            largest = {"largest_search": max(len(blocks[b].columns) for b in run),
                       "largest_pairs": max(block_pairs(blocks[b]) for b in run)}
            chain.show.note(f"repair: round {len(states)} (at most {config.rounds}) over all {graph.p} variables "
                            f"in {len(run)} block{'s' * (len(run) != 1)}, {len(pairs)} candidate pairs"
                            + (f" ({len(blocks) - len(run)} wider blocks keep their graph)" if len(run) < len(blocks)
                               else "")
                            + f"; the largest search {largest['largest_search']:,} variables, halo counted, over "
                              f"{largest['largest_pairs']:,} pairs")
            begin = time.perf_counter()
            results: list = [None] * len(blocks)
            tasks = [(data, blocks[b], config.penalty, chain.deadline, chain.indexed(blocks[b].columns)) for b in run]
            for t, result in searches(chain, repair_search, tasks):
                results[run[t]] = result
            states.append(join_blocks(states[-1], blocks, results))
            spent = time.perf_counter() - begin
            memory.put(len(states) - 1, MemberRun({"method": method, "settings": settings,
                                                   "round": len(states) - 1}, "ok", states[-1].directed,
                                                  states[-1].undirected, None, spent))
            rounds.append({"round": len(states) - 1, "blocks": len(run), "candidate_pairs": int(len(pairs)), **largest,
                           "seconds": round(spent, 3), **({"wide_blocks": len(blocks) - len(run)}
                                                          if len(run) < len(blocks) else {})})
        return states[-1], {**changes(graph, states[-1]), "engine": config.engine, "penalty": config.penalty,
                            "rounds": rounds,
                            **({"stopped": stopped} if stopped else {})}
