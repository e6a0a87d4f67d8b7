"""How good a selection is, measured on records (clusters with every member's outcome known).

A policy ranks the members of each cluster; as PEF does, it runs the first `top_k`, keeps the best
BIC among those that succeed, and where none succeeds runs the next one until one does. Its Q is
the size-weighted mean over clusters of the kept member's F1-adjacency + F1-arrowhead against the
restricted truth, its seconds the sum of the runs it made. The oracle keeps the best member per
cluster; `bic-all` is the paper's rule (run all, keep the best BIC); a single member is every
cluster's choice.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpc.select.examples import Example, label
from hpc.select.selector import Selector


def play(example: Example, order: list[int], top_k: int = 1) -> tuple[int, float]:
    """The member a ranked policy ends with on one cluster, and the seconds of the runs it made."""
    ran = list(order[:top_k])
    while not example.ok[ran].any() and len(ran) < len(order):
        ran.append(order[len(ran)])
    ok = [k for k in ran if example.ok[k]]
    kept = max(ok, key=lambda k: (example.bic[k], -k)) if ok else ran[0]
    return kept, float(example.seconds[ran].sum())


def weighted_q(examples: list[Example], picks: list[int]) -> float:
    size = np.array([e.size for e in examples], dtype=np.float64)
    return float((np.array([e.quality[k] for e, k in zip(examples, picks)]) * size).sum() / size.sum())


def selection_quality(examples: list[Example], orders: list[list[int]], top_k: int = 1) -> dict[str, Any]:
    """A ranked policy against the BIC winner, the truth winner, the oracle, the paper's rule and single members."""
    played = [play(e, o, top_k) for e, o in zip(examples, orders)]
    picks = [k for k, _ in played]
    bic = [label(e, "bic") for e in examples]
    truth = [label(e, "truth") for e in examples]
    singles = [weighted_q(examples, [k] * len(examples)) for k in range(len(examples[0].quality))]
    return {
        "clusters": len(examples),
        "picks_bic_winner": float(np.mean([np.isclose(e.bic[p], e.bic[b]) for p, b, e in zip(picks, bic, examples)])),
        "picks_truth_winner": float(np.mean([np.isclose(e.quality[p], e.quality[t])
                                             for p, t, e in zip(picks, truth, examples)])),
        "q": weighted_q(examples, picks),
        "q_oracle": weighted_q(examples, truth),
        "q_bic_all": weighted_q(examples, bic),
        "q_best_single": max(singles),
        "best_single": int(np.argmax(singles)),
        "member_seconds": float(sum(s for _, s in played)),
        "member_seconds_all": float(sum(e.seconds.sum() for e in examples)),
    }


def cross_validate(examples: list[Example], target: str, portfolio_name: str, portfolio: list[dict[str, Any]],
                   by: str = "family", top_k: int = 1, tolerance: float = 0.0,
                   extra: list[Example] = ()) -> list[dict[str, Any]]:
    """Hold out one group at a time (a whole family, or one problem), fit on the rest, score the held-out.
    `extra` examples only ever join the training side (outside the held-out group), so fits with and
    without them score the same clusters."""
    key = (lambda e: e.family) if by == "family" else (lambda e: e.group)
    rows = []
    for held in sorted({key(e) for e in examples}):
        train = [e for e in [*examples, *extra] if key(e) != held]
        test = [e for e in examples if key(e) == held]
        selector = Selector.from_examples(train, target, portfolio_name, portfolio, tolerance=tolerance)
        orders = selector.orders([e.features for e in test])
        rows.append({"held_out": held, **selection_quality(test, orders, top_k)})
    return rows
