"""Do more records make a better selector? Scores the records we had, with and without the new ones in training.

The BASE records' clusters are the test set throughout: five folds grouped by problem (each problem's
clusters chosen by a selector fit on the other folds) and one family held out at a time. The ADDED
records only ever join the training side, so both rows score the same clusters with the same policy
(hpc.train.evaluate: run the first, fall back where it fails). Size-weighted Q = F1-adjacency +
F1-arrowhead, per family, over all clusters and over clusters of at least 300 variables.

    python scripts/bench_selector_added.py --base OLD.h5 [...] --added NEW.h5 [...] [--tolerance 0.01]
"""

from __future__ import annotations


from sklearn.model_selection import GroupKFold

from benchlib import records_args
from hpc.train.evaluate import cross_validate, selection_quality
from hpc.select.examples import Example, load_examples
from hpc.select.selector import Selector

LARGE = 300


def q(examples: list[Example], orders: list[list[int]], keep) -> float:
    idx = [i for i, e in enumerate(examples) if keep(e)]
    return selection_quality([examples[i] for i in idx], [orders[i] for i in idx])["q"]


def main() -> None:
    args = records_args(__doc__.splitlines()[0], "added", "records only ever added to the training side")

    name, members, base = load_examples(args.base, args.portfolio)
    _, _, added = load_examples(args.added, (name, members))
    families = sorted({e.family for e in base})
    fit = lambda train: Selector.from_examples(train, "truth", name, members, tolerance=args.tolerance)  # noqa: E731
    print(f"| training | 5 folds, all | {' | '.join(families)} | clusters >= {LARGE} | "
          f"{' | '.join(f'{f} held out' for f in families)} |")
    print("|---" * (3 + 2 * len(families)) + "|")
    for label, extra in (("base", []), (f"base + {len(added)} added clusters", added)):
        orders: list[list[int]] = [[] for _ in base]
        folds = GroupKFold(5).split(base, groups=[e.group for e in base])
        for train, test in folds:
            chosen = fit([base[i] for i in train] + extra).orders([base[i].features for i in test])
            for i, order in zip(test, chosen):
                orders[i] = order
        held = [row["q"] for row in cross_validate(base, "truth", name, members, "family", tolerance=args.tolerance,
                                                   extra=extra)]
        cells = [q(base, orders, lambda e: True)] + [q(base, orders, lambda e, f=f: e.family == f) for f in families]
        cells += [q(base, orders, lambda e: e.size >= LARGE)] + held
        print(f"| {label} | " + " | ".join(f"{v:.4f}" for v in cells) + " |")


if __name__ == "__main__":
    main()
