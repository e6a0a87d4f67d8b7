"""Progress lines on stderr: `label: done/total (elapsed)`, rewritten in place on a terminal.

Into a log file (a SLURM job's output) a line is written when the count moves, plus one every
`heartbeat` seconds while it does not, so a log says the run is alive without repeating itself."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, enabled: bool = True, stream=None, min_interval: float = 0.5, heartbeat: float = 60.0):
        self.enabled = enabled
        self.stream = stream or sys.stderr  # the stderr of the time, which a task may tee into its log
        self.min_interval = min_interval
        self.heartbeat = heartbeat
        self.start = time.perf_counter()
        self._last = 0.0
        self._shown: tuple[str, int] | None = None
        self._tty = hasattr(stream, "isatty") and stream.isatty()

    def __call__(self, label: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        final = done >= total
        if not final and now - self._last < self.min_interval:
            return
        if not self._tty and self._shown == (label, done) and now - self._last < self.heartbeat:
            return
        self._last, self._shown = now, (label, done)
        line = f"psle: {label}: {done}/{total} ({now - self.start:.1f} s)"
        if self._tty:
            self.stream.write("\r\033[K" + line + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        if self.enabled:
            self.stream.write(f"psle: {text} ({time.perf_counter() - self.start:.1f} s)\n")
            self.stream.flush()
