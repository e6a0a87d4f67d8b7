"""The greedy Auto-SLE loop (paper Algorithm 1) driven by SMAC3 through ask/tell.

Each round maximises Δ(θ | A) = mean over problems of Q(A ∪ {θ}, D) - Q(A, D) with a fresh
SMAC seeded from the run's seed. Two objectives define Q(A, D). `portfolio` (the paper's
definition, §3) is the best member's Q: what a perfect per-problem selector reaches, so the
rounds build a complementary portfolio. `bic` is the Q of the member the SLE actually returns,
the one with the best BIC: an ensemble for the paper's use-time rule, where a member that wins
the BIC on problems it does badly on lowers Q (so Δ can be negative). Every evaluation goes through the checkpoint: on restart,
SMAC is rebuilt with the same seed and told the cached results in the same order, which
replays its random state, so the resumed run reaches exactly the uninterrupted run's SLE
without recomputing anything that finished. SMAC's own state files are never read. Each trial
(member, gain, seconds) and each resume is kept in the checkpoint too, for `psle train --status`.
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

from hpc.train.checkpoint import Checkpoint
from hpc.train.quality import member_quality
from hpc.train.space import PAPER_SPACE, check_space, configuration_space, to_spec
from hpc.train.status import duration, eta, member_text
from hpc.train.problems import TrainingConfig, training_problems
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


def check_config(config: TrainConfig) -> None:
    if sys.flags.hash_randomization and os.environ.get("PYTHONHASHSEED") in (None, "", "random"):
        raise PsleError("Auto-SLE replays SMAC from its checkpoint, and SMAC's choices depend on Python's string "
                        "hashing: run with PYTHONHASHSEED=0 (psle train sets it itself)")
    if config.k < 1 or config.trials < 1:
        raise PsleError(f"need k >= 1 and trials >= 1, got k={config.k}, trials={config.trials}")
    if config.objective not in OBJECTIVES:
        raise PsleError(f"objective must be one of {', '.join(OBJECTIVES)}, got {config.objective!r}")
    check_space(config.space)


class Evaluations:
    """Q and BIC of a configuration on every training problem: from the checkpoint, or run on the executor
    (and then kept in the checkpoint at once)."""

    def __init__(self, ckpt: Checkpoint, problems: list, time_limit: float | None, executor):
        self.ckpt, self.problems, self.time_limit, self.executor = ckpt, problems, time_limit, executor
        self.ran = 0

    def missing(self, spec: dict[str, Any]) -> list[int]:
        """The problems `spec` has no evaluation of yet."""
        return [i for i in range(len(self.problems)) if self.ckpt.get(spec, i) is None]

    def __call__(self, spec: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        missing = self.missing(spec)
        tasks = [(spec, self.problems[i], self.time_limit) for i in missing]
        for t, result in self.executor.run(member_quality, tasks):
            self.ckpt.put(spec, missing[t], result)
            self.ran += 1
        found = [self.ckpt.get(spec, i) for i in range(len(self.problems))]
        return (np.array([e["quality"] for e in found]),
                np.array([np.nan if e["bic"] is None else e["bic"] for e in found]))


def best_of_round(config: TrainConfig, r: int, workdir: str, evaluate: Evaluations, chosen_q: list[np.ndarray],
                  chosen_bic: list[np.ndarray], show: Progress) -> tuple[float, dict[str, Any], np.ndarray, np.ndarray]:
    """Round r's SMAC search: the configuration whose addition gains most, its gain, Q and BIC. Each trial
    is recorded in the checkpoint with its seconds, and logged in one line, unless a resumed run is only
    replaying it."""
    from smac.runhistory.dataclasses import TrialValue

    now = ensemble_quality(chosen_q, chosen_bic, config.objective) if chosen_q else np.zeros(len(evaluate.problems))
    smac = _smac(config, r, workdir)
    ckpt = evaluate.ckpt
    best: tuple[float, dict[str, Any], np.ndarray, np.ndarray] | None = None
    for t in range(config.trials):
        tick = time.perf_counter()
        info = smac.ask()
        spec = to_spec(info.config, tuple(config.space))
        if todo := len(evaluate.missing(spec)):  # a long trial says what it runs before it ends
            done = len(evaluate.problems) - todo
            show.note(f"round {r + 1}/{config.k}, trial {t + 1}/{config.trials}: {member_text(spec)} on "
                      f"{todo} problems" + (f" ({done} evaluated before a resume)" if done else ""))
        q, b = evaluate(spec)
        gain = float((ensemble_quality(chosen_q + [q], chosen_bic + [b], config.objective) - now).mean())
        smac.tell(info, TrialValue(cost=-gain))
        if best is None or gain > best[0]:
            best = (gain, spec, q, b)
        # Replaying a checkpoint from before trials were kept, before this process ran anything: not timed.
        seconds = float("nan") if ckpt.predates_trials and evaluate.ran == 0 else time.perf_counter() - tick
        if ckpt.record_trial(r + 1, t + 1, spec, gain, seconds):
            left = config.k * config.trials - (r * config.trials + t + 1)
            estimate = eta(ckpt.trials, left)
            show.note(f"round {r + 1}/{config.k}, trial {t + 1}/{config.trials}, best gain so far {best[0]:.4f}, "
                      f"ETA {'unknown' if estimate is None else duration(estimate)} (estimate)")
    assert best is not None  # trials >= 1
    return best


def resumed(ckpt: Checkpoint) -> str:
    """The line a resumed training starts with (the resume is counted in the checkpoint first)."""
    n = ckpt.count_resume()
    if ckpt.predates_trials:
        return (f"resumed (resume #{n} at least: the checkpoint predates the counter): {len(ckpt.evaluations)} "
                "evaluations recorded, no trials yet (replaying them records them, untimed)")
    return f"resumed (resume #{n}): {len(ckpt.trials)} trials already recorded, {len(ckpt.evaluations)} evaluations"


def train(config: TrainConfig, checkpoint_path: str, executor=None, progress: bool = True) -> TrainResult:
    """Auto-SLE's greedy loop: each round adds the configuration SMAC finds that most improves the ensemble's
    mean Q over the training problems, until `config.k` members or no gain."""
    check_config(config)
    problems = training_problems(config.training)
    ckpt = Checkpoint(checkpoint_path, config.settings())
    evaluate = Evaluations(ckpt, problems, config.time_limit, executor or SerialExecutor())
    show = Progress(progress)
    if ckpt.existed:
        show.note(resumed(ckpt))
    cached_at_start = len(ckpt.evaluations)
    chosen_q: list[np.ndarray] = []
    chosen_bic: list[np.ndarray] = []
    members: list[dict[str, Any]] = []
    rounds: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="psle-smac-") as workdir, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(config.k):
            gain, spec, q, b = best_of_round(config, r, workdir, evaluate, chosen_q, chosen_bic, show)
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
    show.note(f"trained in {time.perf_counter() - started:.1f} s: {evaluate.ran} evaluations run, "
              f"{cached_at_start} reused from {checkpoint_path}")
    return TrainResult(members, rounds, evaluate.ran, cached_at_start)
