"""The paper's benchmark generator (§4.1.1) and random graph models (§4.1.3, §4.4).

Replicate a bnlearn DAG r = ceil(N / |V|) times, join replicas with ceil(0.1 r |E|) random
edges oriented along one random linear extension (so the union stays acyclic), then sample a
linear-Gaussian SEM and standardise every column. One seeded numpy Generator drives every
draw, in a fixed sequence, so the same arguments give the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from hpc.errors import PsleError
from hpc.graphs.equivalence import topological_order
from hpc.graphs.pdag import PDAG, pair_keys

#: Bumped whenever the sequence of random draws changes (stored in problem files). Version 2 writes the
#: bnlearn replicas' columns in a seeded random order (version 1's order is `order="generator"`).
GENERATOR_VERSION = 2
#: Column orders of a generated problem: "shuffled" (a seeded random permutation; a file's order says
#: nothing about causes) or "generator" (replica by replica in the base network's order, as the paper's
#: files were, where most true edges point forward: 95 % of Asia's, 62 % of Alarm's).
ORDERS = ("shuffled", "generator")
GRAPH_MODELS = ("er", "sf", "ws", "hub", "sbm", "plc", "geo", "mosaic", "layer", "modular", "modular-large")
#: Every kind of problem the generator makes: bnlearn replicas and the random graph models.
FAMILIES = ("bnlearn", *GRAPH_MODELS)
#: Children (out-hubs) or parents (in-hubs) of each hub in the `hub` model.
HUB_DEGREE = 30
#: Variables per hub in the `hub` model.
NODES_PER_HUB = 100
#: Block sizes (inclusive range) and the share of edges between blocks in the `sbm` model: the
#: bnlearn replicas' block structure (replicas of tens of variables joined by ~10 % cross edges), with
#: random blocks.
SBM_BLOCK = (20, 50)
SBM_BETWEEN = 0.1
#: Probability that an edge of the `plc` model closes a triangle (Holme-Kim).
PLC_TRIANGLES = 0.5
#: Block sizes (inclusive range), the models blocks are drawn from and the share of cross edges (of the
#: blocks' edges) in the `mosaic` model: a heterogeneous network whose parts look like different families.
MOSAIC_BLOCK = (100, 300)
MOSAIC_MODELS = ("er", "sf", "ws", "hub")
MOSAIC_BETWEEN = 0.1
#: Layer widths (inclusive range) in the `layer` model.
LAYER_WIDTH = (20, 60)
#: Module sizes (inclusive range) and the expected share of parents inside a variable's own module in the
#: `modular` model: clusters far larger than the bnlearn replicas' or sbm's blocks.
MODULAR_SIZE = (20, 200)
MODULAR_WITHIN = 0.85
#: The same for `modular-large`, whose in-module parents are drawn by preferential attachment.
MODULAR_LARGE_SIZE = (100, 500)
MODULAR_LARGE_WITHIN = 0.90
#: Parents per variable (inclusive range, uniform) in both modular models.
MODULAR_PARENTS = (1, 3)
#: The paper's edge-weight magnitudes (low, high).
WEIGHTS = (0.5, 1.0)


@dataclass(frozen=True)
class SEM:
    """A linear-Gaussian SEM: weight k belongs to `dag.directed[k]`."""

    dag: PDAG
    weights: np.ndarray
    noise_sd: np.ndarray


def replicate(base: PDAG, n_nodes: int, rng: np.random.Generator,
              extra_fraction: float = 0.1) -> tuple[PDAG, int]:
    """`ceil(n_nodes / |V|)` copies of `base` plus `ceil(extra_fraction * r|E|)` cross edges.

    Returns the DAG and the number of replicas r. Variable `v` of replica k is named `v_k`
    (k from 1). With a single replica no cross edge can exist, so none is added.
    """
    if n_nodes <= 0:
        raise PsleError(f"number of nodes must be positive, got {n_nodes}")
    p0, e0 = base.p, len(base.directed)
    r = math.ceil(n_nodes / p0)
    names = tuple(f"{v}_{k}" for k in range(1, r + 1) for v in base.variables)
    offsets = (np.arange(r, dtype=np.int64) * p0)[:, None, None]
    within = (base.directed[None, :, :] + offsets).reshape(-1, 2)
    n_extra = math.ceil(extra_fraction * r * e0) if r > 1 else 0
    # A random interleaving of the replicas' topological orders is a linear extension of the
    # union: cross edges oriented along it never close a cycle.
    topo = topological_order(base)
    keys = np.sort(rng.random((r, p0)), axis=1)
    grid = np.empty((r, p0))
    grid[:, topo] = keys
    position = grid.reshape(-1)
    cross = _cross_pairs(rng, r, p0, n_extra)
    forward = position[cross[:, 0]] < position[cross[:, 1]]
    cross = np.where(forward[:, None], cross, cross[:, ::-1])
    return PDAG(names, np.concatenate([within, cross])), r


def _cross_pairs(rng: np.random.Generator, r: int, p0: int, count: int) -> np.ndarray:
    """`count` distinct unordered pairs of nodes in different replicas, in draw order."""
    p = r * p0
    chosen = np.empty(0, dtype=np.int64)
    pairs = np.empty((0, 2), dtype=np.int64)
    while len(pairs) < count:
        draw = rng.integers(0, p, size=(2 * (count - len(pairs)) + 16, 2))
        draw = draw[draw[:, 0] // p0 != draw[:, 1] // p0]
        keys = pair_keys(draw, p)
        _, first = np.unique(keys, return_index=True)
        first.sort()
        draw, keys = draw[first], keys[first]
        fresh = ~np.isin(keys, chosen)
        take = draw[fresh][: count - len(pairs)]
        pairs = np.concatenate([pairs, take])
        chosen = np.concatenate([chosen, pair_keys(take, p)])
    return pairs


def random_dag(model: str, n_nodes: int, rng: np.random.Generator, edges_per_node: int = 2,
               rewire: float = 0.1) -> PDAG:
    """Erdős–Rényi (`er`), scale-free (`sf`), Watts–Strogatz (`ws`), hub-heavy (`hub`),
    community-structured (`sbm`), clustered scale-free (`plc`), random geometric (`geo`), mixed
    (`mosaic`), layered (`layer`) or modular (`modular`, `modular-large`) DAG.

    ER and SF have exactly edges_per_node·p edges (SF grows from a complete graph on
    2·edges_per_node + 1 nodes); WS is a ring lattice of 2·edges_per_node neighbours with
    rewiring probability `rewire`. `hub` is an ER background of edges_per_node·p edges plus one
    hub per NODES_PER_HUB variables, alternately with HUB_DEGREE children and HUB_DEGREE parents:
    the few very high-degree nodes that bnlearn replicas lack. `sbm` is a stochastic block model:
    blocks of SBM_BLOCK variables, edges_per_node·p edges expected, SBM_BETWEEN of them between
    blocks (dense communities, as bnlearn replicas have, without repeating one network). `plc` is
    Holme and Kim's growth model: scale-free degrees, and each new edge closes a triangle with
    probability PLC_TRIANGLES (hubs inside clustered neighbourhoods, where `sf` has no triangles).
    `geo` places the variables uniformly in the unit square and joins those closer than the radius
    that gives about edges_per_node·p edges: spatial neighbourhoods in two dimensions (many
    triangles, no hubs, no blocks), where `ws` is a ring. `mosaic` draws blocks of MOSAIC_BLOCK
    variables, each from a random one of MOSAIC_MODELS, and joins them with MOSAIC_BETWEEN as many
    cross edges as the blocks hold: one network whose parts favour different learners. `layer` stacks
    layers of LAYER_WIDTH variables and draws edges_per_node·p edges, each from a variable to one in
    the next layer: a cascade whose every node with two parents is an unshielded collider (no
    triangles), so the CPDAG is almost fully oriented, unlike any other model's. `modular` splits the
    variables into modules of MODULAR_SIZE variables and gives each MODULAR_PARENTS parents drawn from
    earlier variables of a random order, MODULAR_WITHIN of them (in expectation) from its own module;
    `modular-large` has modules of MODULAR_LARGE_SIZE, MODULAR_LARGE_WITHIN of parents inside, drawn in
    proportion to 1 + their out-degree so far (a few hubs per module): networks whose clusters are big.
    Both ignore edges_per_node (about 2 p edges, from the parents' range).
    Edges are oriented along a random permutation (mosaic: along an interleaving of its blocks';
    layer: from each layer to the next; modular: along the order parents are drawn in).
    """
    if n_nodes <= 0:
        raise PsleError(f"number of nodes must be positive, got {n_nodes}")
    if isinstance(edges_per_node, bool) or not isinstance(edges_per_node, (int, np.integer)) or edges_per_node < 1:
        raise PsleError(f"edges per node must be a whole number of at least 1, got {edges_per_node!r}")
    if not 0.0 <= rewire <= 1.0:
        raise PsleError(f"the rewiring probability must be in [0, 1], got {rewire!r}")
    m = edges_per_node
    if model == "mosaic":
        return _mosaic(n_nodes, m, rng)
    if model == "layer":
        return _layered(n_nodes, m, rng)
    if model == "modular":
        return _modular(n_nodes, MODULAR_SIZE, MODULAR_WITHIN, False, rng)[0]
    if model == "modular-large":
        return _modular(n_nodes, MODULAR_LARGE_SIZE, MODULAR_LARGE_WITHIN, True, rng)[0]
    graph = _skeleton(model, n_nodes, m, rewire, rng, int(rng.integers(2**31)))
    edges = np.array(sorted(graph.edges()), dtype=np.int64).reshape(-1, 2)
    rank = rng.permutation(n_nodes)
    if model == "hub":
        edges = np.concatenate([edges, _hub_edges(n_nodes, rank, rng)])
        edges = edges[np.unique(pair_keys(edges, n_nodes), return_index=True)[1]]
    edges = np.where((rank[edges[:, 0]] < rank[edges[:, 1]])[:, None], edges, edges[:, ::-1])
    return PDAG(tuple(f"X{i}" for i in range(1, n_nodes + 1)), edges)


def _skeleton(model: str, n_nodes: int, m: int, rewire: float, rng: np.random.Generator, seed: int) -> nx.Graph:
    """The undirected graph of a networkx-drawn model (see random_dag), from `seed`."""
    if model == "er":
        return nx.gnm_random_graph(n_nodes, min(m * n_nodes, n_nodes * (n_nodes - 1) // 2), seed=seed)
    elif model == "sf":
        core = 2 * m + 1
        if n_nodes <= core:
            raise PsleError(f"a scale-free graph needs more than {core} nodes, got {n_nodes}")
        return nx.barabasi_albert_graph(n_nodes, m, seed=seed, initial_graph=nx.complete_graph(core))
    elif model == "ws":
        if n_nodes <= 2 * m:
            raise PsleError(f"a Watts-Strogatz graph needs more than {2 * m} nodes, got {n_nodes}")
        return nx.watts_strogatz_graph(n_nodes, 2 * m, rewire, seed=seed)
    elif model == "hub":
        if n_nodes <= HUB_DEGREE:
            raise PsleError(f"a hub graph needs more than {HUB_DEGREE} nodes, got {n_nodes}")
        return nx.gnm_random_graph(n_nodes, min(m * n_nodes, n_nodes * (n_nodes - 1) // 2), seed=seed)
    elif model == "sbm":
        return _block_graph(n_nodes, m, rng, seed)
    elif model == "plc":
        if n_nodes <= m:
            raise PsleError(f"a clustered scale-free graph needs more than {m} nodes, got {n_nodes}")
        return nx.powerlaw_cluster_graph(n_nodes, m, PLC_TRIANGLES, seed=seed)
    elif model == "geo":
        # Expected degree (p - 1)·pi·r^2 = 2m, less at the square's edges: boundary nodes lose up to
        # three quarters of their disc, so r is raised by the disc share kept on average, 1 - 4r/(3 pi).
        radius = math.sqrt(2 * m / (max(n_nodes - 1, 1) * math.pi))
        radius /= 1 - 4 * min(radius, 1.0) / (3 * math.pi)
        return nx.random_geometric_graph(n_nodes, min(radius, math.sqrt(2)), seed=seed)
    else:
        raise PsleError(f"unknown graph model {model!r}; choose one of {', '.join(GRAPH_MODELS)}")


def _block_graph(n_nodes: int, m: int, rng: np.random.Generator, seed: int) -> nx.Graph:
    """The `sbm` model's undirected graph: block sizes drawn from SBM_BLOCK (the last takes the rest),
    edge probabilities set so that m·p edges are expected, SBM_BETWEEN of them between blocks
    (capped at 1 where blocks are too small to hold their share)."""
    sizes: list[int] = []
    while sum(sizes) < n_nodes:
        sizes.append(min(int(rng.integers(SBM_BLOCK[0], SBM_BLOCK[1] + 1)), n_nodes - sum(sizes)))
    within = sum(s * (s - 1) // 2 for s in sizes)
    between = n_nodes * (n_nodes - 1) // 2 - within
    edges = m * n_nodes
    share = SBM_BETWEEN if between else 0.0
    p_in = min(1.0, (1 - share) * edges / within) if within else 0.0
    p_out = min(1.0, share * edges / between) if between else 0.0
    probs = [[p_in if i == j else p_out for j in range(len(sizes))] for i in range(len(sizes))]
    return nx.stochastic_block_model(sizes, probs, seed=seed)


def _mosaic(n_nodes: int, m: int, rng: np.random.Generator) -> PDAG:
    """The `mosaic` model: blocks from random_dag's other models, numbered consecutively, with cross
    edges oriented along a random interleaving of the blocks' topological orders (so the union stays
    acyclic, as `replicate` does for bnlearn replicas)."""
    sizes: list[int] = []
    while sum(sizes) < n_nodes:
        rest = n_nodes - sum(sizes)
        size = int(rng.integers(MOSAIC_BLOCK[0], MOSAIC_BLOCK[1] + 1))
        sizes.append(rest if rest - size < MOSAIC_BLOCK[0] else size)  # no block smaller than the range
    offsets = np.cumsum([0, *sizes[:-1]])
    position = np.empty(n_nodes)
    within = []
    for size, offset in zip(sizes, offsets):
        model = MOSAIC_MODELS[int(rng.integers(len(MOSAIC_MODELS)))]
        if size <= max(2 * m + 1, HUB_DEGREE):  # too small for sf, ws or hub (a tiny mosaic, or many edges per node)
            model = "er"
        block = random_dag(model, size, rng, edges_per_node=m)
        within.append(block.directed + offset)
        position[offset + np.asarray(topological_order(block))] = np.sort(rng.random(size))
    block_of = np.repeat(np.arange(len(sizes)), sizes)
    inner = np.concatenate(within)
    count = math.ceil(MOSAIC_BETWEEN * len(inner)) if len(sizes) > 1 else 0
    cross = np.empty((0, 2), dtype=np.int64)
    while len(cross) < count:
        pairs = rng.integers(0, n_nodes, size=(2 * count, 2))
        pairs = np.concatenate([cross, pairs[block_of[pairs[:, 0]] != block_of[pairs[:, 1]]]])
        keys = pair_keys(pairs, n_nodes)
        cross = pairs[np.sort(np.unique(keys, return_index=True)[1])][:count]
    cross = np.where((position[cross[:, 0]] < position[cross[:, 1]])[:, None], cross, cross[:, ::-1])
    return PDAG(tuple(f"X{i}" for i in range(1, n_nodes + 1)), np.concatenate([inner, cross]).astype(np.int64))


def _layered(n_nodes: int, m: int, rng: np.random.Generator) -> PDAG:
    """The `layer` model: widths drawn from LAYER_WIDTH (narrower below 80 variables; the last layer takes
    the rest), m·p distinct edges (fewer where consecutive layers cannot hold them), each between a
    uniformly drawn pair of consecutive layers' variables, weighted by how many pairs the two layers
    hold; variable names are shuffled so that a name says nothing of its layer."""
    low = min(LAYER_WIDTH[0], max(1, n_nodes // 4))  # a small graph still gets a few layers
    high = min(LAYER_WIDTH[1], max(low, n_nodes // 2))
    drawn: list[int] = []
    while sum(drawn) < n_nodes:
        drawn.append(min(int(rng.integers(low, high + 1)), n_nodes - sum(drawn)))
    widths = np.array(drawn, dtype=np.int64)
    starts = np.cumsum([0, *widths[:-1]])
    pairs = (widths[:-1] * widths[1:]).astype(np.float64)
    count = int(min(m * n_nodes, pairs.sum()))
    label = rng.permutation(n_nodes)
    edges = np.empty((0, 2), dtype=np.int64)
    while len(edges) < count:
        gap = rng.choice(len(pairs), size=2 * count, p=pairs / pairs.sum())
        tail = starts[gap] + (rng.random(2 * count) * widths[gap]).astype(np.int64)
        head = starts[gap + 1] + (rng.random(2 * count) * widths[gap + 1]).astype(np.int64)
        edges = np.concatenate([edges, label[np.stack([tail, head], axis=1)]])
        edges = edges[np.sort(np.unique(pair_keys(edges, n_nodes), return_index=True)[1])][:count]
    return PDAG(tuple(f"X{i}" for i in range(1, n_nodes + 1)), edges.astype(np.int64))


def _modular(n_nodes: int, size: tuple[int, int], within: float, preferential: bool,
             rng: np.random.Generator) -> tuple[PDAG, np.ndarray]:
    """The modular models' DAG and each variable's module. Module sizes are drawn from `size`, the last
    module taking the rest (a rest under size[0] joins the module before it). Variables come in a random
    order; each draws MODULAR_PARENTS parents among the earlier ones, each inside its own module with
    probability `within` (uniformly, or in proportion to 1 + out-degree so far if `preferential`),
    else uniformly from other modules. A parent wanted on one side with no earlier variable left there is
    drawn on the other (a module's first variable draws all its parents from other modules), so only the
    first variable of the order has none. Names are shuffled: a name says nothing of module or order."""
    sizes: list[int] = []
    while sum(sizes) < n_nodes:
        rest = n_nodes - sum(sizes)
        drawn = int(rng.integers(size[0], size[1] + 1))
        sizes.append(rest if rest - drawn < size[0] else drawn)
    module = np.repeat(np.arange(len(sizes)), sizes)
    order = rng.permutation(n_nodes)  # order[t] is the variable drawn t-th
    label = rng.permutation(n_nodes)  # variable v is named X{label[v] + 1}
    members: list[list[int]] = [[] for _ in sizes]  # each module's variables so far, in order
    out_degree = np.zeros(n_nodes, dtype=np.int64)
    edges: list[tuple[int, int]] = []
    for t, v in enumerate(order.tolist()):
        own = members[module[v]]
        wanted = int(rng.integers(MODULAR_PARENTS[0], MODULAR_PARENTS[1] + 1))
        inside = min(int(rng.binomial(wanted, within)), len(own))
        outside = min(wanted - inside, t - len(own))
        inside = min(wanted - outside, len(own))  # a parent wanted outside, with no variable there, comes inside
        parents: list[int] = []
        if inside:
            weight = 1.0 + out_degree[own] if preferential else np.ones(len(own))
            parents = [own[i] for i in rng.choice(len(own), size=inside, replace=False, p=weight / weight.sum())]
        chosen: set[int] = set()
        while len(chosen) < outside:  # rejection: most earlier variables are in other modules
            u = int(order[rng.integers(t)])
            if module[u] != module[v]:
                chosen.add(u)
        parents += sorted(chosen)
        out_degree[parents] += 1
        edges += [(u, v) for u in parents]
        own.append(v)
    pairs = label[np.array(edges, dtype=np.int64).reshape(-1, 2)]
    named = np.empty(n_nodes, dtype=np.int64)
    named[label] = module
    return PDAG(tuple(f"X{i}" for i in range(1, n_nodes + 1)), pairs), named


def _hub_edges(n_nodes: int, rank: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Hub edges (unoriented pairs, oriented later by `rank`): even hubs are drawn from the first
    half of the order and get HUB_DEGREE later nodes as children, odd hubs from the second half
    and get HUB_DEGREE earlier nodes as parents."""
    order = np.argsort(rank)  # order[i] = the node ranked i
    half = n_nodes // 2
    pairs = []
    for h in range(max(1, n_nodes // NODES_PER_HUB)):
        if h % 2 == 0:
            pos = int(rng.integers(0, half))
            others = rng.choice(np.arange(pos + 1, n_nodes), size=min(HUB_DEGREE, n_nodes - pos - 1), replace=False)
        else:
            pos = int(rng.integers(half, n_nodes))
            others = rng.choice(np.arange(0, pos), size=min(HUB_DEGREE, pos), replace=False)
        pairs.append(np.stack([np.full(len(others), order[pos]), order[others]], axis=1))
    return np.concatenate(pairs).astype(np.int64)


def check_weights(weights: Any) -> tuple[float, float]:
    """(low, high) edge-weight magnitudes, or a one-line error."""
    try:
        lo, hi = (float(w) for w in weights)
    except (TypeError, ValueError):
        raise PsleError(f"weights must be two numbers, the low and high magnitude, got {weights!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo <= hi):
        raise PsleError(f"weights must satisfy 0 < low <= high, got {lo:g} and {hi:g}")
    return lo, hi


def weights_setting(weights: Any) -> dict[str, list[float]]:
    """The weights entry of a settings fingerprint: none for the paper's range, so records files and
    checkpoints made before the range was a setting keep their identity and resume."""
    lo, hi = check_weights(weights)
    return {} if (lo, hi) == WEIGHTS else {"weights": [lo, hi]}


def random_sem(dag: PDAG, rng: np.random.Generator, weights: tuple[float, float] = WEIGHTS) -> SEM:
    """Weights of magnitude uniform on `weights` (the paper's [0.5, 1]) with a random sign, noise standard
    deviations uniform on [0, 1]. Smaller magnitudes give weaker effects, which are harder to detect."""
    e = len(dag.directed)
    lo, hi = check_weights(weights)
    signed = rng.uniform(lo, hi, e) * rng.choice(np.array([-1.0, 1.0]), e)
    return SEM(dag, signed, rng.uniform(0.0, 1.0, dag.p))


def sample(sem: SEM, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """n × p observations of the SEM, each column standardised to mean 0 and sd 1."""
    if n_samples < 2:
        raise PsleError(f"number of samples must be at least 2, got {n_samples}")
    dag = sem.dag
    x = np.asfortranarray(rng.standard_normal((n_samples, dag.p)) * sem.noise_sd)
    by_child = np.lexsort((dag.directed[:, 0], dag.directed[:, 1]))
    child = dag.directed[by_child, 1]
    ptr = np.searchsorted(child, np.arange(dag.p + 1))
    parents, weights = dag.directed[by_child, 0], sem.weights[by_child]
    # One parent at a time, not a BLAS product: elementwise arithmetic rounds the same on every machine,
    # where a BLAS kernel (chosen per CPU) may sum in another order, and PEF orders columns by their bytes.
    for j in topological_order(dag).tolist():
        for k in range(ptr[j], ptr[j + 1]):
            x[:, j] += x[:, parents[k]] * weights[k]
    x -= x.mean(axis=0)
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    x /= sd
    return np.ascontiguousarray(x)


def permute_problem(dag: PDAG, sem: SEM, data: np.ndarray, perm: np.ndarray) -> tuple[PDAG, SEM, np.ndarray]:
    """The same problem with column j taken from column perm[j]: DAG, SEM weights and data alike."""
    where = np.empty_like(perm)
    where[perm] = np.arange(len(perm))
    moved = where[dag.directed]
    keep = np.lexsort((moved[:, 1], moved[:, 0]))  # PDAG sorts its edges: weights follow them
    new = PDAG(tuple(dag.variables[i] for i in perm), moved)
    return new, SEM(new, sem.weights[keep], sem.noise_sd[perm]), np.ascontiguousarray(data[:, perm])


def benchmark_problem(nodes: int, seed: int, samples: int = 1000, network: str | None = None,
                      graph: str | None = None, edges_per_node: int = 2, rewire: float = 0.1,
                      weights: tuple[float, float] = WEIGHTS, order: str = "shuffled"):
    """A complete benchmark problem: replicated bnlearn `network`, or a random `graph` model.

    The random models already label their variables at random; a replica's columns are permuted after
    sampling with a generator of their own, so `order` changes only the column order, never the draws.
    """
    from hpc import __version__
    from hpc.data.networks import load_network
    from hpc.data.problem import Problem

    if (network is None) == (graph is None):
        raise PsleError("give exactly one of a network name or a graph model")
    if samples < 2:
        raise PsleError(f"number of samples must be at least 2, got {samples}")
    if order not in ORDERS:
        raise PsleError(f"column order must be one of {', '.join(ORDERS)}, got {order!r}")
    lo, hi = check_weights(weights)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise PsleError(f"seed must be a whole number >= 0, got {seed!r}")
    rng = np.random.default_rng(seed)
    if network is not None:
        base = load_network(network)
        dag, replicas = replicate(base, nodes, rng)
        attrs = {"network": network.lower(), "replicas": replicas}
    else:
        assert graph is not None  # exactly one of the two, checked above
        dag = random_dag(graph, nodes, rng, edges_per_node, rewire)
        attrs = {"network": graph, "replicas": 1, "edges_per_node": edges_per_node}
        if graph == "ws":
            attrs["rewire"] = rewire
    sem = random_sem(dag, rng, (lo, hi))
    data = sample(sem, samples, rng)
    if network is not None and order == "shuffled":
        perm = np.random.default_rng([seed, 1]).permutation(dag.p)
        dag, sem, data = permute_problem(dag, sem, data, perm)
    attrs |= {"column_order": order} if network is not None else {}
    attrs |= {"weight_low": lo, "weight_high": hi, "seed": seed, "nodes_requested": nodes, "samples": samples,
              "generator_version": GENERATOR_VERSION, "psle_version": __version__}
    return Problem(data, dag.variables, dag, sem.weights, sem.noise_sd, attrs)
