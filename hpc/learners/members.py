"""The learner registry: every structure learner an ensemble can hold, scikit-learn style.

Configure in the constructor, `fit(X)`, read `graph_` (a CPDAG), `status_` ("ok" or
"timed out"), `seconds_` and `bic_`. Each class declares its parameters (type, default, range,
searched or not) and its runner; `MEMBERS` is the one list the CLI, the worker, Auto-SLE's
space, preflight and the reports read. Parameters are validated in `fit`, so a configuration
can be built, stored and compared first. Adding a learner: a class here, its runner, configs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hpc.errors import PsleError
from hpc.graphs.knowledge import Knowledge
from hpc.graphs.order import canonical_columns, relabel
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


def fit_in_canonical_order(learner: Any, x: np.ndarray, variables: tuple[str, ...]) -> Any:
    """`learner.fit_covariance` on the columns of `x` in their data-derived order (hpc.graphs.order), with
    its `graph_` put back over `variables`: the same graph whatever the file's column order."""
    xc, names, order = canonical_columns(x, variables)
    learner.fit_covariance(covariance(xc), x.shape[0], names)
    if learner.graph_ is not None:
        learner.graph_ = relabel(learner.graph_, order, variables)
    return learner


@dataclass(frozen=True)
class Param:
    """One learner parameter: its type, default and allowed range, and whether Auto-SLE searches it."""

    name: str
    kind: type  # float, int, bool or str
    default: Any
    low: float | None = None  # the range: every numeric (float, int) parameter has one
    high: float | None = None
    log: bool = False  # sample on a log scale in Auto-SLE's space
    choices: tuple[str, ...] = ()  # for str parameters
    searched: bool = True  # part of Auto-SLE's configuration space (else fixed at the default there)
    doc: str = ""

    def check(self, owner: str, value: Any) -> None:
        if self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise PsleError(f"{owner}: {self.name} must be true or false, got {value!r}")
        elif self.kind is str:
            if value not in self.choices:
                raise PsleError(f"{owner}: {self.name} must be one of {', '.join(self.choices)}, got {value!r}")
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise PsleError(f"{owner}: {self.name} must be a number, got {value!r}")
            if self.kind is int and int(value) != value:
                raise PsleError(f"{owner}: {self.name} must be a whole number, got {value!r}")
            assert self.low is not None and self.high is not None, f"numeric parameter {self.name} has no range"
            if not self.low <= value <= self.high:
                raise PsleError(f"{owner}: {self.name}={value!r} is outside [{self.low:g}, {self.high:g}]")

    def describe(self) -> str:
        if self.kind is bool:
            return f"{self.name} (true/false)"
        if self.kind is str:
            return f"{self.name} ({'/'.join(self.choices)})"
        return f"{self.name} [{self.low:g}, {self.high:g}]"


class Member:
    """A configured learner. Subclasses declare `params` and how to call their runner; everything
    else that lists learners (the worker, the CLI, Auto-SLE's space, reports) reads `MEMBERS`."""

    method: ClassVar[str]  # the name in specs, configs and `psle learn --method`
    label: ClassVar[str]  # the name in tables
    runner: ClassVar[str]  # "module:function" the JVM worker process calls
    params: ClassVar[tuple[Param, ...]]
    pef: ClassVar[bool] = True  # also offered inside PEF, as method "p-<method>"
    multithreaded: ClassVar[bool] = False  # accepts `threads` (a run setting, not part of the spec)
    takes_knowledge: ClassVar[bool] = False  # its runner honours prior knowledge (hpc.graphs.knowledge)

    def __init__(self, time_limit: float | None = None, threads: int = 1, worker: TetradWorker | None = None,
                 **params: Any):
        unknown = sorted(set(params) - set(self.param_names()))
        if unknown:
            raise PsleError(f"{self.method}: unknown parameter(s) {', '.join(unknown)}; "
                            f"known: {', '.join(self.param_names())}")
        for p in self.params:
            setattr(self, p.name, params.get(p.name, p.default))
        self.time_limit = time_limit
        self.threads = threads
        self.worker = worker
        self.knowledge: Knowledge | None = None  # a run setting, as the time limit: set before fit

    def get_params(self) -> dict[str, Any]:
        """The learner's own parameters (not run settings such as the time limit)."""
        return {name: getattr(self, name) for name in self.param_names()}

    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        return tuple(p.name for p in cls.params)

    @classmethod
    def describe(cls) -> str:
        return f"{cls.method}: {', '.join(p.describe() for p in cls.params)}"

    def spec(self) -> dict[str, Any]:
        """`{"method": ..., **params}`: how ensembles and result files record a member."""
        return {"method": self.method, **self.get_params()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{self.method}({args})"

    def validate(self) -> None:
        for p in self.params:
            p.check(repr(self), getattr(self, p.name))
        if self.time_limit is not None and not self.time_limit > 0:
            raise PsleError(f"{self!r}: time limit must be positive, got {self.time_limit!r}")
        if self.knowledge is not None and not self.knowledge.empty and not self.takes_knowledge:
            raise PsleError(f"{self.method} does not honour prior knowledge")

    def check_size(self, n: int, p: int) -> None:
        """Refuse, before any work, a problem of n rows and p variables the learner cannot search."""

    def _runner_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `runner` (besides cov and n)."""
        raise NotImplementedError

    def fit(self, x: np.ndarray, variables: tuple[str, ...] | list[str] | None = None) -> Member:
        """Learn a CPDAG from an n x p data matrix (rows = samples); the same graph in any column order."""
        from hpc.data.tabular import check_learnable, warn_few_rows

        x = np.asarray(x, dtype=np.float64)
        variables = tuple(variables) if variables is not None else tuple(f"X{i}" for i in range(x.shape[1]))
        self.validate()
        if x.ndim == 2:
            self.check_size(*x.shape)
        check_learnable(x, variables)
        warn_few_rows(x.shape[0], x.shape[1], "data")
        return fit_in_canonical_order(self, x, variables)

    def fit_covariance(self, cov: np.ndarray, n: int, variables: tuple[str, ...]) -> Member:
        """Learn from a covariance matrix (divisor n - 1) and sample size: what PEF and the SLE pass."""
        self.validate()
        self.check_size(n, cov.shape[0])
        check_runtime()
        worker: TetradWorker = self.worker or default_worker()
        start = time.perf_counter()
        known = None if self.knowledge is None or self.knowledge.empty else self.knowledge.indexed(variables)
        try:
            directed, undirected = worker.call(self.runner, dict(
                cov=cov, n=n, **self._runner_kwargs(), **({"knowledge": known} if known else {})),
                timeout=self.time_limit)
        except WorkerTimeout:
            self.status_, self.graph_, self.bic_ = TIMED_OUT, None, None
        except (WorkerError, WorkerCrash) as exc:
            raise LearnerError(f"{self!r} failed: {user_names(str(exc), tuple(variables))}") from None
        else:
            self.status_ = OK
            self.graph_ = PDAG(tuple(variables), directed, undirected)
            if known:  # a search leaves some knowledge-directed edges unoriented: point them as it says
                assert self.knowledge is not None  # `known` was built from it
                self.graph_ = self.knowledge.oriented(self.graph_)
            self.bic_ = bic(self.graph_, cov, n)
        self.seconds_ = time.perf_counter() - start
        return self

    def result_meta(self) -> dict[str, Any]:
        return {"method": self.method, "parameters": self.get_params(), "status": self.status_,
                "seconds": round(self.seconds_, 3), "bic": self.bic_, "tetrad_version": TETRAD_VERSION}


PENALTY_DOC = "BIC penalty discount λ (SemBicScore)"
#: A score-based learner's default penalty when run alone: Tetrad's documented 2.0. Chosen across six families
#: (alarm, er, sf, hub, sbm, ws; 200 variables, seed 100; scripts/bench_defaults.py, BENCHMARKS.md): at λ 1
#: mean F1-adjacency was 0.67 (fGES), 0.78 (BOSS), 0.76 (GRaSP); at 2, 0.82, 0.95, 0.92; at 4, 0.83, 0.92,
#: 0.94. The paper's P/fGES ran Tetrad's λ 1, which its configs pin (conf/method/p-fges.yaml).
PENALTY = 2.0
#: Where an order search starts. On Alarm-1000 with shuffled columns (seed 100), BOSS λ 2.54 from a
#: faithful fGES's order: F1-adjacency 0.945, F1-arrowhead 0.906, SHD 238 in 193 s; from the columns'
#: order: 0.914 / 0.807 / 456 in 333 s. "auto" saves the fGES's minutes on large dense clusters
#: (hpc.learners.starts), which PEF gives BOSS and GRaSP members on problems over 2,000 variables.
START = Param("start", str, "fges", choices=("fges", "columns", "auto"), searched=False,
              doc="first order: a topological order of a faithful fGES's graph, the (data-derived) column order, "
                  "or auto: above 300 variables the better by BIC of searches from the column order and from the "
                  "R²-sorted order where that DAG has over 1.5 edges per variable, else fges")


class FGES(Member):
    """Fast greedy equivalence search with Tetrad's SemBicScore.

    `max_parents` is the paper's m; Tetrad applies it as a limit on each node's degree
    (adjacencies), which is how the paper's Tetrad runs used it. The default engine ("compiled",
    hpc.learners.ges_kernel) runs fGES's phases compiled, 10-20x faster than Tetrad's on clusters of 500
    variables, to the same pattern or one of about equal BIC; with prior knowledge, which it does not keep, and
    with `engine="tetrad"` Tetrad's Fges runs, on one thread (hpc.learners.tetrad.FGES_THREADS): the same graph
    under any load and with any number of cores.
    """

    method, label = "fges", "fGES"
    takes_knowledge = True
    params = (Param("penalty", float, PENALTY, 1.0, 1000.0, log=True, doc=PENALTY_DOC),
              Param("max_parents", int, 1000, 1, 1000, log=True, doc="degree limit m"),
              Param("faithfulness", bool, False, doc="assume faithfulness (fewer score evaluations)"),
              Param("engine", str, "compiled", choices=("compiled", "tetrad"), searched=False,
                    doc="compiled (hpc.learners.ges_kernel) or Tetrad's Fges; with prior knowledge always Tetrad's"))
    # Set from `params` by Member.__init__; declared for type checkers:
    penalty: float
    max_parents: int
    faithfulness: bool
    engine: str
    engines = {"tetrad": "hpc.learners.tetrad:run_fges", "compiled": "hpc.learners.ges_kernel:run_ges"}

    @property
    def runner(self) -> str:  # type: ignore[override]
        knows = self.knowledge is not None and not self.knowledge.empty
        return self.engines["tetrad" if knows else self.engine]

    def _runner_kwargs(self) -> dict[str, Any]:
        return {"penalty": float(self.penalty), "max_degree": int(self.max_parents),
                "faithfulness": bool(self.faithfulness)}


class PCStable(Member):
    """PC-Stable with Fisher's z test. The default engine ("numpy", hpc.learners.pc) is Tetrad's
    stable adjacency search vectorised: the same skeleton, reproducible, and fast on clusters of
    thousands of variables where Tetrad's first pass, cubic in the number of variables, takes hours.
    `engine="tetrad"` runs Tetrad's own Pc; its separating sets, and so some orientations, depend
    on thread timing, so two runs on the same data can differ."""

    method, label = "pc-stable", "PC-Stable"
    takes_knowledge = True
    params = (Param("alpha", float, 0.05, 0.01, 0.2, doc="Fisher's z test level"),
              Param("depth", int, 1000, 1, 1000, log=True, doc="largest conditioning set"),
              Param("engine", str, "numpy", choices=("numpy", "tetrad"), searched=False,
                    doc="numpy (reproducible, fast) or Tetrad's Pc"))
    # Set from `params` by Member.__init__; declared for type checkers:
    alpha: float
    depth: int
    engine: str
    engines = {"tetrad": "hpc.learners.tetrad:run_pc", "numpy": "hpc.learners.pc:pc_stable"}

    @property
    def runner(self) -> str:  # type: ignore[override]
        return self.engines[self.engine]

    def _runner_kwargs(self) -> dict[str, Any]:
        return {"alpha": float(self.alpha), "depth": int(self.depth)}


class BOSS(Member):
    """Best order score search (Andrews et al. 2023): a permutation search with Tetrad's
    SemBicScore, reported more accurate than fGES on dense graphs."""

    method, label = "boss", "BOSS"
    runner = "hpc.learners.tetrad:run_boss"
    multithreaded = True
    takes_knowledge = True
    params = (Param("penalty", float, PENALTY, 1.0, 1000.0, log=True, doc=PENALTY_DOC),
              Param("num_starts", int, 1, 1, 10, doc="random restarts of the order search"),
              Param("use_bes", bool, False, doc="finish with a backward equivalence search"),
              START)
    # Set from `params` by Member.__init__; declared for type checkers:
    penalty: float
    num_starts: int
    use_bes: bool
    start: str

    def _runner_kwargs(self) -> dict[str, Any]:
        return {"penalty": float(self.penalty), "num_starts": int(self.num_starts), "use_bes": bool(self.use_bes),
                "start": str(self.start), "threads": int(self.threads)}


class GRaSP(Member):
    """Greedy relaxations of the sparsest permutation (Lam, Andrews & Ramsey 2022) with SemBicScore."""

    method, label = "grasp", "GRaSP"
    runner = "hpc.learners.tetrad:run_grasp"
    takes_knowledge = True
    params = (Param("penalty", float, PENALTY, 1.0, 1000.0, log=True, doc=PENALTY_DOC),
              Param("depth", int, 3, 1, 5, doc="depth of the tuck search"),
              Param("num_starts", int, 1, 1, 10, doc="random restarts of the order search"),
              START)
    # Set from `params` by Member.__init__; declared for type checkers:
    penalty: float
    depth: int
    num_starts: int
    start: str

    def _runner_kwargs(self) -> dict[str, Any]:
        return {"penalty": float(self.penalty), "depth": int(self.depth), "num_starts": int(self.num_starts),
                "start": str(self.start)}


class FLOP(Member):
    """FLOP (Wienöbst, Henckel & Weichwald, ICLR 2026; `flopsearch`, Rust): an order search with BIC, as
    BOSS, with iterated-local-search restarts. Without restarts the same data give the same graph; restarts
    draw from a generator no caller can seed (hpc.learners.flop). Needs fewer variables than rows; takes no
    knowledge; single-threaded."""

    method, label = "flop", "FLOP"
    runner = "hpc.learners.flop:run_flop"
    params = (Param("penalty", float, PENALTY, 1.0, 1000.0, log=True,
                    doc="BIC penalty λ (its authors recommend 2, as Tetrad's SemBicScore weighs it)"),
              Param("restarts", int, 0, 0, 100, searched=False,
                    doc="iterated-local-search restarts after the first search (5 took 3-4x its time on er, sf, "
                        "hub and sbm problems of 200 variables, seeds 100-102: mean SHD 53 against 74)"))
    # Set from `params` by Member.__init__; declared for type checkers:
    penalty: float
    restarts: int

    def check_size(self, n: int, p: int) -> None:
        if p >= n:
            raise LearnerError(f"{self!r}: {p} variables for {n} rows; FLOP needs fewer variables than rows (the "
                               "covariance is singular otherwise): use p-flop, whose clusters are smaller "
                               "(PEF setting max_size below the rows)")

    def _runner_kwargs(self) -> dict[str, Any]:
        return {"penalty": float(self.penalty), "restarts": int(self.restarts)}

    def result_meta(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {**super().result_meta(), "flopsearch_version": version("flopsearch")}


MEMBERS: dict[str, type[Member]] = {cls.method: cls for cls in (FGES, PCStable, BOSS, GRaSP, FLOP)}


def member_from_spec(spec: dict[str, Any], time_limit: float | None = None, threads: int = 1) -> Member:
    """Build a member from `{"method": "fges", "penalty": 2, ...}` (config files, CLI); `threads`
    goes to members that can use them."""
    spec = dict(spec)
    method = str(spec.pop("method", ""))
    if method not in MEMBERS:
        raise PsleError(f"unknown method {method!r}; choose one of {', '.join(MEMBERS)}")
    cls = MEMBERS[method]
    return cls(time_limit=time_limit, threads=threads if cls.multithreaded else 1, **spec)
