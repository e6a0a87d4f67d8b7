"""Peak memory per step: every step gets a sample, however short it was."""

from hpc.resources import PeakMemory


def test_a_span_without_a_sample_takes_the_first_one_after_it_and_the_last_step_gets_a_final_sample():
    mem = PeakMemory(interval=0.2)
    mem.samples = [(10.0, 100), (10.5, 300), (20.0, 200)]
    assert mem.peak_within([(10.0, 10.1)]) == 300  # 10.5 lies within the span stretched by two intervals
    assert mem.peak_within([(12.0, 12.01)]) == 200  # nothing near it: the first sample after it started
    assert mem.peak_within([(30.0, 31.0)]) == 0
    with PeakMemory(interval=60.0) as live:
        pass
    assert live.samples and live.samples[-1][1] > 0 and live.peak >= live.samples[-1][1]
