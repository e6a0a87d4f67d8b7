"""Auto-SLE's configuration space Θ for SMAC3, built from the learner registry, and back to member specs.

The default space is the paper's (§4.1.2): fGES (λ ∈ [1, 1000], m ∈ [1, 1000], faithfulness) or
PC-Stable (α ∈ [0.01, 0.2], depth ∈ [1, 1000]). A hyperparameter is named after its parameter
when only one method in the space has it (so the paper's space, and checkpoints made with it,
stay exactly as they were) and `method:parameter` when several do (BOSS and fGES both have λ).
FLOP's graphs differ run to run (hpc.learners.flop), so SMAC, told the runs are deterministic, sees one
draw of a FLOP configuration's quality.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from hpc.errors import PsleError
from hpc.learners.members import MEMBERS, Param

if TYPE_CHECKING:
    from ConfigSpace import ConfigurationSpace

PAPER_SPACE = ("fges", "pc-stable")


def check_space(methods: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The methods once each, in order; an empty space or an unknown method is refused."""
    methods = tuple(dict.fromkeys(methods))
    if not methods:
        raise PsleError(f"space: needs at least one method; choose from {', '.join(MEMBERS)}")
    unknown = [m for m in methods if m not in MEMBERS]
    if unknown:
        raise PsleError(f"space: unknown method {unknown[0]!r}; choose from {', '.join(MEMBERS)}")
    return methods


def _names(methods: tuple[str, ...]) -> dict[tuple[str, str], str]:
    searched = [(m, p.name) for m in methods for p in MEMBERS[m].params if p.searched]
    shared = Counter(name for _, name in searched)
    return {(m, name): name if shared[name] == 1 else f"{m}:{name}" for m, name in searched}


def _hyperparameter(name: str, p: Param):
    from ConfigSpace import Categorical, Float, Integer

    if p.kind is bool:
        return Categorical(name, [False, True])
    if p.kind is str:
        return Categorical(name, list(p.choices))
    if p.kind is int:
        return Integer(name, (int(p.low), int(p.high)), log=p.log)
    return Float(name, (float(p.low), float(p.high)), log=p.log)


def configuration_space(seed: int, methods: tuple[str, ...] = PAPER_SPACE) -> ConfigurationSpace:
    """The methods' searched parameters, each active only when its method is chosen. ConfigSpace is imported
    here, not with the module: `psle train --status` needs PAPER_SPACE and not its seconds of imports."""
    from ConfigSpace import Categorical, ConfigurationSpace, EqualsCondition

    methods = check_space(methods)
    names = _names(methods)
    cs = ConfigurationSpace(seed=seed)
    algorithm = Categorical("method", list(methods))
    hps = [(m, _hyperparameter(names[m, p.name], p)) for m in methods for p in MEMBERS[m].params if p.searched]
    cs.add([algorithm, *(hp for _, hp in hps)])
    cs.add([EqualsCondition(hp, algorithm, m) for m, hp in hps])
    return cs


def to_spec(config: Any, methods: tuple[str, ...] = PAPER_SPACE) -> dict[str, Any]:
    """A SMAC configuration as a plain member spec (Python types, stable for keys and YAML); parameters
    Auto-SLE does not search are written at their defaults (PC-Stable's reproducible numpy engine)."""
    d = dict(config)
    method = str(d["method"])
    names = _names(check_space(methods))
    spec: dict[str, Any] = {"method": method}
    for p in MEMBERS[method].params:
        if not p.searched:
            spec[p.name] = p.default
        elif p.kind is float:
            spec[p.name] = round(float(d[names[method, p.name]]), 6)
        else:
            spec[p.name] = p.kind(d[names[method, p.name]])
    return spec
