"""One graph type for DAGs, CPDAGs and PDAGs.

Edges are kept as two sorted integer arrays (directed `parent -> child` rows and undirected
`i --- j` rows with i < j) so that a 30,000-node graph costs a few hundred kilobytes and set
operations (metrics, fusion) are vectorised numpy calls, not Python loops over pairs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from hpc.errors import GraphError

DIRECTED = "-->"
UNDIRECTED = "---"
REVERSED = "<--"
MARKS = (DIRECTED, UNDIRECTED, REVERSED)


def _rows(edges: np.ndarray | Sequence | None) -> np.ndarray:
    arr = np.asarray(edges if edges is not None else np.empty((0, 2)), dtype=np.int64)
    return arr.reshape(-1, 2)


def _sorted_unique(rows: np.ndarray) -> np.ndarray:
    if len(rows) == 0:
        return np.empty((0, 2), dtype=np.int64)
    return np.unique(rows, axis=0)


@dataclass(frozen=True, eq=False)
class PDAG:
    """A partially directed graph over named variables.

    `directed[k] = (parent, child)`; `undirected[k] = (i, j)` with i < j; both sorted, no pair
    of variables appears twice. A DAG is a PDAG with no undirected edges and no cycle.
    """

    variables: tuple[str, ...]
    directed: np.ndarray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))
    undirected: np.ndarray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))

    def __post_init__(self) -> None:
        variables = tuple(str(v) for v in self.variables)
        if len(set(variables)) != len(variables):
            dup = next(v for v, count in Counter(variables).items() if count > 1)
            raise GraphError(f"variable name {dup!r} appears twice")
        directed = _sorted_unique(_rows(self.directed))
        und = _rows(self.undirected)
        undirected = _sorted_unique(np.sort(und, axis=1)) if len(und) else _rows(None)
        p = len(variables)
        for name, rows in (("directed", directed), ("undirected", undirected)):
            if len(rows) and (rows.min() < 0 or rows.max() >= p):
                raise GraphError(f"{name} edge index out of range for {p} variables")
            loops = rows[:, 0] == rows[:, 1]
            if loops.any():
                raise GraphError(f"self-loop on variable {variables[rows[loops][0, 0]]!r}")
        keys = np.concatenate([pair_keys(directed, p), pair_keys(undirected, p)])
        uniq, counts = np.unique(keys, return_counts=True)
        if (counts > 1).any():
            k = int(uniq[counts > 1][0])
            a, b = variables[k // p], variables[k % p]
            raise GraphError(f"variables {a!r} and {b!r} are joined by more than one edge")
        for arr in (directed, undirected):
            arr.flags.writeable = False
        object.__setattr__(self, "variables", variables)
        object.__setattr__(self, "directed", directed)
        object.__setattr__(self, "undirected", undirected)

    # -- construction -------------------------------------------------------------------
    @classmethod
    def empty(cls, variables: Iterable[str]) -> PDAG:
        return cls(tuple(variables))

    @classmethod
    def from_named_edges(cls, variables: Iterable[str], edges: Iterable[Sequence[str]]) -> PDAG:
        """Build from `(a, b, mark)` triples with mark `-->`, `<--` or `---`."""
        variables = tuple(variables)
        index = {v: i for i, v in enumerate(variables)}
        directed: list[tuple[int, int]] = []
        undirected: list[tuple[int, int]] = []
        for edge in edges:
            if len(edge) != 3:
                raise GraphError(f"edge {list(edge)!r} is not [from, to, mark]")
            a, b, mark = edge
            for name in (a, b):
                if name not in index:
                    raise GraphError(f"edge {a} {mark} {b} names unknown variable {name!r}")
            i, j = index[a], index[b]
            if mark == DIRECTED:
                directed.append((i, j))
            elif mark == REVERSED:
                directed.append((j, i))
            elif mark == UNDIRECTED:
                undirected.append((i, j))
            else:
                raise GraphError(f"edge {a} {mark} {b}: mark must be one of {', '.join(MARKS)}")
        return cls(variables, np.array(directed, dtype=np.int64), np.array(undirected, dtype=np.int64))

    def with_edges(self, directed: np.ndarray | None = None, undirected: np.ndarray | None = None) -> PDAG:
        """A graph over the same variables with the given edge arrays (None keeps the current)."""
        return PDAG(self.variables,
                    self.directed if directed is None else directed,
                    self.undirected if undirected is None else undirected)

    # -- size and identity --------------------------------------------------------------
    @property
    def p(self) -> int:
        return len(self.variables)

    @property
    def n_edges(self) -> int:
        return len(self.directed) + len(self.undirected)

    @property
    def is_directed(self) -> bool:
        return len(self.undirected) == 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PDAG):
            return NotImplemented
        return (self.variables == other.variables
                and np.array_equal(self.directed, other.directed)
                and np.array_equal(self.undirected, other.undirected))

    def __hash__(self) -> int:
        return hash((self.variables, self.directed.tobytes(), self.undirected.tobytes()))

    def __repr__(self) -> str:
        return f"PDAG(p={self.p}, directed={len(self.directed)}, undirected={len(self.undirected)})"

    @cached_property
    def index(self) -> dict[str, int]:
        return {v: i for i, v in enumerate(self.variables)}

    # -- neighbourhoods (CSR built once, on first use) -------------------------------------
    @cached_property
    def _csr(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        p = self.p
        und_both = np.concatenate([self.undirected, self.undirected[:, ::-1]])

        def csr(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            order = np.lexsort((dst, src))
            ptr = np.zeros(p + 1, dtype=np.int64)
            np.add.at(ptr, src + 1, 1)
            return np.cumsum(ptr), dst[order]

        return {
            "children": csr(self.directed[:, 0], self.directed[:, 1]),
            "parents": csr(self.directed[:, 1], self.directed[:, 0]),
            "neighbors": csr(und_both[:, 0], und_both[:, 1]),
        }

    def csr(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """`(ptr, idx)` with the `kind` ("parents", "children", "neighbors") of i at idx[ptr[i]:ptr[i+1]]."""
        return self._csr[kind]

    def _get(self, kind: str, i: int) -> np.ndarray:
        ptr, idx = self._csr[kind]
        return idx[ptr[i]:ptr[i + 1]]

    def parents(self, i: int) -> np.ndarray:
        """Sources of directed edges into `i`, sorted."""
        return self._get("parents", i)

    def children(self, i: int) -> np.ndarray:
        return self._get("children", i)

    def neighbors(self, i: int) -> np.ndarray:
        """Variables joined to `i` by an undirected edge."""
        return self._get("neighbors", i)

    def adjacent(self, i: int) -> np.ndarray:
        return np.unique(np.concatenate([self.parents(i), self.children(i), self.neighbors(i)]))

    def parent_lists(self) -> list[list[int]]:
        ptr, idx = self._csr["parents"]
        return [idx[ptr[i]:ptr[i + 1]].tolist() for i in range(self.p)]

    def named_edges(self) -> list[tuple[str, str, str]]:
        v = self.variables
        return ([(v[a], v[b], DIRECTED) for a, b in self.directed.tolist()]
                + [(v[a], v[b], UNDIRECTED) for a, b in self.undirected.tolist()])

    def skeleton_keys(self) -> np.ndarray:
        """Sorted unordered-pair keys `min * p + max` of all adjacencies."""
        return np.sort(np.concatenate([pair_keys(self.directed, self.p), pair_keys(self.undirected, self.p)]))

    def reindexed(self, variables: Sequence[str]) -> PDAG:
        """The same edges over `variables` (a superset of this graph's, in any order)."""
        index = {v: i for i, v in enumerate(variables)}
        unknown = [v for v in self.variables if v not in index]
        if unknown:
            shown = ", ".join(repr(v) for v in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
            raise GraphError(f"{len(unknown)} variable(s) not in the reference: {shown}")
        remap = np.array([index[v] for v in self.variables], dtype=np.int64)
        return PDAG(tuple(variables), remap[self.directed], remap[self.undirected])

    def subgraph(self, nodes: Sequence[int] | np.ndarray) -> PDAG:
        """The graph induced on `nodes` (in that order), renumbered 0..len(nodes)-1."""
        index = np.asarray(nodes, dtype=np.int64)
        remap = np.full(self.p, -1, dtype=np.int64)
        remap[index] = np.arange(len(index))

        def keep(rows: np.ndarray) -> np.ndarray:
            r = remap[rows]
            return r[(r >= 0).all(axis=1)]

        return PDAG(tuple(self.variables[i] for i in nodes), keep(self.directed), keep(self.undirected))


def pair_keys(rows: np.ndarray, p: int) -> np.ndarray:
    """Unordered-pair key `min * p + max` per row: equal for i-j and j-i."""
    rows = _rows(rows)
    return rows.min(axis=1) * p + rows.max(axis=1)


def arrow_keys(rows: np.ndarray, p: int) -> np.ndarray:
    """Ordered key `from * p + to` per row."""
    rows = _rows(rows)
    return rows[:, 0] * p + rows[:, 1]
