"""The network structures the benchmarks use (shipped in the package: clusters are offline).

`bnlearn.json.gz` is produced by scripts/import_bnlearn.py from pgmpy 1.1.2's wheel (28
networks) plus bnlearn's model string for healthcare; `gnw.json.gz` by scripts/import_gnw.py from
GeneNetWeaver (the yeast gene regulatory network of the paper's §4.4, made acyclic).
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
def _read(filename: str) -> dict[str, dict]:
    raw = resources.files("hpc.data").joinpath(filename).read_bytes()
    return json.loads(gzip.decompress(raw))["networks"]


def _library() -> dict[str, dict]:
    return _read("bnlearn.json.gz") | _read("gnw.json.gz")


def bnlearn_names() -> list[str]:
    """The bnlearn repository's networks: the pool training problems are drawn from."""
    return sorted(_read("bnlearn.json.gz"))


def network_names() -> list[str]:
    """Every network a benchmark can use: bnlearn's and the yeast network."""
    return sorted(_library())


def load_network(name: str) -> PDAG:
    """The DAG of a library network by (case-insensitive) name."""
    lib = _library()
    key = name.lower()
    if key not in lib:
        raise PsleError(f"unknown network {name!r}; known: {', '.join(sorted(lib))}")
    entry = lib[key]
    return PDAG.from_named_edges(entry["nodes"], [(a, b, "-->") for a, b in entry["arcs"]])
