"""Member selection: features on degenerate clusters, records (resume, damage), selector files, and
predicted selection equal to running everything when the selector predicts every BIC winner."""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pytest

from hpc.data.generate import benchmark_problem
from hpc.errors import PsleError
from hpc.graphs.knowledge import Knowledge
from hpc.learners.bic import covariance
from hpc.executors import SerialExecutor
from hpc.pef.partition import PartitionConfig
from hpc.pef.steps import NONE, steps_from
from hpc.pef.pipeline import PEF, outside_member
from hpc.select.features import FEATURES, cluster_features
from hpc.select.records import read_records
from hpc.train.records import RecordsConfig, build_records, problem_clusters, record_problems, restricted_truth
from hpc.select.examples import Example, examples_from_rows, label, load_examples, scores
from hpc.select.selector import Selector, load_selector

PSLE = [sys.executable, "-m", "hpc.cli"]
#: Small test problems still cut into clusters (psle learn would learn them whole).
CUT = PartitionConfig(whole_below=0)

PAIR = [{"method": "fges", "penalty": 2.0, "max_parents": 1000, "faithfulness": False},
        {"method": "pc-stable", "alpha": 0.05, "depth": 1000, "engine": "numpy"}]


def test_features_on_two_variables_are_finite_and_match_hand_values():
    cov = np.array([[1.0, 0.5], [0.5, 1.0]])
    f = dict(zip(FEATURES, cluster_features(cov, 100)))
    assert np.isfinite(list(f.values())).all()
    assert f["abs_corr_mean"] == pytest.approx(0.5) and f["marginal_density"] == 1.0
    assert f["marginal_degree_cv"] == 0.0 and f["marginal_degree_skew"] == 0.0  # both have degree 1
    assert f["p_over_n"] == pytest.approx(0.02) and f["log_p"] == pytest.approx(np.log(2))
    assert f["top_eigen_fraction"] == pytest.approx(0.75)  # eigenvalues 1.5 and 0.5


def test_features_on_collinear_data_are_finite():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 3))
    x = np.column_stack([a, a[:, 0] + a[:, 1], 2 * a[:, 2]])  # rank 3 of 5: singular covariance
    f = cluster_features(covariance(x), 200)
    assert np.isfinite(f).all() and len(f) == len(FEATURES)
    assert dict(zip(FEATURES, f))["marginal_density"] == pytest.approx(0.3)  # pairs 0-3, 1-3, 2-4 of 10


def test_features_see_a_hub():
    """A variable driving 20 others: its children are all marginally dependent (no tail there), but
    partial correlations single out the hub as one node with 20 neighbours among nodes with 1."""
    rng = np.random.default_rng(1)
    hub = rng.standard_normal(1000)
    x = np.column_stack([hub] + [0.7 * hub + rng.standard_normal(1000) for _ in range(20)]
                        + [rng.standard_normal(1000) for _ in range(20)])
    f = dict(zip(FEATURES, cluster_features(covariance(x), 1000)))
    assert f["marginal_degree_max"] == pytest.approx(20 / 41, abs=0.05)
    assert f["partial_degree_max"] == pytest.approx(20 / 41, abs=0.05)
    assert f["partial_degree_skew"] > 2 > f["marginal_degree_skew"]


def test_pilot_features_tell_a_collider_from_a_chain_and_count_triangles():
    """x -> c <- y: x and y are independent, so c is a collider of the one unshielded triple;
    x -> c -> y: c separates x and y at depth 1, so it is not. A triangle has no unshielded triple."""
    rng = np.random.default_rng(2)
    x, y, e = rng.standard_normal((3, 2000))
    shapes = {"collider": np.column_stack([x, y, x + y + e]), "chain": np.column_stack([x, x + e, x + e + y]),
              "triangle": np.column_stack([x, x + e, x + 0.5 * (x + e) + y])}
    f = {k: dict(zip(FEATURES, cluster_features(covariance(v), 2000))) for k, v in shapes.items()}
    assert f["collider"]["pilot_unshielded_per_var"] == f["chain"]["pilot_unshielded_per_var"] == pytest.approx(1 / 3)
    assert f["collider"]["pilot_collider_share"] == 1.0 and f["chain"]["pilot_collider_share"] == 0.0
    assert f["chain"]["pilot_kept_after_depth1"] == pytest.approx(2 / 3)  # x - y went at depth 1
    assert f["collider"]["pilot_kept_after_depth1"] == 1.0  # x - y already went at depth 0
    assert f["triangle"]["pilot_transitivity"] == 1.0 and f["triangle"]["pilot_unshielded_per_var"] == 0.0
    assert f["chain"]["pilot_transitivity"] == 0.0 and f["chain"]["pilot_degree_mean"] == pytest.approx(4 / 3)


def test_features_do_not_depend_on_the_columns_order():
    """PEF lists a cluster's columns in an order taken from the data's bytes, which move with the last bit
    of a value; a feature that depended on that order (the search keeps the first separating variable it
    meets) would give a selector another pick on another machine."""
    from hpc.data.generate import benchmark_problem

    x = benchmark_problem(120, 3, 500, graph="er", edges_per_node=3).data
    cov = covariance(x)
    base = cluster_features(cov, 500)
    assert 0.0 < dict(zip(FEATURES, base))["pilot_collider_share"] < 1.0  # both kinds of centre present
    for perm in (np.random.default_rng(s).permutation(120) for s in range(3)):
        np.testing.assert_allclose(cluster_features(cov[np.ix_(perm, perm)], 500), base, rtol=1e-12, atol=1e-12)


def test_restricted_truth_is_the_cpdag_of_the_induced_subgraph():
    from tests.conftest import dag

    g = dag("abcd", "a>c b>c c>d")
    t = restricted_truth(g, np.array([0, 2, 3]))  # drop b: a -> c -> d has no v-structure left
    assert t.variables == ("a", "c", "d") and len(t.directed) == 0 and len(t.undirected) == 2


def example(bic, quality, seconds, size=50, ok=None):
    ok = np.ones(len(bic), bool) if ok is None else np.asarray(ok)
    return Example("p", "er", np.zeros(len(FEATURES)), size, ok, np.asarray(bic, float), np.asarray(quality, float),
                   np.asarray(seconds, float), np.zeros(len(bic), bool))


def test_labels_and_scores_break_ties_by_speed_and_skip_failed_runs():
    e = example([-10, -10, -50], [1.2, 1.5, 1.5], [9.0, 2.0, 1.0])
    assert label(e, "bic") == 1  # tied BIC: the faster one
    assert label(e, "truth") == 2  # tied Q: the fastest one
    failed = example([-10, -20], [0.0, 1.0], [1.0, 1.0], ok=[False, True])
    assert label(failed, "bic") == 1 and label(failed, "truth") == 1
    assert scores(failed, "truth").tolist() == [0.0, 1.0]  # a failed run counts as giving nothing
    none = example([-10, -20], [0.0, 0.0], [60.0, 30.0], ok=[False, False])
    assert label(none, "bic") == 1 == label(none, "truth")  # nothing worked: the fastest to fail
    assert scores(e, "truth").tolist() == [1.2, 1.5, 1.5] and scores(e, "bic").tolist() == [0, 1, 0]


def test_a_bic_recorded_as_nan_is_unknown_not_a_winner():
    """Records made before the BIC handled singular parent blocks hold NaN for some finished runs:
    the truth target still uses them, the bic target cannot name their winner."""
    e = example([np.nan, -20, -30], [1.7, 1.2, 1.0], [1.0, 1.0, 1.0])
    assert label(e, "bic") == 1 and label(e, "truth") == 0
    assert label(example([np.nan, np.nan], [1.0, 1.1], [3.0, 2.0]), "bic") == 1  # none known: the fastest
    clean = [example([-10, -20, -30], [1.0, 1.2, 1.1], [1.0, 2.0, 3.0]) for _ in range(3)]
    assert len(Selector.from_examples([*clean, e], "bic", "p", [{}, {}, {}]).y) == 3
    assert len(Selector.from_examples([*clean, e], "truth", "p", [{}, {}, {}]).y) == 4


def test_cross_validation_adds_extra_examples_to_training_only_outside_the_held_out_group(monkeypatch):
    """Records added to a fit (to see whether they help) must never leak the held-out family into training,
    nor be scored themselves."""
    import hpc.train.evaluate as evaluate

    def fam(e, family, size):
        return replace(e, family=family, group=family, size=size)

    base = [fam(example([-1, -2], [1.0, 1.2], [1.0, 1.0]), f, 10 + k) for k, f in enumerate(["er", "er", "sf", "sf"])]
    extra = [fam(example([-1, -2], [1.3, 1.0], [1.0, 1.0]), f, 100 + k) for k, f in enumerate(["er", "sf"])]
    trained, fit = [], evaluate.Selector.from_examples
    monkeypatch.setattr(evaluate.Selector, "from_examples",
                        lambda train, *a, **kw: trained.append(sorted(e.size for e in train)) or fit(train, *a, **kw))
    rows = evaluate.cross_validate(base, "truth", "p", [{}, {}], "family", extra=extra)
    assert [r["held_out"] for r in rows] == ["er", "sf"] and [r["clusters"] for r in rows] == [2, 2]
    assert trained == [[12, 13, 101], [10, 11, 100]]


@pytest.fixture(scope="module")
def small_records(tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "r.h5"
    config = RecordsConfig(families=("hub", "bnlearn"), problems_per_family=1, min_nodes=120, max_nodes=160,
                           networks=("insurance",), time_limit=60)
    store = build_records(config, PAIR, path, SerialExecutor())
    return path, config, store


def test_records_hold_every_member_on_every_cluster_and_resume_without_rerunning(small_records, monkeypatch):
    path, config, store = small_records
    doc = read_records(path)
    assert len(doc["rows"]) == len(store.rows) > 0 and len(doc["done_problems"]) == 2
    examples = examples_from_rows(doc["rows"], [0, 1])
    assert len(examples) * 2 == len(doc["rows"]) and {e.family for e in examples} == {"hub", "bnlearn"}
    assert all(r["status"] == "ok" and 0 <= r["f1_adjacent"] <= 1 for r in doc["rows"])
    # Resuming finds nothing to do: any member run would fail this test.
    import hpc.train.records as records

    monkeypatch.setattr(records, "run_member", lambda *a: pytest.fail("a finished run was run again"))
    again = build_records(config, PAIR, path, SerialExecutor())
    assert again.rows.keys() == store.rows.keys()
    with pytest.raises(PsleError, match="other settings"):
        build_records(RecordsConfig(families=("hub",)), PAIR, path, SerialExecutor())
    # Records of weaker effects are other data: refused here, not mixed in.
    with pytest.raises(PsleError, match=r"differ in: weights\)"):
        build_records(replace(config, weights=(0.1, 0.3)), PAIR, path, SerialExecutor())


def test_records_of_weaker_effects_cluster_other_data():
    rp = record_problems(RecordsConfig(families=("er",), problems_per_family=1, min_nodes=120, max_nodes=120))[0]
    paper, weak = problem_clusters(rp, 500), problem_clusters(rp, 500, (0.1, 0.3))
    def strongest(clusters):
        return np.mean([c.features[FEATURES.index("abs_corr_q99")] for c in clusters])

    assert strongest(weak) < strongest(paper)


def test_records_of_an_older_feature_set_are_upgraded_without_rerunning_members(small_records, tmp_path):
    """An older psle's records (here: the first 20 features, one cluster's data since changed) get
    this version's features; the changed cluster is dropped rather than paired with new data."""
    from hpc.store import canonical
    from hpc.select.records import COLUMNS, content_hash

    path = small_records[0]
    old = tmp_path / "old.h5"
    old.write_bytes(path.read_bytes())
    with h5py.File(old, "r+") as f:
        g = f["records"]
        features = g["features"][()][:, :20]
        changed = g["key"][0].rpartition(b"#")[0]  # problem#cluster
        features[[k.rpartition(b"#")[0] == changed for k in g["key"][()]], 3] += 0.01
        del g["features"]
        g["features"] = features
        arrays = {name: g[name][()] for name in ("key", "status", "features", *COLUMNS)}
        for name in ("key", "status"):
            arrays[name] = np.array([v.decode() for v in arrays[name]], dtype=object)
        f.attrs["features"] = canonical(list(FEATURES[:20]))
        f.attrs["sha256"] = content_hash(arrays, json.loads(f.attrs["done_problems"]))
    with pytest.raises(PsleError, match="other features .* psle records --upgrade"):
        read_records(old)
    new = tmp_path / "new.h5"
    proc = subprocess.run([*PSLE, "records", "--upgrade", str(old), "-o", str(new)], capture_output=True, text=True)
    assert proc.returncode == 0 and "(1 cluster dropped" in proc.stderr, proc.stderr
    rows, fresh = read_records(new)["rows"], {r["key"]: r for r in read_records(path)["rows"]}
    assert len(rows) == len(fresh) - 2 and all(r["key"].rpartition("#")[0] != changed.decode() for r in rows)
    for r in rows:  # the same runs, with every feature this version computes
        assert np.allclose(r["features"], fresh[r["key"]]["features"]) and r["bic"] == fresh[r["key"]]["bic"]
    again = subprocess.run([*PSLE, "records", "--upgrade", str(old), "-o", str(new)], capture_output=True, text=True)
    assert again.returncode != 0 and again.stderr.strip().endswith("exists; --upgrade writes a new records file")


def test_an_upgraded_cluster_is_keyed_where_todays_partition_lists_it(small_records, tmp_path):
    """Records made when the partition listed a cluster under another index join a fresh run's rows only
    if the upgrade moves them to today's index (a join of the two refuses a key whose data differ)."""
    from hpc.store import canonical
    from hpc.select.records import COLUMNS, content_hash

    path = small_records[0]
    old = tmp_path / "old.h5"
    old.write_bytes(path.read_bytes())
    with h5py.File(old, "r+") as f:
        g = f["records"]
        arrays = {name: g[name][()] for name in ("key", "status", "features", *COLUMNS)}
        for name in ("key", "status"):
            arrays[name] = np.array([v.decode() for v in arrays[name]], dtype=object)
        problem, cluster, member = zip(*(k.rsplit("#", 2) for k in arrays["key"]))
        arrays["key"] = np.array([f"{a}#{int(c) + 100}#{m}" for a, c, m in zip(problem, cluster, member)], dtype=object)
        del g["key"]
        g["key"] = arrays["key"].astype(bytes)
        f.attrs["features"] = canonical(list(FEATURES))
        f.attrs["sha256"] = content_hash(arrays, json.loads(f.attrs["done_problems"]))
    new = tmp_path / "new.h5"
    proc = subprocess.run([*PSLE, "records", "--upgrade", str(old), "-o", str(new)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["key"] for r in read_records(new)["rows"]) == sorted(r["key"] for r in read_records(path)["rows"])


def test_records_rerun_makes_one_familys_runs_again_copies_the_rest_and_resumes(small_records, tmp_path, monkeypatch):
    """Records whose bnlearn runs are stale (marked by their seconds): --rerun bnlearn runs every member on every
    bnlearn cluster again, once, even across an interruption, and copies the hub rows as they were."""
    import hpc.train.records as records
    from hpc.select.records import RecordStore

    path = small_records[0]
    doc = read_records(path)
    family = lambda row: json.loads(row["key"].rsplit("#", 2)[0])["family"]  # noqa: E731
    old = RecordStore(tmp_path / "old.h5", doc["settings"])
    old.rows = {r["key"]: {**r, "seconds": 1e6} if family(r) == "bnlearn" else r for r in doc["rows"]}
    old.done_problems = set(doc["done_problems"])
    old.save()
    stale = sorted(r["key"] for r in doc["rows"] if family(r) == "bnlearn")
    calls, run = [], records.run_member

    def interrupted(*a):
        if len(calls) == 1:
            raise KeyboardInterrupt  # as a kill between two runs
        calls.append(a[0])
        return run(*a)

    monkeypatch.setattr(records, "run_member", interrupted)
    new = tmp_path / "new.h5"
    with pytest.raises(KeyboardInterrupt):
        records.rerun_records(old.path, new, ("bnlearn",), SerialExecutor())
    monkeypatch.setattr(records, "run_member", lambda *a: calls.append(a[0]) or run(*a))
    store = records.rerun_records(old.path, new, ("bnlearn",), SerialExecutor())
    rows = {r["key"]: r for r in read_records(new)["rows"]}
    assert len(calls) == len(stale) > 1 and sorted(k for k, r in rows.items() if family(r) == "bnlearn") == stale
    assert all(r["seconds"] < 1e6 and r["status"] == "ok" for k, r in rows.items() if k in stale)
    for r in (r for r in doc["rows"] if family(r) == "hub"):  # copied as they were
        assert np.array_equal(rows[r["key"]].pop("features"), r["features"]) and rows[r["key"]] == {
            k: v for k, v in r.items() if k != "features"}
    assert store.done_problems == set(doc["done_problems"]) and store.settings["rerun"] == ["bnlearn"]
    monkeypatch.setattr(records, "run_member", lambda *a: pytest.fail("a finished rerun was run again"))
    records.rerun_records(old.path, new, ("bnlearn",), SerialExecutor())
    with pytest.raises(PsleError, match="no runs of er to make again"):
        records.rerun_records(old.path, tmp_path / "other.h5", ("er",), SerialExecutor())
    proc = subprocess.run([*PSLE, "records", "--rerun", str(old.path), "-o", str(tmp_path / "x.h5")],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and proc.stderr.strip().endswith("--rerun needs --families: the families whose "
                                                                  "member runs to make again (e.g. bnlearn)")


def test_records_rerun_of_one_member_on_large_clusters_runs_those_only(small_records, tmp_path, monkeypatch):
    """--rerun --methods pc-stable --min-size S: PC-Stable's runs on the clusters of S or more variables are made
    again; every other row is copied as it was."""
    import hpc.train.records as records

    path = small_records[0]
    doc = read_records(path)
    sizes = sorted({r["size"] for r in doc["rows"]})
    cut = sizes[len(sizes) // 2]
    member = lambda row: int(row["key"].rsplit("#", 1)[1])  # noqa: E731
    wanted = sorted(r["key"] for r in doc["rows"] if member(r) == 1 and r["size"] >= cut)
    calls, run = [], records.run_member
    monkeypatch.setattr(records, "run_member", lambda *a: calls.append(a[0]) or run(*a))
    store = records.rerun_records(path, tmp_path / "new.h5", ("hub", "bnlearn"), SerialExecutor(), None,
                                  ("pc-stable",), cut)
    assert len(calls) == len(wanted) > 0 and all(c["method"] == "pc-stable" for c in calls)
    rows = {r["key"]: r for r in read_records(tmp_path / "new.h5")["rows"]}
    assert sorted(rows) == sorted(r["key"] for r in doc["rows"])
    for r in doc["rows"]:
        if r["key"] not in wanted:
            assert rows[r["key"]]["seconds"] == r["seconds"]
    assert store.done_problems == set(doc["done_problems"]) and store.settings["rerun_min_size"] == cut
    with pytest.raises(PsleError, match="no member of its portfolio is boss"):
        records.rerun_records(path, tmp_path / "other.h5", ("hub",), SerialExecutor(), None, ("boss",))


def test_damaged_records_are_refused(small_records, tmp_path):
    path = small_records[0]
    bad = tmp_path / "bad.h5"
    bad.write_bytes(path.read_bytes())
    with h5py.File(bad, "r+") as f:
        f["records/f1_adjacent"][0] = 0.123  # a silent edit the checksum must catch
    with pytest.raises(PsleError, match="checksum"):
        read_records(bad)
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"not hdf5")
    with pytest.raises(PsleError, match="damaged|not a psle"):
        read_records(junk)


def test_problems_never_use_the_papers_test_networks_by_default():
    problems = record_problems(RecordsConfig(families=("bnlearn",), problems_per_family=30))
    assert {p.network for p in problems}.isdisjoint({"alarm", "asia", "child", "hailfinder", "pigs"})
    assert len({p.seed for p in problems}) == 30


def fitted(tmp_path, target="truth"):
    x = np.random.default_rng(0).standard_normal((20, len(FEATURES)))
    sel = Selector(target, "pair", PAIR, x, np.eye(2)[(x[:, 0] > 0).astype(int)], np.ones(20))
    sel.save(tmp_path / "s.json")
    return sel, tmp_path / "s.json"


@pytest.mark.slow
def test_selector_file_round_trips_to_the_same_predictions(tmp_path):
    sel, path = fitted(tmp_path)
    loaded = load_selector(path)
    for row in np.random.default_rng(1).standard_normal((10, len(FEATURES))):
        assert np.array_equal(sel.rank(row), loaded.rank(row))
    assert loaded.portfolio == PAIR and loaded.target == "truth"


def test_fitted_forests_are_kept_in_the_cache_and_a_damaged_cache_file_is_refit(tmp_path, monkeypatch):
    monkeypatch.setenv("PSLE_CACHE", str(tmp_path / "cache"))
    sel, _ = fitted(tmp_path)
    rows = np.random.default_rng(1).standard_normal((10, len(FEATURES)))
    first = sel.rank(rows)
    [cached] = (tmp_path / "cache" / "selectors").glob("*-models-*.joblib")
    again, _ = fitted(tmp_path)  # a new object: its forests come from the cache
    assert "models_" not in again.__dict__ and np.array_equal(again.rank(rows), first)
    cached.write_bytes(b"torn")
    third, _ = fitted(tmp_path)
    assert np.array_equal(third.rank(rows), first) and cached.read_bytes() != b"torn"


@pytest.mark.parametrize("target", ["truth", "bic"])
def test_ranking_many_clusters_at_once_equals_ranking_each(target):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, len(FEATURES)))
    y = np.column_stack([x[:, 0] > 0, x[:, 0] <= 0]).astype(float) + (0.1 * x[:, 1:3] if target == "truth" else 0)
    sel = Selector(target, "pair", PAIR, x, y, np.ones(40))
    rows = rng.standard_normal((7, len(FEATURES)))
    table = sel.rank(rows)
    assert table.shape == (7, 2)
    assert np.array_equal(table, np.stack([sel.rank(row) for row in rows]))
    assert sel.rank(rows[0]).shape == (2,)


def test_a_timed_out_run_is_unknown_not_zero_and_its_member_learns_from_other_clusters(tmp_path):
    e = Example("p", "hub", np.zeros(len(FEATURES)), 50, np.array([False, True]), np.array([-np.inf, -5.0]),
                np.array([0.0, 1.1]), np.array([60.0, 2.0]), np.array([True, False]))
    assert np.isnan(scores(e, "truth")[0]) and scores(e, "truth")[1] == 1.1
    # Member 0 timed out where feature 0 is large; where it finished it scored 1.8 against member 1's 1.0.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 1)) + 0.01 * rng.standard_normal((30, len(FEATURES)))  # every feature the same
    y = np.where(x[:, :1] > 0.5, [np.nan, 1.0], [1.8, 1.0])
    sel = Selector("truth", "pair", PAIR, x, y, np.ones(30))
    big = np.full(len(FEATURES), 2.0)
    # Censored, not learnt as 0: member 0 is still first, by the 0.8 Q it led by where both finished
    # (scores are Q above the members' mean).
    assert sel.rank(big) == pytest.approx([0.4, -0.4])
    zero = Selector("truth", "pair", PAIR, x, np.nan_to_num(y), np.ones(30))
    assert zero.orders(big)[0][0] == 1  # what counting the timeout as 0 would have taught
    sel.save(tmp_path / "s.json")
    assert "null" in (tmp_path / "s.json").read_text()
    assert np.array_equal(load_selector(tmp_path / "s.json").rank(big), sel.rank(big))
    with pytest.raises(PsleError, match="at least one training cluster where it finished"):
        Selector("truth", "pair", PAIR, x, np.column_stack([np.full(30, np.nan), y[:, 1]]), np.ones(30))


def test_members_never_known_on_the_same_cluster_are_still_ranked_through_a_third():
    """Members 0 and 1 never finished on the same cluster, so their pair has no forest; both are
    compared with member 2 (0 leads it by 0.3, 1 trails it by 0.2), which orders them 0, 2, 1."""
    trio = PAIR + [{"method": "pc-stable", "alpha": 0.01, "depth": 1000, "engine": "numpy"}]
    rng = np.random.default_rng(4)
    x = rng.standard_normal((40, len(FEATURES)))
    first = np.arange(40) < 20
    y = np.column_stack([np.where(first, 1.5, np.nan), np.where(first, np.nan, 1.0), np.full(40, 1.2)])
    sel = Selector("truth", "trio", trio, x, y, np.ones(40))
    assert sel.models_[sel.pairs.index((0, 1))] is None
    assert sel.rank(x[0]) == pytest.approx([0.3 / 3, -0.2 / 3, (0.2 - 0.3) / 3])  # Q above the members' mean
    assert sel.orders(x[:3]) == [[0, 2, 1]] * 3


def test_with_a_tolerance_the_fastest_member_near_the_best_runs_first(tmp_path):
    """Member 0 is predicted 0.005 Q better but takes 10x the seconds: within a 0.01 tolerance member 1
    goes first; beyond it (member 0 better by 0.3 where feature 0 is large) member 0 does."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((60, 1)) + 0.01 * rng.standard_normal((60, len(FEATURES)))  # every feature the same
    y = np.column_stack([np.where(x[:, 0] > 0, 1.8, 1.505), np.full(60, 1.5)])
    seconds = np.tile([20.0, 2.0], (60, 1))
    near, far = np.full(len(FEATURES), -2.0), np.full(len(FEATURES), 2.0)
    plain = Selector("truth", "pair", PAIR, x, y, np.ones(60), seconds=seconds)
    assert plain.orders(near)[0] == [0, 1] and plain.predicted_seconds(near) is None
    cheap = Selector("truth", "pair", PAIR, x, y, np.ones(60), seconds=seconds, tolerance=0.01)
    assert cheap.orders(np.stack([near, far])) == [[1, 0], [0, 1]]
    assert cheap.predicted_seconds(near)[0] == pytest.approx([20.0, 2.0])
    cheap.save(tmp_path / "s.json")
    loaded = load_selector(tmp_path / "s.json")
    assert loaded.tolerance == 0.01 and loaded.orders(near)[0] == [1, 0]
    assert loaded.describe()["tolerance"] == 0.01
    with pytest.raises(PsleError, match="tolerance"):
        Selector("bic", "pair", PAIR, x, np.eye(2)[(x[:, 0] > 0).astype(int)], np.ones(60), seconds=seconds,
                 tolerance=0.01)
    with pytest.raises(PsleError, match="needs the training runs' seconds"):
        Selector("truth", "pair", PAIR, x, y, np.ones(60), tolerance=0.01)


def test_a_tolerance_for_the_bic_target_is_refused_before_any_work(tmp_path):
    records = Path(__file__).resolve().parents[1] / "bench" / "selection-records.h5"
    out = tmp_path / "s.json"
    run = subprocess.run([*PSLE, "selector", "fit", str(records), "--target", "bic", "--tolerance", "0.05", "-o",
                          str(out)], capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        "psle: error: --tolerance 0.05: only the truth target has one (bic ranks by probability)"]
    assert not out.exists()


@pytest.mark.parametrize("damage, message", [
    (lambda d: d["training"]["y"][0].reverse(), "checksum"),
    (lambda d: d.update(format="something-else"), "not a selector file"),
    (lambda d: d.update(version=99), "format version"),
    (lambda d: d["training"].update(seconds=[[1.0, 2.0]]), "checksum"),
])
def test_bad_selector_files_are_refused_in_one_line(tmp_path, damage, message):
    _, path = fitted(tmp_path)
    doc = json.loads(path.read_text())
    damage(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(PsleError, match=message) as err:
        load_selector(path)
    assert "\n" not in str(err.value)


def test_a_selector_of_an_older_format_is_refused_at_use_and_upgraded_from_the_examples_it_holds(tmp_path):
    from hpc.select.selector import _digest

    sel, path = fitted(tmp_path)
    doc = json.loads(path.read_text())
    doc.pop("sha256")
    old = tmp_path / "old.json"
    for version, name in ((3, old), (2, tmp_path / "older.json")):
        doc["version"] = version
        name.write_text(json.dumps({**doc, "sha256": _digest(doc)}))
    with pytest.raises(PsleError, match=r"version 3 is not 4; upgrade it \(psle selector upgrade old.json"):
        load_selector(old)
    new = tmp_path / "new.json"
    run = subprocess.run([*PSLE, "selector", "upgrade", str(old), "-o", str(new)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    upgraded = load_selector(new)
    rows = np.random.default_rng(5).standard_normal((4, len(FEATURES)))
    assert np.array_equal(upgraded.rank(rows), sel.rank(rows))  # the same examples, today's model
    assert upgraded.provenance["upgraded_from"]["version"] == 3
    again = subprocess.run([*PSLE, "selector", "upgrade", str(old), "-o", str(new)], capture_output=True, text=True)
    assert again.returncode == 2 and again.stderr.strip().splitlines() == [
        f"psle: error: {new}: exists; upgrade into a new file"]
    older = subprocess.run([*PSLE, "selector", "upgrade", str(tmp_path / "older.json"), "-o", str(tmp_path / "x.json")],
                           capture_output=True, text=True)
    assert older.returncode == 2 and "version 2 is not 4; refit it from its records" in older.stderr
    assert len(older.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.json").exists()


def test_selector_of_other_features_or_not_json_is_refused(tmp_path):
    _, path = fitted(tmp_path)
    doc = json.loads(path.read_text())
    doc["features"] = doc["features"][:-1]
    doc.pop("sha256")
    from hpc.select.selector import _digest

    path.write_text(json.dumps({**doc, "sha256": _digest(doc)}))
    with pytest.raises(PsleError, match="other features"):
        load_selector(path)
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(PsleError, match="not valid JSON"):
        load_selector(path)
    with pytest.raises(PsleError, match="unknown selector"):
        load_selector("no-such-selector")


def test_a_selector_for_another_portfolio_is_refused_before_any_work(tmp_path):
    sel, _ = fitted(tmp_path)
    pef = PEF(PAIR[:1], selection="predicted", selector=sel)
    with pytest.raises(PsleError, match="portfolio 'pair'"):
        pef.validate()
    with pytest.raises(PsleError, match="top_k"):
        PEF(None, selection="predicted", selector=sel, top_k=3).validate()


@pytest.mark.slow
def test_predicted_selection_equals_running_all_when_it_predicts_every_bic_winner():
    problem = benchmark_problem(240, 5, network="insurance")
    everything = PEF(PAIR, progress=False).fit(problem.data, problem.variables)
    assert everything.status_ == "ok"
    features = np.stack([cluster_features(covariance(problem.data[:, c]), problem.n) for c in everything.clusters_])
    winners = np.array(everything.winners_)
    selector = Selector("bic", "pair", PAIR, features, np.eye(2)[winners], np.ones(len(winners)))
    chosen = PEF(PAIR, progress=False, selection="predicted", selector=selector).fit(problem.data, problem.variables)
    assert [s["ran"] for s in chosen.selections_] == [[w] for w in winners.tolist()]
    ran = sum(r is not None for runs in chosen.cluster_runs_ for r in runs)
    assert ran == len(winners) < 2 * len(winners)
    assert chosen.graph_ == everything.graph_
    clusters = chosen.result_meta()["clusters"]
    assert all(len(c["selection"]["scores"]) == 2 and "features" in c["selection"] for c in clusters)
    # each cluster lists every member that may run there: the pair, and the one for clusters outside the training data
    assert chosen.members_ == PAIR + [outside_member()]
    assert sum(r["status"] == "not run" for c in clusters for r in c["runs"]) == 2 * len(winners)


@pytest.mark.slow
def test_cli_selector_fit_and_learn_with_it(small_records, tmp_path):
    records = small_records[0]
    sel = tmp_path / "sel.json"
    fit = subprocess.run([*PSLE, "selector", "fit", str(records), "--target", "truth", "-o", str(sel)],
                         capture_output=True, text=True)
    assert fit.returncode == 0, fit.stderr
    score = subprocess.run([*PSLE, "selector", "score", str(records), "--selector", str(sel), "--json"],
                           capture_output=True, text=True)
    assert score.returncode == 0, score.stderr
    row = json.loads(score.stdout)[0]
    assert row["q"] <= row["q_oracle"] + 1e-12 and 0 <= row["picks_truth_winner"] <= 1
    data = tmp_path / "d.h5"
    subprocess.run([*PSLE, "generate", "--graph", "hub", "--nodes", "150", "--seed", "3", "-o", str(data)], check=True,
                   capture_output=True)
    out = tmp_path / "g.json"
    learn = subprocess.run([*PSLE, "learn", str(data), "--selection", "predicted", "--selector", str(sel), "--serial",
                            "-o", str(out)], capture_output=True, text=True)
    assert learn.returncode == 0, learn.stderr
    meta = json.loads(out.read_text())["meta"]
    assert meta["selection"] == "predicted" and meta["status"] == "ok" and meta["selector"]["target"] == "truth"
    assert meta["selector"]["tolerance"] == 0.01  # fit's default: the member's predicted seconds are recorded
    assert meta["selector"]["samples"] == [1000] and meta["selector"]["weights"] == [[0.5, 1.0]]
    chosen = [c["selection"] for c in meta["clusters"] if "scores" in (c.get("selection") or {})]
    assert chosen and all(len(c["predicted_seconds"]) == len(c["scores"]) for c in chosen)
    wrong = subprocess.run([*PSLE, "learn", str(data), "--selection", "predicted", "--selector", str(sel),
                            "--sle", "learned", "-o", str(tmp_path / "h.json")], capture_output=True, text=True)
    assert wrong.returncode == 2 and "portfolio" in wrong.stderr and len(wrong.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "h.json").exists()


def test_records_of_other_members_on_the_same_problems_join_per_cluster(small_records, tmp_path):
    from hpc.select.records import join_records

    path, config, store = small_records
    extra = [{"method": "pc-stable", "alpha": 0.01, "depth": 1000, "engine": "numpy"}, PAIR[1]]
    other = tmp_path / "other.h5"
    build_records(config, extra, other, SerialExecutor())
    members, rows = join_records([(str(path), read_records(path)), (str(other), read_records(other))])
    assert members == [*PAIR, extra[0]]  # PAIR[1] ran in both: recorded once, the first file's run kept
    assert len(rows) == len(store.rows) // 2 * 3
    name, chosen, examples = load_examples([str(path), str(other)], None, [])
    assert chosen == members and all(len(e.quality) == 3 for e in examples)
    first = {r["key"]: r for r in read_records(path)["rows"]}
    assert all(first[r["key"]]["seconds"] == r["seconds"] for r in rows if r["key"] in first)
    doc = read_records(other)
    doc["rows"][0]["features"] = doc["rows"][0]["features"] + 1.0  # the same cluster name, other data
    with pytest.raises(PsleError, match="other data"):
        join_records([(str(path), read_records(path)), ("other.h5", doc)])


def test_psle_learn_selects_per_cluster_by_default_but_runs_all_of_a_users_own_ensemble():
    from hpc.cli import build_parser
    from hpc.cli.learn import method_spec

    def spec(*argv):
        return method_spec(build_parser().parse_args(["learn", "d.csv", "-o", "g.json", *argv]))

    default = spec()
    assert (default.selection, default.selector, default.sle) == ("predicted", "truth", None)
    own = spec("--sle", "mine.yaml")
    assert (own.selection, own.selector, own.sle) == ("all", None, "mine.yaml")
    assert spec("--sle", "mine.yaml", "--selector", "s.json").selection == "predicted"
    paper = spec("--selection", "all")
    assert (paper.selection, paper.sle) == ("all", "learned")
    assert spec("--method", "p-fges").selection == "all" and spec("--method", "sle").selection == "all"
    with pytest.raises(PsleError, match="applies to p-sle only"):
        spec("--method", "p-fges", "--selection", "predicted")
    from hpc.pef.pipeline import RUNAWAY
    from hpc.run import build_estimator

    assert build_estimator(default).runaway == RUNAWAY and build_estimator(spec("--runaway", "0")).runaway == 0.0
    with pytest.raises(PsleError, match="--runaway applies to --selection predicted"):
        spec("--selection", "all", "--runaway", "5")


def test_clusters_unlike_the_selectors_training_data_are_named_and_warned_about():
    import warnings

    from hpc.graphs.order import canonical_order
    from hpc.pef.partition import PartitionConfig, partition

    seen = benchmark_problem(150, 3, network="insurance")  # 1,000 samples, as every training cluster
    ordered = seen.data[:, canonical_order(seen.data)]  # PEF computes features in this column order
    features = np.stack([cluster_features(covariance(ordered[:, c]), seen.n)
                         for c in partition(ordered, PartitionConfig()) if len(c) > 1])
    selector = Selector("truth", "pair", PAIR, features, np.tile([1.5, 1.0], (len(features), 1)),
                        np.ones(len(features)))
    assert selector.outside(features) == [[]] * len(features)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the data it was fit on raises no warning
        alike = PEF(PAIR, progress=False, selection="predicted", selector=selector).fit(seen.data, seen.variables)
    assert all("outside_training" not in s for s in alike.selections_)
    few = benchmark_problem(150, 3, 300, network="insurance")
    with pytest.warns(UserWarning, match=r"at a sample size the truth selector was not trained at.*"
                                         r".*trained at n = 1000 and this data has n = 300: `psle records --samples 300`"):
        unlike = PEF(PAIR, progress=False, selection="predicted", selector=selector).fit(few.data, few.variables)
    marked = [c["selection"]["outside_training"] for c in unlike.result_meta()["clusters"]
              if "outside_training" in c.get("selection", {})]
    assert marked and all("log_n" in m for m in marked)


def test_the_extrapolation_note_is_advice_and_silent_on_problems_every_member_learns_in_moments():
    from hpc.cli.learn import member_repr
    from hpc.select.selector import TRIVIAL_SIZE, extrapolation_note

    bic = load_selector("bic")
    low, high = (round(float(np.exp(v))) for v in bic.training_range("log_p"))
    features = np.zeros((1, len(FEATURES)))
    features[0, FEATURES.index("log_p")] = np.log(low - 3)
    assert extrapolation_note(bic, [["log_p"]], 1000, features) == (
        f"{low - 3} variables: smaller than any problem the bic selector was trained on ({low}-{high} variables): "
        f"its pick would be a guess, so it gets {member_repr(bic.portfolio[bic.fallback])}, the member whose time grows "
        "slowest with size of those that did well on its training clusters (--selection all runs every learner and "
        "keeps the best BIC)")
    features[0, FEATURES.index("log_p")] = np.log(TRIVIAL_SIZE)
    assert extrapolation_note(bic, [["log_p"]], 1000, features) == ""  # 12 variables: any member is cheap
    assert extrapolation_note(bic, [["log_p"]], 1000).startswith(
        f"the problem: outside the sizes the bic selector was trained on ({low}-{high} variables)")


def test_the_fallback_is_the_member_whose_time_grows_slowest_among_those_that_did_well():
    truth = load_selector("truth")
    spec = truth.portfolio[truth.fallback]
    # Of the members within 0.1 mean Q of the best on the records, the fGES capped at 11 parents.
    assert spec == {"method": "fges", "penalty": 5.6246, "max_parents": 11, "faithfulness": False}
    # A selector without timing records cannot rank growth: its first member.
    features = np.zeros((2, len(FEATURES)))
    assert Selector("truth", "pair", PAIR, features, np.ones((2, 2)), np.ones(2)).fallback == 0


def test_a_pick_outside_the_training_data_or_predicted_far_dearer_than_the_fallback_gives_way_to_it():
    from hpc.pef.pipeline import COST_GATE, GATE_FLOOR, fallback_reason

    seconds = np.array([[5.0, 2.0, 2.0 * COST_GATE + 1]])  # member 1 is the fallback
    assert fallback_reason(["log_n"], 100, [0, 1, 2], seconds, 0, 1) == "outside the selector's training data"
    assert fallback_reason(["log_n"], 12, [0, 1, 2], seconds, 0, 1) is None  # every member is cheap at 12
    assert fallback_reason(["log_n"], 100, [1, 0, 2], seconds, 0, 1) is None  # the pick is the fallback
    assert fallback_reason([], 100, [0, 1, 2], seconds, 0, 1) is None  # 5 s: no gate
    assert fallback_reason([], 100, [2, 1, 0], seconds, 0, 1) is None  # over 10x, but under GATE_FLOOR seconds
    dear = seconds * (GATE_FLOOR / 2)  # the same ratios, over the floor
    assert fallback_reason([], 100, [2, 1, 0], dear, 0, 1).startswith("its pick's predicted 630 s is over 10x")
    assert fallback_reason([], 100, [0, 1, 2], dear, 0, 1) is None  # 2.5x: not gated
    assert fallback_reason([], 100, [2, 1, 0], None, 0, 1) is None  # no time model: nothing to gate on


@pytest.mark.slow
@pytest.mark.jvm
def test_clusters_outside_the_training_data_get_the_fallback_and_one_line_says_so():
    import warnings

    from hpc.cli.learn import member_repr
    from hpc.learners.ensemble import load_sle
    from hpc.select.selector import TRIVIAL_SIZE

    truth = load_selector("truth")
    high = np.exp(truth.training_range("log_n")[1])
    rows = int(high * 1.5)  # more rows than any training cluster had: every cluster is outside
    problem = benchmark_problem(150, 5, rows, network="insurance")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pef = PEF(load_sle("portfolio")[1], progress=False, selection="predicted", selector=truth,
                  partition=PartitionConfig(whole_below=0)).fit(problem.data, problem.variables)
    notes = [str(w.message) for w in caught if "training data" in str(w.message) or "trained" in str(w.message)]
    assert len(notes) == 1, notes
    # they get the trained SLE's first member (FLOP), which is not in the portfolio, so it runs after it
    outside = load_sle("trained")[1][0]
    assert outside not in truth.portfolio and pef.members_ == truth.portfolio + [outside]
    assert f"get {member_repr(outside)}, the best single member Auto-SLE found" in notes[0]
    clusters = [c for c in pef.result_meta()["clusters"] if c["size"] > TRIVIAL_SIZE]
    assert clusters and all("log_n" in c["selection"]["outside_training"] for c in clusters)
    for c in clusters:
        assert c["selection"]["fallback"] == "outside the selector's training data"
        assert c["winner"] == len(truth.portfolio)  # the only member run there
        assert [r["status"] for r in c["runs"]].count("not run") == len(truth.portfolio)
    # with prior knowledge (which FLOP ignores) they would get the selector's fallback instead: no outside member
    known = PEF(truth.portfolio, selection="predicted", selector=truth,
                knowledge=Knowledge(forbidden=frozenset({(problem.variables[0], problem.variables[1])})))
    assert known._with_outside(truth.portfolio) == (truth.portfolio, None)
    assert PEF(truth.portfolio)._with_outside(truth.portfolio) == (truth.portfolio, None)  # nor with every member run


def test_a_failed_prediction_falls_back_to_the_next_most_probable_member(monkeypatch):
    import hpc.pef.pipeline as pipeline
    from hpc.learners.ensemble import MemberRun, run_member

    def fges_fails(spec, *args):
        if spec["method"] == "fges":
            return MemberRun(dict(spec), "failed", None, None, None, 0.1, "planted failure")
        return run_member(spec, *args)

    monkeypatch.setattr(pipeline, "run_member", fges_fails)
    problem = benchmark_problem(120, 2, network="insurance")
    always_fges = Selector("truth", "pair", PAIR, np.zeros((3, len(FEATURES))), np.tile([1.5, 1.0], (3, 1)), np.ones(3))
    with pytest.warns(UserWarning, match="planted failure"):
        pef = PEF(PAIR, progress=False, selection="predicted", selector=always_fges).fit(problem.data,
                                                                                       problem.variables)
    assert pef.status_ == "ok" and set(pef.winners_) == {1}
    assert all(s["ran"] == [0, 1] for s in pef.selections_)
    pc_only = PEF(PAIR[1:], progress=False).fit(problem.data, problem.variables)
    assert pef.graph_ == pc_only.graph_


class Killed(Exception):
    """The process dies here (a planted kill between two member runs)."""


def _fges_that_runs_away(monkeypatch, calls: list, kill_at: list | None = None) -> tuple:
    """Plant an fGES that outlasts any limit it is given (a run with a limit times out at it), recording
    every member run as (method, variables, limit) in `calls`; with `kill_at` ([k]), the run after k calls
    raises Killed instead. Returns the problem and a selector predicting fGES best and fast (2 s; PC 30 s)."""
    from hpc.learners.ensemble import MemberRun, run_member
    from hpc.pef import pipeline

    def fges_outlasts_any_limit(spec, cov, n, variables, time_limit, *args):
        if kill_at and len(calls) == kill_at[0]:
            raise Killed
        calls.append((spec["method"], len(variables), time_limit))
        if spec["method"] == "fges" and time_limit is not None:
            return MemberRun(dict(spec), "timed out", None, None, None, time_limit, None)
        return run_member(spec, cov, n, variables, time_limit, *args)

    monkeypatch.setattr(pipeline, "run_member", fges_outlasts_any_limit)
    x, y = np.zeros((3, len(FEATURES))), np.tile([1.5, 1.0], (3, 1))
    return (benchmark_problem(120, 2, network="insurance"),
            Selector("truth", "pair", PAIR, x, y, np.ones(3), seconds=np.tile([2.0, 30.0], (3, 1)), tolerance=0.01))


def test_a_run_far_over_its_predicted_seconds_gives_way_to_the_next_member_and_runs_last_after(monkeypatch):
    """The runaway guard: fGES is predicted best and fast; a run that outlasts runaway x its predicted
    seconds is cut (here: simulated as any fGES run given a limit), and PC-Stable, the last member
    left, runs with no limit of the guard's. From then on fGES runs last on clusters at least half as
    large: they start with PC-Stable (under the guard, as fGES is still left behind it) and never need
    fGES; a cluster under half the size runs fGES first again."""
    limits = []
    problem, fast_fges = _fges_that_runs_away(monkeypatch, limits)
    with pytest.warns(UserWarning, match=r"cut by the runaway guard after 1200 s \(600x its predicted 2 s"):
        pef = PEF(PAIR, progress=False, selection="predicted", selector=fast_fges, partition=CUT, runaway=600).fit(
            problem.data, problem.variables)
    sizes = sorted((len(c) for c in pef.clusters_), reverse=True)
    assert sizes == [29, 25, 25, 21, 17, 11, 7]  # the order clusters start in (context off: sizes as searched)
    # 600 x the predicted 2 s is 1,200 s, over the 900 s floor; PC-Stable after it, the last one left, gets
    # no guard; PC-Stable first, with fGES left behind it, runs under 600 x 30 s. fGES is cut on 29 variables
    # (run last from 15 up), then on 11 (from 6 up), so 7 starts with PC-Stable too.
    cut, last, first = ("fges", 1200.0), ("pc-stable", None), ("pc-stable", 18000.0)
    expected = [(29, cut), (29, last), (25, first), (25, first), (21, first), (17, first), (11, cut), (11, last),
                (7, first)]
    assert [(size, (m, t)) for m, size, t in limits] == [(size, (m, pytest.approx(t, rel=0.05) if t else t))
                                                        for size, (m, t) in expected]
    assert pef.status_ == "ok" and set(pef.winners_) == {1} and pef.run_last_ == {0: 5.5}
    assert sorted(s["ran"] for s in pef.selections_) == [[0, 1]] * 2 + [[1]] * 5
    assert sum("passed_over" in s for s in pef.selections_) == 5
    assert pef.result_meta()["run_last"] == [{"member": PAIR[0], "on_clusters_from": 6}]
    limits.clear()
    off = PEF(PAIR, progress=False, selection="predicted", selector=fast_fges, partition=CUT, runaway=0).fit(
        problem.data, problem.variables)
    assert {t for _, _, t in limits} == {None} and set(off.winners_) == {0} and off.run_last_ == {}
    with pytest.raises(PsleError, match="runaway"):
        PEF(PAIR, selection="predicted", selector=fast_fges, partition=CUT, runaway=0.5).validate()


def test_a_resumed_run_takes_its_timeouts_from_the_checkpoint_and_makes_the_same_choices(monkeypatch, tmp_path):
    """Killed after its first cluster's fGES run was cut, a run resumes with that timeout known: fGES runs last
    on the clusters as large, as in a run never killed, and no finished run is repeated."""
    calls, kill_at = [], []
    problem, fast_fges = _fges_that_runs_away(monkeypatch, calls, kill_at)

    def fit(path):
        # No steps after fusion: this test is about the member runs (test_repair.py resumes a run killed in the
        # repair); their multithreaded searches may break score ties differently from run to run.
        return PEF(PAIR, progress=False, selection="predicted", selector=fast_fges, partition=CUT, runaway=600,
                   checkpoint=str(path), steps=steps_from(NONE)).fit(problem.data, problem.variables)

    with pytest.warns(UserWarning):
        whole = fit(tmp_path / "whole.h5")
    uninterrupted = list(calls)
    calls.clear()
    kill_at.append(3)  # fGES cut on the largest cluster, PC-Stable there, PC-Stable on the next; then killed
    with pytest.raises(Killed):
        fit(tmp_path / "killed.h5")
    kill_at.clear()
    with pytest.warns(UserWarning):
        resumed = fit(tmp_path / "killed.h5")
    assert resumed.resumed_runs_ == 3 and calls == uninterrupted
    assert resumed.selections_ == whole.selections_ and resumed.run_last_ == whole.run_last_
    assert resumed.graph_ == whole.graph_


def test_a_timeout_sends_its_member_and_those_that_time_out_with_it_to_the_back_on_clusters_as_large():
    """MemberSchedule by hand: member 0 times out on cluster 0 (100 variables), and the records say 2
    times out with it; from then on both run after 1 and 3 in fallbacks and on clusters of 50 or more
    variables not yet started; cluster 2 (40 variables) runs its plan."""
    from hpc.learners.ensemble import MemberRun
    from hpc.pef.schedule import MemberSchedule

    def run(status: str) -> MemberRun:
        return MemberRun({}, status, None, None, -1.0 if status == "ok" else None, 1.0)

    plans = [([0], {"order": [0, 1, 2, 3]}), ([0], {"order": [0, 2, 1, 3]}), ([2], {"order": [2, 3, 0, 1]})]
    schedule = MemberSchedule(plans, [0, 1, 2], 4, [100, 60, 40], timed_out_with=lambda k: {0: [0, 2]}.get(k, [k]))
    assert schedule.next() == (0, 0, False)
    assert schedule.settle(0, 0, run("timed out"), timed_out=True) == [0, 2] and schedule.avoid == {0: 50, 2: 50}
    assert schedule.next() == (0, 1, False)  # cluster 0's fallback skips 2, next in its order
    assert schedule.next() == (1, 1, False)  # planned 0, then 2 in its order: both passed over
    assert schedule.next() == (2, 2, False)  # under half the size: as planned
    assert schedule.next() is None and schedule.passed_over == [[], [0], []]
    schedule.settle(0, 1, run("ok"), timed_out=False)
    schedule.settle(2, 2, run("ok"), timed_out=False)
    assert schedule.finished == 2 and schedule.waiting == 1
    schedule.settle(1, 1, run("failed"), timed_out=False)
    assert schedule.next() == (1, 3, False)  # the fallback: 3 before 0 and 2
    schedule.settle(1, 3, run("failed"), timed_out=False)
    assert schedule.next() == (1, 0, False)  # only members to run last are left: in the selector's order
    assert schedule.settle(1, 0, run("timed out"), timed_out=True) == [0, 2]  # now from 30 variables up
    assert schedule.avoid == {0: 30, 2: 30}
    assert schedule.next() == (1, 2, True)  # the last one left (so the runaway guard spares it)
    assert schedule.settle(1, 2, run("failed"), timed_out=False) == []
    assert schedule.next() is None and schedule.finished == 3 and schedule.ran == 7
    # Without the selector's plans (selection "all") nothing falls back and nothing moves.
    every = MemberSchedule([([0, 1], None)], [0], 2, [10], timed_out_with=lambda k: [0, 1])
    assert [every.next(), every.next(), every.next()] == [(0, 0, False), (0, 1, False), None]
    assert every.settle(0, 0, run("timed out"), timed_out=True) == [] and every.avoid == {}


def test_members_that_time_out_with_another_are_read_from_the_records_censoring():
    y = np.array([[np.nan, np.nan, 1.0]] * 4 + [[np.nan, 1.0, np.nan]] + [[1.0, np.nan, 1.0]] * 4)
    selector = Selector("truth", "trio", PAIR + [PAIR[0]], np.zeros((9, len(FEATURES))), y, np.ones(9))
    # 0 timed out on 5 clusters, 1 with it on 4 (0.8), 2 on 1; 1 timed out on 8, 0 on 4 of them (under two in three)
    assert selector.timed_out_with(0) == [0, 1] and selector.timed_out_with(1) == [1]
    assert selector.timed_out_with(2) == [2]  # one timeout says too little
    bic = Selector("bic", "trio", PAIR + [PAIR[0]], np.zeros((9, len(FEATURES))), np.nan_to_num(y), np.ones(9))
    assert bic.timed_out_with(0) == [0]


def test_the_scored_policy_runs_the_next_member_where_the_chosen_one_failed():
    from hpc.train.evaluate import play, selection_quality

    e = example([-10, -20, -30], [1.0, 1.6, 1.2], [5.0, 2.0, 1.0], ok=[False, True, True])
    assert play(e, [0, 2, 1]) == (2, 6.0)  # 0 failed after 5 s, 2 succeeded after 1 s more
    assert play(e, [0, 2, 1], top_k=3) == (1, 8.0)  # all three ran: the best BIC of the successes
    row = selection_quality([e], [[0, 2, 1]])
    assert row["q"] == 1.2 and row["q_oracle"] == 1.6 and row["q_bic_all"] == 1.6 and row["member_seconds"] == 6.0


def test_shipped_selectors_load_and_hold_the_portfolios_their_methods_name():
    from hpc.data.generate import FAMILIES
    from hpc.learners.ensemble import load_sle

    truth, bic = load_selector("truth"), load_selector("bic")
    assert truth.target == "truth" and truth.portfolio == load_sle("portfolio")[1]
    assert bic.target == "bic" and bic.portfolio == load_sle("learned")[1]
    # layer (held out to measure how selection transfers, bench/HISTORY.md) and the modular families, made after
    # its records: no cluster of theirs trained it
    assert set(truth.provenance["families"]) == set(FAMILIES) - {"layer", "modular", "modular-large"}


@pytest.mark.slow
def test_cli_records_rerun_without_families_resumes_with_the_files_families(tmp_path):
    """A file begun with some families is resumed by the same command without `--families` (as after
    psle gained a family, which changes the default): it keeps its families and reruns nothing."""
    portfolio = tmp_path / "pc.yaml"
    portfolio.write_text("name: pc\nmembers: [{method: pc-stable, alpha: 0.05, depth: 1000, engine: numpy}]\n")
    command = [*PSLE, "records", "-o", str(tmp_path / "r.h5"), "--portfolio", str(portfolio), "--serial",
               "--problems-per-family", "1", "--min-nodes", "60", "--max-nodes", "80"]
    subprocess.run([*command, "--families", "er", "sf"], check=True, capture_output=True)
    before = read_records(tmp_path / "r.h5")
    rerun = subprocess.run(command, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    after = read_records(tmp_path / "r.h5")
    runs = lambda doc: [(r["key"], r["seconds"]) for r in doc["rows"]]  # noqa: E731  (a rerun has other seconds)
    assert after["settings"]["families"] == ["er", "sf"] and runs(after) == runs(before) != []
    other = subprocess.run([*command, "--families", "er"], capture_output=True, text=True)
    assert other.returncode != 0 and "differ in: families" in other.stderr


def test_a_selector_summary_counts_each_members_wins_where_it_finished():
    """Three clusters of 10, 30 and 60 variables: member 0 best on the first two, member 1 on the third,
    where member 0 timed out (unknown, not counted as finished or in its mean)."""
    y = np.array([[1.5, 1.0], [1.2, 1.1], [np.nan, 1.4]])
    seconds = np.array([[1.0, 2.0], [3.0, 4.0], [60.0, 9.0]])
    sel = Selector("truth", "pair", PAIR, np.zeros((3, len(FEATURES))), y, np.array([10.0, 30.0, 60.0]),
                   {"families": ["er"]}, seconds, 0.01)
    summary = sel.summary()
    assert summary["clusters"] == 3 and summary["cluster_sizes"] == [10, 60] and summary["tolerance"] == 0.01
    first, second = summary["members"]
    assert (first["best_on"], first["known_on"], second["best_on"], second["known_on"]) == (2, 2, 1, 3)
    assert first["mean_q"] == pytest.approx((10 * 1.5 + 30 * 1.2) / 40)
    assert second["mean_q"] == pytest.approx((10 * 1.0 + 30 * 1.1 + 60 * 1.4) / 100)
    assert first["mean_seconds"] == pytest.approx(64 / 3) and second["mean_seconds"] == pytest.approx(5.0)


def test_cli_selector_show_names_the_shipped_selector_its_training_and_every_member(tmp_path):
    from hpc.cli.learn import member_repr

    truth = load_selector("truth")
    out = subprocess.run([*PSLE, "selector", "show"], capture_output=True, text=True, check=True).stdout
    assert out.startswith(f"truth selector {truth.document()['sha256'][:12]}: 8 members of portfolio 'portfolio'")
    assert f"trained on {len(truth.y):,} clusters" in out and "families: bnlearn" in out
    assert all(f"| {member_repr(m)} |" in out for m in truth.portfolio)
    doc = json.loads(subprocess.run([*PSLE, "selector", "show", "bic", "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    assert doc["target"] == "bic" and sum(m["best_on"] for m in doc["members"]) == doc["clusters"]
    bad = subprocess.run([*PSLE, "selector", "show", str(tmp_path / "none.json")], capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines()[-1].endswith("none.json: no such file")


def test_random_families_get_every_density():
    problems = record_problems(RecordsConfig(families=("er", "hub"), problems_per_family=3))
    assert [p.edges_per_node for p in problems if p.family == "er"] == [1, 2, 3]
    assert {p.edges_per_node for p in problems if p.family == "hub"} == {1}
