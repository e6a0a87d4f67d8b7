"""Cutting a set of variables into searches of a bounded size: walk it breadth first along some neighbour
relation, and pack the variables met into parts while the variables their searches need still fit. The
repair (candidate partners) and the polish (Markov blankets) cut their searches this way."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence

import numpy as np


def pack_walk(starts: Sequence[int], near: Callable[[int], Iterable[int]], reach: Callable[[int], set[int]],
              upto: int) -> list[np.ndarray]:
    """The variables of `starts`, walked breadth first (from each start in turn, neighbours in the order `near`
    gives them; `near` names only variables to visit), as parts whose searches (the union of their variables'
    `reach`, each holding the variable itself) hold at most `upto` variables; a variable whose own reach is
    larger is a part alone. Neighbours in the walk share much of their reach, so parts stay small."""
    visit: list[int] = []
    seen: set[int] = set()
    for start in starts:
        if start in seen:
            continue
        seen.add(start)
        queue = deque([start])
        while queue:
            v = queue.popleft()
            visit.append(v)
            for w in near(v):
                if w not in seen:
                    seen.add(w)
                    queue.append(w)
    parts: list[list[int]] = []
    members: set[int] = set()
    for v in visit:
        mine = reach(v)
        if parts and len(members | mine) <= upto:
            parts[-1].append(v)
            members |= mine
        else:
            parts.append([v])
            members = set(mine)
    return [np.array(sorted(part), dtype=np.int64) for part in parts]
