"""Graph files: the project's JSON, an edge-list CSV, Tetrad's text format, GraphML and DOT.

JSON is the exchange format other tools read:
`{"variables": [names...], "edges": [[from, to, "-->"], [a, b, "---"], ...], "meta": {...}}`.
GraphML (Cytoscape, Gephi, igraph, networkx) and DOT (Graphviz, DoWhy) carry each edge's mark as an
attribute (`mark`): GraphML writes an undirected edge as two directed ones, both marked `---`, so
`nx.read_graphml(...).edges()` claims no direction the graph does not; in DOT it is one edge without an
arrowhead. Every format keeps variables without edges (the CSV as a row with the name alone). Writers are atomic; readers name the file and the
problem in one line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import networkx as nx

from hpc.atomic import write_text_atomic
from hpc.errors import PsleError
from hpc.graphs.pdag import DIRECTED, MARKS, PDAG, REVERSED, UNDIRECTED
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
    """`from,to,edge` rows, then a row `name,,` for each variable no edge names (so it is not lost)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["from", "to", "edge"])
    edges = g.named_edges()
    w.writerows(edges)
    named = {name for a, b, _ in edges for name in (a, b)}
    w.writerows([v, "", ""] for v in g.variables if v not in named)
    write_text_atomic(path, buf.getvalue())


#: Header names an edge list may use for its columns (compared case-insensitively).
FROM_NAMES, TO_NAMES, MARK_NAMES = ("from", "source", "cause"), ("to", "target", "effect"), ("edge", "mark")
EDGE_LIST_HELP = ("an edge list has the header row 'from,to' (or 'from,to,edge' with marks --> for from causes to, "
                  "<-- or ---), one edge a row, and may list a variable without edges as a row with its name alone")


def read_edge_csv(path: str | os.PathLike, variables: list[str] | None = None) -> PDAG:
    """An edge list `from,to[,edge]`; variables default to those the rows name, in order seen."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except FileNotFoundError:
        raise PsleError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise PsleError(f"{path}: not a UTF-8 text file") from None
    return edges_from_rows(rows, str(path), variables)


def edges_from_rows(rows: list[list[str]], source: str, variables: list[str] | None = None) -> PDAG:
    """An edge list's rows, header first (a CSV file's or a DataFrame's): a row without a mark is from --> to,
    a row naming one variable alone lists it without edges."""
    header = [c.strip().lower() for c in rows[0]] if rows else []
    if not (len(header) in (2, 3) and header[0] in FROM_NAMES and header[1] in TO_NAMES
            and (len(header) == 2 or header[2] in MARK_NAMES)):
        got = f"the header {','.join(rows[0])!r}" if rows else "no header row"
        raise PsleError(f"{source}: {got} is not an edge list's: {EDGE_LIST_HELP}")
    edges, alone = [], []
    for line, row in enumerate(rows[1:], start=2):
        cells = [c.strip() for c in row]
        if not any(cells):
            continue
        if len(cells) not in (1, len(header)):
            raise PsleError(f"{source}: line {line} has {len(cells)} fields, expected {len(header)} as the header has")
        a, b, mark = (*cells, "", "")[:3]
        if not b:
            alone.append(a)  # a variable without edges
            continue
        if mark not in ("", *MARKS):
            raise PsleError(f"{source}: line {line}: mark {mark!r} is not one of {', '.join(MARKS)} "
                            "(--> from causes to, --- undirected); fix the mark or leave it empty for -->")
        edges.append([a, b, mark or DIRECTED])
    if variables is None:
        variables = list(dict.fromkeys([*(name for e in edges for name in e[:2]), *alone]))
    try:
        return PDAG.from_named_edges(variables, edges)
    except PsleError as exc:
        raise PsleError(f"{source}: {exc}") from None


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


def to_networkx(g: PDAG, edge_attributes: dict[tuple[str, str], dict[str, Any]] | None = None) -> nx.DiGraph:
    """A networkx DiGraph of every variable: a directed edge a -> b once, with mark `-->`; an undirected one
    as both a -> b and b -> a, each with mark `---` (so `edges()` claims no direction the graph does not);
    any `edge_attributes[(a, b)]` (keyed as `named_edges` writes the edge) go on both."""
    out = nx.DiGraph()
    out.add_nodes_from(g.variables)
    for a, b, mark in g.named_edges():
        attrs = {"mark": mark, **(edge_attributes or {}).get((a, b), {})}
        out.add_edge(a, b, **attrs)
        if mark == UNDIRECTED:
            out.add_edge(b, a, **attrs)
    return out


def from_networkx(graph: nx.Graph, source: str) -> PDAG:
    """The PDAG of a networkx graph. An edge's `mark` attribute rules where present; in a directed graph an
    edge without one is `-->`, and a pair joined both ways (`to_networkx`'s undirected edge, or two plain
    edges) is `---`, so files written by older versions (one edge, mark `---`) read the same; in an
    undirected graph an edge without a mark is `---`."""
    default = DIRECTED if graph.is_directed() else UNDIRECTED
    given: dict[tuple[str, str], tuple[str, bool]] = {}  # (from, to) -> (--> or ---, whether the file marked it)
    for a, b, attrs in graph.edges(data=True):
        mark = str(attrs.get("mark", default))
        ends = (str(b), str(a)) if mark == REVERSED else (str(a), str(b))
        if ends in given:
            raise PsleError(f"{source}: {ends[0]} --> {ends[1]} is given twice (once as {ends[1]} <-- {ends[0]})")
        given[ends] = (DIRECTED if mark == REVERSED else mark, "mark" in attrs)
    edges = []
    for (a, b), (mark, marked) in given.items():
        back = given.get((b, a))
        if back is None:
            edges.append([a, b, mark])
        elif (a, b) < (b, a):  # a pair joined both ways, taken once
            if not (mark == back[0] == UNDIRECTED or not (marked or back[1])):
                raise PsleError(f"{source}: {a} and {b} are joined both ways, as {a} {mark} {b} and {b} {back[0]} {a}; "
                                "keep one (an undirected edge goes both ways, each marked ---)")
            edges.append([a, b, UNDIRECTED])
    try:
        return PDAG.from_named_edges([str(v) for v in graph.nodes], edges)
    except PsleError as exc:
        raise PsleError(f"{source}: {exc}") from None


def write_graphml(path: str | os.PathLike, g: PDAG,
                  edge_attributes: dict[tuple[str, str], dict[str, Any]] | None = None) -> None:
    buf = io.BytesIO()
    nx.write_graphml(to_networkx(g, edge_attributes), buf)
    write_text_atomic(path, buf.getvalue().decode())


def read_graphml(path: str | os.PathLike) -> PDAG:
    try:
        graph = nx.read_graphml(path)
    except FileNotFoundError:
        raise PsleError(f"{path}: no such file") from None
    except Exception as exc:  # networkx reports bad XML as several exception types
        raise PsleError(f"{path}: not a GraphML file ({type(exc).__name__}: {exc})") from None
    return from_networkx(graph, str(path))


def _quoted(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: PDAG, edge_attributes: dict[tuple[str, str], dict[str, Any]] | None = None) -> str:
    """Graphviz DOT: a digraph of every variable; an undirected edge has `dir=none`."""
    lines = ["digraph psle {"] + [f"  {_quoted(v)};" for v in g.variables]
    for a, b, mark in g.named_edges():
        attrs = {"mark": mark, **({"dir": "none"} if mark == UNDIRECTED else {}),
                 **(edge_attributes or {}).get((a, b), {})}
        text = ", ".join(f"{k}={_quoted(str(v))}" for k, v in attrs.items())
        lines.append(f"  {_quoted(a)} -> {_quoted(b)} [{text}];")
    return "\n".join(lines + ["}"]) + "\n"


_DOT_NODE = r'"((?:[^"\\]|\\.)*)"|([A-Za-z_0-9.]+)'
_DOT_EDGE = re.compile(rf"^\s*(?:{_DOT_NODE})\s*(->|--)\s*(?:{_DOT_NODE})\s*(\[.*\])?\s*;?\s*$")
_DOT_ALONE = re.compile(rf"^\s*(?:{_DOT_NODE})\s*(\[.*\])?\s*;?\s*$")


def from_dot(text: str, source: str) -> PDAG:
    """The DOT this module writes, and plain digraphs of one statement per line (`a -> b;`, `a -- b`,
    `dir=none` for an undirected edge); subgraphs and edge chains are not read."""
    variables: dict[str, None] = {}
    edges = []
    for line in text.splitlines()[1:]:
        if line.strip() in ("", "}") or re.match(r"^\s*(graph|node|edge)\s*\[", line):
            continue
        if m := _DOT_EDGE.match(line):
            a = _unquote(m.group(1), m.group(2))
            b = _unquote(m.group(4), m.group(5))
            attrs = m.group(6) or ""
            undirected = m.group(3) == "--" or re.search(r"dir\s*=\s*\"?none", attrs) is not None
            edges.append([a, b, UNDIRECTED if undirected else DIRECTED])
            variables.update({a: None, b: None})
        elif m := _DOT_ALONE.match(line):
            variables[_unquote(m.group(1), m.group(2))] = None
        else:
            raise PsleError(f"{source}: cannot read the DOT line {line.strip()!r}")
    try:
        return PDAG.from_named_edges(list(variables), edges)
    except PsleError as exc:
        raise PsleError(f"{source}: {exc}") from None


def _unquote(quoted: str | None, bare: str | None) -> str:
    if quoted is not None:
        return re.sub(r"\\(.)", r"\1", quoted)
    return bare or ""


def _text(path: str | os.PathLike) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise PsleError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise PsleError(f"{path}: not a UTF-8 text file") from None


#: Graph file suffixes, readable and writable.
GRAPH_FORMATS = (".json", ".csv", ".txt", ".graphml", ".dot")


def _format(path: str | os.PathLike) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in GRAPH_FORMATS:
        raise PsleError(f"{path}: unknown graph format {suffix!r} (use {', '.join(GRAPH_FORMATS)})")
    return suffix


def read_graph(path: str | os.PathLike) -> PDAG:
    """Any supported graph file, by suffix (.json, .csv, .txt for Tetrad text, .graphml, .dot)."""
    suffix = _format(path)
    if suffix == ".json":
        return read_json(path)[0]
    if suffix == ".csv":
        return read_edge_csv(path)
    if suffix == ".graphml":
        return read_graphml(path)
    if suffix == ".dot":
        return from_dot(_text(path), str(path))
    return from_tetrad_text(_text(path), str(path))


def write_graph(path: str | os.PathLike, g: PDAG, meta: dict[str, Any] | None = None,
                edge_attributes: dict[tuple[str, str], dict[str, Any]] | None = None) -> None:
    """`g` in the format `path`'s suffix names; `meta` goes into JSON, `edge_attributes` (per named
    edge (a, b) as written) into GraphML and DOT."""
    suffix = _format(path)
    if suffix == ".json":
        write_json(path, g, meta)
    elif suffix == ".csv":
        write_edge_csv(path, g)
    elif suffix == ".graphml":
        write_graphml(path, g, edge_attributes)
    elif suffix == ".dot":
        write_text_atomic(path, to_dot(g, edge_attributes))
    else:
        write_text_atomic(path, to_tetrad_text(g))
