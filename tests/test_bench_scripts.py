"""Every benchmark script behind BENCHMARKS.md and bench/HISTORY.md runs on a tiny problem (or on the
committed records and results) and prints its table: none is left to rot after the code under it moves."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hpc.select.records import read_records

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.jvm]

ROOT = Path(__file__).resolve().parents[1]


def bench(script: str, *args: str) -> str:
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / script), *args], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """Every markdown table a script printed, each as rows keyed by its header."""
    tables: list[list[dict[str, str]]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            tables.append([])
        elif not set("".join(cells)) <= set("-"):
            tables[-1].append(dict(zip(header, cells)))
    return tables


def test_bench_pef_prints_one_row_per_method():
    out = bench("bench_pef.py", "--graph", "er", "--nodes", "240", "--seeds", "0", "--methods", "psle",
                "psle-norepair", "fges-faithful", "--pef", "sparse_above=0", "candidates_above=0")
    rows = [line for line in out.splitlines() if line.startswith("| psle") or line.startswith("| fges")]
    assert [r.split("|")[1].strip() for r in rows] == ["psle", "psle-norepair", "fges-faithful"]
    psle = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert set(psle["steps"]) >= {"partition", "estimation", "fusion", "rival", "polish"}
    assert all(s["peak_mb"] > 0 for s in psle["steps"].values())
    assert psle["fusion"]["pairs_screened"] < 240 * 50  # the neighbours' pairs, not every cross pair


def test_bench_pef_records_a_whole_flop_it_cannot_run_as_refused():
    out = bench("bench_pef.py", "--graph", "er", "--nodes", "1000", "--seeds", "0", "--methods", "flop")
    row = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert row["status"] == "refused" and "1000 variables for 1000 rows" in row["reason"]
    assert "| flop | - | - | - | refused (1 of 1) |" in out


def test_bench_column_order_finds_the_same_graph_in_every_order():
    out = bench("bench_column_order.py", "--problems", "asia-200", "--permutations", "2")
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| asia")]
    assert len(rows) == 3 and all(r[6].strip() == "0" for r in rows)


def test_bench_fusion_loss_splits_within_and_cross_edges():
    out = bench("bench_fusion_loss.py", "--network", "alarm", "--nodes", "300", "--seeds", "0")
    assert {"psle without repair", "psle with the repair only", "psle (repair + polish)"} <= {
        line.split("|")[2].strip() for line in out.splitlines() if line.startswith("| 0 |")}


# two small records files that ran every portfolio member (er, sf and hub problems)
RECORDS = "bench/selector-records/selection-records-big-0.h5"
OTHER_RECORDS = "bench/selector-records/selection-records-n6000-1.h5"


@pytest.mark.parametrize("script, args, expect", [
    ("bench_generate.py", ["--networks", "asia", "--nodes", "80"], "asia"),
    ("bench_defaults.py", ["--families", "asia", "er", "--nodes", "40", "--seeds", "100", "--penalties", "2"],
     "| boss 2 | "),
    ("bench_learners.py", ["--sizes", "50", "--limit", "120", "--only", "fGES"], "fGES"),
    ("bench_pc.py", ["--nodes", "300", "--ranks", "0", "--limit", "120"], "|"),
    ("bench_scale.py", ["--nodes", "300"], "|"),
    ("bench_threads.py", ["--nodes", "60", "--threads", "1", "--repeats", "1"], "|"),
    ("bench_order_search.py", ["--graph", "er", "--nodes", "30", "--penalty", "2"], "| candidate pairs ("),
    ("bench_ges.py", ["--graph", "er", "--nodes", "30"], "| member (λ 20.6"),
    ("bench_selection.py", ["results/table_10000"], "|"),
    ("bench_near_ties.py", [RECORDS], "|"),
    ("bench_selector_added.py", ["--base", RECORDS, "--added", OTHER_RECORDS], "|"),
    ("bench_selector_conditions.py", ["--base", RECORDS, "--test", OTHER_RECORDS], "|"),
    ("bench_selector_models.py", [RECORDS, "--models", "pair-regression"], "|"),
])
def test_every_other_bench_script_runs(script, args, expect):
    assert expect in bench(script, *args)


def test_bench_refit_and_cluster_scores_read_the_rows_of_a_run(tmp_path):
    from tests.conftest import psle_experiment

    run = psle_experiment(tmp_path, "progress=false", "method=p-sle-truth", "dataset.network=asia",
                          "dataset.nodes=240", "seed=0")
    assert run.returncode == 0, run.stderr
    # the selector that made the rows would change none of them
    assert bench("bench_refit.py", "changed", "truth", str(tmp_path)).strip() == ""
    [row] = tmp_path.glob("**/p-sle-truth/*/seed0.json")
    assert "|" in bench("bench_cluster_scores.py", str(row), "--min-size", "20")


def test_bench_cost_recovers_a_known_power_law_and_predicts_the_held_out_size(tmp_path):
    rows = []
    for p in (1000, 3000, 10000):  # outside tasks 1e-3 p^1.5 s, tasks 2e-4 p^2 s, peak 100 MB + 16 bytes per value
        steps = {"partition": {"seconds": 1e-3 * p**1.5 + 2e-4 * p**2 / 2, "task_seconds": 2e-4 * p**2,
                               "peak_mb": 100 + 16 * 1000 * p / 2**20}}
        rows.append({"p": p, "status": "ok", "seconds": steps["partition"]["seconds"],
                     "peak_mb": steps["partition"]["peak_mb"], "steps": steps})
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    out = bench("bench_cost.py", "--jsonl", str(tmp_path / "rows.jsonl"), "--holdout", "10000", "--predict", "10000",
                "--cores", "1")
    table = [line.split("|") for line in out.splitlines() if line.startswith("| partition")]
    assert table[0][2].strip() == "1.50" and table[0][3].strip() == "2.00" and table[0][4].strip() == "16.0"
    predicted, measured = float(table[1][2]), float(table[1][3])
    assert abs(predicted - measured) <= 1
    one_core = 1e-3 * 10000**1.5 + 2e-4 * 10000**2
    assert f"{one_core / 3600:.1f} h" in out


def test_bench_calibration_bins_every_pair_of_the_frequency_table_against_the_truth(tmp_path):
    out = bench("bench_calibration.py", "--problems", "asia", "--nodes", "40", "--resamples", "3",
                "--work", str(tmp_path), "--png", str(tmp_path / "c.png"), "--jsonl", str(tmp_path / "rows.jsonl"))
    assert "| asia-40 |" in out and (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    row = json.loads((tmp_path / "rows.jsonl").read_text())
    table = (tmp_path / "asia-40-0-b3.frequencies.csv").read_text().splitlines()
    assert sum(b["pairs"] for b in row["bins"]) == len(table) - 1  # every pair seen once, in one bin
    assert all(b["adjacent"] <= b["pairs"] for b in row["bins"])
    assert sum(b["adjacent"] for b in row["bins"]) <= row["true_edges"]


def test_bench_table_puts_rows_the_committed_results_and_the_paper_side_by_side(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"network": "alarm", "nodes": 1000, "seed": s, "method": "psle", "status": "ok",
                                        "f1_adjacent": f, "f1_arrowhead": 0.5, "shd": 100 * (s + 1), "seconds": 10.0})
                            + "\n" for s, f in ((0, 0.9), (1, 0.8))))
    out = bench("bench_table.py", str(rows), "--before", "results/paper_table_1000", "p-sle",
                "--paper", "tab:results_1000", "p-sle")
    lines = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in out.splitlines()
             if line.startswith("| p") and not line.startswith("| method")}
    assert lines["psle"] == "0.850 / 0.500 / 150 (10 s)"  # the means over seeds 0 and 1, by hand
    committed = [json.loads((ROOT / "results/paper_table_1000/p-sle/alarm-1000" / f"seed{s}.json").read_text())
                 for s in (0, 1)]
    assert lines["p-sle (paper_table_1000)"].startswith(f"{sum(c['f1_adjacent'] for c in committed) / 2:.3f} / ")
    assert lines["p-sle (the paper)"] == "0.810 / 0.680 / 626"  # Table V's Alarm cell


def test_bench_bootstrap_slurm_refuses_an_output_it_cannot_check_before_submitting(tmp_path):
    """It must see every resample written, so it wants a fresh output; and a task the array has."""
    (tmp_path / "g.json").write_text("{}")
    script = [sys.executable, str(ROOT / "scripts" / "bench_bootstrap_slurm.py"), str(tmp_path / "a.h5")]
    used = subprocess.run([*script, "-o", str(tmp_path / "g.json")], capture_output=True, text=True)
    assert used.returncode != 0 and "exist already" in used.stderr
    wrong = subprocess.run([*script, "--resamples", "3", "--requeue", "3", "-o", str(tmp_path / "new" / "g.json")],
                           capture_output=True, text=True)
    assert wrong.returncode != 0 and "--requeue 3: the array has tasks 0..2" in wrong.stderr
    assert not (tmp_path / "new" / ".submitit").exists()  # nothing submitted


def test_bench_train_cost_and_the_preemption_audit_read_a_finished_training(tmp_path):
    ckpt, log = tmp_path / "ck.h5", tmp_path / "preempt.jsonl"
    train = subprocess.run([str(Path(sys.executable).parent / "psle"), "train", "--problems", "3", "--max-nodes", "20",
                            "--k", "2", "--trials", "3", "--serial", "--networks", "asia", "plc", "--checkpoint",
                            str(ckpt), "-o", str(tmp_path / "sle.yaml")], capture_output=True, text=True, timeout=600)
    assert train.returncode == 0, train.stderr[-3000:]
    out = bench("bench_train_cost.py", str(ckpt))
    assert "3 training problems" in out and "round 1: " in out and "trials per core-hour" in out
    assert "| variables |" in out and "trials per round" in out
    log.write_text("")
    audit = json.loads(bench("preempt_training.py", "0", str(ckpt), "--audit", "--log", str(log)))
    assert audit["evaluations_run_more_than_once"] == 0 and audit["requeues"] == 0 and audit["resumes_in_checkpoint"] == 0
    assert audit["trials_recorded"] == 6 and audit["evaluations"] > 0


def test_bench_sle_clusters_scores_ensembles_by_the_rule_and_the_oracle_and_resumes(tmp_path):
    records = tmp_path / "test-records.h5"
    args = ["-o", str(records), "--sle", "learned", "random", "--problems", "asia", "er", "--nodes", "60",
            "--seeds", "0", "--workers", "1"]
    out = bench("bench_sle_clusters.py", *args)
    by_group, overall = markdown_tables(out)
    table = {(r["ensemble"], r["way"]): float(r["all"]) for r in by_group}
    assert {"learned", "random", "truth selector"} == {name for name, _ in table}
    for name in ("learned", "random"):  # the best member per cluster is never worse than the best BIC's
        assert 0 < table[name, "rule"] <= table[name, "oracle"] <= 2
    for r in overall:  # the F1 table's Q is the group table's, and the two F1s add up to it
        assert float(r["Q"]) == table[r["ensemble"], r["way"]]
        assert float(r["F1-adj"]) + float(r["F1-arrow"]) == pytest.approx(float(r["Q"]), abs=2e-3)
    written = records.stat().st_mtime_ns
    assert bench("bench_sle_clusters.py", *args) == out and records.stat().st_mtime_ns == written  # nothing rerun

    later = tmp_path / "later-records.h5"  # an ensemble compared later runs only its own members
    rest = args[2:]
    again = bench("bench_sle_clusters.py", "-o", str(later), "--records", str(records), *rest)
    assert again.split("->")[1].splitlines()[1:] == out.split("->")[1].splitlines()[1:]
    assert read_records(later)["settings"]["portfolio"] == []
    other = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_sle_clusters.py"), "-o",
                            str(tmp_path / "x.h5"), "--records", str(records), *[a if a != "60" else "50" for a in rest]],
                           capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert other.returncode != 0 and "other problems or settings" in other.stderr and not (tmp_path / "x.h5").exists()

    seed1 = tmp_path / "seed1.h5"  # another seed on its own, then both in one table with nothing run again
    one = bench("bench_sle_clusters.py", "-o", str(seed1), *[a if a != "0" else "1" for a in rest])
    both = bench("bench_sle_clusters.py", "-o", str(tmp_path / "both.h5"), "--records", str(records), str(seed1),
                 *[a if a != "0" else "0-1" for a in rest])
    assert read_records(tmp_path / "both.h5")["settings"]["portfolio"] == []
    clusters = [int(text.split(" clusters of")[0].split()[-1]) for text in (out, one, both)]
    assert clusters[2] == clusters[0] + clusters[1]
