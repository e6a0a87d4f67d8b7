"""Prior knowledge in Tetrad's text format: temporal tiers, forbidden and required directed edges.

    /knowledge
    addtemporal
    1 age sex
    2* smoking          (* : no edges within this tier)
    3 cancer
    forbiddirect
    cancer smoking
    requiredirect
    smoking cancer

A later tier never causes an earlier one. Parsing checks the file against the data's variables (an
unknown name is refused) and against itself (a required edge that a tier, a forbidden edge or the
reverse required edge rules out is refused, as are required edges that, with the tiers, admit no order of the
variables), each in one line naming the file and the line, before any work starts.

`consistent_order` gives the order searches (BOSS, GRaSP) a start that the knowledge allows.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpc.errors import PsleError
from hpc.graphs.pdag import PDAG

SECTIONS = ("addtemporal", "forbiddirect", "requiredirect")


@dataclass(frozen=True)
class Knowledge:
    """Tiers (earliest first), the tiers with no edges inside (0-based), forbidden and required edges."""

    tiers: tuple[tuple[str, ...], ...] = ()
    closed_tiers: frozenset[int] = frozenset()
    forbidden: frozenset[tuple[str, str]] = frozenset()
    required: frozenset[tuple[str, str]] = frozenset()
    tier_of: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tier_of", {v: t for t, names in enumerate(self.tiers) for v in names})

    @property
    def empty(self) -> bool:
        return not (self.tiers or self.forbidden or self.required)

    def allows(self, a: str, b: str) -> bool:
        """Whether the edge a --> b is allowed."""
        if (a, b) in self.forbidden:
            return False
        ta, tb = self.tier_of.get(a), self.tier_of.get(b)
        if ta is None or tb is None:
            return True
        return ta < tb or (ta == tb and ta not in self.closed_tiers)

    def violations(self, graph: PDAG) -> list[str]:
        """What `graph` breaks: a forbidden or against-the-tiers directed edge, an adjacency no direction
        allows, a required edge missing, reversed or left unoriented."""
        out = []
        marks = {}
        for a, b, mark in graph.named_edges():
            marks[a, b] = mark
            if mark == "-->" and not self.allows(a, b):
                out.append(f"{a} --> {b} is forbidden")
            elif mark == "---" and not (self.allows(a, b) or self.allows(b, a)):
                out.append(f"{a} --- {b}: no direction is allowed")
        for a, b in sorted(self.required):
            if marks.get((a, b)) == "-->":
                continue
            state = ("reversed" if marks.get((b, a)) == "-->" else
                     "unoriented" if (a, b) in marks or (b, a) in marks else "missing")
            out.append(f"required {a} --> {b} is {state}")
        return out

    def oriented(self, graph: PDAG) -> PDAG:
        """`graph` with each undirected edge that the knowledge allows one way only (or requires) pointed
        that way."""
        index = graph.index
        directed, undirected = [tuple(e) for e in graph.directed.tolist()], []
        for a, b, mark in graph.named_edges():
            if mark != "---":
                continue
            forward = self.allows(a, b) and (b, a) not in self.required
            backward = self.allows(b, a) and (a, b) not in self.required
            if forward and not backward:
                directed.append((index[a], index[b]))
            elif backward and not forward:
                directed.append((index[b], index[a]))
            else:
                undirected.append((index[a], index[b]))
        return graph.with_edges(np.array(directed, dtype=np.int64).reshape(-1, 2),
                                np.array(undirected, dtype=np.int64).reshape(-1, 2))

    def restricted(self, variables: tuple[str, ...] | list[str]) -> Knowledge:
        """The knowledge about `variables` only (a cluster's share)."""
        keep = set(variables)
        return Knowledge(tuple(tuple(v for v in tier if v in keep) for tier in self.tiers), self.closed_tiers,
                         frozenset(e for e in self.forbidden if keep.issuperset(e)),
                         frozenset(e for e in self.required if keep.issuperset(e)))

    def allowed_on(self, variables: tuple[str, ...] | list[str]) -> Callable[[int, int], bool]:
        """allows() by the variables' indices (fusion adds edges by index)."""
        names = tuple(variables)
        return lambda a, b: self.allows(names[a], names[b])

    def required_on(self, variables: tuple[str, ...] | list[str]) -> np.ndarray:
        """The required edges as index pairs into `variables` (those whose ends it has)."""
        index = {v: i for i, v in enumerate(variables)}
        return np.array([[index[a], index[b]] for a, b in sorted(self.required) if a in index and b in index],
                        dtype=np.int64).reshape(-1, 2)

    def kept(self, graph: PDAG) -> tuple[PDAG, int]:
        """`graph` without its directed edges against the knowledge (an edge whose reverse it allows turns
        round), with the undirected edges it decides pointed (`oriented`); and how many edges changed."""
        fixed, changed = [], 0
        for a, b in graph.directed.tolist():
            if self.allows(graph.variables[a], graph.variables[b]):
                fixed.append((a, b))
            else:
                changed += 1
                if self.allows(graph.variables[b], graph.variables[a]):
                    fixed.append((b, a))
        cleaned = graph.with_edges(np.array(fixed, dtype=np.int64).reshape(-1, 2), graph.undirected)
        return self.oriented(cleaned), changed

    def describe(self) -> dict[str, Any]:
        """A JSON-able form (a checkpoint's settings)."""
        return {"tiers": [list(t) for t in self.tiers], "closed": sorted(self.closed_tiers),
                "forbidden": sorted(map(list, self.forbidden)), "required": sorted(map(list, self.required))}

    def indexed(self, variables: tuple[str, ...] | list[str]) -> dict[str, Any]:
        """The knowledge about `variables` by their indices, as the JVM worker takes it."""
        index = {v: i for i, v in enumerate(variables)}
        part = self.restricted(variables)
        return {"tiers": [[index[v] for v in tier] for tier in part.tiers],
                "closed": sorted(part.closed_tiers),
                "forbidden": np.array([[index[a], index[b]] for a, b in sorted(part.forbidden)],
                                      dtype=np.int64).reshape(-1, 2),
                "required": np.array([[index[a], index[b]] for a, b in sorted(part.required)],
                                     dtype=np.int64).reshape(-1, 2)}


def parse_knowledge(text: str, source: str, variables: tuple[str, ...] | list[str]) -> Knowledge:
    """Tetrad's knowledge text, checked against the data's `variables` and against itself."""
    known = set(variables)
    lines = [(k, ln.split("//")[0].strip()) for k, ln in enumerate(text.splitlines(), 1)]
    lines = [(k, ln) for k, ln in lines if ln]
    if not lines or lines[0][1].lower() != "/knowledge":
        raise PsleError(f"{source}: a knowledge file starts with the line /knowledge")
    section = None
    tiers: dict[int, list[str]] = {}
    closed: set[int] = set()
    edges: dict[str, set[tuple[str, str]]] = {"forbiddirect": set(), "requiredirect": set()}
    for k, line in lines[1:]:
        if line.lower() in SECTIONS:
            section = line.lower()
            continue
        words = line.split()
        unknown = [w for w in (words[1:] if section == "addtemporal" else words) if w not in known]
        if section is None:
            raise PsleError(f"{source}, line {k}: {line!r} comes before any section ({', '.join(SECTIONS)})")
        if unknown:
            raise PsleError(f"{source}, line {k}: unknown variable {unknown[0]!r} (not a column of the data)")
        if section == "addtemporal":
            m = re.fullmatch(r"(\d+)(\*?)", words[0])
            if not m or int(m.group(1)) < 1:
                raise PsleError(f"{source}, line {k}: a tier line starts with its number (1, 2, ...; 2* closes it)")
            tier = int(m.group(1)) - 1
            tiers.setdefault(tier, []).extend(words[1:])
            if m.group(2):
                closed.add(tier)
        elif len(words) != 2:
            raise PsleError(f"{source}, line {k}: expected two variables (from to), got {len(words)}")
        else:
            edges[section].add((words[0], words[1]))
    ordered = [tiers[t] for t in sorted(tiers)]
    renumber = {t: i for i, t in enumerate(sorted(tiers))}
    knowledge = Knowledge(tuple(tuple(t) for t in ordered), frozenset(renumber[t] for t in closed),
                          frozenset(edges["forbiddirect"]), frozenset(edges["requiredirect"]))
    _check(knowledge, source)
    return knowledge


def _check(knowledge: Knowledge, source: str) -> None:
    seen: dict[str, int] = {}
    for t, tier in enumerate(knowledge.tiers):
        for v in tier:
            if v in seen:
                raise PsleError(f"{source}: {v!r} is in two tiers ({seen[v] + 1} and {t + 1})")
            seen[v] = t
    for a, b in sorted(knowledge.required):
        if a == b:
            raise PsleError(f"{source}: required edge {a} --> {a} joins a variable to itself")
        if (b, a) in knowledge.required:
            raise PsleError(f"{source}: required edges {a} --> {b} and {b} --> {a} contradict each other")
        if not knowledge.allows(a, b):
            why = "it is forbidden" if (a, b) in knowledge.forbidden else "the tiers rule it out"
            raise PsleError(f"{source}: required edge {a} --> {b} contradicts the file: {why}")
    _check_orderable(knowledge, source)


def consistent_order(order: np.ndarray, spec: dict[str, Any] | None) -> np.ndarray:
    """`order` (of all variables, by index) rearranged so that the knowledge `spec` (Knowledge.indexed's form)
    allows it: each required edge's parent before its child, and of the variables in tiers, every earlier tier's
    before a later tier's; otherwise as close to `order` as a stable topological sort keeps it (Kahn's
    algorithm, taking next the earliest variable of `order` that may come next). Raises OrderError naming a
    cycle of these constraints when there is no such order."""
    order = np.asarray(order, dtype=np.int64)
    if spec is None or (not len(spec["required"]) and not any(len(t) for t in spec["tiers"])):
        return order
    p = len(order)
    rank = np.empty(p, dtype=np.int64)
    rank[order] = np.arange(p)
    tier_of = np.full(p, -1, dtype=np.int64)
    for t, tier in enumerate(spec["tiers"]):
        tier_of[np.asarray(tier, dtype=np.int64)] = t
    left = [len(tier) for tier in spec["tiers"]]  # variables of each tier not yet placed
    children: list[list[int]] = [[] for _ in range(p)]
    waiting = np.zeros(p, dtype=np.int64)  # required parents not yet placed
    for a, b in np.asarray(spec["required"], dtype=np.int64).reshape(-1, 2).tolist():
        children[a].append(b)
        waiting[b] += 1
    current = 0  # the earliest tier with a variable not yet placed
    while current < len(left) and not left[current]:
        current += 1
    held: list[list[int]] = [[] for _ in left]  # free of required parents, waiting for an earlier tier
    ready: list[tuple[int, int]] = []

    def free(v: int) -> None:
        if tier_of[v] > current:
            held[tier_of[v]].append(v)
        else:
            heapq.heappush(ready, (int(rank[v]), v))

    for v in range(p):
        if not waiting[v]:
            free(v)
    out: list[int] = []
    while ready:
        _, v = heapq.heappop(ready)
        out.append(v)
        for c in children[v]:
            waiting[c] -= 1
            if not waiting[c]:
                free(c)
        if tier_of[v] >= 0:
            left[tier_of[v]] -= 1
            while current < len(left) and not left[current]:
                current += 1
                if current < len(left):
                    for u in held[current]:
                        heapq.heappush(ready, (int(rank[u]), u))
    if len(out) < p:
        raise OrderError(_cycle(np.setdiff1d(np.arange(p), out), tier_of, spec))
    return np.array(out, dtype=np.int64)


class OrderError(ValueError):
    """No order of the variables keeps every required parent before its child and the tiers in order; `cycle`
    holds the indices of variables each of which must come before the next (and the last before the first)."""

    def __init__(self, cycle: list[int]) -> None:
        super().__init__(f"no order of the variables honours the knowledge: cycle {cycle}")
        self.cycle = cycle


def _cycle(stuck: np.ndarray, tier_of: np.ndarray, spec: dict[str, Any]) -> list[int]:
    """A cycle among the variables consistent_order could not place: each has one of them that must come first
    (an unplaced required parent, or an unplaced variable of an earlier tier); walk back until one repeats."""
    unplaced = set(stuck.tolist())
    parents: dict[int, list[int]] = {v: [] for v in unplaced}
    for a, b in np.asarray(spec["required"], dtype=np.int64).reshape(-1, 2).tolist():
        if a in unplaced and b in unplaced:
            parents[b].append(a)
    earliest: dict[int, int] = {}  # per tier, an unplaced variable of it
    for v in sorted(unplaced):
        if tier_of[v] >= 0:
            earliest.setdefault(int(tier_of[v]), v)
    path: list[int] = []
    seen: dict[int, int] = {}
    v = int(stuck[0])
    while v not in seen:
        seen[v] = len(path)
        path.append(v)
        if parents[v]:
            v = parents[v][0]
        else:  # held back by an earlier tier
            v = next(u for t, u in sorted(earliest.items()) if t < tier_of[v])
    return path[seen[v]:][::-1]


def _check_orderable(knowledge: Knowledge, source: str) -> None:
    names = sorted({v for tier in knowledge.tiers for v in tier} | {v for e in knowledge.required for v in e})
    try:
        consistent_order(np.arange(len(names)), knowledge.indexed(names))
    except OrderError as exc:
        cycle = [names[v] for v in exc.cycle]
        raise PsleError(f"{source}: no order of the variables puts every required edge's cause first and the tiers "
                        f"in order: {' before '.join(cycle + cycle[:1])}") from None


def read_knowledge(path: str | Path, variables: tuple[str, ...] | list[str]) -> Knowledge:
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise PsleError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise PsleError(f"{path}: not a UTF-8 text file") from None
    return parse_knowledge(text, str(path), variables)
