"""The modular graph models: big modules, most parents inside them, acyclic, the same graph per seed."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hpc.data.generate import (MODULAR_LARGE_SIZE, MODULAR_LARGE_WITHIN, MODULAR_PARENTS, MODULAR_SIZE,
                               MODULAR_WITHIN, _modular, random_dag)
from hpc.data.problem import read_problem
from hpc.graphs.equivalence import is_dag

MODELS = {"modular": (MODULAR_SIZE, MODULAR_WITHIN, False), "modular-large": (MODULAR_LARGE_SIZE, MODULAR_LARGE_WITHIN, True)}


@pytest.mark.parametrize("model", MODELS)
def test_modules_hold_their_share_of_parents_and_sizes_in_range(model):
    size, within, preferential = MODELS[model]
    g, module = _modular(2000, size, within, preferential, np.random.default_rng(3))
    assert g.p == 2000 and is_dag(g)
    inside = module[g.directed[:, 0]] == module[g.directed[:, 1]]
    assert abs(inside.mean() - within) <= 0.03
    parents = np.bincount(g.directed[:, 1], minlength=g.p)
    assert parents.max() == MODULAR_PARENTS[1]
    # Every variable but the first in the order drew at least one parent (from its module or another).
    assert (parents == 0).sum() == 1
    assert 1.9 * g.p <= g.n_edges <= 2.1 * g.p  # 1-3 parents, 2 on average
    sizes = np.bincount(module)
    # Modules are drawn from the range; the last also takes a rest too small to be a module of its own,
    # and which module is last is hidden by the shuffled names.
    assert sizes.sum() == 2000 and (sizes >= size[0]).all() and (sizes <= size[1] + size[0] - 1).all()
    assert (sizes > size[1]).sum() <= 1
    # Names are shuffled: neighbouring names are no likelier to share a module than any two variables.
    assert (module[1:] == module[:-1]).mean() < 3 * ((sizes / 2000) ** 2).sum()


def test_large_modules_have_hubs_that_uniform_parents_lack():
    """Preferential attachment inside modules: the largest out-degrees are several times the uniform
    model's (whose out-degrees are about Poisson with mean 2)."""
    def top(model):
        g = random_dag(model, 2000, np.random.default_rng(8))
        return np.sort(np.bincount(g.directed[:, 0], minlength=g.p))[-10:]

    assert top("modular").max() < 30 and top("modular-large").min() >= 40


@pytest.mark.parametrize("model", MODELS)
def test_same_seed_same_graph_and_edges_per_node_is_not_used(model):
    g = random_dag(model, 2000, np.random.default_rng(11))
    assert np.array_equal(g.directed, random_dag(model, 2000, np.random.default_rng(11), edges_per_node=5).directed)
    assert not np.array_equal(g.directed, random_dag(model, 2000, np.random.default_rng(12)).directed)


@pytest.mark.parametrize("model", MODELS)
def test_small_graphs_are_one_module(model):
    size, within, preferential = MODELS[model]
    g, module = _modular(12, size, within, preferential, np.random.default_rng(0))
    assert g.p == 12 and is_dag(g) and (module == 0).all()
    assert (np.bincount(g.directed[:, 1], minlength=12) >= 1).sum() == 11  # all but the first have parents


@pytest.mark.e2e
def test_cli_writes_a_modular_problem(tmp_path):
    out = tmp_path / "x.h5"
    run = subprocess.run([str(Path(sys.executable).parent / "psle"), "generate", "--graph", "modular", "--nodes", "2000",
                          "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    problem = read_problem(out)
    assert problem.p == 2000 and problem.n == 1000 and is_dag(problem.truth)
    assert problem.attrs["network"] == "modular" and problem.attrs["seed"] == 0
    assert np.array_equal(problem.truth.directed, random_dag("modular", 2000, np.random.default_rng(0)).directed)
    assert f"{problem.truth.n_edges} edges" in run.stderr
