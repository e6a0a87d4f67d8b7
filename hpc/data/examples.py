"""Real data to try P/SLE on: Sachs et al.'s flow cytometry (Science 2005), 11 phosphoproteins and
phospholipids, 7,466 cells pooled over nine conditions, with the consensus network of the literature.

The files ship inside the PyPI wheel of the Causal Discovery Toolbox (cdt 0.6.0, MIT); like the Tetrad
jar, the wheel is fetched by version with pip (no dependency is installed), checked against its
sha256 and cached, so the example is the same bytes on every machine.
"""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
import zipfile
from pathlib import Path

from hpc.atomic import write_text_atomic
from hpc.fetch import cache_dir, download_wheel, sha256_file
from hpc.graphs.pdag import PDAG

WHEEL_REQUIREMENT = "cdt==0.6.0"
WHEEL_NAME = "cdt-0.6.0-py3-none-any.whl"
WHEEL_SHA256 = "a90401b688597c3ccf23cc7b10c62e19df69dc9277095bab40a1343c6e89996b"
DATA_MEMBER = "cdt/data/resources/cyto_full_data.csv"
TARGET_MEMBER = "cdt/data/resources/cyto_full_target.csv"
SOURCE = ("Sachs, Perez, Pe'er, Lauffenburger and Nolan (2005), Causal protein-signaling networks derived from "
          "multiparameter single-cell data, Science 308(5721):523-529; files from the cdt 0.6.0 wheel (MIT)")


def _wheel() -> Path:
    """The pinned cdt wheel, from the cache or PyPI."""
    target = cache_dir() / WHEEL_NAME
    if target.is_file() and sha256_file(target) == WHEEL_SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        shutil.move(download_wheel(WHEEL_REQUIREMENT, WHEEL_NAME, WHEEL_SHA256, Path(tmp)), target)
    return target


def consensus_graph(text: str, variables: list[str]) -> PDAG:
    """The consensus network (a Cause,Effect list) as a DAG over `variables`."""
    rows = list(csv.reader(io.StringIO(text)))
    return PDAG.from_named_edges(variables, [[a, b, "-->"] for a, b in rows[1:] if a])


def write_sachs(directory: str | Path) -> tuple[Path, Path]:
    """`sachs.csv` (7,466 rows) and `sachs-consensus.csv` (the consensus DAG as an edge list) in `directory`."""
    from hpc.graphs.io import write_edge_csv

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(_wheel()) as zf:
        data = zf.read(DATA_MEMBER).decode()
        target = zf.read(TARGET_MEMBER).decode()
    variables = next(csv.reader(io.StringIO(data)))
    data_path, truth_path = directory / "sachs.csv", directory / "sachs-consensus.csv"
    write_text_atomic(data_path, data)
    write_edge_csv(truth_path, consensus_graph(target, variables))
    return data_path, truth_path
