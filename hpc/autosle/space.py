"""The algorithm configuration space Θ of the paper (§4.1.2) for SMAC3, and back to member specs."""

from __future__ import annotations

from typing import Any

from ConfigSpace import Categorical, ConfigurationSpace, EqualsCondition, Float, Integer


def configuration_space(seed: int) -> ConfigurationSpace:
    """fGES (λ ∈ [1, 1000], m ∈ [1, 1000], faithfulness) or PC-Stable (α ∈ [0.01, 0.2], depth ∈ [1, 1000])."""
    cs = ConfigurationSpace(seed=seed)
    algorithm = Categorical("method", ["fges", "pc-stable"])
    penalty = Float("penalty", (1.0, 1000.0), log=True)
    max_parents = Integer("max_parents", (1, 1000), log=True)
    faithfulness = Categorical("faithfulness", [False, True])
    alpha = Float("alpha", (0.01, 0.2))
    depth = Integer("depth", (1, 1000), log=True)
    cs.add([algorithm, penalty, max_parents, faithfulness, alpha, depth])
    cs.add([EqualsCondition(hp, algorithm, "fges") for hp in (penalty, max_parents, faithfulness)]
           + [EqualsCondition(hp, algorithm, "pc-stable") for hp in (alpha, depth)])
    return cs


def to_spec(config: Any) -> dict[str, Any]:
    """A SMAC configuration as a plain member spec (Python types, stable for keys and YAML)."""
    d = dict(config)
    method = str(d["method"])
    if method == "fges":
        return {"method": method, "penalty": round(float(d["penalty"]), 6), "max_parents": int(d["max_parents"]),
                "faithfulness": bool(d["faithfulness"])}
    # The numpy engine, named: it is reproducible, so a resumed training equals an uninterrupted one.
    return {"method": method, "alpha": round(float(d["alpha"]), 6), "depth": int(d["depth"]), "engine": "numpy"}
