"""A deposed leader's write delivered after the takeover never puts one device under two pods
(tests/late_write.py; benchmarks/late_write.py runs the same case 20 times in a row)."""

from __future__ import annotations

import pytest

from late_write import late_write_run


@pytest.mark.long
def test_a_late_allocation_write_of_a_deposed_leader_leaves_no_device_under_two_pods():
    outcome = late_write_run()
    assert outcome["old_exit"] == 1  # A lost its lease
    assert outcome["shared"] == [] and outcome["bindings"] == {}
    assert sorted(outcome["devices"]) == ["c1", "c2"]  # both pods run, each on its own GPU
