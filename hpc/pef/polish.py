"""PEF's polish step: BOSS over each cluster and its Markov blanket, on the graph the rival or the repair left.

The repair's fGES fixes the seams edge by edge; a permutation search (BOSS) finds better DAGs than fGES
from the same candidates, but one BOSS over all variables is dear (each variable is tried at every
position). Per cluster it is cheap: each
cluster's variables are searched together with their Markov blanket in the graph so far (parents,
children and the children's other parents, wherever they lie), so a parent across a seam is in the
search; BOSS starts from that graph's DAG order and may give a variable parents only among its
candidate partners (hpc.pef.candidates.candidate_pairs), in our own order search (hpc.learners.order_search:
Tetrad's BOSS's DAGs in a tenth of its seconds or less). Each cluster decides its own variables' parents;
the parent sets are joined, and a cross-cluster edge that would close a cycle is reversed. A cluster whose
search would be too large is searched in parts that follow the graph's edges (split_core), so the
polish stays affordable on the large clusters of graphs without block structure. The same searches run over
any grouping of the variables: the pipeline's recut runs them again over the finished graph's own communities
(`communities`), whose cuts fall elsewhere than the partition's.

On Alarm-1000 seed 100 (tuning) the blanket was the trade-off between a halo of the adjacent variables
only (SHD 263) and of every candidate partner (246, at 5x the seconds, and 8x on er-1000); with the
blanket, 260.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx

import numpy as np

from hpc.checks import check_number
from hpc.graphs.equivalence import dag_to_cpdag, pdag_to_dag, topological_order
from hpc.graphs.pdag import PDAG, pair_keys
from hpc.learners.ensemble import MemberRun
from hpc.learners.order_search import BOUNDED_RUNNER, RUNNER, partners_of  # RUNNER: Tetrad's BOSS, for knowledge
from hpc.pef.partition import largest_cluster
from hpc.pef.parts import pack_walk
from hpc.pef.candidates import PairIndex, candidate_pairs
from hpc.pef.repair import acyclic_union, changes
from hpc.pef.step import Chain, Step, StepMemory, searches


@dataclass(frozen=True)
class PolishConfig:
    # Searches of at most this many variables (a cluster whose search would be larger is searched in parts); 0 =
    # no polish. On seed 100 of Alarm, er and hub at 1,000 variables, 250 was as accurate as 500 (er, Alarm) or
    # more (hub), and 150 less accurate (BENCHMARKS.md, "A BOSS polish per cluster", with Tetrad's BOSS).
    upto: int = 250
    # BOSS's BIC penalty discount (Tetrad's documented default, the repair's).
    penalty: float = 2.0
    # Tree nodes per variable of the problem that the step's searches may make in all (0 = no bound), as for the
    # rival's and the sweep's one search: each search its share by its variables, past which it stops at the order
    # it reached. A count, not seconds, so the graph is the same on any machine; a node costs 5-15 us compiled. For
    # a user who must bound a dense problem's polish; no bound by default, since the polish's work there is what
    # earns: on layer-1000 seed 102 (tuning) it made 4.9 million nodes, and stopped at 1,000 a variable it ended
    # 348 SHD worse (BENCHMARKS.md, "A BOSS polish per cluster").
    nodes: int = 0

    def validate(self) -> None:
        check_number("polish.upto", self.upto, 0, 10_000_000, integer=True)
        check_number("polish.penalty", self.penalty, 1.0, 1000.0)
        check_number("polish.nodes", self.nodes, 0, 10**9, integer=True)


@dataclass(frozen=True)
class PolishBlock:
    """One BOSS search: `columns` (the cluster first, then its blanket) and, in their local indices, the
    start order and the pairs a variable may take parents from."""

    columns: np.ndarray
    core: int
    order: np.ndarray
    pairs: np.ndarray

    def fingerprint(self) -> str:
        """Names the search's input, so a checkpointed result is reused only for the same search."""
        h = hashlib.sha256()
        for a in (self.columns, self.order, self.pairs):
            h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
        return f"{self.core}:{h.hexdigest()[:16]}"


def blanket(mb: list[set[int]], core: np.ndarray) -> np.ndarray:
    """The variables outside `core` in the Markov blanket of some variable in it (`mb`: each variable's, from
    `blankets`), sorted; from the blankets listed once, not from every edge for each of a pass's searches."""
    inside = core.tolist()
    return np.array(sorted(set().union(*(mb[v] for v in inside)).difference(inside)), dtype=np.int64)


def repaired_order(graph: PDAG) -> tuple[PDAG, np.ndarray]:
    """A DAG of the repaired CPDAG `graph` and each variable's place in its (data-derived) topological order."""
    dag = pdag_to_dag(graph, strict=False)
    rank = np.empty(graph.p, dtype=np.int64)
    rank[topological_order(dag)] = np.arange(graph.p)
    return dag, rank


def blankets(dag: PDAG) -> list[set[int]]:
    """Each variable's Markov blanket in `dag` (parents, children, the children's other parents)."""
    parents: list[set[int]] = [set() for _ in range(dag.p)]
    children: list[set[int]] = [set() for _ in range(dag.p)]
    for a, b in dag.directed.tolist():
        parents[b].add(a)
        children[a].add(b)
    out = [parents[v] | children[v] for v in range(dag.p)]
    for v in range(dag.p):
        for c in children[v]:
            out[v] |= parents[c]
        out[v].discard(v)
    return out


def split_core(rank: np.ndarray, core: np.ndarray, upto: int, mb: list[set[int]],
               near: list[np.ndarray]) -> list[np.ndarray]:
    """`core` in parts whose search (part and blanket) has at most `upto` variables, or `core` whole when it
    fits. Parts grow along the start graph's edges inside the core (`near`: each variable's neighbours in it;
    breadth first from the earliest variable in its order), so a part's variables share much of their blankets; a
    variable whose blanket alone is larger is a part of its own, whose search is then over the cap and does not
    run."""
    if not upto or len(core) + len(blanket(mb, core)) <= upto:
        return [core]
    inside = set(core.tolist())
    return pack_walk(sorted(inside, key=lambda v: rank[v]),
                     lambda v: sorted((u for u in near[v].tolist() if u in inside), key=lambda u: rank[u]),
                     lambda v: {v} | mb[v], upto)


def polish_blocks(graph: PDAG, clusters: list[np.ndarray], upto: int = 0,
                  ordered: tuple[PDAG, np.ndarray] | None = None) -> list[PolishBlock]:
    """The searches, from the repaired CPDAG `graph`: one per cluster, or, where a cluster's search would hold
    more than `upto` variables (0: no limit), one per part of it (split_core). `ordered`: repaired_order(graph), if
    the caller has it."""
    dag, rank = ordered or repaired_order(graph)
    pairs = PairIndex(graph.p, candidate_pairs(graph))
    mb, near = blankets(dag), partners_of(dag.p, dag.directed)  # near: listed once, not per core split
    blocks = []
    for cluster in clusters:
        for core in split_core(rank, cluster, upto, mb, near):
            columns = np.concatenate([core, blanket(mb, core)])
            blocks.append(PolishBlock(columns, len(core), np.argsort(rank[columns], kind="stable"),
                                      pairs.within(columns)))
    return blocks


def join_parents(graph: PDAG, blocks: list[PolishBlock], results: list[np.ndarray | None],
                 ordered: tuple[PDAG, np.ndarray] | None = None) -> PDAG:
    """The polished CPDAG: each cluster's variables take the parents its search gave them (a search that
    did not finish keeps the repaired DAG's); a pair two searches joined both ways, or each oriented into the
    other's variable (handed_both_ways), keeps the direction of the repaired DAG's order; a cross-cluster edge
    that would close a cycle is reversed (`ordered` as for polish_blocks)."""
    dag, rank = ordered or repaired_order(graph)
    owner = np.empty(graph.p, dtype=np.int64)
    for b, block in enumerate(blocks):
        owner[block.columns[:block.core]] = b
    kept, handed = [], []
    for b, (block, result) in enumerate(zip(blocks, results)):
        if result is None:
            kept.append(dag.directed[owner[dag.directed[:, 1]] == b])
            continue
        found = block.columns[result]
        mine = owner[found[:, 1]] == b
        kept.append(found[mine])
        handed.append(found[~mine & (owner[found[:, 0]] == b)])
    edges = np.concatenate(kept + [handed_both_ways(graph.p, handed, rank)])
    forward = rank[edges[:, 0]] < rank[edges[:, 1]]
    edges = edges[~repeated(pair_keys(edges, graph.p)) | forward]  # of a pair joined both ways, the repaired order's
    same = owner[edges[:, 0]] == owner[edges[:, 1]]
    directed = acyclic_union(graph.p, edges[same], edges[~same])
    return dag_to_cpdag(graph.with_edges(directed, np.empty((0, 2), dtype=np.int64)))


def handed_both_ways(p: int, handed: list[np.ndarray], rank: np.ndarray) -> np.ndarray:
    """Of the edges each search oriented from its own variable into another search's (`handed`; the other search
    decides that variable's parents), the pairs both searches joined this way, each into the other's variable, so
    that neither kept the pair: the edge along the repaired order `rank`. Both found the adjacency. On Alarm-30000
    seed 100 (tuning) the polish's searches handed 109 pairs both ways and each recut pass's 7-35; dropping them,
    the recut's passes lowered the graph's BIC pass by pass and left its SHD at 9,032-9,067; keeping them, 8,874
    after 12 passes. On the five larger tuning problems of the recut's passes (hpc.pef.recut) 18,191 SHD in all
    against 18,492; at 1,000 variables (seeds 100-102) level, but for sf and layer, whose bounded searches after
    the polish move by tens of SHD under any change before them."""
    edges = np.concatenate(handed) if handed else np.empty((0, 2), dtype=np.int64)
    twice = edges[repeated(pair_keys(edges, p))]
    return twice[rank[twice[:, 0]] < rank[twice[:, 1]]]


def repeated(keys: np.ndarray) -> np.ndarray:
    """Which entries of `keys` occur more than once."""
    unique, count = np.unique(keys, return_counts=True)
    return np.isin(keys, unique[count > 1])


def communities(graph: PDAG, seed: int = 0) -> list[np.ndarray]:
    """The Louvain communities of `graph`'s skeleton (networkx, seeded): groups of variables cut where the graph
    itself is sparse, not where PEF's partition cut the data, so a polish over them searches PEF's seams from
    inside. Nodes enter in index order, which the pipeline derives from the data, so the cut does not depend
    on the file's column order."""
    skeleton = nx.Graph()
    skeleton.add_nodes_from(range(graph.p))
    skeleton.add_edges_from(np.vstack([graph.directed, graph.undirected]).tolist())
    found = nx.community.louvain_communities(skeleton, seed=seed)
    return sorted((np.array(sorted(c), dtype=np.int64) for c in found), key=lambda c: int(c[0]))


def shares(sizes: list[int], nodes: int) -> list[int | None]:
    """Each search's bound on tree nodes: `nodes` in all (0: no bound) shared in proportion to the searches'
    `sizes` (variables; 0 for a search that does not run)."""
    held = sum(sizes)
    return [max(1, nodes * size // held) if nodes and size else None for size in sizes]


def polish_search(x: np.ndarray, block: PolishBlock, penalty: float, nodes: int | None, threads: int,
                  until: float | None, knowledge: dict | None = None) -> tuple[np.ndarray, bool] | None:
    """One block's BOSS in this process's worker (a dask task), with the `knowledge` about its columns
    (hpc.graphs.knowledge's indexed form; then Tetrad's BOSS, unbounded): its DAG in local indices and whether
    the bound on nodes stopped it; None when the user's wall limit `until` (`time.time()`, the same on every
    worker whenever the task starts) passed first."""
    from hpc.learners.ensemble import remaining
    from hpc.learners.worker import call_within

    data = {"x": np.ascontiguousarray(x[:, block.columns]), "penalty": penalty, "order": block.order,
            "pairs": block.pairs}
    if knowledge:
        found = call_within(RUNNER, {**data, "threads": threads, "knowledge": knowledge}, remaining(None, until))
        return None if found is None else (found, False)
    return call_within(BOUNDED_RUNNER, {**data, "nodes": nodes}, remaining(None, until))


def polish_graph(chain: Chain, graph: PDAG, groups: list[np.ndarray], config: PolishConfig, memory: StepMemory,
                 label: str) -> tuple[PDAG, dict[str, Any]]:
    """BOSS over each of `groups` (PEF's clusters, or another grouping of the variables) and its Markov blanket
    in `graph`, on the chain's workers, in searches of at most `config.upto` variables; each finished search is
    kept in `memory` by its index. On few rows searches stay at half the rows, as the partition's clusters do
    (hpc.pef.partition.largest_cluster). The polished CPDAG and its account."""
    if config.upto:
        config = replace(config, upto=min(config.upto, largest_cluster(config.upto, chain.n)))
    ordered = repaired_order(graph)  # a DAG of a graph of 100,000 variables: 3 s, so once for the blocks and the join
    blocks = polish_blocks(graph, groups, config.upto, ordered)
    bounds = shares([len(b.columns) * (len(b.columns) <= config.upto) for b in blocks], config.nodes * graph.p)
    specs = [{"method": "boss-polish", "penalty": config.penalty, "search": b.fingerprint(),
              **({"nodes": bound} if bound else {})} for b, bound in zip(blocks, bounds)]
    results: list[np.ndarray | None] = [None] * len(blocks)
    todo, resumed, stopped = [], 0, 0
    for b, block in enumerate(blocks):
        stored = memory.get(b, specs[b])
        if stored is not None:
            results[b], resumed, stopped = stored.directed, resumed + 1, stopped + bool(stored.error)
        elif len(block.columns) <= config.upto:
            todo.append(b)
    todo.sort(key=lambda b: -len(blocks[b].columns))  # the longest searches start first
    sizes = sorted(len(block.columns) for block in blocks)
    most = max(len(block.pairs) for block in blocks)  # a search's seconds grow about with its pairs to the 1.8
    chain.show.note(f"{label}: BOSS over {len(todo)} of {len(blocks)} parts of {len(groups)} groups with their "
                    f"Markov blankets (searches of {sizes[0]}-{sizes[-1]} variables and up to {most:,} candidate "
                    f"pairs, at most {config.upto} variables run)"
                    + (f"; {resumed} already in the checkpoint" if resumed else ""))
    begin = time.perf_counter()
    data = chain.executor.scatter(chain.z)
    threads = chain.executor.task_threads(len(todo))
    tasks = [(data, blocks[b], config.penalty, bounds[b], threads, chain.deadline, chain.indexed(blocks[b].columns))
             for b in todo]
    for done, (t, (result, bounded)) in enumerate(searches(chain, polish_search, tasks), 1):
        results[todo[t]], stopped = result, stopped + bounded
        note = f"stopped at its bound of {bounds[todo[t]]:,} tree nodes" if bounded else None
        memory.put(todo[t], MemberRun(specs[todo[t]], "ok", result, np.empty((0, 2), np.int64), None,
                                      time.perf_counter() - begin, note), at_once=False)
        chain.show(f"{label}: searches", done, len(todo))
    polished = join_parents(graph, blocks, results, ordered)
    return polished, {**changes(graph, polished), "searches": len(todo) + resumed, "groups": len(groups),
                      "parts": len(blocks), "largest_search": sizes[-1], "largest_pairs": most,
                      **({"stopped": stopped} if stopped else {}), **({"resumed": resumed} if resumed else {})}


class Polish(Step):
    """BOSS over each of PEF's clusters and its Markov blanket, on the graph the steps before it left."""

    name, Config = "polish", PolishConfig
    doc = "BOSS over each cluster and its Markov blanket, in searches of at most `upto` variables"

    def enabled(self) -> bool:
        return self.config.upto > 0

    def run(self, chain: Chain, memory: StepMemory) -> tuple[PDAG, dict[str, Any]]:
        return polish_graph(chain, chain.graph, chain.clusters, self.config, memory, self.name)
