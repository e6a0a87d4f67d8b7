"""How should the truth selector choose among members it predicts within a hair of each other?

The shipped rule runs the member predicted fastest among those predicted within the tolerance (0.01 Q)
of the best. This compares it, on selection records held out by problem (5 folds) and by family, with:
- `best`: the best predicted, whatever its cost;
- `faster-R`: the fastest within the tolerance only where it is predicted at least R times faster than
  the best predicted (a 1 % saving is not worth 0.009 Q);
- `safe`: the fastest within the tolerance among those a classifier of the records' timeouts (one
  scikit-learn forest, all members) gives less than a 0.5 chance of timing out;
- `top2-bic`: where two or more are within the tolerance, run the two best predicted and keep the
  better BIC (the paper's rule between them).
Q is size-weighted F1-adjacency + F1-arrowhead; as in PEF, a member that fails or times out gives way to
the next in the order. Seconds count a run that hit the records' limit as 900 s, the use-time runaway
guard's floor, since at use time such a run is cut by the guard, not by the records' limit.

    python scripts/bench_near_ties.py RECORDS.h5 [MORE.h5 ...] [--tolerance 0.01]
"""

from __future__ import annotations

import argparse
import warnings
from dataclasses import replace

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GroupKFold

from hpc.pef.pipeline import RUNAWAY_FLOOR
from hpc.train.evaluate import play, weighted_q
from hpc.select.examples import Example, load_examples
from hpc.select.selector import FOREST, Selector, order_of


def played(example: Example, order: list[int], top: int) -> tuple[int, float, bool]:
    """PEF's policy on one cluster with a timed-out run costing the guard's floor: the member kept, the
    seconds spent, and whether the first run timed out."""
    at_use = replace(example, seconds=np.where(example.timed_out, RUNAWAY_FLOOR, example.seconds))
    kept, seconds = play(at_use, order, top)
    return kept, seconds, bool(example.timed_out[order[0]])


def policies(score: np.ndarray, seconds: np.ndarray, risk: np.ndarray, tolerance: float) -> dict[str, tuple[list[int], int]]:
    """Each policy's order of members on one cluster, and how many of them it runs up front."""
    best = order_of(score)
    near = [k for k in best if score[k] >= score[best[0]] - tolerance]
    fastest = lambda ks: min(ks, key=lambda k: (seconds[k], k))  # noqa: E731
    firsts = {"best": best[0], "shipped": fastest(near),
              "safe": fastest([k for k in near if risk[k] < 0.5] or near)}
    for ratio in (1.5, 2.0):
        firsts[f"faster-{ratio:g}"] = fastest([k for k in near if seconds[k] * ratio <= seconds[best[0]]] or [best[0]])
    out = {name: ([k] + [m for m in best if m != k], 1) for name, k in firsts.items()}
    out["top2-bic"] = (best, 2) if len(near) > 1 else out["shipped"]
    return out


def evaluate(examples: list[Example], splits, name: str, members: list, tolerance: float) -> dict[str, list]:
    """Per policy, the (kept, seconds, first timed out) of every cluster, each chosen by a fit without its split."""
    out: dict[str, list] = {}
    for train, test in splits:
        fit_on = [examples[i] for i in train]
        selector = Selector.from_examples(fit_on, "truth", name, members, tolerance=tolerance)
        timeouts = RandomForestClassifier(**FOREST, n_jobs=-1).fit(
            np.array([e.features for e in fit_on]), np.array([e.timed_out for e in fit_on]).astype(int))
        x = np.array([examples[i].features for i in test])
        score, seconds = selector.rank(x), selector.predicted_seconds(x)
        risk = np.column_stack([p[:, -1] if 1 in c else np.zeros(len(x))
                                for p, c in zip(timeouts.predict_proba(x), timeouts.classes_)])
        for row, i in enumerate(test):
            for policy, (order, top) in policies(score[row], seconds[row], risk[row], tolerance).items():
                out.setdefault(policy, [None] * len(examples))[i] = played(examples[i], order, top)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+")
    parser.add_argument("--portfolio", default="portfolio")
    parser.add_argument("--tolerance", type=float, default=0.01)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*sklearn.utils.parallel.delayed.*")
    name, members, examples = load_examples(args.records, args.portfolio)
    families = sorted({e.family for e in examples})
    index = range(len(examples))
    splits = {"5 folds by problem": list(GroupKFold(5).split(examples, groups=[e.group for e in examples])),
              "family held out": [([i for i in index if examples[i].family != f],
                                   [i for i in index if examples[i].family == f]) for f in families]}
    for title, split in splits.items():
        print(f"\n{title}, {len(examples)} clusters\n\n| policy | Q | member s | first run timed out | "
              + " | ".join(families) + " |\n" + "|---" * (4 + len(families)) + "|")
        for policy, outcomes in evaluate(examples, split, name, members, args.tolerance).items():
            kept = [k for k, _, _ in outcomes]
            per = [weighted_q([examples[i] for i in index if examples[i].family == f],
                              [kept[i] for i in index if examples[i].family == f]) for f in families]
            print(f"| {policy} | {weighted_q(examples, kept):.4f} | {sum(s for _, s, _ in outcomes):,.0f} | "
                  f"{sum(t for _, _, t in outcomes)} | " + " | ".join(f"{q:.4f}" for q in per) + " |")


if __name__ == "__main__":
    main()
