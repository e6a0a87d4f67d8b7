"""The one checked HDF5 store and the three stores on it: each store's current version round-trips, each
older version loads or is refused as its StoreFormat documents, and foreign, other-settings and damaged
files are refused in one line and left as they were."""

import h5py
import numpy as np
import pytest

from hpc.errors import PsleError
from hpc.pef.checkpoint import STORE as RUN_STORE, RunCheckpoint
from hpc.select.records import STORE as RECORDS_STORE, RecordStore, read_records
from hpc.store import StoreFormat, check_settings, differing, read_store, write_columns
from hpc.train.checkpoint import STORE as TRAIN_STORE, Checkpoint

SPEC = {"method": "fges", "penalty": 2.0}


def set_attrs(path, **attrs) -> None:
    with h5py.File(path, "r+") as f:
        for name, value in attrs.items():
            if value is None:
                del f.attrs[name]
            else:
                f.attrs[name] = value


def test_a_format_names_what_it_refuses(tmp_path):
    fmt = StoreFormat("tag", 3, "test store", {1: "made before the flood", 2: None})
    path = tmp_path / "s.h5"
    for version, outcome in ((3, 3), (2, 2), (1, "earlier psle \\(format version 1\\), made before the flood"),
                             (4, "format version 4 is not 3")):
        write_columns(path, {"format": "tag", "version": version}, "g", {"a": np.arange(3)})
        if isinstance(outcome, int):
            assert read_store(path, lambda f: fmt.check(f, path), "test store") == outcome
        else:
            with pytest.raises(PsleError, match=outcome):
                read_store(path, lambda f: fmt.check(f, path), "test store")
    write_columns(path, {"format": "other"}, "g", {})
    with pytest.raises(PsleError, match="not a test store \\(no 'tag' marker\\)"):
        read_store(path, lambda f: fmt.check(f, path), "test store")


def test_settings_differ_by_name_and_lists_equal_tuples():
    assert differing({"a": [1, 2], "b": 1}, {"a": (1, 2), "b": 2, "c": 0}) == ["b", "c"]
    with pytest.raises(PsleError, match=r"other data \(differ in: data\); try again"):
        check_settings("x.h5", {"data": "1"}, {"data": "2"}, "checkpoint", "try again")


def test_equal_content_writes_equal_bytes(tmp_path):
    for name in ("a.h5", "b.h5"):
        write_columns(tmp_path / name, {"format": "t", "version": 1}, "g",
                      {"x": np.arange(4.0), "s": np.array(["é", "b"], dtype=object)})
    assert (tmp_path / "a.h5").read_bytes() == (tmp_path / "b.h5").read_bytes()


def test_train_checkpoint_version_1_resumes_unverified_and_others_are_refused(tmp_path):
    path = tmp_path / "c.h5"
    Checkpoint(path, {"k": 2}).put(SPEC, 0, {"quality": 1.25, "seconds": 0.5, "status": "ok"})
    assert TRAIN_STORE.version == 2
    set_attrs(path, sha256="0" * 64)
    with pytest.raises(PsleError, match="does not match its checksum"):
        Checkpoint(path, {"k": 2})
    set_attrs(path, version=1, sha256=None)  # version 1 had no checksum
    assert Checkpoint(path, {"k": 2}).get(SPEC, 0)["quality"] == 1.25
    set_attrs(path, version=3)
    with pytest.raises(PsleError, match="psle train checkpoint format version 3 is not 2"):
        Checkpoint(path, {"k": 2})


def test_run_checkpoint_version_5_round_trips_and_others_are_refused(tmp_path):
    path = tmp_path / "run.h5"
    memory = RunCheckpoint(path, {"data": "x"})
    memory.set_clusters([np.array([0, 2]), np.array([1])])
    again = RunCheckpoint(path, {"data": "x"})
    assert [c.tolist() for c in again.clusters] == [[0, 2], [1]] and RUN_STORE.version == 5
    with pytest.raises(PsleError, match=r"other data \(differ in: data\)"):
        RunCheckpoint(path, {"data": "y"})
    set_attrs(path, recorded=5)  # an edit the checksum must catch
    with pytest.raises(PsleError, match="does not match its checksum"):
        RunCheckpoint(path, {"data": "x"})
    for version in (1, 2, 3, 4):  # refused with their reason (tests/test_repair.py), and a future one plainly
        assert RUN_STORE.older[version] is not None
    set_attrs(path, version=6)
    kept = path.read_bytes()
    with pytest.raises(PsleError, match="psle learn checkpoint format version 6 is not 5"):
        RunCheckpoint(path, {"data": "x"})
    assert path.read_bytes() == kept  # refused, not overwritten


def test_records_version_1_round_trips_and_others_are_refused(tmp_path):
    from hpc.select.features import FEATURES

    path = tmp_path / "r.h5"
    store = RecordStore(path, {"portfolio": [SPEC]})
    store.put(RecordStore.key('{"p":1}', 0, 0), {"status": "ok", "features": np.zeros(len(FEATURES)), "size": 3,
                                                 "seconds": 0.5, "bic": -1.0, "f1_adjacent": 1.0,
                                                 "f1_arrowhead": 0.5, "shd": 1})
    store.finish_problem('{"p":1}')
    doc = read_records(path)
    assert RECORDS_STORE.version == 1 and doc["done_problems"] == ['{"p":1}'] and doc["rows"][0]["shd"] == 1
    with pytest.raises(PsleError, match=r"other settings \(differ in: portfolio\)"):
        RecordStore(path, {"portfolio": []})
    set_attrs(path, version=2)
    with pytest.raises(PsleError, match="psle records file format version 2 is not 1"):
        read_records(path)
