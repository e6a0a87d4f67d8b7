"""The paper's generalization curves: accuracy and cost against the number of variables."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on cluster nodes
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hpc.atomic import atomic_path  # noqa: E402
from hpc.report.render import NAMES  # noqa: E402
from hpc.report.summary import LABELS, methods  # noqa: E402

PANELS = (("f1_adjacent", False), ("f1_arrowhead", False), ("shd", True), ("seconds", True))


def curves(frame: pd.DataFrame, network: str, out: Path) -> Path | None:
    """One PNG with four panels (F1-adj, F1-arrow, SHD log, runtime log); one line per method.

    A point is the mean over the seeds that finished; sizes where a method hit its limit are left out.
    """
    runs = frame[frame.network == network]
    if runs["nodes"].nunique() < 2:
        return None
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6), constrained_layout=True)
    for ax, (metric, log) in zip(axes, PANELS):
        for m in methods(runs):
            ok = runs[(runs.method == m) & (runs.status == "ok")]
            if ok.empty:
                continue
            means = ok.groupby("p")[metric].mean().sort_index()
            ax.plot(means.index, means.to_numpy(), marker="o", label=NAMES.get(m, m))
        ax.set_xlabel("variables")
        ax.set_title(LABELS[metric] + (" (log)" if log else ""))
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(network.capitalize())
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return out
