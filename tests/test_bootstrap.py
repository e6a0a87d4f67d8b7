"""Bootstrap edge confidence: hand-computed frequencies and consensus rules, seeded resamples, and
`psle learn --bootstrap` end to end (outputs a viewer opens, finished resamples kept and not rerun)."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hpc.data.generate import SEM, sample
from hpc.errors import PsleError
from hpc.graphs.bootstrap import consensus, edge_frequencies, resample_rows
from hpc.graphs.pdag import PDAG

PSLE = str(Path(sys.executable).parent / "psle")
ABC = ("a", "b", "c")


def test_frequencies_count_each_edge_type_per_pair():
    graphs = [PDAG(ABC, [(0, 1)], [(1, 2)]), PDAG(ABC, [(1, 0)], [(1, 2)]), PDAG(ABC, [(0, 1), (2, 1)], []),
              PDAG(ABC, [(0, 1)], [])]
    freq = edge_frequencies(graphs)
    assert freq.resamples == 4 and freq.pairs.tolist() == [[0, 1], [1, 2]]  # a-c never adjacent: not listed
    assert freq.shares.tolist() == [[0.75, 0.25, 0.0, 0.0], [0.0, 0.25, 0.5, 0.25]]
    assert freq.adjacency.tolist() == [1.0, 0.75]
    assert freq.rows() == [("a", "b", 0.75, 0.25, 0.0, 0.0), ("b", "c", 0.0, 0.25, 0.5, 0.25)]


def test_consensus_rules():
    graphs = [PDAG(ABC, [(0, 1)], [(1, 2)]), PDAG(ABC, [(1, 0)], []), PDAG(ABC, [(0, 1), (2, 1)], []),
              PDAG(ABC, [(0, 1)], [(1, 2)])]
    freq = edge_frequencies(graphs)  # a-b: --> 0.75, <-- 0.25; b-c: <-- 0.25, --- 0.5, none 0.25
    assert consensus(freq, "threshold", 0.5).named_edges() == [("a", "b", "-->"), ("b", "c", "---")]
    assert consensus(freq, "threshold", 0.8).named_edges() == [("a", "b", "-->")]
    assert consensus(freq, "majority").named_edges() == [("a", "b", "-->")]  # --- is at 0.5, not above
    assert consensus(freq, "highest").named_edges() == [("a", "b", "-->"), ("b", "c", "---")]
    assert consensus(freq, "preserved").n_edges == 2
    with pytest.raises(PsleError, match="consensus rule must be one of"):
        consensus(freq, "vote")


def test_resamples_are_seeded_by_seed_and_index():
    a, b = resample_rows(100, 0, 3), resample_rows(100, 0, 3)
    assert np.array_equal(a, b) and len(a) == 100 and a.min() >= 0 and a.max() < 100
    assert not np.array_equal(a, resample_rows(100, 0, 4)) and not np.array_equal(a, resample_rows(100, 1, 3))
    sub = resample_rows(100, 0, 3, subsample=0.5)
    assert len(sub) == 50 and len(np.unique(sub)) == 50


def chain_csv(path: Path) -> None:
    dag = PDAG(tuple("vwxyz"), [(0, 1), (1, 2), (3, 2), (2, 4)])
    x = sample(SEM(dag, np.full(4, 0.8), np.ones(5)), 800, np.random.default_rng(2))
    path.write_text("v,w,x,y,z\n" + "\n".join(",".join(f"{v:.6f}" for v in row) for row in x) + "\n")


def psle(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([PSLE, *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def test_learn_bootstrap_writes_frequencies_and_keeps_finished_resamples(tmp_path):
    import networkx as nx

    chain_csv(tmp_path / "d.csv")
    args = ["learn", "d.csv", "--method", "pc-stable", "--bootstrap", "4", "--serial", "-o", "g.graphml"]
    run = psle(*args, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    graph = nx.read_graphml(tmp_path / "g.graphml")
    assert sorted(graph.nodes) == list("vwxyz")
    assert all(0 < d["frequency"] <= d["adjacency"] <= 1 and d["mark"] in ("-->", "---") for _, _, d in
               graph.edges(data=True))
    strong = {frozenset((a, b)) for a, b, d in graph.edges(data=True) if d["adjacency"] == 1.0}
    assert {frozenset("vw"), frozenset("wx"), frozenset("yx"), frozenset("xz")} <= strong  # the true skeleton
    with open(tmp_path / "g.frequencies.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert all(abs(sum(float(r[t]) for t in ("-->", "<--", "---", "none")) - 1) < 1e-6 for r in rows)
    assert (tmp_path / "g.frequencies.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A rerun after losing one resample runs that one only; the others keep their files as they were.
    folder = tmp_path / "g.resamples"
    kept = {p.name: p.stat().st_mtime_ns for p in folder.iterdir() if p.name != "resample-00002.json"}
    (folder / "resample-00002.json").unlink()
    run = psle(*args, cwd=tmp_path)
    assert run.returncode == 0 and "3 already done" in run.stderr, run.stderr
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir() if p.name in kept} == kept
    assert (folder / "resample-00002.json").is_file()
    # Resamples of other settings are refused, not mixed in.
    run = psle(*args[:-2], "--bootstrap-seed", "7", "-o", "g.graphml", cwd=tmp_path)
    assert run.returncode == 2 and "a resample of other data or settings" in run.stderr
    # The JSON output holds the whole table in its meta.
    run = psle("learn", "d.csv", "--method", "pc-stable", "--bootstrap", "4", "--serial", "-o", "h.json",
               cwd=tmp_path)
    meta = json.loads((tmp_path / "h.json").read_text())["meta"]
    assert meta["bootstrap"]["resamples"] == 4 and len(meta["bootstrap"]["frequencies"]) == len(rows)
