"""Watching a process from a test through /proc: what it has computed and whether it still runs."""

from __future__ import annotations

import os


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds the process has used: an event that says it is computing."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's exit status may wait for a reaper that never comes)."""
    try:
        return _stat(pid)[0] != "Z"
    except FileNotFoundError:
        return False
