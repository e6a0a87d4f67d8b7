"""Sizing `psle learn --nodes` worker jobs from the data, before anything is submitted."""

import numpy as np
import pytest

from hpc.data.generate import benchmark_problem
from hpc.data.problem import write_problem
from hpc.errors import PsleError
from hpc.launch.workers import DRIVER_BYTES, PROCESS_GB, WORKER_BYTES, data_shape, driver_gb, heap_gb, worker_gb


def test_data_shape_reads_only_the_header_and_counts_rows(tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_text("a,b,c\n1,2,3\n4,5,6\n\n7,8,9\n")
    assert data_shape(csv) == (3, 3)
    tsv = tmp_path / "d.tsv"
    tsv.write_text("a\tb\n1\t2\n")
    assert data_shape(tsv) == (1, 2)
    semicolons = tmp_path / "s.csv"
    semicolons.write_text("a;b;c;d\n1,5;2;3;4\n")
    assert data_shape(semicolons) == (1, 4)
    problem = benchmark_problem(40, 0, 123, network="asia")
    write_problem(tmp_path / "p.h5", problem)
    assert data_shape(tmp_path / "p.h5") == (123, problem.p)
    with pytest.raises(PsleError, match="no such file"):
        data_shape(tmp_path / "missing.csv")


def test_heap_sizes_parse_as_the_jvm_reads_them():
    assert heap_gb("2g") == 2 and heap_gb("512m") == 0.5 and heap_gb("1048576k") == 1


def test_worker_and_driver_memory_by_hand():
    n, p = 1000, 100_000  # 1e8 values
    values_gb = 1e8 / 1024**3
    assert worker_gb(n, p, 2) == int(np.ceil(2 * (WORKER_BYTES * values_gb + heap_gb() + PROCESS_GB)))
    assert driver_gb(n, p) == int(np.ceil(DRIVER_BYTES * values_gb + 2 * PROCESS_GB))
    assert worker_gb(n, 10 * p, 2) > worker_gb(n, p, 2) > worker_gb(n, p, 1)


def test_walltimes_parse_as_slurm_reads_them():
    from hpc.executors import walltime_seconds

    assert walltime_seconds("30") == 30 * 60 and walltime_seconds("30:15") == 30 * 60 + 15
    assert walltime_seconds("04:00:00") == 4 * 3600
    assert walltime_seconds("1-2") == 26 * 3600 and walltime_seconds("1-2:30") == 26 * 3600 + 30 * 60
    assert walltime_seconds("2-00:00:05") == 48 * 3600 + 5
