"""The Python API (hpc.learn, hpc.evaluate, hpc.PSLE, Result) as a notebook user meets it: the README's
example, names kept, networkx graphs back, and one-line errors."""

import re
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest

import hpc
from hpc.api import SETTINGS, Result
from hpc.errors import PsleError
from tests.conftest import dag

ROOT = Path(__file__).resolve().parent.parent
README_HEADING = "## Learning from Python"


def readme_example() -> str:
    """The ```python block under README.md's "Learning from Python" heading: the example a user copies."""
    text = (ROOT / "README.md").read_text()
    assert README_HEADING in text, f"README.md has no {README_HEADING!r} section"
    block = re.search(r"```python\n(.*?)```", text[text.index(README_HEADING):], re.S)
    assert block is not None, "README.md's Python section has no ```python block"
    return block.group(1)


def chain(n: int = 500, seed: int = 0) -> pd.DataFrame:
    """alpha -> beta -> gamma, and delta apart."""
    rng = np.random.default_rng(seed)
    alpha, delta = rng.normal(size=(2, n))
    beta = 0.8 * alpha + 0.6 * rng.normal(size=n)
    gamma = 0.8 * beta + 0.6 * rng.normal(size=n)
    return pd.DataFrame({"alpha": alpha, "beta": beta, "gamma": gamma, "delta": delta})


def skeleton(edges) -> list[tuple[str, str]]:
    return sorted(tuple(sorted(e[:2])) for e in edges)


@pytest.mark.slow
@pytest.mark.jvm
def test_the_readme_example_gives_a_networkx_graph_over_the_data_s_columns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    space: dict = {"__name__": "readme_example"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(readme_example(), "README.md", "exec"), space)
    graph, df = space["graph"], space["df"]
    assert isinstance(graph, nx.DiGraph) and list(graph.nodes) == list(df.columns)
    assert graph.degree("noise") == 0
    # smoking --- tar is both ways, each marked ---; the collider's edges once each, marked -->
    assert sorted(graph.edges(data="mark")) == [("asbestos", "cancer", "-->"), ("smoking", "tar", "---"),
                                                ("tar", "cancer", "-->"), ("tar", "smoking", "---")]
    assert [str(w.message) for w in caught if "noise" in str(w.message)] == [
        "the truth: 1 variable(s) of the result are not in it ('noise'): counted as having no true edges"]
    back = nx.read_graphml(tmp_path / "graph.graphml")
    assert sorted(back.edges(data="mark")) == sorted(graph.edges(data="mark"))


@pytest.mark.slow
@pytest.mark.jvm
def test_names_are_kept_from_a_dataframe_an_array_and_a_file(tmp_path):
    df = chain()
    from_frame = hpc.learn(df, method="p-fges", serial=True, progress=False)
    assert from_frame.variables == ("alpha", "beta", "gamma", "delta")
    assert skeleton(from_frame.edges) == [("alpha", "beta"), ("beta", "gamma")]
    from_array = hpc.learn(df.to_numpy(), names=["a", "b", "c", "d"], method="p-fges", serial=True, progress=False)
    assert from_array.variables == ("a", "b", "c", "d") and skeleton(from_array.edges) == [("a", "b"), ("b", "c")]
    df.to_csv(tmp_path / "d.csv", index=False)
    from_file = hpc.learn(tmp_path / "d.csv", method="p-fges", serial=True, progress=False,
                          output=str(tmp_path / "g.json"))
    assert from_file.edges == from_frame.edges and from_file.meta["data"] == str(tmp_path / "d.csv")
    from hpc.graphs.io import read_json

    graph, meta = read_json(tmp_path / "g.json")
    assert graph == from_file.graph and meta == from_file.meta and meta["method"] == "p-fges"
    from hpc.graphs.knowledge import Knowledge

    told = hpc.learn(df, method="p-fges", serial=True, progress=False,
                     knowledge=Knowledge(required=frozenset({("gamma", "beta")})))
    assert ("gamma", "beta", "-->") in told.edges
    estimator = hpc.PSLE(method="p-fges", serial=True, progress=False).fit(df)
    assert list(estimator.feature_names_in_) == list(df.columns) and estimator.n_features_in_ == 4
    assert sorted(estimator.graph_.edges) == sorted(from_frame.to_networkx().edges)
    assert estimator.adjacency_.equals(from_frame.adjacency())


@pytest.mark.slow
@pytest.mark.jvm
def test_a_bootstrap_gives_its_frequencies_as_a_dataframe_and_on_the_graph_s_edges():
    result = hpc.learn(chain(300), method="p-fges", bootstrap=3, serial=True, progress=False)
    freq = result.frequencies
    assert list(freq.columns) == ["a", "b", "-->", "<--", "---", "none", "adjacent"]
    assert result.meta["bootstrap"]["resamples"] == 3 and "data" not in result.meta
    assert np.allclose(freq[["-->", "<--", "---", "none"]].sum(axis=1), 1.0)
    for a, b, attrs in result.to_networkx().edges(data=True):
        assert 0 < attrs["frequency"] <= attrs["adjacency"] <= 1


def test_a_text_column_is_a_one_line_error_naming_it_and_a_value():
    df = chain(20)
    df["group"] = ["treated", "control"] * 10
    with pytest.raises(PsleError) as info:
        hpc.learn(df)
    assert str(info.value) == ("the DataFrame: column 'group' holds text, e.g. 'treated' (row index 0): every "
                               "column must be numeric; encode it as numbers or drop it")


@pytest.mark.parametrize("settings, message", [
    ({"time_limt": 5}, r"^unknown setting 'time_limt'; known: method, sle, selection, .*, output, progress$"),
    ({"slurm": True}, r"^unknown setting 'slurm' \(submit SLURM jobs with `psle learn --slurm`\); known: method"),
    ({"time_limit": "10"}, r"^time_limit='10': must be a positive number of seconds \(per member run\)$"),
    ({"workers": 1.5}, r"^workers=1.5: must be a whole number >= 1 of local dask workers$"),
    ({"param": "penalty=2", "method": "fges"}, r"^param='penalty=2': must be a dict of learner parameters"),
    ({"method": "gfes"}, r"^method 'gfes': unknown; known: p-sle, sle, p-fges, .*fges"),
    ({"param": {"penalty": 2}}, r"^param does not apply to p-sle; put members in a sle YAML file$"),
    ({"selection": "predicted", "method": "p-fges"}, r"^selection predicted applies to p-sle only, not p-fges$"),
    ({"pef": {"max_sizee": 3}, "method": "p-fges"}, r"^PEF setting max_sizee: unknown; known: "),
    ({"output": "g.png"}, r"g.png: the graph file must be named .json or .csv or"),
    ({"checkpoint": "run.json", "method": "p-fges"}, r"run.json: the checkpoint must be named .h5 or .hdf5"),
])
def test_a_wrong_setting_is_a_one_line_error_naming_it(settings, message):
    with pytest.raises(PsleError, match=message) as info:
        hpc.learn(chain(20), **settings)
    assert "\n" not in str(info.value)


def test_wrong_data_is_a_one_line_error():
    with pytest.raises(PsleError, match=r"^nope.csv: no such file$"):
        hpc.learn("nope.csv")
    with pytest.raises(PsleError, match=r"^data: expected a pandas DataFrame, a 2-D numpy array or a data file"):
        hpc.learn(42)
    with pytest.raises(PsleError, match=r"^the array: expected a 2-D array .* got 1-D shape \(3,\)$"):
        hpc.learn(np.ones(3))
    with pytest.raises(PsleError, match=r"^names= applies to an array; a DataFrame's columns name its variables"):
        hpc.learn(chain(20), names=["a", "b", "c", "d"])


def test_knowledge_naming_no_column_is_refused():
    from hpc.graphs.knowledge import Knowledge

    with pytest.raises(PsleError, match=r"^knowledge: unknown variable 'zeta' \(not a column of the data\)$"):
        hpc.learn(chain(20), method="p-fges", knowledge=Knowledge(required=frozenset({("alpha", "zeta")})))


@pytest.mark.slow
def test_a_script_without_the_main_guard_is_told_how_to_fix_it(tmp_path):
    """dask's workers import the script that started them again; one that calls hpc.learn at its top level
    gets one line saying what to do, not dask's tracebacks, and does not run on in the workers."""
    import subprocess
    import sys

    from hpc.api import SCRIPT_GUARD

    script = tmp_path / "unguarded.py"
    script.write_text("import numpy as np\nimport hpc\n"
                      "hpc.learn(np.random.default_rng(0).normal(size=(50, 3)), method='p-fges', workers=1)\n"
                      "print('the script went on')\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode != 0 and run.stdout == ""
    assert run.stderr.rstrip().splitlines()[-1] == f"hpc.errors.PsleError: {SCRIPT_GUARD}"
    assert "Nanny failed" not in run.stderr


def test_the_settings_and_their_defaults_are_psle_learn_s():
    from hpc.cli import build_parser

    args = vars(build_parser().parse_args(["learn", "d.csv", "-o", "g.json"]))
    cli = {"param": "param", "pef": "pef", "output": "output"}
    for name, (default, _, _) in SETTINGS.items():
        if name == "progress":
            continue  # the terminal's lines: the CLI always prints them
        flag = cli.get(name, name)
        assert flag in args, name
        expected = {"param": None, "pef": None, "output": None}.get(name, args[flag])
        assert default == expected, name


# The truth a -> c <- b, c -> d (its CPDAG is the same); the estimate gets c -> b backwards and leaves c --- d
# undirected, and has e, which the truth does not list: F1-adj 1, arrowheads 1 of 2 right and 1 of 3 found
# (F1 2/5), SHD 2 (two pairs with other marks).
ESTIMATE = dag("abcde", "a>c c>b c-d")
EXPECTED = {"f1_adjacent": 1.0, "precision_adjacent": 1.0, "recall_adjacent": 1.0, "f1_arrowhead": 0.4,
            "precision_arrowhead": 0.5, "recall_arrowhead": 1 / 3, "shd": 2}


def test_evaluate_against_a_networkx_truth_an_edge_list_and_a_file(tmp_path):
    result = Result(ESTIMATE, {"method": "test"})
    (tmp_path / "truth.csv").write_text("from,to\na,c\nb,c\nc,d\n")
    truths = [nx.DiGraph([("a", "c"), ("b", "c"), ("c", "d")]),
              pd.DataFrame({"from": ["a", "b", "c"], "to": ["c", "c", "d"]}),
              tmp_path / "truth.csv", str(tmp_path / "truth.csv")]
    for truth in truths:
        with pytest.warns(UserWarning) as caught:
            assert hpc.evaluate(result, truth) == pytest.approx(EXPECTED)
        assert len(caught) == 1 and "1 variable(s) of the result are not in it ('e'): counted as having no true " \
                                    "edges" in str(caught[0].message)
    with pytest.raises(PsleError, match=r"^the truth: 1 variable\(s\) not in the result: 'z'; was it learned from "
                                        r"other data\? Remove them from the truth"):
        hpc.evaluate(result, nx.DiGraph([("a", "z")]))


def test_a_result_as_networkx_adjacency_edges_and_files():
    result = Result(ESTIMATE, {"method": "test"})
    assert result.edges == [("a", "c", "-->"), ("c", "b", "-->"), ("c", "d", "---")]
    graph = result.to_networkx()
    assert list(graph.nodes) == list("abcde") and sorted(graph.edges(data="mark")) == [
        ("a", "c", "-->"), ("c", "b", "-->"), ("c", "d", "---"), ("d", "c", "---")]
    adjacency = result.adjacency()
    assert adjacency.equals(nx.to_pandas_adjacency(graph, dtype=np.int64).rename_axis("from").rename_axis(
        "to", axis=1))
    assert adjacency.loc["c", "b"] == 1 and adjacency.loc["b", "c"] == 0
    assert adjacency.loc["c", "d"] == adjacency.loc["d", "c"] == 1
    from hpc.api import as_graph

    assert as_graph(adjacency, "the matrix")[0] == ESTIMATE  # an adjacency matrix reads back as the same graph
    assert re.fullmatch(r"Result\(test: 5 variables, 3 edges \(2 directed, 1 undirected\)\)", repr(result))


@pytest.mark.parametrize("suffix", [".json", ".csv", ".txt", ".graphml", ".dot"])
def test_a_result_saves_in_every_format_psle_convert_writes(tmp_path, suffix):
    from hpc.graphs.io import read_graph

    Result(ESTIMATE, {"method": "test"}).save(tmp_path / f"g{suffix}")
    assert read_graph(tmp_path / f"g{suffix}").reindexed(ESTIMATE.variables) == ESTIMATE


def test_the_estimator_keeps_its_settings_as_scikit_learn_expects():
    from sklearn.base import clone

    estimator = hpc.PSLE(method="p-fges", time_limit=30)
    assert estimator.get_params()["time_limit"] == 30 and estimator.get_params()["method"] == "p-fges"
    copy = clone(estimator)
    assert copy.get_params() == estimator.get_params() and copy is not estimator
    assert estimator.set_params(time_limit=60).get_params()["time_limit"] == 60
    with pytest.raises(PsleError, match=r"^unknown setting 'time_limt'"):
        hpc.PSLE(time_limt=5)


def test_import_hpc_stays_light():
    import subprocess
    import sys

    code = "import sys, hpc; print(sorted(m for m in ('pandas', 'networkx', 'dask', 'hpc.api') if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
