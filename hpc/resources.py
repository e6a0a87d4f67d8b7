"""Peak memory of a process tree: PEF's work happens in dask workers and their JVMs, so the
parent's own RSS (or getrusage) would miss almost all of it."""

from __future__ import annotations

import threading
import time

import psutil


class PeakMemory:
    """Peak summed RSS of this process and all its descendants."""

    def __init__(self, interval: float = 0.2):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self.samples: list[tuple[float, int]] = []  # (time.time(), bytes): to tell the peak of a stretch of the run

    def peak_within(self, spans: list[tuple[float, float]]) -> int:
        """Peak bytes sampled within any of `spans` (time.time() pairs), each stretched by two sampling
        intervals, and for a span without a sample (shorter than a sample takes on a busy machine) the first
        one after it starts; 0 if none."""
        late, peak = 2 * self.interval, 0
        for lo, hi in spans:
            inside = [b for t, b in self.samples if lo <= t <= hi + late]
            peak = max(peak, max(inside) if inside else next((b for t, b in self.samples if t >= lo), 0))
        return peak

    def _sample(self) -> int:
        me = psutil.Process()
        total = 0
        for proc in [me, *me.children(recursive=True)]:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                pass
        return total

    def _record(self) -> None:
        sample = self._sample()
        self.samples.append((time.time(), sample))
        self.peak = max(self.peak, sample)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._record()
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakMemory:
        self.peak = self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._record()  # the last step's sample, however short it was
