"""Ensemble members: Tetrad's fGES and PC-Stable with the paper's parameters, scikit-learn style.

Configure in the constructor, `fit(X)`, read `graph_` (a CPDAG), `status_` ("ok" or
"timed out"), `seconds_` and `bic_`. Parameters are validated against the paper's search
space (§4.1.2) in `fit`, so a configuration can be built, stored and compared first.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from hpc.errors import PsleError
from hpc.graphs.pdag import PDAG
from hpc.learners.bic import bic, covariance
from hpc.learners.tetrad import user_names
from hpc.learners.runtime import TETRAD_VERSION, check_jar, libjvm_path
from hpc.learners.worker import TetradWorker, WorkerCrash, WorkerError, WorkerTimeout, default_worker

OK = "ok"
TIMED_OUT = "timed out"


class LearnerError(PsleError):
    """A member failed (Java exception, crashed worker); the message names it and its parameters."""


_runtime_checked = False


def check_runtime() -> None:
    """Fail in the caller, with the clear message, before a worker tries to start Java."""
    global _runtime_checked
    if not _runtime_checked:
        libjvm_path()
        check_jar()
        _runtime_checked = True


class Member:
    """Common machinery: validation, the worker call under a time limit, result attributes."""

    method: ClassVar[str]
    runner: ClassVar[str]  # function in hpc.learners.tetrad that the worker calls
    ranges: ClassVar[dict[str, tuple[float, float]]]
    integers: ClassVar[tuple[str, ...]] = ()
    options: ClassVar[tuple[str, ...]] = ()  # non-numeric parameters, checked by the subclass
    multithreaded: ClassVar[bool] = False  # accepts `threads` (a run setting, not part of the spec)

    time_limit: float | None

    def get_params(self) -> dict[str, Any]:
        """The learner's own parameters (not run settings such as the time limit)."""
        return {name: getattr(self, name) for name in self.param_names()}

    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        return tuple(cls.ranges) + cls.options

    def spec(self) -> dict[str, Any]:
        """`{"method": ..., **params}`: how ensembles and result files record a member."""
        return {"method": self.method, **self.get_params()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{self.method}({args})"

    def validate(self) -> None:
        for name, (lo, hi) in self.ranges.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise PsleError(f"{self!r}: {name} must be a number, got {value!r}")
            if name in self.integers and int(value) != value:
                raise PsleError(f"{self!r}: {name} must be a whole number, got {value!r}")
            if not lo <= value <= hi:
                raise PsleError(f"{self!r}: {name}={value!r} is outside [{lo:g}, {hi:g}]")
        if self.time_limit is not None and not self.time_limit > 0:
            raise PsleError(f"{self!r}: time limit must be positive, got {self.time_limit!r}")

    def _runner_kwargs(self) -> dict[str, Any]:
        raise NotImplementedError

    def fit(self, x: np.ndarray, variables: tuple[str, ...] | list[str] | None = None) -> Member:
        """Learn a CPDAG from an n x p data matrix (rows = samples)."""
        from hpc.data.tabular import check_learnable

        x = np.asarray(x, dtype=np.float64)
        variables = tuple(variables) if variables is not None else tuple(f"X{i}" for i in range(x.shape[1]))
        self.validate()
        check_learnable(x, variables)
        return self.fit_covariance(covariance(x), x.shape[0], variables)

    def fit_covariance(self, cov: np.ndarray, n: int, variables: tuple[str, ...]) -> Member:
        """Learn from a covariance matrix (divisor n - 1) and sample size: what PEF and the SLE pass."""
        self.validate()
        check_runtime()
        worker: TetradWorker = getattr(self, "worker", None) or default_worker()
        start = time.perf_counter()
        try:
            directed, undirected = worker.call(self.runner, dict(
                cov=cov, n=n, **self._runner_kwargs()), timeout=self.time_limit)
        except WorkerTimeout:
            self.status_, self.graph_, self.bic_ = TIMED_OUT, None, None
        except (WorkerError, WorkerCrash) as exc:
            raise LearnerError(f"{self!r} failed: {user_names(str(exc), tuple(variables))}") from None
        else:
            self.status_ = OK
            self.graph_ = PDAG(tuple(variables), directed, undirected)
            self.bic_ = bic(self.graph_, cov, n)
        self.seconds_ = time.perf_counter() - start
        return self

    def result_meta(self) -> dict[str, Any]:
        return {"method": self.method, "parameters": self.get_params(), "status": self.status_,
                "seconds": round(self.seconds_, 3), "bic": self.bic_, "tetrad_version": TETRAD_VERSION}


class FGES(Member):
    """Fast greedy equivalence search with Tetrad's SemBicScore.

    `max_parents` is the paper's m; Tetrad applies it as a limit on each node's degree
    (adjacencies), which is how the paper's Tetrad runs used it.
    """

    method = "fges"
    runner = "run_fges"
    multithreaded = True
    ranges = {"penalty": (1.0, 1000.0), "max_parents": (1, 1000)}
    integers = ("max_parents",)
    options = ("faithfulness",)

    def __init__(self, penalty: float = 1.0, max_parents: int = 1000, faithfulness: bool = False,
                 time_limit: float | None = None, threads: int = 1, worker: TetradWorker | None = None):
        self.penalty = penalty
        self.max_parents = max_parents
        self.faithfulness = faithfulness
        self.time_limit = time_limit
        self.threads = threads
        self.worker = worker

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.faithfulness, (bool, np.bool_)):
            raise PsleError(f"{self!r}: faithfulness must be true or false, got {self.faithfulness!r}")

    def _runner_kwargs(self) -> dict[str, Any]:
        return {"penalty": float(self.penalty), "max_degree": int(self.max_parents),
                "faithfulness": bool(self.faithfulness), "threads": int(self.threads)}


class PCStable(Member):
    """PC-Stable with Fisher's z test. The default engine ("numpy", hpc.learners.pc) is Tetrad's
    stable adjacency search vectorised: the same skeleton, reproducible, and fast on clusters of
    thousands of variables where Tetrad's first pass, cubic in the number of variables, takes hours.
    `engine="tetrad"` runs Tetrad's own Pc; its separating sets, and so some orientations, depend
    on thread timing, so two runs on the same data can differ."""

    method = "pc-stable"
    ranges = {"alpha": (0.01, 0.2), "depth": (1, 1000)}
    integers = ("depth",)
    options = ("engine",)
    engines = {"tetrad": "run_pc", "numpy": "pc_stable_numpy"}

    def __init__(self, alpha: float = 0.05, depth: int = 1000, engine: str = "numpy",
                 time_limit: float | None = None, worker: TetradWorker | None = None):
        self.alpha = alpha
        self.depth = depth
        self.engine = engine
        self.time_limit = time_limit
        self.worker = worker

    @property
    def runner(self) -> str:  # type: ignore[override]
        return self.engines[self.engine]

    def validate(self) -> None:
        super().validate()
        if self.engine not in self.engines:
            raise PsleError(f"{self!r}: engine must be one of {', '.join(self.engines)}, got {self.engine!r}")

    def _runner_kwargs(self) -> dict[str, Any]:
        return {"alpha": float(self.alpha), "depth": int(self.depth)}


MEMBERS: dict[str, type[Member]] = {"fges": FGES, "pc-stable": PCStable}


def member_from_spec(spec: dict[str, Any], time_limit: float | None = None, threads: int = 1) -> Member:
    """Build a member from `{"method": "fges", "penalty": 2, ...}` (config files, CLI); `threads`
    goes to members that can use them."""
    spec = dict(spec)
    method = str(spec.pop("method", ""))
    if method not in MEMBERS:
        raise PsleError(f"unknown method {method!r}; choose one of {', '.join(MEMBERS)}")
    cls = MEMBERS[method]
    unknown = sorted(set(spec) - set(cls.param_names()))
    if unknown:
        raise PsleError(f"{method}: unknown parameter(s) {', '.join(unknown)}; "
                        f"known: {', '.join(cls.param_names())}")
    return cls(**spec, time_limit=time_limit, **({"threads": threads} if cls.multithreaded else {}))
