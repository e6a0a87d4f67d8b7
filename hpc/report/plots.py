"""The paper's generalization curves: accuracy and cost against the number of variables."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on cluster nodes
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hpc.atomic import atomic_path  # noqa: E402
from hpc.report.paper import shipped  # noqa: E402
from hpc.report.render import display_name  # noqa: E402
from hpc.graphs.metrics import METRIC_INFO  # noqa: E402
from hpc.report.summary import LABELS, methods  # noqa: E402

PANELS = tuple((m, info.log) for m, info in METRIC_INFO.items() if info.plot)


def paper_points(network: str, metric: str) -> pd.Series:
    """The paper's P/SLE values by number of variables, from its scale tables (1,000-30,000 variables on
    96 cores; empty for networks it did not scale up)."""
    paper = shipped()
    rows = paper[paper.table.str.startswith("tab:big_") & (paper.method == "p-sle") & (paper.network == network)
                 & (paper.metric == metric)]
    return pd.Series(rows["mean"].to_numpy(), index=rows["p"].to_numpy()).sort_index()


def points(frame: pd.DataFrame, network: str, method: str, metric: str) -> tuple[pd.Series, pd.Series]:
    """(means over finished seeds by number of variables, seconds spent at the sizes where a seed timed out).

    A size with a timed-out seed has no mean (the paper's tables show "-"); the seconds spent there are a
    lower bound on the runtime, drawn apart so the runtime curve does not silently stop.
    """
    runs = frame[(frame.network == network) & (frame.method == method)]
    hit = runs[runs.status == "timed out"].groupby("p")["seconds"].max()
    ok = runs[(runs.status == "ok") & ~runs.p.isin(hit.index)]
    return ok.groupby("p")[metric].mean().sort_index(), hit.sort_index()


def curves(frame: pd.DataFrame, network: str, out: Path) -> Path | None:
    """One PNG with four panels (F1-adj, F1-arrow, SHD log, runtime log); one line per method, and the
    paper's P/SLE (dashed) where it reports the network at several sizes.

    Runtime panel: a hollow triangle (a lower bound) where a method hit its time limit.
    """
    runs = frame[frame.network == network]
    if runs["nodes"].nunique() < 2:
        return None
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6), constrained_layout=True)
    for ax, (metric, log) in zip(axes, PANELS):
        for m in methods(runs):
            means, limits = points(runs, network, m, metric)
            if means.empty and limits.empty:
                continue
            line, = ax.plot(means.index, means.to_numpy(), marker="o", label=display_name(m))
            if metric == "seconds" and not limits.empty:
                ax.plot(limits.index, limits.to_numpy(), linestyle="none", marker="^", markerfacecolor="none",
                        color=line.get_color(), label=f"{display_name(m)}: time limit hit")
        paper = paper_points(network, metric)
        if not paper.empty:
            ax.plot(paper.index, paper.to_numpy(), linestyle="--", color="black", marker=".",
                    label="paper's P/SLE (96 cores)")
        ax.set_xlabel("variables")
        ax.set_title(LABELS[metric] + (" (log)" if log else ""))
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    if any("time limit" in label for label in axes[-1].get_legend_handles_labels()[1]):
        axes[-1].legend(fontsize=7)
    fig.suptitle(network.capitalize())
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return out
