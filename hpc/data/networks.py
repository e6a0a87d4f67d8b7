"""The bnlearn structures the benchmarks replicate (shipped in the package: clusters are offline).

`bnlearn.json.gz` is produced by scripts/import_bnlearn.py from pgmpy 1.1.2's wheel (28
networks) plus bnlearn's model string for healthcare.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from importlib import resources

from hpc.errors import PsleError
from hpc.graphs.pdag import PDAG

#: The ten networks of the paper's test tables.
PAPER_TEST_NETWORKS = ("alarm", "asia", "cancer", "child", "earthquake", "hailfinder", "healthcare",
                       "mildew", "pigs", "survey")


@cache
def _library() -> dict[str, dict]:
    raw = resources.files("hpc.data").joinpath("bnlearn.json.gz").read_bytes()
    return json.loads(gzip.decompress(raw))["networks"]


def network_names() -> list[str]:
    return sorted(_library())


def load_network(name: str) -> PDAG:
    """The DAG of a bnlearn network by (case-insensitive) name."""
    lib = _library()
    key = name.lower()
    if key not in lib:
        raise PsleError(f"unknown network {name!r}; known: {', '.join(sorted(lib))}")
    entry = lib[key]
    return PDAG.from_named_edges(entry["nodes"], [(a, b, "-->") for a, b in entry["arcs"]])
