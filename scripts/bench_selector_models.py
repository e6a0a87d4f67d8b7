"""Which selector model chooses best on clusters of a family it has never seen?

Cross-validates model variants on selection records (`psle records`), holding out one family (or
one problem) at a time, and scores each with the policy PEF uses (hpc.train.evaluate): run the
top-ranked member, fall back where it fails, size-weighted Q = F1-adjacency + F1-arrowhead.

    python scripts/bench_selector_models.py RECORDS.h5 [MORE.h5 ...] [--portfolio portfolio] [--by family|problem]
        [--models per-member,centered]
    python scripts/bench_selector_models.py RECORDS.h5 [MORE.h5 ...] --curve

`--curve` asks whether more records would help the shipped (pair-regression) model: 5-fold
cross-validation by problem (every family in training and test), training on a random fraction of
the other folds' problems (three draws per fraction below 1).

Variants (all scikit-learn forests; censored runs, those that hit the records' time limit, are unknown):
- `pair-regression`: one regressor per member pair of their difference in Q, fit where both are known;
  a member scores its mean predicted difference to all (what ships, hpc.select.selector.Selector).
- `per-member`: one regressor of Q per member, fit where that member's Q is known (shipped before).
- `centered`, `regret`: `per-member` fit on each cluster's Q minus the mean (or the best) of its members' Q,
  so the forests model a member's advantage and not how hard the cluster is (which all members share).
- `multi-output`: one regressor of the whole Q vector, censored entries filled in by `per-member`'s
  predictions; shared leaves make the members' predicted differences come from the same clusters.
- `pairwise`: SATzilla 2012's cost-sensitive pairwise voting: a classifier per member pair, each
  cluster weighted by the Q difference; the member with the most (probability-weighted) votes wins.
- `backup`: no model, the member with the best size-weighted Q on the training clusters.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from hpc.train.evaluate import selection_quality
from hpc.select.examples import Example, load_examples, scores
from hpc.select.selector import FOREST, Selector, order_of

Model = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def pair_regression(x: np.ndarray, y: np.ndarray, w: np.ndarray, test: np.ndarray) -> np.ndarray:
    portfolio = [{"member": k} for k in range(y.shape[1])]  # the selector's models never read the specs
    return Selector("truth", "cross-validation", portfolio, x, y, w).rank(test)


def per_member(x: np.ndarray, y: np.ndarray, w: np.ndarray, test: np.ndarray) -> np.ndarray:
    out = []
    for k in range(y.shape[1]):
        known = np.isfinite(y[:, k])
        out.append(RandomForestRegressor(**FOREST).fit(x[known], y[known, k], sample_weight=w[known]).predict(test))
    return np.column_stack(out)


def centered(x: np.ndarray, y: np.ndarray, w: np.ndarray, test: np.ndarray) -> np.ndarray:
    return per_member(x, y - np.nanmean(y, axis=1, keepdims=True), w, test)


def regret(x: np.ndarray, y: np.ndarray, w: np.ndarray, test: np.ndarray) -> np.ndarray:
    return per_member(x, y - np.nanmax(y, axis=1, keepdims=True), w, test)


def multi_output(x: np.ndarray, y: np.ndarray, w: np.ndarray, test: np.ndarray) -> np.ndarray:
    filled = np.where(np.isfinite(y), y, per_member(x, y, w, x))
    return RandomForestRegressor(**FOREST).fit(x, filled, sample_weight=w).predict(test)


def pairwise(x: np.ndarray, y: np.ndarray, w: np.ndarray, test: np.ndarray) -> np.ndarray:
    votes = np.zeros((len(test), y.shape[1]))
    for i in range(y.shape[1]):
        for j in range(i + 1, y.shape[1]):
            diff = y[:, i] - y[:, j]
            use = np.isfinite(diff) & (np.abs(diff) > 1e-9)
            wins = diff[use] > 0
            if not use.any():
                continue
            if wins.all() or not wins.any():
                votes[:, i if wins[0] else j] += 1.0
                continue
            model = RandomForestClassifier(**FOREST).fit(x[use], wins, sample_weight=np.abs(diff[use]) * w[use])
            p_i = model.predict_proba(test)[:, list(model.classes_).index(True)]
            votes[:, i] += p_i
            votes[:, j] += 1.0 - p_i
    return votes


def backup(x: np.ndarray, y: np.ndarray, w: np.ndarray, test: np.ndarray) -> np.ndarray:
    best = int(np.argmax((np.nan_to_num(y) * w[:, None]).sum(axis=0)))
    return np.tile(np.eye(y.shape[1])[best], (len(test), 1))


MODELS: dict[str, Model] = {"pair-regression": pair_regression, "per-member": per_member, "centered": centered,
                            "regret": regret, "multi-output": multi_output, "pairwise": pairwise, "backup": backup}


def learning_curve(examples: list[Example], fractions: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)) -> None:
    groups = sorted({e.group for e in examples})
    order = np.random.default_rng(0).permutation(len(groups))
    folds = [{groups[i] for i in order[k::5]} for k in range(5)]
    print(f"{len(examples)} clusters of {len(groups)} problems, 5 folds by problem; pair-regression model\n"
          "| fraction of training problems | Q (mean over draws) | Q per draw |\n|---|---|---|")
    for fraction in fractions:
        draws = []
        for seed in range(3 if fraction < 1 else 1):
            rng = np.random.default_rng(seed)
            total = weight = 0.0
            for fold in folds:
                pool = sorted(set(groups) - fold)
                keep = set(rng.choice(pool, size=max(1, round(fraction * len(pool))), replace=False))
                train = [e for e in examples if e.group in keep and e.ok.any()]
                test = [e for e in examples if e.group in fold]
                predicted = pair_regression(np.stack([e.features for e in train]),
                                            np.stack([scores(e, "truth") for e in train]),
                                            np.array([float(e.size) for e in train]),
                                            np.stack([e.features for e in test]))
                size = sum(e.size for e in test)
                total += selection_quality(test, [order_of(s) for s in predicted])["q"] * size
                weight += size
            draws.append(total / weight)
        print(f"| {fraction:g} | {np.mean(draws):.3f} | " + ", ".join(f"{d:.3f}" for d in draws) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--portfolio", default="portfolio")
    ap.add_argument("--by", choices=("family", "problem"), default="family")
    ap.add_argument("--curve", action="store_true", help="Q against the amount of training records")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of: {', '.join(MODELS)}")
    args = ap.parse_args()
    models = {name: MODELS[name] for name in args.models.split(",") if name in MODELS}
    if not models or len(models) != len(args.models.split(",")):
        ap.error(f"--models {args.models!r}: choose from {', '.join(MODELS)}")
    _, members, examples = load_examples(args.records, args.portfolio)
    if args.curve:
        learning_curve(examples)
        return
    key: Callable[[Example], str] = (lambda e: e.family) if args.by == "family" else (lambda e: e.group)
    groups = sorted({key(e) for e in examples})
    table: dict[str, dict[str, dict]] = {name: {} for name in models}
    for held in groups:
        train = [e for e in examples if key(e) != held and e.ok.any()]
        test = [e for e in examples if key(e) == held]
        x = np.stack([e.features for e in train])
        y = np.stack([scores(e, "truth") for e in train])
        w = np.array([float(e.size) for e in train])
        t = np.stack([e.features for e in test])
        for name, model in models.items():
            table[name][held] = selection_quality(test, [order_of(s) for s in model(x, y, w, t)])
    sizes = {g: sum(e.size for e in examples if key(e) == g) for g in groups}
    family = {g: next(e.family for e in examples if key(e) == g) for g in groups}  # a problem's columns: its family's
    columns = sorted(set(family.values()))
    print(f"{len(examples)} clusters, {len(members)} members, held out by {args.by}; Q per family (size-weighted "
          "over its held-out groups), then the size-weighted mean")
    print("| model | " + " | ".join(columns) + " | mean |\n|---|" + "---|" * (len(columns) + 1))
    first = next(iter(models))
    rows = [(name, {g: table[name][g]["q"] for g in groups}) for name in models]
    rows += [(label, {g: table[first][g][field] for g in groups}) for label, field in
             (("best single in hindsight", "q_best_single"), ("per-cluster oracle", "q_oracle"))]

    def mean(values: dict[str, float], where: list[str]) -> float:
        return sum(values[g] * sizes[g] for g in where) / sum(sizes[g] for g in where)
    for name, values in rows:
        cells = [mean(values, [g for g in groups if family[g] == c]) for c in columns]
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in cells) + f" | {mean(values, groups):.3f} |")


if __name__ == "__main__":
    main()
