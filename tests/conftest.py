"""Shared helpers: small graphs written by hand, a reference CPDAG built the slow way, psle-experiment."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from hpc.graphs.pdag import PDAG


def psle_experiment(results: Path, *overrides: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run `psle-experiment` with its results (and Hydra's files) under `results`."""
    env = {**os.environ, "PSLE_RESULTS": str(results)}
    return subprocess.run([str(Path(sys.executable).parent / "psle-experiment"), *overrides],
                          capture_output=True, text=True, cwd=results, env=env, timeout=timeout)


def takes_ctrl_c() -> None:
    """Popen's preexec_fn for a child that must take Ctrl-C as a terminal's foreground job does. A shell
    starts background jobs (`cmd &`, as a CI runner or nohup may) with SIGINT ignored, and the child
    inherits that: it would run on through the test's interrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def dag(variables: str, edges: str) -> PDAG:
    """`dag("abcd", "a>c b>c c>d")`: one-letter variables, `x>y` directed, `x-y` undirected."""
    named = []
    for token in edges.split():
        sep = ">" if ">" in token else "-"
        a, b = token.split(sep)
        named.append((a, b, "-->" if sep == ">" else "---"))
    return PDAG.from_named_edges(list(variables), named)


def reference_cpdag(g: PDAG) -> PDAG:
    """CPDAG by v-structures + Meek rules R1-R3, pair by pair: slow, obviously correct, independent."""
    p = g.p
    parents = [set(x) for x in g.parent_lists()]
    adj = [set() for _ in range(p)]
    for a, b in g.directed.tolist():
        adj[a].add(b)
        adj[b].add(a)
    directed = set()
    for c in range(p):
        for a, b in itertools.combinations(sorted(parents[c]), 2):
            if b not in adj[a]:
                directed |= {(a, c), (b, c)}
    undirected = {(min(a, b), max(a, b)) for a, b in g.directed.tolist()} - {(min(a, b), max(a, b)) for a, b in directed}
    changed = True
    while changed:
        changed = False
        for (x, y) in list(undirected):
            for a, b in ((x, y), (y, x)):
                # orient a -> b ?
                r1 = any((c, a) in directed and b not in adj[c] for c in range(p))
                r2 = any((a, c) in directed and (c, b) in directed for c in range(p))
                r3 = any((c, b) in directed and (d, b) in directed and c != d and d not in adj[c]
                         and (min(a, c), max(a, c)) in undirected and (min(a, d), max(a, d)) in undirected
                         for c in range(p) for d in range(p))
                if r1 or r2 or r3:
                    undirected.discard((x, y))
                    directed.add((a, b))
                    changed = True
                    break
    return g.with_edges(np.array(sorted(directed), dtype=np.int64).reshape(-1, 2),
                        np.array(sorted(undirected), dtype=np.int64).reshape(-1, 2))


def random_small_dag(rng: np.random.Generator, p: int, density: float) -> PDAG:
    order = rng.permutation(p)
    edges = [(order[i], order[j]) for i in range(p) for j in range(i + 1, p) if rng.random() < density]
    return PDAG(tuple(f"v{i}" for i in range(p)), np.array(edges, dtype=np.int64).reshape(-1, 2))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def evaluations(checkpoint: Path) -> int:
    """Evaluations an Auto-SLE training checkpoint holds (0 before it exists)."""
    try:
        with h5py.File(checkpoint, "r") as f:
            return len(f["evaluations/keys"])
    except (OSError, KeyError):
        return 0
