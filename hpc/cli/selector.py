"""`psle selector fit | upgrade | show | score`: per-cluster member selectors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hpc.errors import PsleError
from hpc.jsontext import dumps
from hpc.select.examples import TRUTH_TOLERANCE, default_tolerance
from hpc.cli.options import (non_negative,
                             print_table, whole)
from hpc.data.generate import FAMILIES
from hpc.cli.learn import member_repr



def tolerance_of(args: argparse.Namespace) -> float:
    """`--tolerance`, whose default applies to the truth target only: a bic selector ranks by probability."""
    if args.tolerance is None:
        return default_tolerance(args.target)
    if args.tolerance and args.target != "truth":
        raise PsleError(f"--tolerance {args.tolerance}: only the truth target has one (bic ranks by probability)")
    return args.tolerance


def selector_fit(args: argparse.Namespace) -> None:
    from hpc.atomic import check_output
    from hpc.select.examples import load_examples
    from hpc.select.records import data_conditions
    from hpc.select.selector import Selector

    tolerance = tolerance_of(args)
    check_output(args.output, (".json",), "the selector file", inputs=tuple(args.records))
    name, members, examples = load_examples(args.records, args.portfolio, args.exclude_families)
    families = sorted({e.family for e in examples})
    provenance = {"records": [Path(p).name for p in args.records], "families": families,
                  "excluded_families": sorted(args.exclude_families), **data_conditions(args.records)}
    selector = Selector.from_examples(examples, args.target, name, members, provenance, tolerance)
    selector.save(args.output)
    print(f"psle: {args.target} selector for {name} ({len(members)} members) from {len(selector.y)} clusters of "
          f"{', '.join(families)} -> {args.output}", file=sys.stderr)


def selector_upgrade(args: argparse.Namespace) -> None:
    from hpc.select.selector import upgrade_selector

    selector = upgrade_selector(args.selector, args.output)
    print(f"psle: {args.selector} refit as a current {selector.target} selector ({len(selector.y)} clusters) "
          f"-> {args.output}", file=sys.stderr)


def selector_show(args: argparse.Namespace) -> None:
    from hpc.select.selector import load_selector

    summary = load_selector(args.selector).summary()
    if args.json:
        print(dumps(summary))
        return
    truth = summary["target"] == "truth"
    prov = summary["provenance"]
    rule = (f"runs the fastest member predicted within {summary['tolerance']:g} Q of the best" if summary["tolerance"]
            else "runs the best-scored member")
    print(f"{summary['target']} selector {summary['sha256'][:12]}: {len(summary['members'])} members of portfolio "
          f"{summary['portfolio']!r}; {rule}")
    low, high = summary["cluster_sizes"]
    source = f" from {len(prov['records'])} records files" if prov.get("records") else ""
    print(f"trained on {summary['clusters']:,} clusters of {low:,}-{high:,} variables{source}")
    known = [f"{key}: {', '.join(range_text(v) for v in prov[key])}" for key in ("families", "samples", "weights")
             if prov.get(key)]
    if known:
        print("; ".join(known))
    cols = ["member", "best on" if truth else "wins the BIC on"] + (["finished on", "mean Q there"] if truth else [])
    cols += ["mean s"] if any("mean_seconds" in m for m in summary["members"]) else []
    table = []
    for m in summary["members"]:
        cells = [member_repr(m["member"]), str(m["best_on"])]
        if truth:
            cells += [str(m["known_on"]), "-" if m["mean_q"] is None else f"{m['mean_q']:.3f}"]
        if "mean_seconds" in m:
            cells.append(f"{m['mean_seconds']:.1f}")
        table.append(cells)
    print_table(cols, table)


def range_text(value: object) -> str:
    """A provenance entry: a weight range [low, high] as low-high, anything else as itself."""
    return "-".join(f"{v:g}" for v in value) if isinstance(value, list) else str(value)


def selector_score(args: argparse.Namespace) -> None:
    from hpc.train.evaluate import cross_validate, selection_quality
    from hpc.select.examples import load_examples
    from hpc.select.selector import load_selector

    if args.selector:
        selector = load_selector(args.selector)
        _, _, examples = load_examples(args.records, (selector.portfolio_name, selector.portfolio), [])
        orders = selector.orders([e.features for e in examples])
        rows = [{"held_out": "-", **selection_quality(examples, orders, args.top_k)}]
    else:
        name, members, examples = load_examples(args.records, args.portfolio, [])
        rows = cross_validate(examples, args.target, name, members, args.by, args.top_k, tolerance_of(args))
    if args.json:
        print(dumps(rows))
        return
    cols = ["held_out", "clusters", "picks_bic_winner", "picks_truth_winner", "q", "q_oracle", "q_bic_all",
            "q_best_single", "best_single", "member_seconds", "member_seconds_all"]
    print_table(cols, [[f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c]) for c in cols] for row in rows])


def add(sub) -> None:
    """Declare `psle selector`."""
    se = sub.add_parser("selector", help="fit, upgrade, show or score a per-cluster member selector")
    se_sub = se.add_subparsers(dest="selector_command", required=True)
    sf = se_sub.add_parser("fit", help="fit a selector (scikit-learn random forest) and write it as JSON")
    sf.add_argument("records", nargs="+", help="records files (psle records): shards, or other members "
                    "run on the same problems")
    sf.add_argument("--target", choices=["bic", "truth"], required=True,
                    help="bic: predict the best-BIC member (the paper's answer, less work); truth: the best F1")
    sf.add_argument("--portfolio", default=None, help="a conf/sle name or .yaml: choose among these members only "
                                                      "(default: every member the records ran)")
    sf.add_argument("--exclude-families", nargs="*", default=[], choices=FAMILIES, help="train without these")
    sf.add_argument("--tolerance", type=non_negative, default=None, metavar="Q",
                    help="truth target: run the fastest member predicted within Q (F1-adjacency + F1-arrowhead) "
                         f"of the best (default {TRUTH_TOLERANCE}; 0: always the best predicted)")
    sf.add_argument("-o", "--output", required=True, help="selector file (.json)")
    sf.set_defaults(func=selector_fit)
    su = se_sub.add_parser("upgrade", help="refit a selector file of an older psle with this psle's model "
                                           "(from the training examples it holds; no records needed)")
    su.add_argument("selector", help="selector file (.json) of an older format version")
    su.add_argument("-o", "--output", required=True, help="new selector file (.json)")
    su.set_defaults(func=selector_upgrade)
    sw = se_sub.add_parser("show", help="what a selector chooses among, what it was trained on, and how each "
                                        "member did on its training clusters")
    sw.add_argument("selector", nargs="?", default="truth", help="a shipped name (truth, bic) or a .json file")
    sw.add_argument("--json", action="store_true", help="print it as JSON")
    sw.set_defaults(func=selector_show)
    ss = se_sub.add_parser("score", help="selection quality on records: a given selector, or cross-validated")
    ss.add_argument("records", nargs="+", help="records files (psle records): shards, or other members "
                    "run on the same problems")
    ss.add_argument("--selector", default=None, help="score this selector (name or .json) on the records")
    ss.add_argument("--target", choices=["bic", "truth"], default="truth", help="without --selector: cross-validate")
    ss.add_argument("--portfolio", default=None, help="without --selector: members to choose among")
    ss.add_argument("--by", choices=["family", "problem"], default="family", help="cross-validation groups")
    ss.add_argument("--tolerance", type=non_negative, default=None, metavar="Q",
                    help="without --selector, truth target: as for fit")
    ss.add_argument("--top-k", type=whole(1), default=1, help="run the K most likely members, keep the best BIC")
    ss.add_argument("--json", action="store_true", help="print JSON rows")
    ss.set_defaults(func=selector_score)
