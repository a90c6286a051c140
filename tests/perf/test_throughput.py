"""The per-second SchedulingThroughput collector, on a fake clock and counter."""

from __future__ import annotations

import pytest

from kubesched.perf.throughput import ThroughputCollector, summarize


class Fake:
    def __init__(self):
        self.now = 1000.0
        self.scheduled = 0

    def collector(self) -> ThroughputCollector:
        return ThroughputCollector(lambda: self.scheduled, lambda: self.now)


def test_samples_each_second_skipping_the_first():
    fake = Fake()
    collector = fake.collector()
    collector.start()
    for second, total in enumerate([100, 300, 600, 1000], start=1):
        fake.scheduled = total
        fake.now = 1000.0 + second
        collector.tick()
    fake.now += 0.5
    fake.scheduled = 1100
    assert collector.stop() == [200.0, 300.0, 400.0]  # the first boundary only starts counting
    assert collector.total == 1100


def test_nothing_is_sampled_before_the_first_pod_and_idle_seconds_share_the_next_sample():
    fake = Fake()
    collector = fake.collector()
    collector.start()
    fake.now = 1001.0
    collector.tick()                      # no pod yet: nothing
    fake.scheduled, fake.now = 50, 1002.0
    collector.tick()                      # first pods: starts counting
    fake.now = 1003.0
    collector.tick()                      # no new pod: skipped
    fake.scheduled, fake.now = 250, 1004.0
    collector.tick()                      # 200 pods over 2 s, recorded for both intervals
    assert collector.samples == [100.0, 100.0]


def test_late_ticks_collapse_into_one_sample_over_the_real_interval():
    fake = Fake()
    collector = fake.collector()
    collector.start()
    fake.scheduled, fake.now = 10, 1001.0
    collector.tick()
    fake.scheduled, fake.now = 310, 1004.0  # the loop was busy for 3 s
    collector.tick()
    assert collector.samples == [100.0]
    assert collector.next_tick == 1005.0


def test_a_run_shorter_than_a_second_gives_one_sample_from_elapsed_time():
    fake = Fake()
    fake.scheduled = 7  # pods scheduled before the start do not count
    collector = fake.collector()
    collector.start()
    fake.scheduled, fake.now = 57, 1000.25
    assert collector.stop() == [200.0]


def test_no_pod_no_sample():
    fake = Fake()
    collector = fake.collector()
    collector.start()
    fake.now = 1000.5
    assert collector.stop() == []
    assert summarize([]) == {}


def test_summary_uses_upstreams_percentile_index():
    samples = [float(v) for v in range(1, 11)]  # 1..10
    assert summarize(samples) == {"Average": 5.5, "Perc50": 5.0, "Perc90": 9.0, "Perc95": 10.0, "Perc99": 10.0}
    assert summarize([3.0]) == {"Average": 3.0, "Perc50": 3.0, "Perc90": 3.0, "Perc95": 3.0, "Perc99": 3.0}
    assert summarize([4.0, 1.0, 3.0, 2.0])["Perc50"] == pytest.approx(2.0)
