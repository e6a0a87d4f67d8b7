"""The paper's statistics over seeds: mean ± std, best cell, Wilcoxon 'not significantly worse', improvement ratio.

Pure functions on the results DataFrame of `hpc.results.collect`. A cell is complete only if every
seed of it finished ("-" in the paper when the time limit was hit); incomplete cells take no part
in choosing the best.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from hpc.graphs.metrics import METRIC_INFO

METRICS = tuple(m for m, info in METRIC_INFO.items() if info.table)
HIGHER_IS_BETTER = {m: info.higher_is_better for m, info in METRIC_INFO.items()}
LABELS = {m: info.label for m, info in METRIC_INFO.items()}
OURS = "p-sle"
ALPHA = 0.05


@dataclass(frozen=True)
class Cell:
    mean: float
    std: float
    n: int
    complete: bool
    best: bool = False
    bold: bool = False
    p_value: float = math.nan  # one-sided Wilcoxon p that this cell is worse than the best (nan: not tested)
    paired: int = 0            # seeds the test paired with the best cell


def datasets(frame: pd.DataFrame) -> list[tuple[str, int]]:
    """(network, nodes) columns in the order of the table: by size, then network name."""
    keys = frame[["network", "nodes"]].drop_duplicates()
    return sorted((str(n), int(v)) for n, v in keys.itertuples(index=False, name=None))


def methods(frame: pd.DataFrame) -> list[str]:
    """Ours first, then PEF baselines, then plain learners (the paper's row order)."""
    from hpc.learners.members import MEMBERS

    found = list(dict.fromkeys(frame["method"]))
    learners = sorted(MEMBERS, key=lambda m: m != "pc-stable")  # the paper lists PC-Stable before fGES
    order = ["p-sle", "p-sle-d", "p-sle-r", *(f"p-{m}" for m in learners), *learners]

    def rank(method: str) -> tuple[int, str]:
        base = next((o for o in sorted(order, key=len, reverse=True) if method == o or method.startswith(o + "-")),
                    None)
        return (order.index(base), method) if base else (len(order), method)
    return sorted(found, key=rank)


def _runs(frame: pd.DataFrame, network: str, nodes: int, method: str) -> pd.DataFrame:
    return frame[(frame.network == network) & (frame.nodes == nodes) & (frame.method == method)]


def cell(frame: pd.DataFrame, network: str, nodes: int, method: str, metric: str) -> Cell | None:
    runs = _runs(frame, network, nodes, method)
    if runs.empty:
        return None
    ok = runs[runs.status == "ok"]
    values = ok[metric].astype(float).to_numpy()
    complete = len(ok) == len(runs) and len(values) > 0
    if metric == "seconds" and not complete:
        values = runs["seconds"].astype(float).to_numpy()
    mean = float(values.mean()) if len(values) else math.nan
    std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    return Cell(mean, std, len(runs), complete)


def worse_test(best: pd.Series, other: pd.Series, higher: bool) -> tuple[float, int]:
    """One-sided Wilcoxon signed-rank over the seeds both cells ran: (p that `other` is worse than
    `best`, number of paired seeds). No paired seed gives p = 0 (nothing shows it is not worse);
    identical values give p = 1."""
    paired = pd.concat([best, other], axis=1, join="inner").dropna()
    diff = (paired.iloc[:, 1] - paired.iloc[:, 0]).to_numpy(dtype=float)
    if not higher:
        diff = -diff
    if len(diff) == 0:
        return 0.0, 0
    if np.all(diff == 0):
        return 1.0, len(diff)
    return float(wilcoxon(diff, alternative="less").pvalue), len(diff)


def table(frame: pd.DataFrame, metric: str) -> dict[tuple[str, int, str], Cell]:
    """Every (network, nodes, method) cell of one metric with its best/bold marks."""
    out: dict[tuple[str, int, str], Cell] = {}
    for network, nodes in datasets(frame):
        cells = {m: cell(frame, network, nodes, m, metric) for m in methods(frame)}
        cells = {m: c for m, c in cells.items() if c is not None}
        if metric not in METRICS:
            out.update({(network, nodes, m): c for m, c in cells.items()})
            continue
        higher = HIGHER_IS_BETTER[metric]
        ranked = [m for m, c in cells.items() if c.complete]
        best = (max if higher else min)(ranked, key=lambda m: cells[m].mean) if ranked else None

        def per_seed(m: str) -> pd.Series:
            runs = _runs(frame, network, nodes, m)
            return runs.set_index("seed")[metric].astype(float)

        for m, c in cells.items():
            is_best = m == best or (best is not None and c.complete and c.mean == cells[best].mean)
            p_value, paired = (worse_test(per_seed(best), per_seed(m), higher)
                               if c.complete and best is not None and not is_best else (math.nan, 0))
            bold = c.complete and best is not None and (is_best or p_value >= ALPHA)
            out[(network, nodes, m)] = Cell(c.mean, c.std, c.n, c.complete, is_best, bold, p_value, paired)
    return out


def improvement(cells: dict[tuple[str, int, str], Cell], network: str, nodes: int, metric: str,
                ours: str = OURS) -> float | None:
    """(A−B)/B for F1, (B−A)/B for SHD: A is ours, B the best complete baseline."""
    mine = cells.get((network, nodes, ours))
    rivals = [c for (n, v, m), c in cells.items() if (n, v) == (network, nodes) and m != ours and c.complete]
    if mine is None or not mine.complete or not rivals:
        return None
    higher = HIGHER_IS_BETTER[metric]
    b = (max if higher else min)(c.mean for c in rivals)
    if b == 0:
        return None
    return (mine.mean - b) / b if higher else (b - mine.mean) / b
