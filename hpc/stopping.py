"""A stop check per thread: work begun ahead of its turn (hpc.executors' `start`) is stopped when its result
turns out not to be wanted, and the learner requests it makes (hpc.learners.worker) look at the check while they
wait, so the worker is freed within seconds instead of when the search would have ended."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_local = threading.local()


@contextmanager
def stop_when(check: Callable[[], bool]) -> Iterator[None]:
    """Within, `stop_check()` in this thread is `check` (True: the work's result is no longer wanted)."""
    before = getattr(_local, "check", None)
    _local.check = check
    try:
        yield
    finally:
        _local.check = before


def stop_check() -> Callable[[], bool] | None:
    """This thread's stop check, None outside `stop_when`."""
    return getattr(_local, "check", None)
