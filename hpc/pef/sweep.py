"""PEF's sweep: one fGES over every pair of variables, started from the graph so far, at a stricter penalty.

Every earlier step is shown only some pairs: a cluster's search its own variables, the repair the fused
graph's neighbourhoods, the polish each cluster's Markov blanket. The sweep is shown every pair once, from a
start that already explains most of the data, so an edge it adds is scored against its ends' parents, not
against the empty graph as a whole-problem search first scores it. Its backward phase, at a penalty
discount above the steps' 2.0, removes the weakest edges those steps kept. One search over every pair
re-derives the CPDAG of the whole graph after each change, which is cheap at a few thousand variables
(2-25 s at 1,000) and not at 10,000, so the sweep runs up to `sweep_upto` variables.
"""

from __future__ import annotations

import hashlib

import numpy as np

from hpc.graphs.pdag import PDAG

#: Where a checkpoint keeps the sweep's result (member runs use cluster indices from 0; hpc.pef.rival and
#: hpc.pef.polish use -1 to -3 and -10 down).
CHECKPOINT_KEY = (-4, 0)


def fingerprint(graph: PDAG) -> str:
    """Names the sweep's start graph, so a checkpointed result is reused only for the same start."""
    h = hashlib.sha256()
    for a in (graph.directed, graph.undirected):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]

