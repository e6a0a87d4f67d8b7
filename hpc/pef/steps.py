"""The steps after fusion, in the order they run. A new step is a module with a `Step` subclass
(hpc.pef.step) and its line here; its settings are `--pef <name>.<field>=value`."""

from __future__ import annotations

from typing import Any

from hpc.pef.polish import Polish
from hpc.pef.recut import Recut
from hpc.pef.repair import Repair
from hpc.pef.rival import Rival
from hpc.pef.step import Step, configure
from hpc.pef.sweep import Sweep

#: rival -> repair -> polish -> sweep -> recut: each starts from the graph the one before it left.
KINDS: tuple[type[Step], ...] = (Rival, Repair, Polish, Sweep, Recut)
NAMES = tuple(kind.name for kind in KINDS)


def default_steps() -> tuple[Step, ...]:
    return configure(KINDS, {})


def steps_from(options: dict[str, Any]) -> tuple[Step, ...]:
    """The chain with `options` ({"polish.upto": 0, ...}) applied and checked."""
    return configure(KINDS, options)


#: The paper's PEF: no step after fusion (the paper_* experiments' setting).
NONE = {f"{kind.name}.{field}": 0 for kind, field in ((Repair, "rounds"), (Polish, "upto"), (Rival, "upto"),
                                                      (Sweep, "upto"), (Recut, "passes"))}


def help_text() -> str:
    """Each step's line and settings with their defaults, from the configs themselves."""
    return "; ".join(f"{kind.name}: {kind.doc} ("
                     + ", ".join(f"{name}={default}" for name, default in kind.settings()) + ")" for kind in KINDS)
