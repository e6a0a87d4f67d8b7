"""Progress lines in a log file and on a terminal, and where the dask dashboard is said to be."""

import io
import socket

from hpc.executors import announce_dashboard
from hpc.progress import Progress


class Clock:
    """A clock the test moves by hand, so no assertion depends on the machine's speed."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def screen(text: str) -> list[str]:
    """What a terminal shows of `text`: a carriage return and erase-line start the line afresh."""
    lines = [""]
    for part in text.replace("\r\x1b[K", "\r").split("\n"):
        lines[-1] = part.rsplit("\r", 1)[-1]
        lines.append("")
    return [ln.rsplit(" (", 1)[0] for ln in lines[:-1] if ln]


def shown(log: io.StringIO) -> list[str]:
    return [ln.rsplit(" (", 1)[0] for ln in log.getvalue().splitlines()]


def test_a_log_gets_a_stage_sparsely_however_many_tasks_it_has():
    log, clock = io.StringIO(), Clock()
    show = Progress(stream=log, clock=clock)
    for done in range(1001):
        show("estimation: member runs, clusters with a graph", done, 1000)
    lines = shown(log)
    # its first count, each tenth of the way and its last: eleven lines for a thousand tasks
    assert lines == [f"psle: estimation: member runs, clusters with a graph: {k * 100}/1000" for k in range(11)]
    for done in range(3):  # a stage of three tasks: every count is a third of the way
        show("fusion F1 (cluster pairs)", done + 1, 3)
    assert shown(log)[11:] == [f"psle: fusion F1 (cluster pairs): {k}/3" for k in (1, 2, 3)]


def test_a_stage_is_its_label_up_to_the_colon_whatever_its_counts_say():
    log, clock = io.StringIO(), Clock()
    show = Progress(stream=log, clock=clock)
    for done in range(1, 41):  # the label carries a count of its own, as the estimation's does
        show(f"estimation: member runs {done}/40, clusters with a graph", done, 40)
    assert len(shown(log)) == 11 and shown(log)[-1] == "psle: estimation: member runs 40/40, clusters with a graph: 40/40"


def test_a_log_says_a_stalled_stage_is_alive_once_a_heartbeat():
    log, clock = io.StringIO(), Clock()
    show = Progress(stream=log, heartbeat=60.0, clock=clock)
    show("polish: searches", 1, 100)
    for _ in range(5):
        clock.now += 30.0  # two calls a heartbeat, the count stuck
        show("polish: searches", 1, 100)
    assert shown(log) == ["psle: polish: searches: 1/100"] * 3
    assert log.getvalue().splitlines()[-1].endswith("(120.0 s)")


def test_a_terminal_rewrites_one_line_per_stage_in_place():
    term, clock = Terminal(), Clock()
    show = Progress(stream=term, min_interval=0.5, clock=clock)
    for done in range(1, 5):
        clock.now += 1.0
        show("estimation: clusters", done, 4)
    for done in range(1, 3):
        clock.now += 0.1  # faster than min_interval: only the first and the last are drawn
        show("fusion F1 (cluster pairs)", done, 2)
    show("fusion F1 (cluster pairs)", 2, 2)  # a repeated last count draws nothing
    show.note("repair: round 1")
    text = term.getvalue()
    assert text.count("\n") == 3  # the two stages' last lines and the note
    assert screen(text) == ["psle: estimation: clusters: 4/4", "psle: fusion F1 (cluster pairs): 2/2",
                            "psle: repair: round 1"]
    assert text.count("\r\x1b[K") == 6  # four draws of the first stage, two of the second


def test_a_note_takes_the_place_of_an_unfinished_terminal_line():
    term, clock = Terminal(), Clock()
    show = Progress(stream=term, clock=clock)
    show("polish: searches", 1, 7)
    show.note("member fges timed out on cluster 3")
    show("polish: searches", 2, 7)
    assert screen(term.getvalue()) == ["psle: member fges timed out on cluster 3", "psle: polish: searches: 2/7"]


def test_the_dashboard_is_said_only_when_asked_and_inside_a_slurm_job_names_the_compute_node(monkeypatch, capsys):
    class Cluster:
        dashboard = "http://127.0.0.1:40123/status"

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("PSLE_DASHBOARD", raising=False)
    announce_dashboard(Cluster())
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("PSLE_DASHBOARD", "1")
    announce_dashboard(Cluster())
    assert capsys.readouterr().err.strip() == "psle: dask dashboard at http://127.0.0.1:40123/status"
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    announce_dashboard(Cluster())
    node = socket.gethostname()
    err = capsys.readouterr().err
    assert f"http://{node}:40123/status" in err and f"ssh -N -L {40123}:{node}:40123" in err
