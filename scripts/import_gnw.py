"""Regenerate hpc/data/gnw.json.gz: the yeast gene regulatory network of the paper's §4.4.

The paper's "Yeast" problem (4,441 genes, 12,873 edges) is GeneNetWeaver's yeast transcriptional
network (Balaji et al. 2006), shipped in GNW's `lib/gnw-networks.jar` (MIT licence). Regulatory
networks have feedback: one strongly connected set of 60 genes holds every cycle, 9 of them
two-gene loops. A linear-Gaussian benchmark needs a DAG, so this script orders the genes with the
Eades-Lin-Smyth greedy feedback-arc heuristic (few edges against the order) and reverses the
edges that point backwards. Every adjacency is kept; the 9 two-gene loops become one edge each,
so the DAG has 12,864 edges. The jar is pinned by its sha256.

Usage: python scripts/import_gnw.py [--jar PATH] [-o hpc/data/gnw.json.gz]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import tempfile
import urllib.request
import zipfile
from collections import defaultdict
from pathlib import Path

COMMIT = "d898adfd0acce7ed2664eca66e4ecf67125148e2"
JAR_URL = f"https://github.com/tschaffter/genenetweaver/raw/{COMMIT}/lib/gnw-networks.jar"
JAR_SHA256 = "1bb1128431fca714504c956c54e8a77ddc08b8d205be1f8f63b9ae0782bcc5ac"
MEMBER = "ch/epfl/lis/networks/yeast_transcriptional_network_Balaji2006.tsv"


def read_edges(jar: Path) -> list[tuple[str, str]]:
    digest = hashlib.sha256(jar.read_bytes()).hexdigest()
    if digest != JAR_SHA256:
        raise SystemExit(f"{jar}: sha256 {digest} is not the pinned {JAR_SHA256}")
    with zipfile.ZipFile(jar) as zf:
        text = zf.read(MEMBER).decode()
    return [tuple(line.split("\t")[:2]) for line in text.splitlines() if line.strip()]


def feedback_order(nodes: list[str], edges: list[tuple[str, str]]) -> list[str]:
    """Eades, Lin & Smyth (1993): peel sinks to the back and sources to the front; when neither is
    left, move the node with the largest out-degree minus in-degree to the front. Edges against the
    resulting order form a small feedback arc set. Ties go to the earlier node in `nodes`."""
    out, inn = defaultdict(set), defaultdict(set)
    for a, b in edges:
        if a != b:
            out[a].add(b)
            inn[b].add(a)
    rank = {v: i for i, v in enumerate(nodes)}
    alive = set(nodes)
    front, back = [], []

    def remove(v: str) -> None:
        alive.discard(v)
        for w in out.pop(v, ()):
            inn[w].discard(v)
        for u in inn.pop(v, ()):
            out[u].discard(v)

    while alive:
        changed = True
        while changed:
            changed = False
            for v in sorted((v for v in alive if not out[v]), key=rank.get):
                back.append(v)
                remove(v)
                changed = True
            for v in sorted((v for v in alive if not inn[v]), key=rank.get):
                front.append(v)
                remove(v)
                changed = True
        if alive:
            v = max(alive, key=lambda v: (len(out[v]) - len(inn[v]), -rank[v]))
            front.append(v)
            remove(v)
    return front + back[::-1]


def as_dag(edges: list[tuple[str, str]]) -> dict:
    """Nodes in file order; each edge kept where it runs forward in `feedback_order`, reversed where
    it runs backward; a pair met twice (a two-gene loop) gives one edge."""
    nodes = list(dict.fromkeys(v for e in edges for v in e))
    position = {v: i for i, v in enumerate(feedback_order(nodes, edges))}
    arcs, seen = [], set()
    for a, b in edges:
        arc = (a, b) if position[a] < position[b] else (b, a)
        if arc not in seen:
            seen.add(arc)
            arcs.append(list(arc))
    return {"nodes": nodes, "arcs": arcs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jar", type=Path, help="a local copy of GNW's lib/gnw-networks.jar")
    ap.add_argument("-o", "--output", type=Path, default=Path(__file__).parents[1] / "hpc/data/gnw.json.gz")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        jar = args.jar
        if jar is None:
            jar = Path(tmp) / "gnw-networks.jar"
            urllib.request.urlretrieve(JAR_URL, jar)
        edges = read_edges(jar)
    dag = as_dag(edges)
    kept = {tuple(arc) for arc in dag["arcs"]}
    reversed_ = sum(1 for edge in edges if edge not in kept)
    doc = {"source": f"GeneNetWeaver {COMMIT[:12]} lib/gnw-networks.jar (sha256 {JAR_SHA256}, MIT): {MEMBER}; "
                     "edges against an Eades-Lin-Smyth order reversed",
           "networks": {"yeast": dag}}
    args.output.write_bytes(gzip.compress((json.dumps(doc, separators=(",", ":")) + "\n").encode(), mtime=0))
    print(f"yeast: {len(dag['nodes'])} nodes, {len(edges)} edges read, {len(dag['arcs'])} arcs, "
          f"{reversed_} reversed or merged")


if __name__ == "__main__":
    main()
