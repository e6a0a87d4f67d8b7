"""The greedy Auto-SLE loop (paper Algorithm 1) driven by SMAC3 through ask/tell.

Each round maximises Δ(θ | A) = mean over problems of Q(A ∪ {θ}, D) - Q(A, D) with a fresh
SMAC seeded from the run's seed. Two objectives define Q(A, D). `portfolio` (the paper's
definition, §3) is the best member's Q: what a perfect per-problem selector reaches, so the
rounds build a complementary portfolio. `bic` is the Q of the member the SLE actually returns,
the one with the best BIC: an ensemble for the paper's use-time rule, where a member that wins
the BIC on problems it does badly on lowers Q (so Δ can be negative). Every evaluation goes through the checkpoint: on restart,
SMAC is rebuilt with the same seed and told the cached results in the same order, which
replays its random state, so the resumed run reaches exactly the uninterrupted run's SLE
without recomputing anything that finished. SMAC's own state files are never read.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpc.autosle.checkpoint import Checkpoint
from hpc.autosle.quality import member_quality
from hpc.autosle.space import PAPER_SPACE, check_space, configuration_space, to_spec
from hpc.autosle.training import TrainingConfig, training_problems
from hpc.errors import PsleError
from hpc.executors import SerialExecutor
from hpc.progress import Progress


@dataclass(frozen=True)
class TrainConfig:
    k: int = 4  # ensemble size
    trials: int = 100  # SMAC configurations per round
    seed: int = 0
    time_limit: float | None = 300.0  # per member run on a training problem
    training: TrainingConfig = field(default_factory=TrainingConfig)
    objective: str = "portfolio"  # or "bic" (see the module docstring)
    space: tuple[str, ...] = PAPER_SPACE  # learners Auto-SLE may choose from (hpc.learners.members)

    def settings(self) -> dict[str, Any]:
        """What the results depend on: the checkpoint's identity (the default objective and space are
        left out, so checkpoints from before there was a choice still resume)."""
        skip = {"training"} | ({"objective"} if self.objective == "portfolio" else set()) \
            | ({"space"} if tuple(self.space) == PAPER_SPACE else set())
        return {**{k: v for k, v in asdict(self).items() if k not in skip}, "training": self.training.as_dict()}


OBJECTIVES = ("portfolio", "bic")


def ensemble_quality(qualities: list[np.ndarray], bics: list[np.ndarray], objective: str) -> np.ndarray:
    """Q(A, D) per problem for members' Q and BIC arrays (NaN BIC: the run failed); 0 for an empty A."""
    if not qualities:
        return np.zeros(0)
    q = np.stack(qualities)
    if objective == "portfolio":
        return q.max(axis=0)
    b = np.nan_to_num(np.stack(bics), nan=-np.inf)
    pick = b.argmax(axis=0)  # first member on ties, as the SLE's choice
    return np.where(np.isfinite(b.max(axis=0)), q[pick, np.arange(q.shape[1])], 0.0)


@dataclass
class TrainResult:
    members: list[dict[str, Any]]
    rounds: list[dict[str, Any]]
    evaluations_run: int
    evaluations_cached: int


def _smac(config: TrainConfig, round_index: int, workdir: str):
    from smac import HyperparameterOptimizationFacade as HPO
    from smac import Scenario

    space = configuration_space(config.seed + round_index, tuple(config.space))
    scenario = Scenario(space, deterministic=True, n_trials=config.trials, seed=config.seed + round_index,
                        output_directory=Path(workdir) / f"round{round_index}")
    return HPO(scenario, lambda cfg, seed=0: 0.0, overwrite=True, logging_level=logging.ERROR,
               intensifier=HPO.get_intensifier(scenario, max_config_calls=1))


def train(config: TrainConfig, checkpoint_path: str, executor=None, progress: bool = True) -> TrainResult:
    from smac.runhistory.dataclasses import TrialValue

    if sys.flags.hash_randomization and os.environ.get("PYTHONHASHSEED") in (None, "", "random"):
        raise PsleError("Auto-SLE replays SMAC from its checkpoint, and SMAC's choices depend on Python's string "
                        "hashing: run with PYTHONHASHSEED=0 (psle train sets it itself)")
    if config.k < 1 or config.trials < 1:
        raise PsleError(f"need k >= 1 and trials >= 1, got k={config.k}, trials={config.trials}")
    if config.objective not in OBJECTIVES:
        raise PsleError(f"objective must be one of {', '.join(OBJECTIVES)}, got {config.objective!r}")
    check_space(config.space)
    problems = training_problems(config.training)
    ckpt = Checkpoint(checkpoint_path, config.settings())
    executor = executor or SerialExecutor()
    show = Progress(progress)
    cached_at_start = len(ckpt.evaluations)
    ran = 0
    ensemble_q = np.zeros(len(problems))
    chosen_q: list[np.ndarray] = []
    chosen_bic: list[np.ndarray] = []
    members: list[dict[str, Any]] = []
    rounds: list[dict[str, Any]] = []
    started = time.perf_counter()
    trial_seconds: list[float] = []

    def qualities(spec: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        nonlocal ran
        missing = [i for i in range(len(problems)) if ckpt.get(spec, i) is None]
        tasks = [(spec, problems[i], config.time_limit) for i in missing]
        for t, result in executor.run(member_quality, tasks):
            ckpt.put(spec, missing[t], result)
            ran += 1
        found = [ckpt.get(spec, i) for i in range(len(problems))]
        return (np.array([e["quality"] for e in found]),
                np.array([np.nan if e["bic"] is None else e["bic"] for e in found]))

    with tempfile.TemporaryDirectory(prefix="psle-smac-") as workdir, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(config.k):
            smac = _smac(config, r, workdir)
            best: tuple[float, dict[str, Any], np.ndarray, np.ndarray] | None = None
            for t in range(config.trials):
                tick = time.perf_counter()
                info = smac.ask()
                spec = to_spec(info.config, tuple(config.space))
                q, b = qualities(spec)
                gain = float((ensemble_quality(chosen_q + [q], chosen_bic + [b], config.objective)
                              - ensemble_q).mean())
                smac.tell(info, TrialValue(cost=-gain))
                if best is None or gain > best[0]:
                    best = (gain, spec, q, b)
                trial_seconds.append(time.perf_counter() - tick)
                left = (config.trials - t - 1 + (config.k - r - 1) * config.trials) * float(np.mean(trial_seconds[-20:]))
                show(f"round {r + 1}/{config.k}, best gain {best[0]:.4f}, ~{left / 60:.1f} min left; trials",
                     t + 1, config.trials)
            gain, spec, q, b = best
            if gain <= 0:
                show.note(f"round {r + 1}: no configuration improves the ensemble; stopping with {len(members)}")
                break
            members.append(spec)
            chosen_q.append(q)
            chosen_bic.append(b)
            ensemble_q = ensemble_quality(chosen_q, chosen_bic, config.objective)
            rounds.append({"round": r + 1, "member": spec, "gain": gain, "quality": float(ensemble_q.mean())})
            show.note(f"round {r + 1}: added {spec}, Q(A, T) = {ensemble_q.mean():.4f}")
            ckpt.set_rounds(rounds)
    show.note(f"trained in {time.perf_counter() - started:.1f} s: {ran} evaluations run, "
              f"{cached_at_start} reused from {checkpoint_path}")
    return TrainResult(members, rounds, ran, cached_at_start)
