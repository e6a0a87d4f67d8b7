"""Progress lines in a log file, and where the dask dashboard is said to be."""

import io
import socket
import time

from hpc.executors import announce_dashboard
from hpc.progress import Progress


def test_a_log_gets_a_line_when_the_count_moves_not_every_call():
    log = io.StringIO()
    show = Progress(stream=log, min_interval=0.0, heartbeat=0.3)
    for done in (0, 0, 0, 1, 1, 2):
        show("estimation (clusters)", done, 3)
    assert [ln.rsplit(" (", 1)[0] for ln in log.getvalue().splitlines()] == [
        "psle: estimation (clusters): 0/3", "psle: estimation (clusters): 1/3", "psle: estimation (clusters): 2/3"]
    time.sleep(0.35)
    show("estimation (clusters)", 2, 3)  # no movement for a heartbeat: one line saying it is alive
    show("estimation (clusters)", 3, 3)
    assert len(log.getvalue().splitlines()) == 5


def test_inside_a_slurm_job_the_dashboard_names_the_compute_node(monkeypatch, capsys):
    class Cluster:
        dashboard = "http://127.0.0.1:40123/status"

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    announce_dashboard(Cluster())
    assert capsys.readouterr().err.strip() == "psle: dask dashboard at http://127.0.0.1:40123/status"
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    announce_dashboard(Cluster())
    node = socket.gethostname()
    err = capsys.readouterr().err
    assert f"http://{node}:40123/status" in err and f"ssh -N -L 40123:{node}:40123" in err
