import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hpc.data.generate import benchmark_problem, random_dag, random_sem, replicate, sample
from hpc.data.networks import PAPER_TEST_NETWORKS, bnlearn_names, load_network, network_names
from hpc.data.problem import write_problem
from hpc.errors import PsleError
from hpc.graphs.equivalence import is_dag

# (|V|, |E|) from the headers of tab:results_1000, tab:results_10000, tab:big_alarm, tab:big_asia.
PAPER_SIZES = {
    1000: {"alarm": (1036, 1417), "asia": (1000, 1100), "cancer": (1000, 880), "child": (1000, 1375),
           "earthquake": (1000, 880), "hailfinder": (1008, 1307), "healthcare": (1001, 1416),
           "mildew": (1015, 1468), "pigs": (1323, 1954), "survey": (1002, 1103)},
    10000: {"alarm": (10027, 13713), "asia": (10000, 11000), "cancer": (10000, 8800),
            "child": (10000, 13750), "earthquake": (10000, 8800), "hailfinder": (10024, 12996),
            "healthcare": (10003, 14148), "mildew": (10010, 14472), "pigs": (10143, 14978),
            "survey": (10002, 11003)},
    20000: {"alarm": (20017, 27375), "asia": (20000, 22000)},
    30000: {"alarm": (30007, 41037), "asia": (30000, 33000)},
}


def test_library_has_the_paper_networks_and_healthcare():
    assert set(PAPER_TEST_NETWORKS) <= set(bnlearn_names())
    assert len(bnlearn_names()) == 29 and network_names() == sorted([*bnlearn_names(), "yeast"])
    health = load_network("healthcare")
    assert (health.p, health.n_edges) == (7, 9)
    assert sorted(health.variables[i] for i in health.parents(health.index["T"])) == ["I", "O"]


def test_yeast_is_the_papers_4441_gene_network_made_acyclic():
    yeast = load_network("yeast")
    assert yeast.p == 4441 and is_dag(yeast)
    # 12,873 regulatory edges, of which 9 pairs are two-gene loops that become one edge each
    assert yeast.n_edges == 12873 - 9
    dag, r = replicate(yeast, 4441, np.random.default_rng(0))
    assert r == 1 and dag.n_edges == yeast.n_edges


def test_feedback_edges_are_reversed_and_two_gene_loops_merged():
    spec = importlib.util.spec_from_file_location("import_gnw", Path(__file__).parents[1] / "scripts/import_gnw.py")
    gnw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gnw)
    # a -> b -> c -> a is a cycle, c <-> d a two-gene loop; the greedy order is a, b, c, d
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "c")]
    assert gnw.feedback_order(["a", "b", "c", "d"], edges) == ["a", "b", "c", "d"]
    assert gnw.as_dag(edges) == {"nodes": ["a", "b", "c", "d"],
                                 "arcs": [["a", "b"], ["b", "c"], ["a", "c"], ["c", "d"]]}
    # an acyclic input comes back unchanged
    assert gnw.as_dag([("x", "y"), ("y", "z"), ("x", "z")])["arcs"] == [["x", "y"], ["y", "z"], ["x", "z"]]


@pytest.mark.parametrize("nodes, network", [(n, net) for n, nets in PAPER_SIZES.items() for net in nets])
def test_replication_reproduces_the_paper_sizes(nodes, network):
    dag, _ = replicate(load_network(network), nodes, np.random.default_rng(0))
    assert (dag.p, dag.n_edges) == PAPER_SIZES[nodes][network]
    assert is_dag(dag)


def test_replicas_keep_the_base_edges_and_cross_edges_join_different_replicas():
    base = load_network("asia")
    dag, r = replicate(base, 100, np.random.default_rng(1))
    assert r == math.ceil(100 / base.p)
    replica = dag.directed // base.p
    within = dag.directed[replica[:, 0] == replica[:, 1]]
    assert len(within) == r * base.n_edges
    assert np.array_equal(np.unique(within % base.p, axis=0), base.directed)
    assert len(dag.directed) - len(within) == math.ceil(0.1 * r * base.n_edges)


def test_single_replica_gets_no_cross_edges():
    dag, r = replicate(load_network("alarm"), 30, np.random.default_rng(0))
    assert r == 1 and dag.n_edges == 46


@pytest.mark.parametrize("model", ["er", "sf", "ws"])
def test_random_graph_models_have_two_edges_per_node(model):
    g = random_dag(model, 500, np.random.default_rng(3))
    assert g.p == 500 and g.n_edges == 1000 and is_dag(g)


def test_sample_matches_the_implied_correlation():
    """Large-sample correlations equal those implied by (I - B)^-T D (I - B)^-1."""
    rng = np.random.default_rng(7)
    base = load_network("asia")
    sem = random_sem(base, rng)
    x = sample(sem, 200_000, rng)
    assert np.allclose(x.mean(axis=0), 0, atol=1e-9) and np.allclose(x.std(axis=0), 1)
    b = np.zeros((base.p, base.p))
    b[base.directed[:, 0], base.directed[:, 1]] = sem.weights
    inv = np.linalg.inv(np.eye(base.p) - b)
    cov = inv.T @ np.diag(sem.noise_sd**2) @ inv
    corr = cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    assert np.abs(np.corrcoef(x, rowvar=False) - corr).max() < 0.01


def test_weights_and_noise_are_in_the_paper_ranges():
    sem = random_sem(load_network("pigs"), np.random.default_rng(0))
    assert ((np.abs(sem.weights) >= 0.5) & (np.abs(sem.weights) <= 1)).all()
    assert (sem.weights < 0).any() and (sem.weights > 0).any()
    assert ((sem.noise_sd >= 0) & (sem.noise_sd <= 1)).all()


def test_weaker_weights_keep_the_graph_and_every_other_draw():
    """Only the magnitudes change: the same seed gives the same DAG, signs and noise, so weak-effect
    problems pair with the paper's, and the default is the paper's range draw for draw."""
    paper = benchmark_problem(300, 4, 200, graph="er")
    assert np.array_equal(paper.data, benchmark_problem(300, 4, 200, graph="er", weights=(0.5, 1.0)).data)
    weak = benchmark_problem(300, 4, 200, graph="er", weights=(0.1, 0.3))
    assert np.array_equal(weak.truth.directed, paper.truth.directed)
    assert np.array_equal(np.sign(weak.weights), np.sign(paper.weights))
    assert np.allclose(np.abs(weak.weights), 0.1 + (np.abs(paper.weights) - 0.5) * 0.4)
    assert np.array_equal(weak.noise_sd, paper.noise_sd)
    assert (weak.attrs["weight_low"], weak.attrs["weight_high"]) == (0.1, 0.3)
    # Weaker effects: smaller correlations between a child and its parents.
    def r(p):
        return np.mean([abs(np.corrcoef(p.data[:, a], p.data[:, b])[0, 1]) for a, b in p.truth.directed])
    assert r(weak) < r(paper) - 0.1


def test_same_seed_gives_the_same_bytes_and_another_seed_does_not(tmp_path):
    paths = []
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        paths.append(tmp_path / f"{name}.h5")
        write_problem(paths[-1], benchmark_problem(200, seed, 50, network="child"))
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_bytes() != paths[2].read_bytes()


def test_the_data_are_the_same_bytes_whichever_kernel_the_blas_picks():
    """PEF orders the columns by a digest of their bytes, so a problem that moved in its last bit with the
    machine's BLAS kernel (OpenBLAS picks one per CPU) would be listed, partitioned and searched in another
    order there. Sampling uses no BLAS: the generic x86-64 kernel gives the bytes this CPU's kernel gives."""
    script = ("import hashlib, sys; from hpc.data.generate import benchmark_problem; "
              "sys.stdout.write(hashlib.sha256(benchmark_problem(300, 1, 200, graph='layer').data.tobytes())"
              ".hexdigest())")
    digests = {kernel: subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                      env={**os.environ, "OPENBLAS_CORETYPE": kernel}).stdout
               for kernel in ("", "Prescott")}
    assert len(set(digests.values())) == 1, digests


@pytest.mark.parametrize("kwargs, message", [
    ({"nodes": 100, "seed": 0, "network": "nonesuch"}, "unknown network 'nonesuch'"),
    ({"nodes": 0, "seed": 0, "network": "asia"}, "must be positive"),
    ({"nodes": 100, "seed": 0, "samples": 1, "network": "asia"}, "at least 2"),
    ({"nodes": 100, "seed": 0, "graph": "xx"}, "unknown graph model"),
    ({"nodes": 100, "seed": 0, "graph": "er", "weights": (0.8, 0.2)}, "0 < low <= high, got 0.8 and 0.2"),
    ({"nodes": 100, "seed": 0, "graph": "er", "weights": (0, 1)}, "0 < low <= high"),
    ({"nodes": 100, "seed": 0, "graph": "er", "weights": (1,)}, "two numbers"),
])
def test_bad_generator_arguments(kwargs, message):
    with pytest.raises(PsleError, match=message):
        benchmark_problem(**kwargs)


def test_hub_model_has_its_hubs_on_top_of_the_background():
    from hpc.data.generate import HUB_DEGREE, NODES_PER_HUB
    from hpc.graphs.equivalence import is_dag

    g = random_dag("hub", 1000, np.random.default_rng(3), edges_per_node=1)
    assert is_dag(g)
    hubs = 1000 // NODES_PER_HUB
    out_degree = np.bincount(g.directed[:, 0], minlength=g.p)
    in_degree = np.bincount(g.directed[:, 1], minlength=g.p)
    # Half the hubs have 30 children, half 30 parents (plus their few background edges).
    assert (np.sort(out_degree)[-hubs // 2:] >= HUB_DEGREE).all() and (np.sort(in_degree)[-hubs // 2:] >= HUB_DEGREE).all()
    assert 1000 + hubs * HUB_DEGREE - 60 <= len(g.directed) <= 1000 + hubs * HUB_DEGREE  # few overlaps removed
    background = np.sort(np.maximum(out_degree, in_degree))[: -hubs]
    assert background.max() < HUB_DEGREE // 2


def test_block_model_keeps_nine_edges_in_ten_inside_its_blocks():
    """Blocks are runs of 20-50 consecutive variables: an edge spanning 50 or more indices joins two
    blocks. Expected: 2 p edges, 10 % between blocks (an ER graph would put ~95 % that far apart)."""
    g = random_dag("sbm", 2000, np.random.default_rng(5), edges_per_node=2)
    assert is_dag(g) and 3700 <= g.n_edges <= 4300
    span = np.abs(g.directed[:, 0] - g.directed[:, 1])
    assert 0.9 * 0.9 <= (span < 50).mean() and (span >= 50).mean() <= 0.1 * 1.3


def test_clustered_scale_free_model_has_hubs_and_triangles_that_sf_lacks():
    import networkx as nx

    def undirected(model):
        g = random_dag(model, 1000, np.random.default_rng(5), edges_per_node=2)
        assert is_dag(g)
        graph = nx.Graph(map(tuple, g.directed.tolist()))
        return g, graph

    plc, plc_graph = undirected("plc")
    sf, sf_graph = undirected("sf")
    assert abs(plc.n_edges - 2000) <= 10  # two edges per new node
    assert max(d for _, d in plc_graph.degree()) >= 40  # hubs, as in sf
    assert nx.transitivity(plc_graph) > 3 * nx.transitivity(sf_graph)


def test_geometric_model_is_local_in_the_plane_without_hubs():
    """About 2 p edges; neighbourhoods overlap (transitivity near the 2-D disc graph's 0.59), where an
    ER graph of the same density has almost none, and no node has more than a few times the mean degree."""
    import networkx as nx

    g = random_dag("geo", 2000, np.random.default_rng(4), edges_per_node=2)
    assert is_dag(g) and 3800 <= g.n_edges <= 4200
    graph = nx.Graph(map(tuple, g.directed.tolist()))
    assert nx.transitivity(graph) > 0.5
    assert max(d for _, d in graph.degree()) <= 4 * 4


def test_mosaic_blocks_are_other_models_joined_by_a_tenth_as_many_cross_edges():
    """Blocks are runs of 100-300 consecutive variables; at least one holds a hub (30 children or
    parents) and cross edges are a tenth of the blocks' edges."""
    from hpc.data.generate import HUB_DEGREE, _mosaic

    rng = np.random.default_rng(7)
    g = _mosaic(3000, 2, rng)
    assert is_dag(g) and g.p == 3000
    degree = np.bincount(g.directed.ravel(), minlength=g.p)
    assert degree.max() >= HUB_DEGREE
    # A block's own edges span fewer than 300 indices; of the cross edges (1/11 of all), most join
    # blocks further apart than that.
    far = (np.abs(g.directed[:, 0] - g.directed[:, 1]) >= 300).mean()
    assert 0.05 <= far <= 1 / 11
    # Same seed, same graph: blocks, models and cross edges come from the one generator.
    again = random_dag("mosaic", 3000, np.random.default_rng(7), edges_per_node=2)
    assert np.array_equal(again.directed, g.directed)


def test_layered_model_is_a_cascade_whose_parents_are_never_adjacent():
    """2 p edges, each between consecutive layers: the skeleton is bipartite (layers alternate sides), so
    no two parents of a node are adjacent and every node with two parents is an unshielded collider."""
    import networkx as nx

    g = random_dag("layer", 1000, np.random.default_rng(5), edges_per_node=2)
    assert is_dag(g) and g.n_edges == 2000
    skeleton = nx.Graph(map(tuple, g.directed.tolist()))
    assert nx.is_bipartite(skeleton)
    parents = [set() for _ in range(g.p)]
    for a, b in g.directed.tolist():
        parents[b].add(a)
    assert not any(skeleton.has_edge(a, b) for ps in parents for a in ps for b in ps if a < b)
    assert sum(len(ps) >= 2 for ps in parents) > g.p / 2  # colliders everywhere, not at a few nodes
    assert np.array_equal(random_dag("layer", 1000, np.random.default_rng(5), edges_per_node=2).directed, g.directed)


@pytest.mark.parametrize("model", ["sbm", "plc", "geo", "mosaic", "layer"])
def test_new_models_make_tiny_graphs_or_say_why_not(model):
    g = random_dag(model, 12, np.random.default_rng(0), edges_per_node=1)
    assert g.p == 12 and is_dag(g)
    if model == "plc":
        with pytest.raises(PsleError, match="needs more than 3 nodes"):
            random_dag(model, 3, np.random.default_rng(0), edges_per_node=3)


def test_replica_columns_are_shuffled_by_default_and_the_generator_order_stays_available():
    shuffled = benchmark_problem(1000, 4, 200, network="alarm")
    paper = benchmark_problem(1000, 4, 200, network="alarm", order="generator")
    assert shuffled.attrs["column_order"] == "shuffled" and paper.attrs["column_order"] == "generator"
    # The same problem: each variable's column, weights into it and noise are the paper order's.
    where = {v: k for k, v in enumerate(paper.variables)}
    assert sorted(shuffled.variables) == sorted(paper.variables) and shuffled.variables != paper.variables
    assert all(np.array_equal(shuffled.data[:, k], paper.data[:, where[v]]) for k, v in enumerate(shuffled.variables))
    def edges(pr):
        return {(pr.variables[a], pr.variables[b]): w for (a, b), w in zip(pr.truth.directed, pr.weights)}

    def forward(pr):
        return float(np.mean(pr.truth.directed[:, 0] < pr.truth.directed[:, 1]))

    assert edges(shuffled) == edges(paper)
    # In the generator's order most of Alarm's true edges point forward; shuffled, about half do.
    assert forward(paper) > 0.6 and 0.4 < forward(shuffled) < 0.6
    again = benchmark_problem(1000, 4, 200, network="alarm")
    assert again.variables == shuffled.variables and np.array_equal(again.data, shuffled.data)
    with pytest.raises(PsleError, match="column order must be one of shuffled, generator, got 'file'"):
        benchmark_problem(100, 0, network="alarm", order="file")
