"""Does a selector fit on records of one kind of data choose well on another?

Scores, on records made under other data conditions (another sample size, `psle records --samples N`,
or weaker effects, `--weights LOW HIGH`), the truth selector fit on the BASE records alone against one
refit with the other conditions' records too, held out by
problem (each test problem's clusters are chosen by a selector fit without that problem), beside
the best single member in hindsight and the per-cluster oracle. Size-weighted Q = F1-adjacency +
F1-arrowhead, the policy PEF uses (hpc.train.evaluate: run the first, fall back where it fails).

    python scripts/bench_selector_conditions.py --base BASE.h5 [...] --test N200.h5 [N6000.h5 ...] [--tolerance 0.01]

One table per test file, one row per family.
"""

from __future__ import annotations


import numpy as np

from benchlib import records_args
from hpc.train.evaluate import play, weighted_q
from hpc.select.examples import Example, label, load_examples
from hpc.select.selector import Selector


def picks(selector: Selector, examples: list[Example]) -> list[int]:
    return [play(e, order)[0] for e, order in zip(examples, selector.orders([e.features for e in examples]))]


def main() -> None:
    args = records_args(__doc__.splitlines()[0], "test", "records under other conditions, one file each")

    name, members, base = load_examples(args.base, args.portfolio)
    tests = {path: load_examples([path], args.portfolio)[2] for path in args.test}
    others = [e for examples in tests.values() for e in examples]
    base_only = Selector.from_examples(base, "truth", name, members, tolerance=args.tolerance)
    for path, examples in tests.items():
        chosen_base = picks(base_only, examples)
        chosen_refit = [0] * len(examples)
        for problem in sorted({e.group for e in examples}):
            train = base + [e for e in others if e.group != problem]
            refit = Selector.from_examples(train, "truth", name, members, tolerance=args.tolerance)
            held = [i for i, e in enumerate(examples) if e.group == problem]
            for i, k in zip(held, picks(refit, [examples[i] for i in held])):
                chosen_refit[i] = k
        print(f"\n{path}: {len(examples)} clusters, {len({e.group for e in examples})} problems\n")
        print("| family | clusters | base records only | refit, problem held out | best single member | oracle |")
        print("|---|---|---|---|---|---|")
        families = sorted({e.family for e in examples})
        for family in [*families, "all"]:
            rows = [i for i, e in enumerate(examples) if family in ("all", e.family)]
            sub = [examples[i] for i in rows]
            singles = [weighted_q(sub, [k] * len(sub)) for k in range(len(members))]
            best = int(np.argmax(singles))
            print(f"| {family} | {len(sub)} | {weighted_q(sub, [chosen_base[i] for i in rows]):.3f} | "
                  f"{weighted_q(sub, [chosen_refit[i] for i in rows]):.3f} | {singles[best]:.3f} "
                  f"({members[best]['method']} {members[best].get('penalty', members[best].get('alpha'))}) | "
                  f"{weighted_q(sub, [label(e, 'truth') for e in sub]):.3f} |")


if __name__ == "__main__":
    main()
