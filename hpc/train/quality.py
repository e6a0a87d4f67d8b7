"""Q(theta, D) = F1-adjacency + F1-arrowhead of one member on one training problem (0 if it fails),
with the output's BIC (None if it fails), which the `bic` objective chooses members by."""

from __future__ import annotations

import time
from typing import Any

from hpc.train.problems import ProblemSpec, materialise
from hpc.graphs.metrics import compare
from hpc.learners.members import OK, LearnerError, member_from_spec


def member_quality(spec: dict[str, Any], problem: ProblemSpec, time_limit: float | None) -> dict[str, Any]:
    """Runs on a worker; the problem is regenerated there (cheap, cached)."""
    start = time.perf_counter()
    cov, n, variables, truth = materialise(problem)
    member = member_from_spec(spec, time_limit)
    try:
        member.fit_covariance(cov, n, variables)
    except LearnerError:
        return {"quality": 0.0, "bic": None, "status": "failed", "seconds": time.perf_counter() - start}
    if member.status_ != OK:
        return {"quality": 0.0, "bic": None, "status": member.status_, "seconds": time.perf_counter() - start}
    m = compare(member.graph_, truth)
    return {"quality": m.f1_adjacent + m.f1_arrowhead, "bic": member.bic_, "status": OK,
            "seconds": time.perf_counter() - start}
