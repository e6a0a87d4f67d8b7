"""P/SLE: structure learning of large Gaussian Bayesian networks with learned ensembles.

    import hpc
    result = hpc.learn(df)              # a DataFrame, an array or a data file; psle learn's settings
    result.to_networkx()                # every variable; an undirected edge both ways, mark "---"
    hpc.evaluate(result, truth)         # F1 (adjacency, arrowhead) and SHD, as psle evaluate scores

The API (hpc.api) is imported on first use, so `import hpc` stays light.
"""

from typing import Any

__version__ = "0.1.0"
__all__ = ["PSLE", "PsleError", "Result", "evaluate", "learn"]

_API = {"learn", "evaluate", "Result", "PSLE"}


def __getattr__(name: str) -> Any:
    """The API's names, imported when first asked for (the package facade, above every layer)."""
    import importlib

    if name in _API:
        return getattr(importlib.import_module("hpc.api"), name)
    if name == "PsleError":
        from hpc.errors import PsleError

        return PsleError
    raise AttributeError(f"module 'hpc' has no attribute {name!r}")
