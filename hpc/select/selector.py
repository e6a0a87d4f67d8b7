"""The selector: from a cluster's features to the portfolio member to run on it.

Two targets. `bic` predicts the member whose output has the best BIC, so running only the
predicted member gives the paper's answer with a fraction of the work. `truth` predicts the
member with the best F1-adjacency + F1-arrowhead against the true subgraph, which BIC cannot see.
For `bic`, ties (members that return the same graph) are labelled with the fastest of them.

The models are scikit-learn random forests (see Selector), as in SATzilla- and AutoFolio-style
per-instance algorithm selection; for `truth`, one regressor per pair of members predicts their
difference in Q, as AutoFolio's pairwise regression does. Where the chosen member fails, PEF falls
back to the next best-scored one, and the evaluation in hpc.train.evaluate scores that same policy.
A selector file is JSON holding the portfolio, the training examples and the model's settings,
with a checksum; the forests are re-fit from them when first used (deterministic, a few seconds).
Nothing is unpickled, so a file from anywhere is safe to load, and a file stays usable across
scikit-learn versions.

Members often tie within the forests' error (on bnlearn-like clusters most of them do), and then the
cheapest one is the better pick: a `truth` selector with a `tolerance` runs the fastest member among
those predicted within `tolerance` Q of the best (every member's seconds predicted by one forest of
log seconds, fit on the same records). On the records, a tolerance of 0.01 Q ran faster members at no
loss of Q, held out by problem or by family (bench/HISTORY.md, "Cost-aware selection").

A run that hit the records' time limit is censored, not scored 0: at use time there is usually no
such limit and the member would have finished, so its Q is unknown (null in the file) and that
member's model learns from the other clusters. Scoring it 0 taught the first selector to run
PC-Stable on every big hub-heavy cluster, where the fGES that timed out in the records is better.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from hpc.store import canonical
from hpc.errors import PsleError
from hpc.jsontext import dumps
from hpc.select.examples import Example, default_tolerance, scores
from hpc.select.features import FEATURE_VERSION, FEATURES

FORMAT = "psle-selector"
VERSION = 4  # 4: the truth forests model member pairs; a file of 3 describes per-member forests
UPGRADABLE = (3,)  # older versions with the same training layout: `upgrade_selector` refits them
TARGETS = ("bic", "truth")
FOREST = {"n_estimators": 300, "min_samples_leaf": 3, "max_features": "sqrt", "random_state": 0}
PAIR_FOREST = {**FOREST, "n_estimators": 100}  # 28 pairs for 8 members: about the trees of 8 per-member forests
SECONDS_FLOOR = 0.1  # log(seconds + floor): sub-second runs differ by noise, not by cost
#: A member counts as timing out with another when the records saw it time out on at least this share
#: of the clusters where the other did: size alone gives about one half (on the records' clusters of
#: 300+ variables each slow member timed out on 41-58 %), so only a clear majority says the two blow up
#: together (fGES 2.54 where fGES 5.87 did: 95 %, the reverse 87 %; BOSS 2.54 where fGES 2.54 did: 52 %) ...
TIMED_OUT_WITH = 2 / 3
#: ... and the other timed out on at least this many clusters (fewer say little).
MIN_TIMEOUTS = 5
#: Members within this mean Q of the best on the training clusters are the fallback's candidates (Selector.fallback).
FALLBACK_Q = 0.1


def shipped_dir() -> Path:
    return Path(__file__).resolve().parent / "selectors"


class Selector:
    """A fitted selector over `portfolio` (member specs): `rank(features)` scores every member.

    `truth`: one random forest regressor per pair of members predicts the first's Q minus the
    second's, fit on the clusters where both are known; a member's score is its mean predicted
    difference to every member (itself included), i.e. its predicted Q above the portfolio's mean.
    Differences cancel how hard a cluster is, which all members share and which dominates their raw
    Q, so the forests spend their splits on what tells members apart: on held-out families this
    chose better than one regressor of raw Q per member (bench/HISTORY.md, "Pairwise regression").
    `bic`: a random forest classifier predicts the BIC winner; scores are its probabilities.
    Training rows are weighted by cluster size, as the size-weighted Q counts them.
    """

    def __init__(self, target: str, portfolio_name: str, portfolio: list[dict[str, Any]], x: np.ndarray,
                 y: np.ndarray, w: np.ndarray, provenance: dict[str, Any] | None = None,
                 seconds: np.ndarray | None = None, tolerance: float = 0.0):
        if target not in TARGETS:
            raise PsleError(f"selector target must be one of {', '.join(TARGETS)}, got {target!r}")
        if not (np.isfinite(tolerance) and tolerance >= 0) or (tolerance and target != "truth"):
            raise PsleError(f"selector tolerance {tolerance!r}: must be >= 0, and 0 for the bic target (it ranks "
                            "by probability, not by Q)")
        if tolerance and seconds is None:
            raise PsleError("a selector with a tolerance needs the training runs' seconds")
        self.target, self.portfolio_name, self.portfolio = target, portfolio_name, portfolio
        self.x, self.y, self.w = (np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                                  np.asarray(w, dtype=np.float64))
        self.seconds = None if seconds is None else np.asarray(seconds, dtype=np.float64)
        self.tolerance = float(tolerance)
        self.provenance = provenance or {}
        if self.seconds is not None and (self.seconds.shape != (len(self.x), len(portfolio))
                                         or not (self.seconds >= 0).all()):
            raise PsleError(f"selector seconds must be >= 0 with one column per member of the {len(portfolio)}-member "
                            f"portfolio, got shape {self.seconds.shape}")
        if len(self.x) == 0:
            raise PsleError("a selector needs at least one training cluster")
        if self.y.shape != (len(self.x), len(portfolio)):
            raise PsleError(f"selector targets must have one column per member of the {len(portfolio)}-member "
                            f"portfolio, got shape {self.y.shape}")
        if target == "truth" and not np.isfinite(self.y).any(axis=0).all():
            raise PsleError("every portfolio member needs at least one training cluster where it finished")

    @cached_property
    def models_(self) -> list[Any]:
        """The fitted forests: one regressor per member pair (`truth`, None for a pair with no cluster
        where both are known) or one classifier (`bic`).

        Fit on first use, not on load: a selector is loaded to check a run's settings before any
        work, and the refit (seconds) is only worth paying once a run needs a prediction. Fit on
        every allocated core (threads: the same trees whatever their number), then predict in one
        thread (a cluster is one row). Kept in the user's cache (see `_fitted`).
        """
        return self._fitted("models", self._fit_models)

    def _fit_models(self) -> list[Any]:
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

        from hpc.executors import allocated_cpus

        cores = allocated_cpus()
        if self.target == "bic":
            return [RandomForestClassifier(**FOREST, n_jobs=cores).fit(
                self.x, self.y.argmax(axis=1), sample_weight=self.w).set_params(n_jobs=1)]
        models = []
        for i, j in self.pairs:
            diff = self.y[:, i] - self.y[:, j]
            both = np.isfinite(diff)
            models.append(RandomForestRegressor(**PAIR_FOREST, n_jobs=cores).fit(
                self.x[both], diff[both], sample_weight=self.w[both]).set_params(n_jobs=1) if both.any() else None)
        return models

    def _fitted(self, kind: str, fit: Any) -> Any:
        """`fit()`'s forests, kept in the user's cache under the selector's digest and the library versions:
        every `psle learn` would otherwise spend about ten seconds refitting the same trees. The cache
        holds only what this machine fitted itself (a selector file never carries a pickle)."""
        import joblib
        import sklearn

        from hpc.atomic import atomic_path
        from hpc.fetch import cache_dir

        key = f"{self.document()['sha256'][:24]}-{kind}-sklearn{sklearn.__version__}-numpy{np.__version__}"
        path = cache_dir() / "selectors" / f"{key}.joblib"
        if path.is_file():
            try:
                return joblib.load(path)
            except Exception:  # a torn or foreign file: fit again and replace it
                pass
        models = fit()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                joblib.dump(models, tmp)
        except OSError:
            pass  # a read-only cache costs the refit next time, nothing else
        return models

    @property
    def pairs(self) -> list[tuple[int, int]]:
        """The member pairs the `truth` forests compare (a pair never both known is left at no difference)."""
        k = len(self.portfolio)
        return [(i, j) for i in range(k) for j in range(i + 1, k)]

    @cached_property
    def fallback(self) -> int:
        """The member to run where this selector does not know: a cluster outside its training data, where a
        forest predicts as at its data's edge (the BOSS it picked for 500-variable modular clusters ran 900 s
        against a predicted 32). Of the members that did well on the training clusters (`truth`: mean Q
        within FALLBACK_Q of the best; `bic`: at least half the best's share of wins), the one whose seconds
        grow slowest with cluster size (slope of log seconds on log size over the records), so it stays
        cheap at any size; without timing records the first member, and with one size only the best-scored."""
        if self.seconds is None:
            return 0
        finished = np.isfinite(self.y)
        means = np.array([np.average(self.y[finished[:, k], k], weights=self.w[finished[:, k]])
                          if finished[:, k].any() else -np.inf for k in range(len(self.portfolio))])
        good = (means >= means.max() - FALLBACK_Q) if self.target == "truth" else (means >= means.max() / 2)
        log_p = self.x[:, FEATURES.index("log_p")]
        if np.ptp(log_p) == 0:  # one size only: growth is unknown, so the best of them
            return int(np.argmax(means))
        slopes = [np.polyfit(log_p, np.log(self.seconds[:, k] + SECONDS_FLOOR), 1)[0] if good[k] else np.inf
                  for k in range(len(self.portfolio))]
        return int(np.argmin(slopes))

    @cached_property
    def time_model_(self) -> Any:
        """One multi-output forest predicting every member's log seconds (a cluster's size and density
        drive all members' times alike, so one forest serves them all, at an eighth of the fitting).
        Fit on every run: a censored one's seconds are a lower bound, which still ranks it as slow;
        unweighted, as every cluster's seconds count alike."""
        return self._fitted("time", self._fit_time_model)

    def _fit_time_model(self) -> Any:
        from sklearn.ensemble import RandomForestRegressor

        from hpc.executors import allocated_cpus

        assert self.seconds is not None  # fit only with a tolerance, which __init__ refuses without seconds
        return RandomForestRegressor(**FOREST, n_jobs=allocated_cpus()).fit(
            self.x, np.log(self.seconds + SECONDS_FLOOR)).set_params(n_jobs=1)

    @classmethod
    def from_examples(cls, examples: list[Example], target: str, portfolio_name: str,
                      portfolio: list[dict[str, Any]], provenance: dict[str, Any] | None = None,
                      tolerance: float | None = None) -> Selector:
        usable = [e for e in examples if e.ok.any()]
        if target == "bic":  # a cluster whose BIC is unknown for a finished run has no known winner
            usable = [e for e in usable if not np.isnan(e.bic[e.ok]).any()]
        if not usable:
            raise PsleError("no training cluster has a successful member run")
        return cls(target, portfolio_name, portfolio, np.stack([e.features for e in usable]),
                   np.stack([scores(e, target) for e in usable]), np.array([float(e.size) for e in usable]),
                   provenance, np.stack([e.seconds for e in usable]),
                   default_tolerance(target) if tolerance is None else tolerance)

    def rank(self, features: np.ndarray) -> np.ndarray:
        """A score per portfolio member: predicted Q above the portfolio's mean (`truth`) or probability
        of winning the BIC (`bic`).

        One feature row gives one score per member; a (clusters x features) matrix gives a row per
        cluster, in one prediction per forest (a forest's predict costs ~0.1 s however few its rows).
        """
        rows = np.asarray(features, dtype=np.float64)
        table = rows.reshape(-1, len(FEATURES))
        if self.target == "truth":
            out = np.zeros((len(table), len(self.portfolio)))
            for (i, j), model in zip(self.pairs, self.models_):
                if model is not None:
                    diff = model.predict(table)
                    out[:, i] += diff
                    out[:, j] -= diff
            out /= len(self.portfolio)
        else:
            model = self.models_[0]
            out = np.zeros((len(table), len(self.portfolio)))
            out[:, model.classes_] = model.predict_proba(table)
        return out[0] if rows.ndim == 1 else out

    def predicted_seconds(self, features: np.ndarray) -> np.ndarray | None:
        """Predicted seconds per member for each row of a (clusters x features) matrix (None without a
        tolerance: no time model is fit then)."""
        if not self.tolerance:
            return None
        table = np.atleast_2d(np.asarray(features, dtype=np.float64))
        return np.exp(self.time_model_.predict(table).reshape(len(table), -1)) - SECONDS_FLOOR

    def timed_out_with(self, k: int) -> list[int]:
        """The members that timed out in the records on at least TIMED_OUT_WITH of the clusters where
        member k did (k itself included). Their searches blow up on the same clusters (fGES at low
        penalties on hubs), so where k ran away, they are the members to try last. Only a `truth`
        selector knows its records' timeouts (censored Q); for `bic`, only k."""
        if self.target != "truth":
            return [k]
        censored = np.isnan(self.y)
        with_k = censored[censored[:, k]]
        if len(with_k) < MIN_TIMEOUTS:
            return [k]
        return [j for j in range(len(self.portfolio)) if j == k or with_k[:, j].mean() >= TIMED_OUT_WITH]

    def outside(self, features: np.ndarray) -> list[list[str]]:
        """For each row of a (clusters x features) matrix, the features whose value lies outside the
        training clusters' range (widened by 5 % of it), where the forests can only extrapolate: a
        forest predicts beyond its data as at its edge. A feature constant in training (log n, when
        every record had one sample size) counts any other value as outside."""
        table = np.atleast_2d(np.asarray(features, dtype=np.float64))
        low, high = self.x.min(axis=0), self.x.max(axis=0)
        margin = 0.05 * (high - low) + 1e-6
        off = (table < low - margin) | (table > high + margin)
        return [[FEATURES[j] for j in np.flatnonzero(row)] for row in off]

    def training_range(self, feature: str) -> tuple[float, float]:
        j = FEATURES.index(feature)
        return float(self.x[:, j].min()), float(self.x[:, j].max())

    def orders(self, features: np.ndarray) -> list[list[int]]:
        """Every member of the portfolio in the order to try, for each row of a (clusters x features)
        matrix (see `choose`)."""
        return self.choose(features)[2]

    def choose(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, list[list[int]]]:
        """For each row of a (clusters x features) matrix: the members' scores, their predicted seconds
        (None without a tolerance) and the order to try them in: best-scored first (ties by portfolio
        order); with a tolerance, the fastest member predicted within it of the best goes first. One
        prediction per forest, for callers that record the scores beside the choice."""
        table = np.atleast_2d(features)
        scored = self.rank(table)
        seconds = self.predicted_seconds(table)
        out = []
        for i, score in enumerate(scored):
            order = order_of(score)
            if seconds is not None:
                near = [k for k in order if score[k] >= score[order[0]] - self.tolerance]
                first = min(near, key=lambda k: (seconds[i][k], k))
                order = [first] + [k for k in order if k != first]
            out.append(order)
        return scored, seconds, out

    @property
    def model_kind(self) -> str:
        return "RandomForestRegressor (one per member pair)" if self.target == "truth" else "RandomForestClassifier"

    def summary(self) -> dict[str, Any]:
        """What a user asks of a selector file before trusting it with their data: what it chooses among,
        what it learnt from (cluster sizes, and from the provenance the records' families, sample sizes
        and edge weights), and per member on how many clusters it was the best (ties to the first in the
        portfolio), its size-weighted mean where it finished and its mean seconds (a timed-out run at the limit)."""
        finished = np.isfinite(self.y)
        best = np.where(finished, self.y, -np.inf).argmax(axis=1)
        members = []
        for k, spec in enumerate(self.portfolio):
            row = {"member": spec, "best_on": int(((best == k) & finished.any(axis=1)).sum())}
            if self.target == "truth":
                known = finished[:, k]
                row["known_on"] = int(known.sum())
                row["mean_q"] = float(np.average(self.y[known, k], weights=self.w[known])) if known.any() else None
            if self.seconds is not None:
                row["mean_seconds"] = float(self.seconds[:, k].mean())
            members.append(row)
        return {"target": self.target, "sha256": self.document()["sha256"], "portfolio": self.portfolio_name,
                "tolerance": self.tolerance, "clusters": len(self.y),
                "cluster_sizes": [int(self.w.min()), int(self.w.max())], "provenance": self.provenance,
                "members": members}

    def describe(self) -> dict[str, Any]:
        """What a graph's meta records of the selector that chose its members."""
        return {"target": self.target, "portfolio": self.portfolio_name, "clusters": len(self.y),
                "tolerance": self.tolerance, "sha256": self.document()["sha256"], **self.provenance}

    def document(self) -> dict[str, Any]:
        body = {"format": FORMAT, "version": VERSION, "target": self.target,
                "portfolio": {"name": self.portfolio_name, "members": self.portfolio},
                "features": list(FEATURES), "feature_version": FEATURE_VERSION,
                "model": {"kind": "sklearn.ensemble." + self.model_kind,
                          "params": PAIR_FOREST if self.target == "truth" else FOREST},
                "tolerance": self.tolerance, "provenance": self.provenance,
                "training": {"x": self.x.tolist(), "w": self.w.tolist(),
                             "y": [[v if np.isfinite(v) else None for v in row] for row in self.y.tolist()],
                             "seconds": None if self.seconds is None else self.seconds.tolist()}}
        return {**body, "sha256": _digest(body)}

    def save(self, path: str | os.PathLike) -> None:
        from hpc.atomic import write_text_atomic

        write_text_atomic(path, dumps(self.document()) + "\n")


#: A cluster of at most this many variables is learned in moments by every member: when it lies outside the
#: selector's training data, its pick there costs little and is not worth a warning.
TRIVIAL_SIZE = 12


def extrapolation_note(selector: Selector, outside: list[list[str]], n: int,
                       features: np.ndarray | None = None, member: dict[str, Any] | None = None) -> str:
    """Advice, in one line, on the clusters that lie outside the selector's training data: in what way (size,
    sample size, correlation structure), that they get `member` (or else the selector's fallback), and what
    else to do. Given the clusters' `features` (the rows `outside` judged) it names their sizes, and leaves
    out clusters of TRIVIAL_SIZE variables or fewer: "" when only such clusters are outside, since every
    member is cheap there."""
    flagged = [k for k, row in enumerate(outside) if row]
    sizes = None
    if features is not None:
        sizes = np.rint(np.exp(np.atleast_2d(features)[:, FEATURES.index("log_p")])).astype(int)
        flagged = [k for k in flagged if sizes[k] > TRIVIAL_SIZE]
        if not flagged:
            return ""
    counts = Counter(f for k in flagged for f in outside[k])
    low, high = (round(float(np.exp(v))) for v in selector.training_range("log_p"))
    if len(outside) == 1:
        head = f"{sizes[0]} variables" if sizes is not None else "the problem"
    else:
        head = f"{len(flagged)} of {len(outside)} clusters"
        if sizes is not None:
            head += f" ({', '.join(str(sizes[k]) for k in flagged[:4])}{' ...' if len(flagged) > 4 else ''} variables)"
    unlike = []
    if "log_p" in counts:
        by_size = [sizes[k] for k in flagged if "log_p" in outside[k]] if sizes is not None else []
        side = "smaller" if by_size and max(by_size) < low else "larger" if by_size and min(by_size) > high else ""
        unlike.append(f"{side} than any problem the {selector.target} selector was trained on ({low}-{high} variables)"
                      if side else f"outside the sizes the {selector.target} selector was trained on ({low}-{high} "
                                   "variables)")
    if "log_n" in counts:
        unlike.append(f"at a sample size the {selector.target} selector was not trained at")
    others = [f for f, _ in counts.most_common() if f not in ("log_p", "log_n")]
    if others:
        unlike.append(f"with correlations unlike its training clusters' ({', '.join(others[:3])})")
    from hpc.learners.members import member_from_spec

    why = ("the best single member Auto-SLE found on its training problems, fast at any size below the rows "
           "(hpc/conf/sle/trained.yaml)" if member is not None else
           "the member whose time grows slowest with size of those that did well on its training clusters")
    named = repr(member_from_spec(member if member is not None else selector.portfolio[selector.fallback]))
    note = (f"{head}: {'; '.join(unlike)}: its pick {'there ' if len(outside) > 1 else ''}would be a guess, so "
            f"{'they get' if len(outside) > 1 else 'it gets'} {named}, {why} (--selection all runs every learner "
            "and keeps the best BIC)")
    if "log_n" in counts:
        low_n, high_n = (round(float(np.exp(v))) for v in selector.training_range("log_n"))
        trained = f"{low_n}" if low_n == high_n else f"{low_n}-{high_n}"
        note += (f"; it was trained at n = {trained} and this data has n = {n}: `psle records --samples {n}`, "
                 "then `psle selector fit` on those records and the repository's bench/selector-records/*.h5, "
                 "makes one for it")
    return note


def order_of(score: np.ndarray) -> list[int]:
    """The members of one score row, best-scored first; ties by portfolio order."""
    return sorted(range(len(score)), key=lambda k: (-score[k], k))


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(body).encode()).hexdigest()


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-standard number {name}")


def load_selector(name_or_path: str | os.PathLike) -> Selector:
    """A shipped selector by name (`bic`, `truth`) or a selector file; every check fails in one line."""
    path = Path(name_or_path)
    if path.suffix != ".json":
        path = shipped_dir() / f"{name_or_path}.json"
        if not path.is_file():
            known = sorted(p.stem for p in shipped_dir().glob("*.json"))
            raise PsleError(f"unknown selector {str(name_or_path)!r}; shipped: {', '.join(known)} (or a .json path)")
    if not path.is_file():
        raise PsleError(f"{path}: no such file")
    stat = path.stat()
    return _load(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int, size: int) -> Selector:
    """Cached per file version: PEF asks once per run, tests and experiments many times per process."""
    return _from_doc(path, _verified_doc(path, (VERSION,)))


def upgrade_selector(old: str | os.PathLike, output: str | os.PathLike) -> Selector:
    """Write a selector file of an older format version as the current one: the same training examples,
    portfolio, tolerance and provenance, with this psle's model. An older file's forests cannot be
    reproduced (they are not stored), so it is refused at load; its examples are all a refit needs."""
    from hpc.atomic import check_output

    check_output(output, (".json",), "the selector file", inputs=(str(old),))
    if Path(output).exists():
        raise PsleError(f"{output}: exists; upgrade into a new file")
    if not Path(old).is_file():
        raise PsleError(f"{old}: no such file")
    path = str(Path(old).resolve())
    doc = _verified_doc(path, (*UPGRADABLE, VERSION))
    selector = _from_doc(path, doc)
    selector.provenance = {**selector.provenance,
                           "upgraded_from": {"version": doc["version"], "sha256": doc["sha256"]}}
    selector.save(output)
    return selector


def _verified_doc(path: str, versions: tuple[int, ...]) -> dict[str, Any]:
    """The file's JSON, checked to be an unedited selector file of one of `versions` (sha256 kept)."""
    try:
        doc = json.loads(Path(path).read_bytes().decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PsleError(f"{path}: not a selector file (not valid JSON: {str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PsleError(f"{path}: not a selector file (no '{FORMAT}' marker)")
    if doc.get("version") not in versions:
        hint = (f"upgrade it (psle selector upgrade {Path(path).name} -o NEW.json)"
                if doc.get("version") in UPGRADABLE else "refit it from its records (psle selector fit)")
        raise PsleError(f"{path}: selector format version {doc.get('version')!r} is not {VERSION}; {hint}")
    if doc.get("sha256") != _digest({k: v for k, v in doc.items() if k != "sha256"}):
        raise PsleError(f"{path}: selector file is damaged or was edited (checksum mismatch)")
    return doc


def _from_doc(path: str, doc: dict[str, Any]) -> Selector:
    """The Selector a verified selector file describes, its features, arrays and members checked."""
    if doc.get("features") != list(FEATURES) or doc.get("feature_version") != FEATURE_VERSION:
        raise PsleError(f"{path}: selector was fit on other features (version {doc.get('feature_version')!r}, "
                        f"this psle computes version {FEATURE_VERSION}); refit it from records")
    try:
        portfolio = doc["portfolio"]
        members = [dict(m) for m in portfolio["members"]]
        training = doc["training"]
        x = np.asarray(training["x"], dtype=np.float64).reshape(-1, len(FEATURES))
        y, w = np.asarray(training["y"], dtype=np.float64), np.asarray(training["w"], dtype=np.float64)
        seconds = None if training["seconds"] is None else np.asarray(training["seconds"], dtype=np.float64)
        tolerance = float(doc["tolerance"])
        if not (len(x) == len(y) == len(w)) or not np.isfinite(x).all() or np.isinf(y).any() \
                or not (w > 0).all() or (doc.get("target") != "truth" and np.isnan(y).any()) \
                or (seconds is not None and (len(seconds) != len(x) or not np.isfinite(seconds).all())):
            raise ValueError("training arrays disagree in length or hold non-finite values")
    except (KeyError, TypeError, ValueError) as exc:
        raise PsleError(f"{path}: selector file is malformed ({exc})") from None
    from hpc.learners.members import member_from_spec

    for k, spec in enumerate(members):
        try:
            member_from_spec(spec).validate()
        except PsleError as exc:
            raise PsleError(f"{path}: portfolio member {k + 1}: {exc}") from None
    try:
        return Selector(doc["target"], str(portfolio.get("name", "?")), members, x, y, w, doc.get("provenance"),
                        seconds, tolerance)
    except PsleError as exc:
        raise PsleError(f"{path}: {exc}") from None
