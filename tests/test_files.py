import h5py
import numpy as np
import pytest

from hpc.data.generate import benchmark_problem
from hpc.data.problem import read_problem, write_problem
from hpc.data.tabular import read_csv, read_data
from hpc.errors import PsleError
from hpc.graphs.io import from_tetrad_text, read_graph, read_json, to_tetrad_text, write_graph, write_json
from tests.conftest import dag

G = dag("abcd", "a>c b>c c-d")


@pytest.mark.parametrize("suffix", [".json", ".csv", ".txt"])
def test_graph_files_round_trip(tmp_path, suffix):
    path = tmp_path / f"g{suffix}"
    write_graph(path, G)
    assert read_graph(path).reindexed(G.variables) == G


def test_json_has_the_exchange_form_and_keeps_meta(tmp_path):
    write_json(tmp_path / "g.json", G, {"method": "test"})
    text = (tmp_path / "g.json").read_text()
    assert '"variables"' in text and '"-->"' in text
    g, meta = read_json(tmp_path / "g.json")
    assert g == G and meta == {"method": "test"}


def test_tetrad_text_with_trailing_sections():
    text = to_tetrad_text(G) + "\nGraph Attributes:\nScore: 1.0\n"
    assert from_tetrad_text(text) == G


def test_problem_round_trip(tmp_path):
    problem = benchmark_problem(50, 1, 20, network="asia")
    write_problem(tmp_path / "p.h5", problem)
    back = read_problem(tmp_path / "p.h5")
    assert back.truth == problem.truth and back.variables == problem.variables
    assert np.array_equal(back.data, problem.data) and np.array_equal(back.weights, problem.weights)
    assert back.attrs["network"] == "asia" and back.attrs["seed"] == 1 and back.attrs["replicas"] == 7
    data, names = read_data(tmp_path / "p.h5")
    assert names == problem.variables and data.shape == (20, 56)


def test_problem_missing_datasets(tmp_path):
    path = tmp_path / "bad.h5"
    with h5py.File(path, "w") as f:
        f["data"] = np.zeros((3, 2))
        f["variables"] = np.array(["a", "b"], dtype=object).astype("S")
    assert read_problem(path).truth is None
    with pytest.raises(PsleError, match="missing dataset /truth/edges"):
        read_problem(path, need_truth=True)
    with h5py.File(path, "w") as f:
        f["data"] = np.zeros((3, 2))
    with pytest.raises(PsleError, match="missing dataset /variables"):
        read_problem(path)
    (tmp_path / "text.h5").write_text("hello")
    with pytest.raises(PsleError, match="not an HDF5 file"):
        read_problem(tmp_path / "text.h5")


def test_csv_reads_names_and_values(tmp_path):
    (tmp_path / "d.csv").write_text("x,y,z\n1,2,3\n4.5,-1e3,0\n")
    data, names = read_csv(tmp_path / "d.csv")
    assert names == ("x", "y", "z") and data.tolist() == [[1, 2, 3], [4.5, -1000, 0]]


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("x,y\n", "no data rows"),
    ("x,x\n1,2\n", "column name 'x' appears twice"),
    ("x,,z\n1,2,3\n", "column 2 has no name"),
    ("x,y\n1,2\n3,4,5\n", "malformed CSV"),
    ("x,y\n1,2\n3,abc\n", "column 'y', row 2: 'abc' is not a number"),
    ("x,y\n1,\n3,4\n", "column 'y', row 1: missing value"),
    ("x,y\n1,2\ninf,4\n", "column 'x', row 2: 'inf' is not a finite number"),
    ("x,y\n1,2\nnan,4\n", "column 'x', row 2: 'nan' is not a finite number"),
])
def test_malformed_csv_gets_a_one_line_error(tmp_path, text, message):
    path = tmp_path / "d.csv"
    path.write_text(text)
    with pytest.raises(PsleError, match=message) as info:
        read_csv(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_csv_byte_order_mark_and_tab_separated_files(tmp_path):
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbfa,b\n1,2\n3,5\n")
    assert read_csv(tmp_path / "bom.csv")[1] == ("a", "b")
    (tmp_path / "d.tsv").write_text("a\tb\n1\t2\n3\t5\n")
    x, names = read_data(tmp_path / "d.tsv")
    assert names == ("a", "b") and x.tolist() == [[1, 2], [3, 5]]
    (tmp_path / "d.csv").write_text("a\tb\n1\t2\n3\t5\n")
    with pytest.raises(PsleError, match=r"d.csv: the header row is tab-separated, not .csv"):
        read_data(tmp_path / "d.csv")


@pytest.mark.parametrize("name, value, message", [
    ("data", np.ones((4, 2)) + 1j, r"/data holds complex128 values; expected real numbers"),
    ("data", np.array([["1", "2"]] * 4, dtype="S1"), r"/data holds \|S1 values"),
    ("truth/edges", np.array([[0.0, 1.5]]), r"/truth/edges holds float64 values; expected integers"),
    ("variables", np.array([b"a", b""]), r"/variables entry 2 is empty"),
    ("variables", np.array([b"a", b"a"]), r"variable name 'a' appears twice in /variables"),
])
def test_problem_files_refuse_what_a_cast_would_hide(tmp_path, name, value, message):
    path = tmp_path / "p.h5"
    datasets = {"data": np.ones((4, 2)), "variables": np.array([b"a", b"b"]), "truth/edges": np.array([[0, 1]])}
    with h5py.File(path, "w") as f:
        for key, default in {**datasets, name: value}.items():
            f[key] = default
    with pytest.raises(PsleError, match=rf"^{path}: " + message):
        read_problem(path, need_truth=True)
