"""The same graph whichever kernel the BLAS picks.

OpenBLAS chooses its matrix kernels by CPU, so a covariance (numpy's `cov`, which every member and BOSS search
starts from) can differ in its last bits between two machines. A search that settled a near-tie on those
bits would give another graph on another machine. OPENBLAS_CORETYPE picks the kernel on this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = """
import hashlib, json, sys
import numpy as np
from hpc.data.generate import benchmark_problem
from hpc.pef.pipeline import PEF
from hpc.pef.steps import steps_from

problem = benchmark_problem(200, 1, network="asia")
members = [{"method": "fges", "penalty": 2.0, "max_parents": 100, "faithfulness": True},
           {"method": "boss", "penalty": 2.0}]
pefs = [PEF(members, progress=False, steps=steps_from(settings)).fit(problem.data)
        for settings in ({}, {"rival.upto": 0})]  # the rival stands, or the repair runs in its place
cov = np.cov(problem.data, rowvar=False)
json.dump({"covariance": hashlib.sha256(cov.tobytes()).hexdigest(),
           "edges": [sorted(map(list, pef.graph_.named_edges())) for pef in pefs],
           "ran": sorted({name for pef in pefs for name, account in pef.steps_.items()
                          if account and "skipped" not in account})},
          sys.stdout)
"""


@pytest.mark.jvm
@pytest.mark.slow
def test_the_same_graph_whichever_kernel_the_blas_picks():
    runs = {kernel: json.loads(subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                                              check=True, env={**os.environ, "OPENBLAS_CORETYPE": kernel}).stdout)
            for kernel in ("", "Prescott")}
    native, generic = runs[""], runs["Prescott"]
    assert native["covariance"] != generic["covariance"]  # the kernels do round differently here
    assert {"rival", "repair", "polish", "sweep"} <= set(native["ran"])
    assert native["edges"] == generic["edges"]
