"""The same covariance and graph whichever kernel the BLAS picks.

OpenBLAS chooses its matrix kernels by CPU, so numpy's `cov` differs in its last bits between two machines, and on
near-deterministic data a search carried that into another graph. Every member and order search starts from
hpc.learners.bic.covariance instead, whose bits are IEEE arithmetic's alone. OPENBLAS_CORETYPE picks the kernel on
this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from hpc.learners.bic import covariance

SCRIPT = """
import hashlib, json, sys
import numpy as np
from hpc.data.generate import benchmark_problem
from hpc.learners.bic import covariance
from hpc.pef.pipeline import PEF
from hpc.pef.steps import steps_from

problem = benchmark_problem(200, 1, network="asia")
members = [{"method": "fges", "penalty": 2.0, "max_parents": 100, "faithfulness": True},
           {"method": "boss", "penalty": 2.0}]
pefs = [PEF(members, progress=False, steps=steps_from(settings)).fit(problem.data)
        for settings in ({}, {"rival.upto": 0})]  # the rival stands, or the repair runs in its place
digest = lambda a: hashlib.sha256(a.tobytes()).hexdigest()
json.dump({"blas": digest(np.cov(problem.data, rowvar=False)), "covariance": digest(covariance(problem.data)),
           "edges": [sorted(map(list, pef.graph_.named_edges())) for pef in pefs],
           "ran": sorted({name for pef in pefs for name, account in pef.steps_.items()
                          if account and "skipped" not in account})},
          sys.stdout)
"""


@pytest.mark.jvm
@pytest.mark.slow
def test_the_same_covariance_and_graph_whichever_kernel_the_blas_picks():
    runs = {kernel: json.loads(subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                                              check=True, env={**os.environ, "OPENBLAS_CORETYPE": kernel}).stdout)
            for kernel in ("", "Prescott")}
    native, generic = runs[""], runs["Prescott"]
    assert native["blas"] != generic["blas"]  # the kernels do round differently here
    assert native["covariance"] == generic["covariance"]
    assert {"rival", "repair", "polish", "sweep"} <= set(native["ran"])
    assert native["edges"] == generic["edges"]


def test_the_covariance_sums_each_entry_over_the_rows_in_order():
    """Bit for bit the row-by-row sum of exact elementwise products (numpy's `outer` and `+=` round each product
    and each addition once, in that order): no fused multiply-add, no reassociation, on any CPU."""
    from hpc.learners.gram_kernel import centred, gram

    x = np.random.default_rng(3).normal(size=(41, 150))  # over two tiles of columns, the last one partial
    a = centred(x)
    by_rows = np.zeros((150, 150))
    for row in a:
        by_rows += np.outer(row, row)
    assert np.array_equal(gram(a), by_rows)
    np.testing.assert_allclose(covariance(x), np.cov(x, rowvar=False), rtol=1e-12, atol=1e-14)
    assert np.array_equal(covariance(x), covariance(x).T)


def test_a_covariance_needs_two_rows():
    with pytest.raises(ValueError, match="at least 2 rows"):
        covariance(np.ones((1, 3)))
    assert covariance(np.arange(6.0).reshape(3, 2)[:, :1]).shape == (1, 1)


def test_the_residual_is_least_squares_and_passes_over_a_redundant_column():
    from hpc.learners.bic import MIN_RESIDUAL, residual_variance

    x = np.random.default_rng(5).normal(size=(300, 5))
    x[:, 4] = x[:, 0] - 2.0 * x[:, 1] + 0.5 * x[:, 2] + 0.3 * x[:, 3] + np.random.default_rng(6).normal(size=300)
    cov = covariance(x)
    beta = np.linalg.lstsq(x[:, :4] - x[:, :4].mean(0), x[:, 4] - x[:, 4].mean(), rcond=None)[0]
    fitted = (x[:, 4] - x[:, 4].mean()) - (x[:, :4] - x[:, :4].mean(0)) @ beta
    assert np.isclose(residual_variance(cov, 4, np.arange(4)), fitted @ fitted / 299, rtol=1e-10)
    x = np.column_stack([x[:, :4], x[:, 0] + x[:, 1], x[:, 4]])  # column 4 is columns 0 and 1 together
    cov = covariance(x)
    assert np.isclose(residual_variance(cov, 5, np.array([0, 4, 1, 2, 3])), fitted @ fitted / 299, rtol=1e-8)
    assert residual_variance(cov, 4, np.array([0, 1])) == MIN_RESIDUAL * cov[4, 4]  # determined: floored
    assert residual_variance(cov, 2, np.empty(0, dtype=np.int64)) == cov[2, 2]
