import h5py
import numpy as np
import pytest

from hpc.data.generate import benchmark_problem
from hpc.data.problem import read_problem, write_problem
from hpc.data.tabular import check_learnable, read_csv, read_data
from hpc.errors import PsleError
from hpc.graphs.io import from_tetrad_text, read_graph, read_json, to_tetrad_text, write_graph, write_json
from tests.conftest import dag

G = dag("abcde", "a>c b>c c-d")  # e has no edge


@pytest.mark.parametrize("suffix", [".json", ".csv", ".txt", ".graphml", ".dot"])
def test_graph_files_round_trip_with_variables_that_have_no_edge(tmp_path, suffix):
    path = tmp_path / f"g{suffix}"
    write_graph(path, G)
    back = read_graph(path)
    assert sorted(back.variables) == list("abcde") and back.reindexed(G.variables) == G


def test_networkx_reads_the_graphml_back_with_marks_and_attributes_and_an_undirected_edge_both_ways(tmp_path):
    import networkx as nx

    write_graph(tmp_path / "g.graphml", G, edge_attributes={("a", "c"): {"frequency": 0.75},
                                                            ("c", "d"): {"frequency": 0.5}})
    back = nx.read_graphml(tmp_path / "g.graphml")
    assert sorted(back.nodes) == list("abcde")
    # c --- d claims no direction: a networkx user sees it both ways, each marked ---
    assert {(a, b): d for a, b, d in back.edges(data=True)} == {
        ("a", "c"): {"mark": "-->", "frequency": 0.75}, ("b", "c"): {"mark": "-->"},
        ("c", "d"): {"mark": "---", "frequency": 0.5}, ("d", "c"): {"mark": "---", "frequency": 0.5}}
    assert read_graph(tmp_path / "g.graphml") == G


def test_graphml_of_older_versions_and_plain_networkx_graphs_read_as_meant(tmp_path):
    import networkx as nx

    from hpc.graphs.io import from_networkx

    old = nx.DiGraph()  # before both directions were written: one edge, marked ---
    old.add_nodes_from("abcde")
    old.add_edges_from([("a", "c", {"mark": "-->"}), ("b", "c", {"mark": "-->"}), ("c", "d", {"mark": "---"})])
    nx.write_graphml(old, tmp_path / "old.graphml")
    assert read_graph(tmp_path / "old.graphml") == G
    plain = nx.DiGraph([("a", "c"), ("b", "c"), ("c", "d"), ("d", "c")])  # no marks: a pair both ways is ---
    plain.add_node("e")
    assert from_networkx(plain, "plain").reindexed(G.variables) == G
    assert from_networkx(nx.Graph([("c", "d")]), "u").named_edges() == [("c", "d", "---")]
    clash = nx.DiGraph()
    clash.add_edge("a", "b", mark="-->")
    clash.add_edge("b", "a", mark="-->")
    with pytest.raises(PsleError, match=r"^clash: a and b are joined both ways, as a --> b and b --> a; keep one"):
        from_networkx(clash, "clash")


def test_an_edge_list_may_leave_out_marks_and_isolated_variables_and_bad_headers_say_how_to_fix_them(tmp_path):
    from hpc.graphs.io import read_edge_csv

    (tmp_path / "plain.csv").write_text("from,to\na,c\nb,c\n\ne\n")
    assert read_edge_csv(tmp_path / "plain.csv").named_edges() == [("a", "c", "-->"), ("b", "c", "-->")]
    (tmp_path / "marks.csv").write_text("Source,Target,mark\na,c,-->\nc,b,<--\nc,d,---\ne,,\n")
    assert read_edge_csv(tmp_path / "marks.csv").reindexed(G.variables) == G
    (tmp_path / "bad.csv").write_text("x,y\na,b\n")
    with pytest.raises(PsleError, match=r"bad.csv: the header 'x,y' is not an edge list's: an edge list has the "
                                        r"header row 'from,to' \(or 'from,to,edge' with marks"):
        read_edge_csv(tmp_path / "bad.csv")
    (tmp_path / "mark.csv").write_text("from,to,edge\na,b,->\n")
    with pytest.raises(PsleError, match=r"mark.csv: line 2: mark '->' is not one of -->, ---, <-- .*leave it empty"):
        read_edge_csv(tmp_path / "mark.csv")


def test_dot_marks_undirected_edges_and_reads_plain_digraphs(tmp_path):
    from hpc.graphs.io import from_dot, to_dot

    text = to_dot(G)
    assert '"c" -> "d" [mark="---", dir="none"];' in text and '"e";' in text
    plain = from_dot('digraph g {\n  a -> b;\n  b -- c\n  "x y" -> c [color=red];\n}\n', "plain.dot")
    assert plain.variables == ("a", "b", "c", "x y")
    assert sorted(plain.named_edges()) == [("a", "b", "-->"), ("b", "c", "---"), ("x y", "c", "-->")]


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
    ("x,y\n1,2\ninf,4\n", "column 'x', row 2: 'inf' is not a finite number"),
    ("x,y\n1,NA\n3,\n", "every row has a missing value"),
])
def test_malformed_csv_gets_a_one_line_error(tmp_path, text, message):
    path = tmp_path / "d.csv"
    path.write_text(text)
    with pytest.raises(PsleError, match=message) as info:
        read_csv(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_rows_with_missing_values_are_left_out_with_one_warning(tmp_path):
    (tmp_path / "d.csv").write_text("x,y,z\n1,NA,3\n4,5,6\n,8,9\n10,11,nan\n13,14,15\n")
    with pytest.warns(UserWarning, match=r"3 of 5 rows have missing values \(most in 'x' \(1\), 'y' \(1\), 'z' "
                                         r"\(1\)\); they are left out"):
        data, _ = read_csv(tmp_path / "d.csv")
    assert data.tolist() == [[4, 5, 6], [13, 14, 15]]


def test_semicolon_separated_csv_with_decimal_commas(tmp_path):
    (tmp_path / "d.csv").write_text("a;b\n1,5;2\n-3;4,25\n")
    data, names = read_csv(tmp_path / "d.csv")
    assert names == ("a", "b") and data.tolist() == [[1.5, 2.0], [-3.0, 4.25]]
    (tmp_path / "e.csv").write_text("a;b\n1.5;2\n3;x\n")
    with pytest.raises(PsleError, match=r"column 'b', row 2: 'x' is not a number"):
        read_csv(tmp_path / "e.csv")


def test_data_a_gaussian_score_cannot_use_is_refused_or_warned_in_one_line():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 6))
    x[:, 3], x[:, 4] = np.arange(1, 6), [0, 1, 1, 0, 1]
    names = [f"v{i}" for i in range(6)]
    with pytest.warns(UserWarning) as caught:
        check_learnable(x, names)
    said = [str(w.message) for w in caught]
    assert "data: 6 variables for 5 rows (no fewer variables than rows): the covariance is singular" in said[-1]
    assert any("'v3' number the rows" in m for m in said)
    assert any("1 column(s) look categorical (two values, or at most 5 whole-number values: 'v4')" in m for m in said)
    x[:, 5] = 1 - 3 * x[:, 0]
    with pytest.raises(PsleError, match=r"columns 'v0' and 'v5' are copies of each other"):
        check_learnable(x, names)


def test_a_search_over_no_fewer_variables_than_rows_is_warned_about_once():
    import warnings

    from hpc.data.tabular import warn_few_rows

    with pytest.warns(UserWarning, match=r"cluster: 40 variables for 40 rows \(no fewer variables than rows\)"):
        warn_few_rows(40, 40, "cluster")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_few_rows(41, 40, "cluster")
    # 300 rows of 1,200 variables: said once, of the whole data, however a learner then searches it
    x = np.random.default_rng(1).normal(size=(300, 1200))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_learnable(x, [f"g{i}" for i in range(1200)])
        warn_few_rows(300, 1200, "data")  # what a single learner says of its search over the whole data
        warn_few_rows(300, 200, "the largest cluster's search")  # a cluster smaller than the rows: nothing to say
    assert [str(w.message).split(":")[0:2] for w in caught] == [["data", " 1200 variables for 300 rows (no fewer "
                                                                 "variables than rows)"]]


def test_columns_of_a_few_whole_numbers_get_one_warning_naming_them():
    import warnings

    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 10))
    for c, values in ((2, 3), (5, 5), (7, 2), (9, 4)):  # codes 0..k-1, e.g. a stage or a yes/no
        x[:, c] = rng.integers(0, values, size=200)
    x[:, 8] = np.round(x[:, 8] * 10)  # whole numbers, but many of them: a measurement, not a code
    names = [f"v{i}" for i in range(10)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_learnable(x, names)
    said = [str(w.message) for w in caught]
    assert said == ["data: 4 column(s) look categorical (two values, or at most 5 whole-number values: 'v2', 'v5', "
                    "'v7', 'v9'); the model is linear-Gaussian for continuous data, so they are learned as continuous "
                    "and their edges are a linear approximation"]


def test_a_dataframe_goes_through_a_files_rules_with_its_names_kept():
    import pandas as pd

    from hpc.data.tabular import array_data, frame_data

    frame = pd.DataFrame({"age": [31.0, 45, None, 52], "smoker": [True, False, True, False],
                          "dose": ["1.5", "2", "3", "NA"]}, index=[10, 11, 12, 13])
    with pytest.warns(UserWarning, match=r"the DataFrame: 2 of 4 rows have missing values"):
        x, names = frame_data(frame)
    assert names == ("age", "smoker", "dose") and x.tolist() == [[31, 1, 1.5], [45, 0, 2]]
    frame["dose"] = ["1.5", "2", "high", "4"]
    with pytest.raises(PsleError, match=r"^the DataFrame: column 'dose' holds text, e.g. 'high' \(row index 12\): "
                                        r"every column must be numeric; encode it as numbers or drop it$"):
        frame_data(frame)
    assert array_data(np.eye(3), ["a", "b", "c"])[1] == ("a", "b", "c")
    with pytest.raises(PsleError, match=r"^the array: 2 names for 3 columns$"):
        array_data(np.eye(3), ["a", "b"])


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
