"""Progress lines on stderr: `label: done/total (elapsed)`, one line per stage.

On a terminal the stage's line is rewritten in place (at most every `min_interval` seconds) and ends
when the stage does. Into a log file (a SLURM job's output, a notebook) a stage writes its first count,
each tenth of the way (`steps`), its last, and one line every `heartbeat` seconds while its count does
not move, so a log says the run is alive without repeating itself: at most `steps` + 1 lines a stage
however many tasks it has. A stage is the label up to its first colon (`estimation: member runs 3/7`
is the stage `estimation`, whatever its counts say). `clock` is injectable, so the throttle can be
tested without waiting."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


class Progress:
    def __init__(self, enabled: bool = True, stream=None, min_interval: float = 0.5, heartbeat: float = 60.0,
                 steps: int = 10, clock: Callable[[], float] = time.perf_counter):
        self.enabled = enabled
        self.stream = stream or sys.stderr  # the stderr of the time, which a task may tee into its log
        self.min_interval, self.heartbeat, self.steps, self.clock = min_interval, heartbeat, steps, clock
        self.start = clock()
        self._last = float("-inf")
        self._stage: str | None = None
        self._step = -1  # the last tenth (of `steps`) of the stage written to a log
        self._shown: tuple[str, int] | None = None
        self._open = False  # a terminal line waiting for its stage to end
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, label: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now, stage, final = self.clock(), label.split(":")[0], done >= total
        fresh = stage != self._stage
        if fresh:
            self._stage, self._step, self._shown = stage, -1, None
        if self._tty:
            if self._shown == (label, done) or not (fresh or final) and now - self._last < self.min_interval:
                return
            if fresh and self._open:
                self.stream.write("\n")  # the last stage's line stays, as it ended
            self.stream.write("\r\033[K" + self._line(label, done, total, now) + ("\n" if final else ""))
            self._open = not final
        else:
            step = self.steps if final or total <= 0 else done * self.steps // total
            if not (fresh or step > self._step or now - self._last >= self.heartbeat):
                return
            self.stream.write(self._line(label, done, total, now) + "\n")
            self._step = max(self._step, step)
        self._last, self._shown = now, (label, done)
        self.stream.flush()

    def _line(self, label: str, done: int, total: int, now: float) -> str:
        return f"psle: {label}: {done}/{total} ({now - self.start:.1f} s)"

    def note(self, text: str) -> None:
        """A line of its own; on a terminal it takes the place of the stage's line, which the next count redraws."""
        if self.enabled:
            self.stream.write(("\r\033[K" if self._open else "") +
                              f"psle: {text} ({self.clock() - self.start:.1f} s)\n")
            if self._open:  # the next count redraws the stage's line at once
                self._open, self._last, self._shown = False, float("-inf"), None
            self.stream.flush()
