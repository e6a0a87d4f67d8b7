"""How good a selection is, measured on records (clusters with every member's outcome known).

Each policy picks one member per cluster; its Q is the size-weighted mean over clusters of the
picked member's F1-adjacency + F1-arrowhead against the restricted truth. The oracle picks the
best member per cluster; `bic-all` is the paper's rule (run all, keep the best BIC); a single
member is every cluster's pick. Seconds are summed member seconds: what a policy pays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpc.select.selector import Example, Selector, label


def policy_summary(examples: list[Example], picks: list[int]) -> dict[str, float]:
    size = np.array([e.size for e in examples], dtype=np.float64)
    q = np.array([e.quality[k] for e, k in zip(examples, picks)])
    seconds = sum(e.seconds[k] for e, k in zip(examples, picks))
    return {"q": float((q * size).sum() / size.sum()), "seconds": float(seconds)}


def selection_quality(examples: list[Example], picks: list[int], top: list[list[int]] | None = None) -> dict[str, Any]:
    """A policy's picks against the BIC winner, the truth winner, the oracle and the paper's rule.

    `top` (the members run per cluster, when more than one) makes the pick the best BIC among them.
    """
    if top is not None:
        picks = [max(ks, key=lambda k: (e.bic[k], -k)) for e, ks in zip(examples, top)]
    bic = [label(e, "bic") for e in examples]
    truth = [label(e, "truth") for e in examples]
    chosen = policy_summary(examples, picks)
    run_seconds = (chosen["seconds"] if top is None
                   else float(sum(e.seconds[ks].sum() for e, ks in zip(examples, top))))
    all_seconds = float(sum(e.seconds.sum() for e in examples))
    n_members = len(examples[0].quality)
    singles = [policy_summary(examples, [k] * len(examples))["q"] for k in range(n_members)]
    return {
        "clusters": len(examples),
        "picks_bic_winner": float(np.mean([p == b or np.isclose(e.bic[p], e.bic[b]) for p, b, e in
                                           zip(picks, bic, examples)])),
        "picks_truth_winner": float(np.mean([np.isclose(e.quality[p], e.quality[t]) for p, t, e in
                                             zip(picks, truth, examples)])),
        "q": chosen["q"],
        "q_oracle": policy_summary(examples, truth)["q"],
        "q_bic_all": policy_summary(examples, bic)["q"],
        "q_best_single": max(singles),
        "best_single": int(np.argmax(singles)),
        "member_seconds": run_seconds,
        "member_seconds_all": all_seconds,
    }


def cross_validate(examples: list[Example], target: str, portfolio_name: str, portfolio: list[dict[str, Any]],
                   by: str = "family", top_k: int = 1) -> list[dict[str, Any]]:
    """Hold out one group at a time (a whole family, or one problem), fit on the rest, score the held-out."""
    key = (lambda e: e.family) if by == "family" else (lambda e: e.group)
    rows = []
    for held in sorted({key(e) for e in examples}):
        train = [e for e in examples if key(e) != held]
        test = [e for e in examples if key(e) == held]
        selector = Selector.from_examples(train, target, portfolio_name, portfolio)
        ranked = [selector.choose(e.features, top_k)[0] for e in test]
        result = selection_quality(test, [r[0] for r in ranked], ranked if top_k > 1 else None)
        rows.append({"held_out": held, **result})
    return rows
