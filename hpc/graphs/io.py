"""Graph files: the project's JSON, an edge-list CSV, and Tetrad's text format.

JSON is the exchange format other tools read:
`{"variables": [names...], "edges": [[from, to, "-->"], [a, b, "---"], ...], "meta": {...}}`.
Writers are atomic; readers name the file and the problem in one line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path
from typing import Any

from hpc.atomic import write_text_atomic
from hpc.errors import PsleError
from hpc.graphs.pdag import MARKS, PDAG
from hpc.jsontext import dumps


def to_json_dict(g: PDAG, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"variables": list(g.variables), "edges": [list(e) for e in g.named_edges()]}
    if meta:
        doc["meta"] = meta
    return doc


def write_json(path: str | os.PathLike, g: PDAG, meta: dict[str, Any] | None = None) -> None:
    write_text_atomic(path, dumps(to_json_dict(g, meta), indent=1) + "\n")


def read_json(path: str | os.PathLike) -> tuple[PDAG, dict[str, Any]]:
    """The graph and its `meta` object (empty if absent)."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise PsleError(f"{path}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PsleError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("variables"), list) \
            or not isinstance(doc.get("edges"), list):
        raise PsleError(f"{path}: expected an object with 'variables' and 'edges' lists")
    try:
        g = PDAG.from_named_edges(doc["variables"], doc["edges"])
    except PsleError as exc:
        raise PsleError(f"{path}: {exc}") from None
    return g, doc.get("meta", {})


def write_edge_csv(path: str | os.PathLike, g: PDAG) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["from", "to", "edge"])
    w.writerows(g.named_edges())
    write_text_atomic(path, buf.getvalue())


def read_edge_csv(path: str | os.PathLike, variables: list[str] | None = None) -> PDAG:
    """An edge list `from,to,edge`; variables default to those the edges name, in order seen."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except FileNotFoundError:
        raise PsleError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise PsleError(f"{path}: not a UTF-8 text file") from None
    if not rows or [c.strip() for c in rows[0]] != ["from", "to", "edge"]:
        raise PsleError(f"{path}: expected the header 'from,to,edge'")
    edges = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != 3:
            raise PsleError(f"{path}: line {line} has {len(row)} fields, expected 3")
        edges.append([c.strip() for c in row])
    if variables is None:
        variables = list(dict.fromkeys(name for e in edges for name in e[:2]))
    try:
        return PDAG.from_named_edges(variables, edges)
    except PsleError as exc:
        raise PsleError(f"{path}: {exc}") from None


def to_tetrad_text(g: PDAG) -> str:
    lines = ["Graph Nodes:", ";".join(g.variables), "", "Graph Edges:"]
    lines += [f"{k}. {a} {m} {b}" for k, (a, b, m) in enumerate(g.named_edges(), start=1)]
    return "\n".join(lines) + "\n"


_TETRAD_EDGE = re.compile(r"^\s*\d+\.\s+(\S+)\s+(\S+)\s+(\S+)\s*$")


def from_tetrad_text(text: str, source: str = "<text>") -> PDAG:
    """Tetrad's `Graph Nodes:` / `Graph Edges:` text (marks -->, <--, ---)."""
    lines = text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "Graph Nodes:")
    except StopIteration:
        raise PsleError(f"{source}: no 'Graph Nodes:' section") from None
    variables = [v for v in lines[start + 1].strip().split(";") if v] if start + 1 < len(lines) else []
    edges = []
    in_edges = False
    for ln in lines[start + 2:]:
        if ln.strip() == "Graph Edges:":
            in_edges = True
            continue
        if in_edges and ln.strip():
            m = _TETRAD_EDGE.match(ln)
            if not m:
                break  # Tetrad appends other sections (attributes, triples) after the edges
            a, mark, b = m.groups()
            if mark not in MARKS:
                raise PsleError(f"{source}: edge {a} {mark} {b} has an unsupported mark")
            edges.append([a, b, mark])
    try:
        return PDAG.from_named_edges(variables, edges)
    except PsleError as exc:
        raise PsleError(f"{source}: {exc}") from None


def read_graph(path: str | os.PathLike) -> PDAG:
    """Any supported graph file, by suffix (.json, .csv, .txt for Tetrad text)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return read_json(path)[0]
    if suffix == ".csv":
        return read_edge_csv(path)
    if suffix == ".txt":
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise PsleError(f"{path}: no such file") from None
        except UnicodeDecodeError:
            raise PsleError(f"{path}: not a UTF-8 text file") from None
        return from_tetrad_text(text, str(path))
    raise PsleError(f"{path}: unknown graph format {suffix!r} (use .json, .csv or .txt)")


def write_graph(path: str | os.PathLike, g: PDAG, meta: dict[str, Any] | None = None) -> None:
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        write_json(path, g, meta)
    elif suffix == ".csv":
        write_edge_csv(path, g)
    elif suffix == ".txt":
        write_text_atomic(path, to_tetrad_text(g))
    else:
        raise PsleError(f"{path}: unknown graph format {suffix!r} (use .json, .csv or .txt)")
