"""The benchmark scripts behind BENCHMARKS.md run on tiny problems and print their tables."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.jvm]

ROOT = Path(__file__).resolve().parents[1]


def bench(script: str, *args: str) -> str:
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / script), *args], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_bench_pef_prints_one_row_per_method():
    out = bench("bench_pef.py", "--graph", "er", "--nodes", "240", "--seeds", "0", "--methods", "psle",
                "psle-norepair", "fges-faithful")
    rows = [line for line in out.splitlines() if line.startswith("| psle") or line.startswith("| fges")]
    assert [r.split("|")[1].strip() for r in rows] == ["psle", "psle-norepair", "fges-faithful"]


def test_bench_column_order_finds_the_same_graph_in_every_order():
    out = bench("bench_column_order.py", "--problems", "asia-200", "--permutations", "2")
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| asia")]
    assert len(rows) == 3 and all(r[6].strip() == "0" for r in rows)


def test_bench_fusion_loss_splits_within_and_cross_edges():
    out = bench("bench_fusion_loss.py", "--network", "alarm", "--nodes", "300", "--seeds", "0")
    assert {"psle without repair", "psle (repair)"} <= {line.split("|")[2].strip() for line in out.splitlines()
                                                         if line.startswith("| 0 |")}
