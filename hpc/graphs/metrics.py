"""Accuracy of an estimated graph against the truth's CPDAG, exactly as the paper defines it.

F1-adjacency ignores marks; F1-arrowhead counts a -> b as shared only if a -> b is in both
graphs (a <- b, a --- b or no adjacency in the other graph all miss it); SHD between CPDAGs
adds, per unordered pair, 1 for a missing or extra adjacency and 1 for a shared adjacency
whose marks differ. Everything is set arithmetic on sorted integer keys.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from hpc.errors import GraphError
from hpc.graphs.equivalence import dag_to_cpdag
from hpc.graphs.pdag import PDAG, arrow_keys, pair_keys


@dataclass(frozen=True)
class Metrics:
    f1_adjacent: float
    precision_adjacent: float
    recall_adjacent: float
    f1_arrowhead: float
    precision_arrowhead: float
    recall_arrowhead: float
    shd: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True)
class MetricInfo:
    """How results, tables and plots treat a metric: the one place a new metric is declared."""

    name: str
    label: str
    higher_is_better: bool
    digits: int  # decimals shown in tables
    table: bool = False  # compared between methods in the paper's tables (best, Wilcoxon)
    plot: bool = False  # a panel of the report's curves
    log: bool = False  # that panel on a log scale


METRIC_INFO: dict[str, MetricInfo] = {m.name: m for m in (
    MetricInfo("f1_adjacent", "F1-adj", True, 2, table=True, plot=True),
    MetricInfo("f1_arrowhead", "F1-arrow", True, 2, table=True, plot=True),
    MetricInfo("shd", "SHD", False, 0, table=True, plot=True, log=True),
    MetricInfo("precision_adjacent", "Prec-adj", True, 2),
    MetricInfo("recall_adjacent", "Rec-adj", True, 2),
    MetricInfo("precision_arrowhead", "Prec-arrow", True, 2),
    MetricInfo("recall_arrowhead", "Rec-arrow", True, 2),
    MetricInfo("seconds", "T (s)", False, 1, plot=True, log=True),
    MetricInfo("peak_mb", "Mem (MB)", False, 0),
)}


def _ratio(num: int, den: int) -> float:
    """0/0 counts as perfect agreement (both graphs have nothing of that kind)."""
    return 1.0 if den == 0 else num / den


def _scores(est: np.ndarray, true: np.ndarray) -> tuple[float, float, float]:
    tp = len(np.intersect1d(est, true, assume_unique=True))
    fp, fn = len(est) - tp, len(true) - tp
    return _ratio(2 * tp, 2 * tp + fp + fn), _ratio(tp, tp + fp), _ratio(tp, tp + fn)


def marks(g: PDAG) -> tuple[np.ndarray, np.ndarray]:
    """Pair keys and a mark code per pair: 1 = low -> high, 2 = high -> low, 3 = undirected."""
    d = g.directed
    keys = np.concatenate([pair_keys(d, g.p), pair_keys(g.undirected, g.p)])
    codes = np.concatenate([np.where(d[:, 0] < d[:, 1], 1, 2), np.full(len(g.undirected), 3)])
    order = np.argsort(keys)
    return keys[order], codes[order]


def compare(estimate: PDAG, truth: PDAG) -> Metrics:
    """Metrics of `estimate` against `truth` (pass the true DAG's CPDAG), same variables."""
    if estimate.variables != truth.variables:
        raise GraphError("estimate and truth must have the same variables in the same order")
    p = truth.p
    f1_adj, prec_adj, rec_adj = _scores(estimate.skeleton_keys(), truth.skeleton_keys())
    f1_arr, prec_arr, rec_arr = _scores(np.sort(arrow_keys(estimate.directed, p)),
                                        np.sort(arrow_keys(truth.directed, p)))
    ek, ec = marks(estimate)
    tk, tc = marks(truth)
    _, ie, it = np.intersect1d(ek, tk, assume_unique=True, return_indices=True)
    shd = (len(ek) - len(ie)) + (len(tk) - len(it)) + int(np.count_nonzero(ec[ie] != tc[it]))
    return Metrics(f1_adj, prec_adj, rec_adj, f1_arr, prec_arr, rec_arr, shd)


def evaluate(estimate: PDAG, true_dag: PDAG) -> Metrics:
    """Metrics of `estimate` against the CPDAG of the true DAG."""
    return compare(estimate, dag_to_cpdag(true_dag))
